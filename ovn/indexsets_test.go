package ovn

import (
	"testing"

	"github.com/ovn-kubernetes/libovsdb/cache"

	"github.com/shardnet/shardnet/test/harness"
)

// BenchmarkIndexSetsRetained reports the heap a connection keeps once it
// has loaded 20,000 ports, with a set for every value of every index
// (upstream libovsdb's cache, the baseline) and with the one row of a
// value kept inline (third_party/libovsdb), in the same run. A port has
// two index values: its name and its pod.
//
//	go test -run '^$' -bench IndexSetsRetained -benchtime 1x ./ovn
func BenchmarkIndexSetsRetained(b *testing.B) {
	const ports = 20000
	nb := harness.StartNB(b)
	w := connect(b, []string{nb.Endpoint}, false)
	fillPorts(b, w, ports)
	defer func() { cache.SetsOfOne = false }()
	kept := func(setsOfOne bool) float64 {
		cache.SetsOfOne = setsOfOne
		return loadedHeap(b, nb.Endpoint, ports)
	}
	var sets, inline float64
	for range b.N {
		sets += kept(true)
		inline += kept(false)
	}
	n := float64(b.N)
	b.ReportMetric(sets/n/(1<<20), "sets-MiB")
	b.ReportMetric(inline/n/(1<<20), "inline-MiB")
	b.ReportMetric((sets-inline)/n/ports, "saved-B/port")
	b.ReportMetric(inline/sets, "inline/sets")
}
