package controller

import (
	goruntime "runtime"
	rtmetrics "runtime/metrics"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// A pass that recurs and makes about the same garbage each time (the
// status loop's re-read of the addresses in use: every cached pod, IP
// record and Northbound port read again and their holds collected, tens
// of megabytes in half a second at 50,000 pods) lifts the heap goal when
// it runs while a collection marks: what is allocated then counts as live
// for that cycle, and the next goal is twice the live heap. That fits
// the spread of a 50,000-pod replica's peak while routing, 40–60 MiB
// between replicas and runs, which the runs with roomyPass no longer
// showed (decision 0009: two runs with it, two without).
//
// roomyPass runs such a pass where the heap goal has room for it. When
// the live heap is at least BurstHeapFloor and the heap in use is less
// than twice the pass's last garbage under the goal (a collection due
// soon, or marking already), it collects first: the pass then allocates
// at the start of a cycle, and its garbage goes with the next collection
// instead of lifting the goal. The collection it runs is one the pass's
// garbage would have started a little later, so it moves collections
// more than it adds them. Small replicas, under the floor, never
// collect here.
type roomyPass struct {
	what    string
	floor   uint64
	read    func() heapState
	collect func()

	mu   sync.Mutex
	last uint64 // what the process allocated while the last pass ran, bytes
}

// heapState is what roomyPass reads of the heap, in bytes.
type heapState struct {
	live      uint64 // what the last collection kept
	inUse     uint64 // heap objects now, garbage not yet collected included
	goal      uint64 // the heap goal of the cycle in progress
	allocated uint64 // allocated since the process started
}

// heapMetrics are the runtime metrics of heapState, in its order.
var heapMetrics = []string{"/gc/heap/live:bytes", "/memory/classes/heap/objects:bytes", "/gc/heap/goal:bytes", "/gc/heap/allocs:bytes"}

// readHeap reads heapState from the runtime's metrics; a metric the
// runtime does not have reads 0.
func readHeap() heapState {
	samples := make([]rtmetrics.Sample, len(heapMetrics))
	for i, n := range heapMetrics {
		samples[i].Name = n
	}
	rtmetrics.Read(samples)
	v := make([]uint64, len(samples))
	for i, s := range samples {
		if s.Value.Kind() == rtmetrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	return heapState{live: v[0], inUse: v[1], goal: v[2], allocated: v[3]}
}

// RoomForPass returns a runner of a recurring pass (what names it in the
// log) that makes room in the heap goal for the pass's garbage before each
// run (roomyPass). Each runner learns its own pass's garbage; give each
// kind of pass its own.
func RoomForPass(what string) func(pass func()) {
	p := &roomyPass{what: what, floor: BurstHeapFloor, read: readHeap, collect: goruntime.GC}
	return p.run
}

// run runs pass, collecting first when the goal has too little room for
// the garbage pass made last time.
func (p *roomyPass) run(pass func()) {
	p.mu.Lock()
	need := p.last
	p.mu.Unlock()
	h := p.read()
	if need > 0 && h.live >= p.floor && h.goal > 0 && (h.inUse >= h.goal || h.goal-h.inUse < 2*need) {
		start := time.Now()
		p.collect()
		room := int64(h.goal) - int64(h.inUse)
		klog.Background().Info("Heap collected to make room for a pass", "pass", p.what, "needMiB", need>>20, "roomMiB", room>>20, "liveMiB", h.live>>20, "took", time.Since(start))
	}
	before := p.read().allocated
	pass()
	after := p.read().allocated
	p.mu.Lock()
	p.last = after - before
	p.mu.Unlock()
}
