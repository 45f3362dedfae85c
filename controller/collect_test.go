package controller

import (
	goruntime "runtime"
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
