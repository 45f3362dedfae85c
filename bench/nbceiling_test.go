package bench

import (
	"context"
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
