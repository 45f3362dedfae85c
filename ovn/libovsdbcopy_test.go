package ovn

import (
	"runtime"
	"testing"
	"time"

	"github.com/cenkalti/rpc2/jsonrpc"
	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

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

// BenchmarkMonitorLoadCPU reports the CPU this process spends, and the
// time it takes, to connect and load 20,000 ports, with upstream's
// libovsdb and rpc2 (ovsdb.AsUpstream, jsonrpc.AsUpstream,
// cache.AsUpstream) and with the copies (third_party/), alternated in one
// run. Upstream checks the reply's bytes with encoding/json six times over
// before each row is decoded, checks each row twice more, encodes every
// set, map and UUID back to JSON to decode it again, converts every column
// through reflection, finds each field by name and grows the table's map
// row by row. The copies check the reply once where the codec reads it,
// decode each row in one pass, convert the decoded values directly and
// string columns without reflection, find fields by index and size the
// map once. A restarted replica loads the Northbound while its API caches
// load, on the same cores.
//
//	go test -run '^$' -bench MonitorLoadCPU -benchtime 3x ./ovn
func BenchmarkMonitorLoadCPU(b *testing.B) {
	const ports = 20000
	endpoint := filledNB(b, ports)
	asUpstream := func(on bool) { ovsdb.AsUpstream, jsonrpc.AsUpstream, cache.AsUpstream = on, on, on }
	defer asUpstream(false)
	var wall [2]time.Duration // upstream's, the copies'
	upstream, copied := sameRun(b, asUpstream, func() float64 {
		runtime.GC()
		cpu0 := processCPU()
		start := time.Now()
		c := connect(b, []string{endpoint}, false)
		took := time.Since(start)
		cpu := processCPU() - cpu0
		if _, ok := c.Port(bulkPort(ports - 1).Name); !ok {
			b.Fatal("ports not loaded")
		}
		c.Close()
		if ovsdb.AsUpstream {
			wall[0] += took
		} else {
			wall[1] += took
		}
		return cpu.Seconds()
	})
	n := float64(b.N)
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
