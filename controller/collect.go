package controller

import (
	goruntime "runtime"
	rtmetrics "runtime/metrics"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// A replica's heap has two bursts of garbage: loading its caches (every
// object decoded, the informers' initial lists), and the first pass over
// the shards it takes at once (a restart, a failover), which reconciles
// every pod of them within seconds. The collector counts what is
// allocated while it marks as live for that cycle and sets the next heap
// goal at twice the live heap (GOGC=100), so a burst lifts the goal by
// twice the garbage it made during one marking: about 50 MB per replica at
// 50,000 pods, which was a restarted replica's peak RSS (decision 0009).
// A collection once each burst is over sets the goal from what is live
// again: one before joining the shard membership, and one whenever the
// first passes in progress are all over and together reconciled at least
// burstPods pods.

// burstPods is the size of a first pass, in pods, after which a
// collection is worth its cost: a pass allocates about 7 KB per pod, and
// under this the garbage is small beside the caches.
const burstPods = 5000

// collectHeap runs a collection, logs the live heap it left and returns
// it, in bytes.
func collectHeap(logger klog.Logger, why string) uint64 {
	start := time.Now()
	goruntime.GC()
	sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(sample)
	live := uint64(0)
	if sample[0].Value.Kind() == rtmetrics.KindUint64 {
		live = sample[0].Value.Uint64()
	}
	logger.Info("Heap collected", "after", why, "liveMiB", live>>20, "took", time.Since(start))
	return live
}

// passCollector counts the seeded keys of the shard terms whose first
// pass is not over, and collects the heap when the last of them ends a
// burst of at least burstPods.
type passCollector struct {
	// collect runs in its own goroutine; collectHeap but in tests.
	collect func(why string)

	mu      sync.Mutex
	pending int // seeded keys of terms not yet synced
	burst   int // seeded keys of the terms since the last time none was pending
}

// started records a term seeded with n keys.
func (p *passCollector) started(n int) {
	p.mu.Lock()
	p.pending += n
	p.burst += n
	p.mu.Unlock()
}

// ended records that a term seeded with n keys synced or stopped, and
// reports whether that started a collection.
func (p *passCollector) ended(n int) bool {
	p.mu.Lock()
	p.pending -= n
	fire := p.pending == 0 && p.burst >= burstPods
	if p.pending == 0 {
		p.burst = 0
	}
	p.mu.Unlock()
	if fire {
		go p.collect("first pass")
	}
	return fire
}

// inProgress is the number of seeded keys whose first pass is not over.
func (p *passCollector) inProgress() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pending
}
