package controller

import (
	goruntime "runtime"
	"runtime/debug"
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
// again: one before joining the shard membership (when the live heap is
// at least BurstHeapFloor: collectAfterLoad), and one whenever the
// first passes in progress are all over and together reconciled at least
// burstPods pods.
//
// That sets the goal after a burst, not within it: a burst's own peak is
// the goal it starts with plus what it allocates while one collection
// marks. With Config.BurstGCPercent, a replica whose live heap is at
// least BurstHeapFloor runs its bursts (the caches' load, first passes)
// at that lower target (burstTarget), paying the collections it adds
// only then, and goes back to its own target when they are over.

// burstPods is the size of a first pass, in pods, after which a
// collection is worth its cost: a pass allocates about 7 KB per pod, and
// under this the garbage is small beside the caches.
const burstPods = 5000

// collectHeap runs a collection, logs the live heap it left and returns
// it, in bytes.
func collectHeap(logger klog.Logger, why string) uint64 {
	start := time.Now()
	goruntime.GC()
	live := liveHeap()
	logger.Info("Heap collected", "after", why, "liveMiB", live>>20, "took", time.Since(start))
	return live
}

// collectAfterLoad collects once the caches are loaded (collect) when
// the live heap the last collection left is at least floor. Under it the
// heap goal is small whatever it is, and a replica of a small cluster
// joins without waiting for a collection: about 20 ms of a 1,000-pod
// restart, a tenth of what it takes past the caches' load.
func collectAfterLoad(live, floor uint64, collect func()) bool {
	if live < floor {
		return false
	}
	collect()
	return true
}

// passCollector counts the seeded keys of the shard terms whose first
// pass is not over, and collects the heap when the last of them ends a
// burst of at least burstPods.
type passCollector struct {
	// collect runs in its own goroutine; collectHeap but in tests.
	collect func(why string)
	// target, if set, lowers the collector's target to percent while
	// keys are pending (burstTarget).
	target  *burstTarget
	percent int

	mu      sync.Mutex
	pending int // seeded keys of terms not yet synced; target entered while over 0
	burst   int // seeded keys of the terms since the last time none was pending
}

// started records a term seeded with n keys.
func (p *passCollector) started(n int) {
	p.mu.Lock()
	idle := p.pending == 0
	p.pending += n
	p.burst += n
	if idle && p.pending > 0 && p.target != nil {
		p.target.enter(p.percent)
	}
	p.mu.Unlock()
}

// ended records that a term seeded with n keys synced or stopped, and
// reports whether that started a collection.
func (p *passCollector) ended(n int) bool {
	p.mu.Lock()
	busy := p.pending > 0
	p.pending -= n
	fire := p.pending == 0 && p.burst >= burstPods
	if p.pending == 0 {
		p.burst = 0
		if busy && p.target != nil {
			// Before the collection, which sets the next goal from
			// the target put back.
			p.target.exit()
		}
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

// BurstHeapFloor is the live heap under which a burst leaves the
// collector's target alone: a small replica's whole heap costs little, and
// a lower target there would only add collections to a short restart.
const BurstHeapFloor = 64 << 20

// burstTarget lowers the collector's target (GOGC) while a burst runs in a
// replica whose live heap is at least floor, and puts it back when the
// last burst is over. A burst's peak is the heap goal, (1 + GOGC/100)
// times the live heap, plus what is allocated while a collection marks; a
// lower target for the burst alone lowers that peak for the collections
// of the burst, not for the steady state. The target is the process's, so
// one burstTarget serves every controller of a process (processBursts).
type burstTarget struct {
	floor uint64        // live heap under which the target is left alone
	every time.Duration // how often the live heap is read while a burst waits for floor
	live  func() uint64
	set   func(int) int // debug.SetGCPercent

	// waits counts the goroutines waiting for floor, for tests.
	waits sync.WaitGroup

	// liftTo is the heap goal a load is lifted to while the live heap
	// is under half of it (startLift); 0: never lifted.
	liftTo uint64
	// afterGC runs f after the next collection and after every one
	// after it until f returns false (afterEachGC); nil: never.
	afterGC func(f func() bool)

	mu      sync.Mutex
	bursts  int
	percent int  // the lowest target asked for by the bursts in progress until it was set; 0: none
	lowered bool // set lowered the target; saved is the one to put back
	lifts   int  // loads in progress (startLift)
	lifted  bool // set lifted the target; saved is the one to put back
	saved   int
	stop    chan struct{} // ends the wait for floor
}

// processBursts is the process's burst target.
var processBursts = &burstTarget{floor: BurstHeapFloor, every: 200 * time.Millisecond, live: liveHeap, set: debug.SetGCPercent,
	liftTo: BurstHeapFloor, afterGC: afterEachGC}

// liveHeap is the heap the last collection kept, in bytes.
func liveHeap() uint64 {
	sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(sample)
	if sample[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// enter starts a burst that asks for the target percent (0: asks for
// none, but counts). Every enter is matched by one exit.
func (b *burstTarget) enter(percent int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bursts++
	if percent > 0 && (b.percent == 0 || percent < b.percent) {
		b.percent = percent
	}
	if b.percent > 0 && !b.lowered && b.stop == nil {
		b.stop = make(chan struct{})
		b.waits.Add(1)
		go b.await(b.stop)
	}
}

// await lowers the target once the live heap reaches floor, unless stop
// is closed first.
func (b *burstTarget) await(stop chan struct{}) {
	defer b.waits.Done()
	tick := time.NewTicker(b.every)
	defer tick.Stop()
	for {
		if live := b.live(); live >= b.floor {
			b.lower(stop, live)
			return
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// lower sets the burst's target, which ends the wait, unless stop was
// closed meanwhile (the bursts are over). A target already at or under the
// burst's (or collection turned off) is kept.
func (b *burstTarget) lower(stop chan struct{}, live uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-stop:
		return
	default:
	}
	b.stop = nil
	prev := b.set(b.percent)
	if b.lifted {
		// The load's lift ends here: what to compare and put back is
		// the target from before it.
		prev, b.lifted = b.saved, false
	}
	if prev < 0 || prev <= b.percent {
		b.set(prev)
		return
	}
	b.saved, b.lowered = prev, true
	klog.Background().Info("Collector target lowered while a burst runs (the caches' load, first passes)", "percent", b.percent, "from", prev, "liveMiB", live>>20)
}

// A fresh replica's heap starts with a goal of 4 MiB and doubles it
// collection after collection while its caches load: at 1,000 pods, six
// or seven collections in the first quarter second, each marking what is
// live so far, a third of the CPU the replica spent loading (gctrace).
// While the caches load, the target is lifted so that the heap's goal is
// liftTo (BurstHeapFloor) as long as twice the live heap is less: a small
// replica then collects once or twice over its load, and its heap peaks
// at liftTo instead of twice its live heap. It is set again from the live
// heap after every collection, so that a replica whose caches are large
// is back at its own target once its live heap is half of liftTo, and
// lowered (lower) at liftTo as before.

// startLift starts a load: the target is lifted while the live heap is
// under half of liftTo, set again after every collection, until the last
// load ends (endLift).
func (b *burstTarget) startLift() {
	if b.liftTo == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lifts++
	if b.lifts > 1 {
		return
	}
	b.relift()
	if b.afterGC != nil {
		b.afterGC(func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.lifts == 0 {
				return false
			}
			b.relift()
			return true
		})
	}
}

// goMinHeap is the runtime's smallest heap goal at GOGC=100; at another
// target it scales with it.
const goMinHeap = 4 << 20

// liftPercent is the target whose heap goal from live is at most liftTo.
// The runtime's goal is the larger of (1 + GOGC/100) times the live heap
// and goMinHeap times GOGC/100, so a live heap under goMinHeap (none is
// read before the first collection) counts as goMinHeap: the target is
// then at most liftTo/goMinHeap*100.
func liftPercent(live, liftTo uint64) int {
	return int(liftTo/max(live, goMinHeap))*100 - 100
}

// relift sets the lifted target from the live heap, or puts back the one
// from before once twice the live heap reaches liftTo. The lowered
// target of a burst (lower) is left alone. b.mu is held.
func (b *burstTarget) relift() {
	if b.lowered || b.lifts == 0 {
		return
	}
	live := b.live()
	if live >= b.liftTo/2 {
		b.unlift()
		return
	}
	want := liftPercent(live, b.liftTo)
	if b.lifted && want <= b.saved {
		// The target from before is as high by now.
		b.unlift()
		return
	}
	prev := b.set(want)
	if b.lifted {
		return
	}
	if prev < 0 || prev >= want {
		// Collection off, or a target already as high: kept.
		b.set(prev)
		return
	}
	b.saved, b.lifted = prev, true
}

// unlift puts back the target from before the lift, if lifted. b.mu is
// held.
func (b *burstTarget) unlift() {
	if b.lifted {
		b.set(b.saved)
		b.lifted = false
	}
}

// endLift ends a load; the last one puts back the target from before the
// lift.
func (b *burstTarget) endLift() {
	if b.liftTo == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lifts == 0 {
		return
	}
	b.lifts--
	if b.lifts == 0 {
		b.unlift()
	}
}

// gcSentinel is what afterEachGC watches: it holds a pointer, so that it
// is not packed with other small objects (whose finalizers may never
// run).
type gcSentinel struct{ _ *byte }

// afterEachGC runs f once the next collection is over (on the finalizer
// goroutine), and after each one after it until f returns false.
func afterEachGC(f func() bool) {
	s := new(gcSentinel)
	goruntime.SetFinalizer(s, func(*gcSentinel) {
		if f() {
			afterEachGC(f)
		}
	})
}

// exit ends a burst; the last one puts the target back.
func (b *burstTarget) exit() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bursts == 0 {
		return
	}
	b.bursts--
	if b.bursts > 0 {
		return
	}
	if b.stop != nil {
		close(b.stop)
		b.stop = nil
	}
	if b.lowered {
		b.set(b.saved)
		b.lowered = false
		klog.Background().Info("Collector target put back: the burst is over", "percent", b.saved)
	}
	b.percent = 0
}
