package ovn

import (
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/cenkalti/rpc2/jsonrpc"
	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/test/harness"
)

// TestFirstMonitorLoadsAsUpstream: what a connection caches from its first
// monitor is the same, in every table shardnet monitors, with the copies
// (the reply read in one pass, each row made its model as it is read and
// cached as made) as with upstream's libovsdb and rpc2; and a port written
// afterwards still arrives as an update.
func TestFirstMonitorLoadsAsUpstream(t *testing.T) {
	nb := harness.StartNB(t)
	w := connect(t, []string{nb.Endpoint}, false)
	const ports = 500
	fillPorts(t, w, ports)
	cached := func(c *Client) map[string]map[string]model.Model {
		tc := c.nb.Cache()
		out := map[string]map[string]model.Model{}
		for _, table := range tc.Tables() {
			out[table] = tc.Table(table).Rows()
		}
		return out
	}
	defer asUpstream(false)

	asUpstream(true)
	built := ovsdb.ModelsBuilt.Load()
	up := connect(t, []string{nb.Endpoint}, false)
	want := cached(up)
	if n := ovsdb.ModelsBuilt.Load() - built; n != 0 {
		t.Fatalf("upstream's decoding made %d models while reading", n)
	}
	asUpstream(false)
	c := connect(t, []string{nb.Endpoint}, false)
	got := cached(c)
	if n := ovsdb.ModelsBuilt.Load() - built; n < ports {
		t.Fatalf("%d models made while the reply was read, want one a row (%d ports and more)", n, ports)
	}
	if len(want[nbdb.LogicalSwitchPortTable]) != ports {
		t.Fatalf("upstream cached %d ports, want %d", len(want[nbdb.LogicalSwitchPortTable]), ports)
	}
	if !reflect.DeepEqual(got, want) {
		for table := range want {
			if !reflect.DeepEqual(got[table], want[table]) {
				t.Errorf("table %s: upstream cached %d rows, the copies %d, or rows differ", table, len(want[table]), len(got[table]))
			}
		}
		t.Fatal("the copies cache other rows than upstream")
	}
	ops, _, err := w.EnsurePort(bulkPort(ports))
	if err != nil {
		t.Fatal(err)
	}
	mustTransact(t, w, ops)
	for _, conn := range []*Client{up, c} {
		eventually(t, "the new port in the cache", func() bool { _, ok := conn.Port(bulkPort(ports).Name); return ok })
	}
}

// asUpstream brings upstream's libovsdb and rpc2 back (on) or the copies'
// behaviour (off), in all three places they differ.
func asUpstream(on bool) { ovsdb.AsUpstream, jsonrpc.AsUpstream, cache.AsUpstream = on, on, on }

// The benchmarks of the changes in libovsdb's cache (third_party/libovsdb),
// each against upstream's behaviour (cache.AsUpstream) in the same run.

// BenchmarkIndexSetsRetained reports the heap a connection keeps once it
// has loaded 20,000 ports, with a set for every value of every index
// (upstream) and with the one row of a value kept inline. A port has two
// index values: its name and its pod.
//
//	go test -run '^$' -bench IndexSetsRetained -benchtime 1x ./ovn
func BenchmarkIndexSetsRetained(b *testing.B) {
	const ports = 20000
	endpoint := filledNB(b, ports)
	defer func() { cache.AsUpstream = false }()
	sets, inline := sameRun(b, func(baseline bool) { cache.AsUpstream = baseline },
		func() float64 { return loadedHeap(b, endpoint, ports) })
	b.ReportMetric(sets/(1<<20), "sets-MiB")
	b.ReportMetric(inline/(1<<20), "inline-MiB")
	b.ReportMetric((sets-inline)/ports, "saved-B/port")
	b.ReportMetric(inline/sets, "inline/sets")
}

// BenchmarkMonitorLoadPeak reports the most heap a connection holds while
// it loads 20,000 ports (what a collection keeps, sampled by collecting
// again and again while the connection loads), with upstream's cache
// (index sets of one, and the decoded reply kept whole until the cache
// holds every row) and with this copy's (each decoded row dropped once it
// is in the cache). A restarted replica loads its caches all at once, so
// this part of its peak adds to theirs.
//
//	go test -run '^$' -bench MonitorLoadPeak -benchtime 1x ./ovn
func BenchmarkMonitorLoadPeak(b *testing.B) {
	const ports = 20000
	endpoint := filledNB(b, ports)
	defer func() { cache.AsUpstream = false }()
	peak := func() float64 {
		var base runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&base)
		stop, peakCh := make(chan struct{}), make(chan uint64)
		go func() {
			var m runtime.MemStats
			var most uint64
			for {
				select {
				case <-stop:
					peakCh <- most
					return
				default:
				}
				runtime.GC()
				runtime.ReadMemStats(&m)
				most = max(most, m.HeapAlloc)
			}
		}()
		c := connect(b, []string{endpoint}, false)
		close(stop)
		most := <-peakCh
		if _, ok := c.Port(bulkPort(ports - 1).Name); !ok {
			b.Fatal("ports not loaded")
		}
		c.Close()
		return float64(most-base.HeapAlloc) / (1 << 20)
	}
	whole, dropped := sameRun(b, func(baseline bool) { cache.AsUpstream = baseline }, peak)
	b.ReportMetric(whole, "whole-MiB")
	b.ReportMetric(dropped, "dropped-MiB")
	b.ReportMetric(dropped/whole, "dropped/whole")
}

// BenchmarkMonitorLoadCPU reports the CPU this process spends, the time
// it takes and the heap it allocates to connect and load 20,000 ports,
// with upstream's
// libovsdb and rpc2 (ovsdb.AsUpstream, jsonrpc.AsUpstream,
// cache.AsUpstream) and with the copies (third_party/), alternated in one
// run. Upstream checks the reply's bytes with encoding/json six times over
// before each row is decoded, checks each row twice more, encodes every
// set, map and UUID back to JSON to decode it again, converts every column
// through reflection, finds each field by name and grows the table's map
// row by row, then caches a copy of each model. The copies check the
// reply once where the codec reads it, read it in one more pass, make
// each row its model as they read it, convert the decoded values directly
// and string columns without reflection, find fields by index, size the
// map once and cache the models they made. A restarted replica loads the Northbound while its API caches
// load, on the same cores.
//
//	go test -run '^$' -bench MonitorLoadCPU -benchtime 3x ./ovn
func BenchmarkMonitorLoadCPU(b *testing.B) {
	const ports = 20000
	endpoint := filledNB(b, ports)
	defer asUpstream(false)
	var wall [2]time.Duration // upstream's, the copies'
	var alloc [2]uint64       // bytes allocated, likewise
	upstream, copied := sameRun(b, asUpstream, func() float64 {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		cpu0 := processCPU()
		start := time.Now()
		c := connect(b, []string{endpoint}, false)
		took := time.Since(start)
		cpu := processCPU() - cpu0
		runtime.ReadMemStats(&m1)
		if _, ok := c.Port(bulkPort(ports - 1).Name); !ok {
			b.Fatal("ports not loaded")
		}
		c.Close()
		side := 1
		if ovsdb.AsUpstream {
			side = 0
		}
		wall[side] += took
		alloc[side] += m1.TotalAlloc - m0.TotalAlloc
		return cpu.Seconds()
	})
	n := float64(b.N)
	b.ReportMetric(float64(alloc[0])/n/(1<<20), "upstream-alloc-MiB")
	b.ReportMetric(float64(alloc[1])/n/(1<<20), "copy-alloc-MiB")
	b.ReportMetric(upstream, "upstream-cpu-s")
	b.ReportMetric(copied, "copy-cpu-s")
	b.ReportMetric(copied/upstream, "copy/upstream-cpu")
	b.ReportMetric(wall[0].Seconds()/n, "upstream-s")
	b.ReportMetric(wall[1].Seconds()/n, "copy-s")
}

// BenchmarkPortLookupAlloc reports the heap allocated by a reconcile's two
// lookups of a port in a cache of 20,000 (by name, a schema index, and by
// pod, a client index), through upstream's generic search and through the
// copy's index lookup without a condition (RowsByIndexValue, which
// lookupBy asks first). A restarted replica
// reconciles every pod of its shards at once, and what that pass
// allocates while a collection marks counts as live in that collection,
// so it lifts the next heap goal.
//
//	go test -run '^$' -bench PortLookupAlloc -benchtime 1x ./ovn
func BenchmarkPortLookupAlloc(b *testing.B) {
	const ports, lookups = 20000, 2000
	endpoint := filledNB(b, ports)
	c := connect(b, []string{endpoint}, false)
	defer c.Close()
	defer func() { cache.AsUpstream = false }()
	perLookup := func() float64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range lookups {
			p := bulkPort(i * (ports / lookups))
			if _, ok := c.Port(p.Name); !ok {
				b.Fatalf("port %s not found", p.Name)
			}
			if got := c.PortsByPod(p.Pod); len(got) != 1 || got[0].Name != p.Name {
				b.Fatalf("pod %s: %d ports", p.Pod, len(got))
			}
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / lookups
	}
	search, shortcut := sameRun(b, func(baseline bool) { cache.AsUpstream = baseline }, perLookup)
	b.ReportMetric(search, "search-B/pair")
	b.ReportMetric(shortcut, "shortcut-B/pair")
	b.ReportMetric(shortcut/search, "shortcut/search")
}
