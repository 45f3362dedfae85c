package reconcile

import (
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/api/client/clientset/versioned/fake"
	claimlisters "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
)

// A bit the bitmap holds with no claim, hold or node address behind it
// (a claim whose delete event beat the pick that found it taken, holds
// read from a cache that had fallen behind) is freed by the second
// Refresh that finds it so; claimed, held and node addresses, and an
// allocation whose claim arrives between two passes, keep theirs.
func TestRefreshFreesStrayBits(t *testing.T) {
	claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	alloc, err := ipam.NewClaims(ipam.NewClientStore(fake.NewSimpleClientset()))
	if err != nil {
		t.Fatal(err)
	}
	reg := NewSubnets(alloc, claimlisters.NewAddressClaimLister(claims), 1)
	node := netip.MustParseAddr("10.0.0.9")
	if err := reg.Sync(&kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/24", Protocol: "IPv4"}}, nil, []netip.Addr{node}); err != nil {
		t.Fatal(err)
	}
	s, err := reg.Get("s")
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddr
	claim := func(a string) {
		t.Helper()
		if err := claims.Add(&v1alpha1.AddressClaim{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClaimName("s", addr(a))},
			Spec:       v1alpha1.AddressClaimSpec{Subnet: "s", Address: a},
		}); err != nil {
			t.Fatal(err)
		}
	}
	stray, claimed, held, inFlight := addr("10.0.0.5"), addr("10.0.0.6"), addr("10.0.0.7"), addr("10.0.0.8")
	for _, a := range []netip.Addr{stray, claimed, inFlight} {
		s.Mark(a)
	}
	claim(claimed.String())
	s.SetHolds(map[netip.Addr]ipam.Hold{held: {Source: "port p"}}, nil)
	if s.IsFree(node) {
		t.Fatalf("the node address %v is not held", node)
	}

	reg.Refresh()
	if s.IsFree(stray) || reg.StraysFreed() != 0 {
		t.Fatalf("the first pass freed %v (%d freed): it must wait a pass for an allocation in flight", stray, reg.StraysFreed())
	}
	// The allocation in flight gets its claim before the second pass.
	claim(inFlight.String())
	reg.Refresh()
	if !s.IsFree(stray) {
		t.Errorf("the stray bit of %v is still set after two passes", stray)
	}
	for _, a := range []netip.Addr{claimed, held, inFlight, node} {
		if s.IsFree(a) {
			t.Errorf("%v was freed although something holds it", a)
		}
	}
	if got := reg.StraysFreed(); got != 1 {
		t.Errorf("StraysFreed = %d, want 1", got)
	}
}

// With SetAdoptSpacing, Refresh reads the addresses in use only once its
// spacing after the last read has passed; without it, at every pass.
func TestRefreshSpacesItsAdoptPasses(t *testing.T) {
	alloc, err := ipam.NewClaims(ipam.NewClientStore(fake.NewSimpleClientset()))
	if err != nil {
		t.Fatal(err)
	}
	reg := NewSubnets(alloc, claimlisters.NewAddressClaimLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})), 1)
	reads := 0
	reg.SetHoldSource(func() (HoldInputs, error) { reads++; return HoldInputs{}, nil })
	for range 3 {
		reg.Refresh()
	}
	if reads != 3 {
		t.Fatalf("%d reads in three passes without spacing, want 3", reads)
	}
	// A spacing no test outlives: one read, then none.
	reg.SetAdoptSpacing(1 << 20)
	reg.Refresh()
	reg.Refresh()
	if reads != 4 {
		t.Errorf("%d reads after two spaced passes, want 4 (the first pass due, the second not)", reads)
	}

	// The pass a replica makes before it joins (AdoptSpaced) spaces
	// Refresh's next one as Refresh's own passes do.
	joined := NewSubnets(alloc, claimlisters.NewAddressClaimLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})), 1)
	joinedReads := 0
	joined.SetHoldSource(func() (HoldInputs, error) { joinedReads++; return HoldInputs{}, nil })
	joined.SetAdoptSpacing(1 << 20)
	if _, err := joined.AdoptSpaced(); err != nil {
		t.Fatal(err)
	}
	joined.Refresh()
	if joinedReads != 1 {
		t.Errorf("%d reads after the pass before joining and a Refresh, want 1", joinedReads)
	}

	// A Refresh while that pass still runs (the status loop starts with
	// the caches, as the pass does) skips its own instead of doubling it.
	racing := NewSubnets(alloc, claimlisters.NewAddressClaimLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})), 1)
	var racingReads atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	racing.SetHoldSource(func() (HoldInputs, error) {
		if racingReads.Add(1) == 1 {
			close(entered)
			<-release
		}
		return HoldInputs{}, nil
	})
	done := make(chan error)
	go func() { _, err := racing.AdoptSpaced(); done <- err }()
	<-entered
	racing.Refresh()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := racingReads.Load(); n != 1 {
		t.Errorf("%d reads with a Refresh during the pass before joining, want 1", n)
	}

	// A runner (SetAdoptRunner) runs every spaced pass, Refresh's and the
	// one before joining, around the pass itself.
	run := NewSubnets(alloc, claimlisters.NewAddressClaimLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})), 1)
	var order []string
	run.SetHoldSource(func() (HoldInputs, error) { order = append(order, "read"); return HoldInputs{}, nil })
	run.SetAdoptRunner(func(pass func()) {
		order = append(order, "before")
		pass()
		order = append(order, "after")
	})
	if _, err := run.AdoptSpaced(); err != nil {
		t.Fatal(err)
	}
	run.Refresh()
	if want := []string{"before", "read", "after", "before", "read", "after"}; !slices.Equal(order, want) {
		t.Errorf("runner and passes ran %v, want %v", order, want)
	}
}
