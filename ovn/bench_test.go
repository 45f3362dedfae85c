package ovn

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/test/harness"
)

// BenchmarkPortWrites measures ports/s against one ovsdb-server in one run:
// one transaction per port from one caller and from 32 callers, and the
// batcher with 32 callers. Each mode writes into a switch of its own so the
// modes see the same switch sizes. The figure that matters is the ratio
// batched32/unbatched32, which compares shardnet with the raw rate measured
// in the same run on the same machine.
//
//	go test -run '^$' -bench BenchmarkPortWrites -benchtime 1x ./ovn
func BenchmarkPortWrites(b *testing.B) {
	// Every mode fills a fresh switch with as many ports as a large
	// subnet holds: the server's cost per transaction grows with the
	// switch, and that is where batching pays.
	const portsPerMode = 5000
	nb := harness.StartNB(b)
	c := connect(b, []string{nb.Endpoint}, false)
	bm := &benchMetrics{}
	batcher := newShardBatcher(b, c, 0, 1, BatcherConfig{Metrics: bm})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	type mode struct {
		name    string
		ports   int
		callers int
		write   func(ops []ovsdb.Operation) error
	}
	unbatched := func(ops []ovsdb.Operation) error { _, err := c.Transact(ctx, ops...); return err }
	batched := func(ops []ovsdb.Operation) error { _, err := batcher.Submit(ctx, ops...); return err }
	modes := []mode{
		{"sequential", portsPerMode, 1, unbatched},
		{"unbatched32", portsPerMode, 32, unbatched},
		{"batched32", portsPerMode, 32, batched},
	}
	elapsed := make([]time.Duration, len(modes))
	cpu := make([]time.Duration, len(modes))
	written := make([]int, len(modes))
	for iter := range b.N {
		for mi, m := range modes {
			sw := fmt.Sprintf("bench-%d-%s", iter, m.name)
			makeSwitch(b, c, sw)
			var next atomic.Int64
			var wg sync.WaitGroup
			start, cpu0 := time.Now(), processCPU()
			for range m.callers {
				wg.Go(func() {
					for {
						i := int(next.Add(1)) - 1
						if i >= m.ports || ctx.Err() != nil {
							return
						}
						spec := bulkPort(i)
						spec.Name = sw + "-" + spec.Name
						spec.Switch = sw
						ops, _, err := c.EnsurePort(spec)
						if err == nil {
							err = m.write(ops)
						}
						if err != nil {
							b.Errorf("%s port %d: %v", m.name, i, err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed[mi] += time.Since(start)
			cpu[mi] += processCPU() - cpu0
			written[mi] += m.ports
		}
	}
	rates := make([]float64, len(modes))
	for i, m := range modes {
		rates[i] = float64(written[i]) / elapsed[i].Seconds()
		b.ReportMetric(rates[i], m.name+"_ports/s")
		b.ReportMetric(float64(cpu[i].Microseconds())/float64(written[i]), m.name+"_client_cpu_us/port")
	}
	ratio := rates[2] / rates[1]
	b.ReportMetric(ratio, "batched32/unbatched32")
	if n := bm.txns.Load(); n > 0 {
		b.ReportMetric(float64(bm.requests.Load())/float64(n), "requests/txn")
		b.ReportMetric(float64(bm.latency.Load())/float64(n)/1e3, "us/txn")
	}
	b.Logf("ports/s: sequential %.0f, unbatched 32 callers %.0f, batched 32 callers %.0f; batched/unbatched32 = %.1fx",
		rates[0], rates[1], rates[2], ratio)
}

// processCPU is this process's CPU time (the client side; ovsdb-server is
// another process). On a shared 2-core machine the wall-clock rates move
// with the neighbours' load; CPU per port does not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchMetrics sums what the batcher reports, for the benchmark's figures.
type benchMetrics struct {
	txns, requests, latency atomic.Int64
}

func (m *benchMetrics) ObserveTransaction(_ int, requests, _ int, latency time.Duration, _ Outcome) {
	m.txns.Add(1)
	m.requests.Add(int64(requests))
	m.latency.Add(int64(latency))
}

func (m *benchMetrics) ObserveSplit(int) {}

// BenchmarkEnsurePortNoop measures the Northbound reads of a reconcile
// that finds a pod's port as it should be, in one run: the key's ports by
// their external_ids:pod (the plan's read), then the port built from that
// row (EnsurePortFrom), against the same with the port and its switch
// searched again (Port, then EnsurePort). A restart reconciles every pod
// this way once.
//
//	go test -run '^$' -bench EnsurePortNoop ./ovn
func BenchmarkEnsurePortNoop(b *testing.B) {
	const ports = 2000
	nb := harness.StartNB(b)
	c := connect(b, []string{nb.Endpoint}, false)
	makeSwitch(b, c, "bulk")
	for i := 0; i < ports; i += 100 {
		var ops []ovsdb.Operation
		for j := i; j < i+100; j++ {
			pops, _, err := c.EnsurePort(bulkPort(j))
			if err != nil {
				b.Fatal(err)
			}
			ops = append(ops, pops...)
		}
		mustTransact(b, c, ops)
	}
	eventually(b, "ports in cache", func() bool { _, ok := c.Port(bulkPort(ports - 1).Name); return ok })

	noop := func(ops []ovsdb.Operation, err error) {
		if err != nil || len(ops) > 0 {
			b.Fatalf("a port as it should be: %d ops, %v", len(ops), err)
		}
	}
	searched := func(spec PortSpec) {
		_ = c.PortsByPod(spec.Pod)
		if _, ok := c.Port(spec.Name); !ok {
			b.Fatalf("port %s not cached", spec.Name)
		}
		ops, _, err := c.EnsurePort(spec)
		noop(ops, err)
	}
	fromRow := func(spec PortSpec) {
		rows := c.PortsByPod(spec.Pod)
		if len(rows) != 1 {
			b.Fatalf("port of %s: %d rows", spec.Pod, len(rows))
		}
		ops, _, err := c.EnsurePortFrom(spec, rows[0])
		noop(ops, err)
	}
	measure := func(f func(PortSpec)) (perPort time.Duration, bytes float64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		for i := range b.N {
			f(bulkPort(i % ports))
		}
		perPort = time.Since(start) / time.Duration(b.N)
		runtime.ReadMemStats(&after)
		return perPort, float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N)
	}
	b.ResetTimer()
	st, sb := measure(searched)
	rt, rb := measure(fromRow)
	b.StopTimer()
	b.ReportMetric(float64(st.Nanoseconds()), "searched-ns/port")
	b.ReportMetric(float64(rt.Nanoseconds()), "from-row-ns/port")
	b.ReportMetric(sb, "searched-B/port")
	b.ReportMetric(rb, "from-row-B/port")
	b.ReportMetric(float64(rt)/float64(st), "from-row/searched")
}
