package controller

import (
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// TestPassCollector: the heap is collected once when the first passes in
// progress are all over and together seeded burstPods keys or more; not
// for a smaller burst, not while a pass is still going, and a burst does
// not add up across moments when none was in progress.
func TestPassCollector(t *testing.T) {
	collected := make(chan string, 4)
	p := &passCollector{collect: func(why string) { collected <- why }}

	half := burstPods / 2
	p.started(half)
	p.started(half)
	if p.ended(half) {
		t.Fatal("collected while a pass was in progress")
	}
	if !p.ended(half) {
		t.Fatal("not collected after a burst of burstPods")
	}
	if why := <-collected; why != "first pass" {
		t.Fatalf("collected after %q", why)
	}

	// Two small bursts, one after the other, do not add up.
	for range 2 {
		p.started(half)
		if p.ended(half) {
			t.Fatal("collected after a burst under burstPods")
		}
	}

	// A term that stops before its pass is over ends it too; an empty
	// term changes nothing.
	p.started(0)
	p.ended(0)
	p.started(burstPods)
	p.started(0)
	if p.ended(0) {
		t.Fatal("an empty term ended a pass in progress")
	}
	if !p.ended(burstPods) {
		t.Fatal("not collected after the last pass stopped")
	}
	<-collected
	if p.pending != 0 || p.burst != 0 {
		t.Fatalf("left pending %d, burst %d", p.pending, p.burst)
	}
}

// TestCollectHeap: the collection reports the live heap, which holds at
// least what this test keeps alive across it.
func TestCollectHeap(t *testing.T) {
	kept := make([]byte, 8<<20)
	if live := collectHeap(klog.Background(), "a test"); live < uint64(len(kept)) {
		t.Fatalf("live heap %d bytes, less than the %d kept", live, len(kept))
	}
	goruntime.KeepAlive(kept)
}

// TestCloseSyncEndsPass: a shard term released before its first pass is
// over ends that pass for the heap collector; one released after its
// pass synced is not counted twice.
func TestCloseSyncEndsPass(t *testing.T) {
	c := &Controller{}
	c.passes.collect = func(string) {}
	cut := &shardRun{seeded: 2}
	c.passes.started(cut.seeded)
	cut.sync = newSeedSync([]string{"a/p", "a/q"}, func(time.Duration) { c.passes.ended(2) })
	done := &shardRun{seeded: 1}
	c.passes.started(done.seeded)
	done.sync = newSeedSync([]string{"a/r"}, func(time.Duration) { c.passes.ended(1) })
	done.sync.done("a/r", nil)
	if n := c.passes.inProgress(); n != 2 {
		t.Fatalf("%d keys in progress, want the cut term's 2", n)
	}
	if c.closeSync(cut) {
		t.Fatal("a term with keys pending reported synced")
	}
	if !c.closeSync(done) {
		t.Fatal("a synced term reported not synced")
	}
	if n := c.passes.inProgress(); n != 0 {
		t.Fatalf("%d keys still in progress after both terms stopped", n)
	}
}

// fakeTarget is the process's collector target for burstTarget's tests:
// set records every value it is given.
type fakeTarget struct {
	mu   sync.Mutex
	now  int
	sets []int
}

func (f *fakeTarget) set(p int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.now
	f.now = p
	f.sets = append(f.sets, p)
	return prev
}

func (f *fakeTarget) get() (int, []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now, append([]int(nil), f.sets...)
}

// isLowered reports whether the target is the burst's now.
func (b *burstTarget) isLowered() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lowered
}

// TestBurstTarget: a burst lowers the collector's target once the live
// heap reaches the floor, not before; nested bursts keep it lowered until
// the last ends, which puts back the target from before; a burst that
// ends before the floor, or a target already at or under the burst's,
// leaves the target as it was.
func TestBurstTarget(t *testing.T) {
	// reading tells that the wait is reading the live heap (it waits on
	// live next).
	reading := make(chan struct{}, 1)
	newTarget := func(now int) (*burstTarget, *fakeTarget, chan uint64) {
		f := &fakeTarget{now: now}
		live := make(chan uint64)
		read := func() uint64 {
			select {
			case reading <- struct{}{}:
			default:
			}
			v, ok := <-live
			if !ok {
				return 1000 // closed: over the floor from now on
			}
			return v
		}
		return &burstTarget{floor: 100, every: time.Millisecond, live: read, set: f.set}, f, live
	}

	t.Run("lowered at the floor, put back by the last exit", func(t *testing.T) {
		b, f, live := newTarget(100)
		b.enter(50)
		live <- 10
		live <- 20
		if now, sets := f.get(); now != 100 || len(sets) != 0 {
			t.Fatalf("under the floor: target %d after sets %v, want 100 untouched", now, sets)
		}
		live <- 100
		b.waits.Wait()
		if now, _ := f.get(); now != 50 || !b.isLowered() {
			t.Fatalf("at the floor: target %d (lowered %v), want 50", now, b.isLowered())
		}
		b.enter(0) // a second burst, nested: no second wait
		b.waits.Wait()
		b.exit()
		if now, _ := f.get(); now != 50 {
			t.Fatalf("target %d with a burst still in progress, want 50", now)
		}
		b.exit()
		if now, sets := f.get(); now != 100 || b.isLowered() {
			t.Fatalf("after the last burst: target %d (sets %v), want 100 back", now, sets)
		}
		b.exit() // an extra exit changes nothing
		if _, sets := f.get(); len(sets) != 2 {
			t.Fatalf("sets %v, want the burst's and the one put back", sets)
		}
	})

	t.Run("a burst over before the floor", func(t *testing.T) {
		for len(reading) > 0 {
			<-reading
		}
		b, f, live := newTarget(100)
		b.enter(50)
		<-reading
		live <- 10
		<-reading
		// The wait reads the heap again, and the burst ends meanwhile:
		// the floor it finds then must not lower the target.
		b.exit()
		close(live)
		b.waits.Wait()
		if now, sets := f.get(); now != 100 || len(sets) != 0 {
			t.Fatalf("target %d after sets %v, want 100 untouched", now, sets)
		}
	})

	t.Run("a target already low, or collection off, is kept", func(t *testing.T) {
		for _, now := range []int{25, 50, -1} {
			b, f, live := newTarget(now)
			b.enter(50)
			live <- 1000
			b.waits.Wait()
			b.exit()
			if got, sets := f.get(); got != now || b.isLowered() {
				t.Errorf("target %d: %d after sets %v, want it kept", now, got, sets)
			}
		}
	})

	t.Run("the lowest target asked for", func(t *testing.T) {
		b, f, live := newTarget(100)
		b.enter(0)
		b.enter(70)
		b.enter(40)
		live <- 1000
		b.waits.Wait()
		if now, _ := f.get(); now != 40 {
			t.Fatalf("target %d, want 40, the lowest asked for", now)
		}
		for range 3 {
			b.exit()
		}
		if now, _ := f.get(); now != 100 {
			t.Fatalf("target %d after every burst, want 100", now)
		}
	})
}

// TestPassCollectorBursts: the pass collector holds the burst target
// while any seeded key is pending, once however many terms overlap, and
// an empty term neither enters nor exits.
func TestPassCollectorBursts(t *testing.T) {
	f := &fakeTarget{now: 100}
	b := &burstTarget{floor: 0, every: time.Millisecond, live: func() uint64 { return 0 }, set: f.set}
	p := &passCollector{collect: func(string) {}, target: b, percent: 50}
	bursts := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.bursts
	}
	p.started(0)
	p.ended(0)
	if n := bursts(); n != 0 {
		t.Fatalf("an empty term entered %d bursts", n)
	}
	p.started(10)
	p.started(5)
	if n := bursts(); n != 1 {
		t.Fatalf("two overlapping terms hold %d bursts, want 1", n)
	}
	b.waits.Wait()
	if now, _ := f.get(); now != 50 {
		t.Fatalf("target %d during the passes, want 50", now)
	}
	p.ended(10)
	if n := bursts(); n != 1 {
		t.Fatalf("%d bursts with a pass still pending, want 1", n)
	}
	p.ended(5)
	if n := bursts(); n != 0 {
		t.Fatalf("%d bursts after every pass, want 0", n)
	}
	if now, _ := f.get(); now != 100 {
		t.Fatalf("target %d after the passes, want 100 back", now)
	}
}

func TestCollectAfterLoad(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want bool
	}{{0, false}, {BurstHeapFloor - 1, false}, {BurstHeapFloor, true}, {4 * BurstHeapFloor, true}} {
		collected := false
		if got := collectAfterLoad(c.live, BurstHeapFloor, func() { collected = true }); got != c.want || collected != c.want {
			t.Errorf("live heap %d: collected %v (reported %v), want %v", c.live, collected, got, c.want)
		}
	}
}

// TestLoadLift: while a load runs, the collector's target is lifted so
// that the heap's goal is liftTo, set again from the live heap after every
// collection, put back once the live heap is half of liftTo and when the
// last load ends; a target already higher, or collection off, is kept;
// and a burst lowered at its floor puts back the target from before the
// lift, not the lift.
func TestLoadLift(t *testing.T) {
	const mib = 1 << 20
	newTarget := func(now int) (*burstTarget, *fakeTarget, *atomic.Uint64, *func() bool) {
		f := &fakeTarget{now: now}
		var live atomic.Uint64
		hook := new(func() bool)
		b := &burstTarget{floor: 64 * mib, liftTo: 64 * mib, every: time.Millisecond, live: live.Load, set: f.set,
			afterGC: func(g func() bool) { *hook = g }}
		return b, f, &live, hook
	}
	want := func(t *testing.T, f *fakeTarget, target int, why string) {
		t.Helper()
		if now, sets := f.get(); now != target {
			t.Fatalf("%s: target %d (sets %v), want %d", why, now, sets, target)
		}
	}

	t.Run("lifted, followed, put back", func(t *testing.T) {
		b, f, live, hook := newTarget(100)
		b.startLift()
		// No collection yet: the live heap counts as the runtime's 4 MiB
		// minimum, so that its minimum goal at the target is under liftTo.
		want(t, f, 1500, "before the first collection")
		live.Store(8 * mib)
		if !(*hook)() {
			t.Fatal("the hook stopped while the load runs")
		}
		want(t, f, 700, "8 MiB live")
		live.Store(11 * mib)
		(*hook)()
		want(t, f, 400, "11 MiB live (the goal 55 MiB, under liftTo)")
		live.Store(32 * mib)
		(*hook)()
		want(t, f, 100, "half of liftTo live")
		live.Store(10 * mib)
		(*hook)()
		want(t, f, 500, "10 MiB live again")
		b.startLift() // nested
		b.endLift()
		want(t, f, 500, "a load still running")
		b.endLift()
		want(t, f, 100, "after the last load")
		if (*hook)() {
			t.Fatal("the hook keeps running after the last load")
		}
		b.endLift() // an extra end changes nothing
		want(t, f, 100, "after an extra end")
	})

	t.Run("never under the target from before", func(t *testing.T) {
		b, f, live, hook := newTarget(300)
		live.Store(8 * mib)
		b.startLift()
		want(t, f, 700, "8 MiB live")
		live.Store(20 * mib)
		(*hook)()
		want(t, f, 300, "20 MiB live: a lift to 200 would lower it")
		live.Store(8 * mib)
		(*hook)()
		want(t, f, 700, "8 MiB live again")
		b.endLift()
		want(t, f, 300, "after the load")
	})

	t.Run("a target already higher, or collection off, is kept", func(t *testing.T) {
		for _, now := range []int{1500, 4000, -1} {
			b, f, live, hook := newTarget(now)
			live.Store(8 * mib)
			b.startLift()
			(*hook)()
			want(t, f, now, "during the load")
			b.endLift()
			want(t, f, now, "after it")
		}
	})

	t.Run("lowered at the floor after the lift", func(t *testing.T) {
		b, f, live, hook := newTarget(100)
		live.Store(8 * mib)
		b.enter(50)
		b.startLift()
		want(t, f, 700, "lifted")
		// A collection finds 64 MiB live: the burst's wait lowers the
		// target, which ends the lift.
		live.Store(64 * mib)
		b.waits.Wait()
		want(t, f, 50, "lowered at the floor")
		(*hook)()
		want(t, f, 50, "a collection after the lowering")
		b.endLift()
		b.exit()
		want(t, f, 100, "after the burst, the target from before the lift")
	})

	t.Run("no liftTo, no lift", func(t *testing.T) {
		f := &fakeTarget{now: 100}
		b := &burstTarget{live: func() uint64 { return mib }, set: f.set}
		b.startLift()
		b.endLift()
		if _, sets := f.get(); len(sets) != 0 {
			t.Fatalf("sets %v without a liftTo", sets)
		}
	})
}

// TestAfterEachGC: the hook runs after collections, once per collection
// at most, until it returns false.
func TestAfterEachGC(t *testing.T) {
	var runs atomic.Int32
	ran := make(chan int32, 8)
	afterEachGC(func() bool {
		n := runs.Add(1)
		ran <- n
		return n < 2
	})
	for want := int32(1); want <= 2; want++ {
		got := int32(0)
		// The finalizer runs once the collection that found the
		// sentinel unreachable has swept it; a few more collections
		// are allowed for that.
		for i := 0; got == 0 && i < 100; i++ {
			goruntime.GC()
			select {
			case got = <-ran:
			default:
			}
		}
		if got != want {
			t.Fatalf("run %d after collections, want %d", got, want)
		}
	}
	for range 5 {
		goruntime.GC()
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("the hook ran %d times, want 2: it returned false the second time", n)
	}
}
