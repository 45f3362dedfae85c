package reconcile

import (
	"fmt"
	"testing"
	"time"

	"github.com/puzpuzpuz/xsync/v4"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
)

// A term's memory of its own writes keeps an entry only while a reader
// could use it: every pruneEvery stores, the entries past
// cacheLagTolerance go, and younger ones stay.
func TestTermForgetsWritesPastTheLagTolerance(t *testing.T) {
	now := time.Unix(1000, 0)
	term := (&Pods{cfg: PodConfig{Now: func() time.Time { return now }}}).NewTerm(0, nil, nil)
	owner := v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "ns", Name: "old"}
	term.remember("ns/old", owner, DefaultProvider, ipam.Allocation{})
	term.written.Store("old.ns", writtenPort{fingerprint: "f", at: now})
	term.patched.Store("ns/old", patchedVersion{version: "1", at: now})

	now = now.Add(cacheLagTolerance)
	young := v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "ns", Name: "young"}
	term.remember("ns/young", young, DefaultProvider, ipam.Allocation{})
	// Enough stores to reach a prune, all of the young key.
	for term.stores.Load()%pruneEvery != pruneEvery-1 {
		term.stores.Add(1)
	}
	term.written.Store("young.ns", writtenPort{fingerprint: "f", at: now})
	term.stored(now)

	if _, ok := term.recent.Load("ns/old"); ok {
		t.Error("an allocation past the lag tolerance is still remembered")
	}
	if _, ok := term.written.Load("old.ns"); ok {
		t.Error("a port write past the lag tolerance is still remembered")
	}
	if _, ok := term.patched.Load("ns/old"); ok {
		t.Error("a patch past the lag tolerance is still remembered")
	}
	if term.recentFor("ns/young", young) == nil {
		t.Error("a fresh allocation was forgotten")
	}
	if !term.recentlyWritten("young.ns", "f") {
		t.Error("a fresh port write was forgotten")
	}
	if n := sizeOf(term.recent) + sizeOf(term.written) + sizeOf(term.patched); n != 2 {
		t.Errorf("%d entries left, want 2", n)
	}
}

// A term that stores fewer than pruneEvery entries (a shard of 780 pods
// at 50,000 pods and 64 shards) still forgets them: a store a lag
// tolerance after the last prune prunes.
func TestTermPrunesByTimeToo(t *testing.T) {
	now := time.Unix(1000, 0)
	term := (&Pods{cfg: PodConfig{Now: func() time.Time { return now }}}).NewTerm(0, nil, nil)
	for i := range 100 {
		name := fmt.Sprintf("p%d", i)
		term.remember("ns/"+name, v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "ns", Name: name}, DefaultProvider, ipam.Allocation{})
		now = now.Add(cacheLagTolerance / 100)
	}
	// p0 ... p99 were stored 0.01 of a tolerance apart, and the last
	// prune ran at p0's store. One store half a tolerance after p99's
	// prunes: p0 ... p50 are past the tolerance, p51 ... p99 are not.
	now = now.Add(cacheLagTolerance / 2)
	term.written.Store("last.ns", writtenPort{fingerprint: "f", at: now})
	term.stored(now)
	if term.stores.Load() >= pruneEvery {
		t.Fatalf("%d stores: the test needs fewer than pruneEvery", term.stores.Load())
	}
	if left := sizeOf(term.recent); left != 49 {
		t.Fatalf("%d of 100 allocations remembered, want the 49 younger than the lag tolerance", left)
	}
	if term.recentFor("ns/p99", v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "ns", Name: "p99"}) == nil {
		t.Error("an allocation younger than the lag tolerance was forgotten")
	}
	if !term.recentlyWritten("last.ns", "f") {
		t.Error("the fresh port write was forgotten")
	}
}

func sizeOf[V any](m *xsync.Map[string, V]) int {
	n := 0
	m.Range(func(string, V) bool { n++; return true })
	return n
}
