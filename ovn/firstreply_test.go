package ovn

import (
	"math"
	"runtime"
	"testing"

	"github.com/cenkalti/rpc2/jsonrpc"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/test/harness"
)

// fillPorts writes n ports of bulkPort into switch "bulk", 500 a transaction.
func fillPorts(t testing.TB, c *Client, n int) {
	t.Helper()
	makeSwitch(t, c, "bulk")
	for i := 0; i < n; i += 500 {
		var ops []ovsdb.Operation
		for j := i; j < min(i+500, n); j++ {
			pops, _, err := c.EnsurePort(bulkPort(j))
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, pops...)
		}
		mustTransact(t, c, ops)
	}
}

// The reply to the first monitor is the largest message a connection reads.
// The codec (third_party/rpc2) starts a new decoder after it, so that its
// buffer is not kept, and the connection goes on working.
func TestFirstMonitorReplyIsNotKept(t *testing.T) {
	nb := harness.StartNB(t)
	w := connect(t, []string{nb.Endpoint}, false)
	const ports = 1000
	fillPorts(t, w, ports)

	saved := jsonrpc.ReleaseAbove
	jsonrpc.ReleaseAbove = 64 << 10 // the reply of 1,000 ports is about 250 KB
	before := jsonrpc.Released.Load()
	c := connect(t, []string{nb.Endpoint}, false)
	jsonrpc.ReleaseAbove = saved
	if jsonrpc.Released.Load() == before {
		t.Fatal("no decoder was renewed after the first monitor reply")
	}
	for i := range ports {
		if _, ok := c.Port(bulkPort(i).Name); !ok {
			t.Fatalf("port %d missing from the cache", i)
		}
	}
	// The connection still reads: a port written by the other client
	// arrives as an update, and a transaction of this one is answered.
	ops, _, err := w.EnsurePort(bulkPort(ports))
	if err != nil {
		t.Fatal(err)
	}
	mustTransact(t, w, ops)
	eventually(t, "the new port in the cache", func() bool { _, ok := c.Port(bulkPort(ports).Name); return ok })
	if rows := selectRows(t, c, "Logical_Switch_Port", "name"); len(rows) != ports+1 {
		t.Fatalf("select through the connection: %d rows, want %d", len(rows), ports+1)
	}
}

// BenchmarkFirstMonitorReplyRetained reports the heap a connection keeps once
// it has loaded 20,000 ports, with the codec's buffer of the first monitor
// reply kept for the connection's life (upstream's behaviour, the baseline)
// and released after the reply (third_party/rpc2), in the same run.
//
//	go test -run '^$' -bench FirstMonitorReplyRetained -benchtime 1x ./ovn
func BenchmarkFirstMonitorReplyRetained(b *testing.B) {
	const ports = 20000
	endpoint := filledNB(b, ports)
	saved := jsonrpc.ReleaseAbove
	defer func() { jsonrpc.ReleaseAbove = saved }()
	keptMB, releasedMB := sameRun(b, func(baseline bool) {
		jsonrpc.ReleaseAbove = saved
		if baseline {
			jsonrpc.ReleaseAbove = math.MaxInt64
		}
	}, func() float64 { return loadedHeap(b, endpoint, ports) / (1 << 20) })
	b.ReportMetric(keptMB, "kept-MiB")
	b.ReportMetric(releasedMB, "released-MiB")
	b.ReportMetric(releasedMB/keptMB, "released/kept")
}

// sameRun returns measure's mean over b.N rounds with the baseline set
// (set(true)) and with the change (set(false)), alternating in one run.
func sameRun(b *testing.B, set func(baseline bool), measure func() float64) (baseline, changed float64) {
	for range b.N {
		set(true)
		baseline += measure()
		set(false)
		changed += measure()
	}
	n := float64(b.N)
	return baseline / n, changed / n
}

// filledNB starts a Northbound server holding ports of bulkPort and
// returns its endpoint.
func filledNB(b *testing.B, ports int) string {
	nb := harness.StartNB(b)
	fillPorts(b, connect(b, []string{nb.Endpoint}, false), ports)
	return nb.Endpoint
}

// loadedHeap returns the heap a new connection keeps once it has loaded
// the database, whose last port is bulkPort(ports-1).
func loadedHeap(b *testing.B, endpoint string, ports int) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := connect(b, []string{endpoint}, false)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if _, ok := c.Port(bulkPort(ports - 1).Name); !ok {
		b.Fatal("ports not loaded")
	}
	c.Close()
	return float64(after.HeapAlloc) - float64(before.HeapAlloc)
}
