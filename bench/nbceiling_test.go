package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestNBCeiling measures the Northbound ceiling on a small count: every
// batch size inserts every port (an insert that fails fails the run), and
// the report and ratio use the best rate.
func TestNBCeiling(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ovsdb-server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := measureNBCeiling(ctx, 250)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != len(NBCeilingBatches) {
		t.Fatalf("%d results, want one per batch size %v", len(cs), NBCeilingBatches)
	}
	for i, c := range cs {
		if c.Batch != NBCeilingBatches[i] || c.Ports < 250 || c.Ports%c.Batch != 0 || c.PortsPerSecond <= 0 ||
			math.Abs(c.TransactionsPerSecond*float64(c.Batch)-c.PortsPerSecond) > 1e-6*c.PortsPerSecond {
			t.Errorf("batch %d: %+v", NBCeilingBatches[i], c)
		}
	}
	r := &Result{NBCeiling: cs, Scenarios: []Scenario{{Name: "shardnet-3", PodsPerSecond: 100, NBTransactionsPerPod: 0.1}}}
	r.computeRatios()
	best := bestNBCeiling(cs)
	if want := 100 / best.PortsPerSecond; math.Abs(r.Ratios.NBPortsVsCeiling-want) > 1e-9 {
		t.Errorf("ratio %v, want %v", r.Ratios.NBPortsVsCeiling, want)
	}
	md := Markdown(r)
	for _, want := range []string{"## Northbound ceiling", "| 1000 |", "Northbound ports / the Northbound's own ceiling"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestStageLatencies: bucket counts scraped before and after a scenario
// give each stage's count and quantiles, in a pod's order, and the report
// shows them.
func TestStageLatencies(t *testing.T) {
	text := func(ipam1, ipam2, queue float64) string {
		return fmt.Sprintf(`# HELP shardnet_reconcile_stage_seconds x
shardnet_reconcile_stage_seconds_bucket{stage="ipam",le="0.001"} %v
shardnet_reconcile_stage_seconds_bucket{stage="ipam",le="0.002"} %v
shardnet_reconcile_stage_seconds_bucket{stage="ipam",le="+Inf"} %v
workqueue_queue_duration_seconds_bucket{name="pods",shard="3",le="0.01"} %v
workqueue_queue_duration_seconds_bucket{name="pods",shard="3",le="+Inf"} %v
workqueue_queue_duration_seconds_bucket{name="other",shard="3",le="+Inf"} 1000
shardnet_queue_idle_key_wait_seconds_bucket{name="pods",shard="3",le="0.001"} %v
shardnet_queue_idle_key_wait_seconds_bucket{name="pods",shard="3",le="+Inf"} %v
`, ipam1, ipam2, ipam2, queue, queue, queue/2, queue/2)
	}
	before, after := buckets{}, buckets{}
	parseStageBuckets(bufio.NewScanner(strings.NewReader(text(10, 10, 5))), before)
	parseStageBuckets(bufio.NewScanner(strings.NewReader(text(60, 110, 105))), after)
	got := stageLatencies(before, after)
	if len(got) != 3 || got[0].Stage != QueueStage || got[1].Stage != IdleQueueStage || got[2].Stage != "ipam" {
		t.Fatalf("stages %+v, want queue, queue (idle key), then ipam", got)
	}
	if idle := got[1]; idle.Count != 50 || idle.P99 > 1 {
		t.Errorf("idle-key wait %+v, want 50 observations at most 1 ms", idle)
	}
	ipam := got[2]
	// 100 new: 50 at or below 1 ms, 50 in (1, 2] ms.
	if ipam.Count != 100 || math.Abs(ipam.P50-1) > 1e-9 || math.Abs(ipam.P99-1.98) > 1e-9 {
		t.Errorf("ipam %+v, want 100 observations, p50 1 ms, p99 1.98 ms", ipam)
	}
	if q := got[0]; q.Count != 100 || q.P99 > 10 {
		t.Errorf("queue %+v, want 100 observations at most 10 ms (the other queue left out)", q)
	}
	md := Markdown(&Result{Scenarios: []Scenario{{Name: "shardnet-3", Stages: got}}})
	if !strings.Contains(md, "## Where a pod's time goes: shardnet-3") || !strings.Contains(md, "| ipam | 100 | 1.0 | 2.0 |") {
		t.Errorf("report:\n%s", md)
	}
}
