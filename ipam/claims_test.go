package ipam

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	listers "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

func pod(name string) v1alpha1.ClaimOwner {
	return v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "ns", Name: name, UID: "uid-" + name}
}

func newClaims(t testing.TB, store ClaimStore, opts ...ClaimsOption) *Claims {
	t.Helper()
	c, err := NewClaims(store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClaimsAllocateCreatesClaims(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	c := newClaims(t, store)
	s := mustSubnet(t, SubnetConfig{Name: "dual", CIDRBlock: "10.0.0.0/24,fd00::/64", Shards: 1})
	req := Request{Owner: pod("a"), Provider: "ovn", NodeName: "node1"}
	al, err := c.Allocate(ctx, s, 0, req)
	if err != nil {
		t.Fatal(err)
	}
	if al.Addresses.String() != "10.0.0.2,fd00::2" || al.MAC.String() != "0a:58:0a:00:00:02" || al.Subnet != "dual" {
		t.Fatalf("Allocate = %+v", al)
	}
	for _, a := range []string{"10.0.0.2", "fd00::2"} {
		cl, ok := store.has("dual", a)
		if !ok {
			t.Fatalf("no claim for %s", a)
		}
		fam := "IPv4"
		if mustAddrNoT(a).Is6() {
			fam = "IPv6"
		}
		if cl.Labels[v1alpha1.LabelSubnet] != "dual" || cl.Labels[v1alpha1.LabelFamily] != fam ||
			cl.Spec.Subnet != "dual" || cl.Spec.Address != a || cl.Spec.Owner != req.Owner ||
			cl.Spec.MAC != al.MAC.String() || cl.Spec.Provider != "ovn" || cl.Spec.NodeName != "node1" {
			t.Fatalf("claim %+v", cl)
		}
		if cl.UID != al.ClaimUID(fam == "IPv4") {
			t.Fatalf("Allocation UID %s, claim UID %s", al.ClaimUID(fam == "IPv4"), cl.UID)
		}
	}
}

func TestClaimsAllocateSkipsTaken(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	store.put("n", "10.0.0.2", pod("other"), "")
	store.put("n", "10.0.0.3", pod("other2"), "")
	c := newClaims(t, store)
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24", Shards: 1})
	al, err := c.Allocate(ctx, s, 0, Request{Owner: pod("a")})
	if err != nil {
		t.Fatal(err)
	}
	if al.Addresses.V4 != mustAddrNoT("10.0.0.4") {
		t.Fatalf("got %s, want 10.0.0.4 past two claimed addresses", al.Addresses)
	}
	if al.MAC != s.DerivedMAC(al.Addresses) {
		t.Fatalf("MAC %s is not the one derived from %s", al.MAC, al.Addresses)
	}
	for _, taken := range []string{"10.0.0.2", "10.0.0.3"} {
		if s.IsFree(mustAddrNoT(taken)) {
			t.Fatalf("%s found claimed but left free in the bitmap", taken)
		}
		if cl, _ := store.has("n", taken); cl.Spec.Owner.Name == "a" {
			t.Fatalf("claim of %s was taken over", taken)
		}
	}
}

func TestClaimsAllocateConflictLimit(t *testing.T) {
	store := newMemStore()
	store.beforeCreate = func(name string) error {
		return apierrors.NewAlreadyExists(v1alpha1.Resource("addressclaims"), name)
	}
	c := newClaims(t, store, WithMaxConflicts(5))
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24"})
	if _, err := c.Allocate(context.Background(), s, 0, Request{Owner: pod("a")}); !errors.Is(err, ErrConflict) {
		t.Fatalf("Allocate: %v, want ErrConflict", err)
	}
	if store.creates != 0 {
		t.Fatalf("hook did not intercept creates")
	}
	if _, err := NewClaims(store, WithMaxConflicts(0)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("WithMaxConflicts(0): %v", err)
	}
	if _, err := NewClaims(nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("NewClaims(nil): %v", err)
	}
}

func TestClaimsAllocateFull(t *testing.T) {
	store := newMemStore()
	c := newClaims(t, store)
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/30"})
	if _, err := c.Allocate(context.Background(), s, 0, Request{Owner: pod("a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Allocate(context.Background(), s, 0, Request{Owner: pod("b")}); !errors.Is(err, ErrFull) {
		t.Fatalf("second Allocate on a /30: %v, want ErrFull", err)
	}
}

func TestClaimsAllocateRollsBack(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	boom := errors.New("apiserver unavailable")
	store.beforeCreate = func(name string) error {
		if name == v1alpha1.ClaimName("n", mustAddrNoT("fd00::2")) {
			return boom
		}
		return nil
	}
	c := newClaims(t, store)
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24,fd00::/64", Shards: 1})
	_, err := c.Allocate(ctx, s, 0, Request{Owner: pod("a")})
	if !errors.Is(err, boom) {
		t.Fatalf("Allocate: %v, want the create error", err)
	}
	if n := len(store.list()); n != 0 {
		t.Fatalf("%d claims left after a failed dual-stack allocation", n)
	}
	for _, u := range s.Usage() {
		if u.Used != 0 {
			t.Fatalf("bits left after a failed allocation: %+v", u)
		}
	}
}

func TestClaimsAllocateStatic(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	c := newClaims(t, store)
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24,fd00::/64", Shards: 1})
	other := store.put("n", "10.0.0.9", pod("other"), "")
	s.Mark(mustAddrNoT("10.0.0.9"))

	// Held by someone else: refused with the holder, never stolen.
	_, err := c.AllocateStatic(ctx, s, Addresses{V4: mustAddrNoT("10.0.0.9")}, 0, Request{Owner: pod("a")})
	var ae *AllocatedError
	if !errors.As(err, &ae) || !errors.Is(err, ErrAllocated) || ae.Holder != other.Spec.Owner {
		t.Fatalf("static on another's address: %v", err)
	}
	if cl, _ := store.has("n", "10.0.0.9"); cl.UID != other.UID {
		t.Fatal("another owner's claim was replaced")
	}
	// Held by someone else but unknown to this bitmap: same answer.
	store.put("n", "10.0.0.10", pod("other"), "")
	if _, err := c.AllocateStatic(ctx, s, Addresses{V4: mustAddrNoT("10.0.0.10")}, 0, Request{Owner: pod("a")}); !errors.Is(err, ErrAllocated) {
		t.Fatalf("static on an address claimed elsewhere: %v", err)
	}
	if s.IsFree(mustAddrNoT("10.0.0.10")) {
		t.Fatal("address found claimed left free in the bitmap")
	}
	if n := len(store.list()); n != 2 {
		t.Fatalf("%d claims, want 2: a refused static allocation must not leave claims", n)
	}

	// Only IPv4 given in a dual-stack subnet: IPv6 comes dynamically.
	static, _ := ParseMAC("00:00:5e:00:53:01")
	req := Request{Owner: pod("b"), MAC: static}
	al, err := c.AllocateStatic(ctx, s, Addresses{V4: mustAddrNoT("10.0.0.20")}, 0, req)
	if err != nil {
		t.Fatal(err)
	}
	if al.Addresses.V4 != mustAddrNoT("10.0.0.20") || !al.Addresses.V6.IsValid() || al.MAC != static {
		t.Fatalf("AllocateStatic = %+v", al)
	}
	if cl, ok := store.has("n", al.Addresses.V6.String()); !ok || cl.Spec.MAC != static.String() {
		t.Fatalf("IPv6 claim %+v", cl)
	}
	// The same owner again (a retry, a restart): the same claims back.
	before := len(store.list())
	again, err := c.AllocateStatic(ctx, s, al.Addresses, 0, req)
	if err != nil || again.Addresses != al.Addresses || again.ClaimUID(true) != al.ClaimUID(true) || again.ClaimUID(false) != al.ClaimUID(false) {
		t.Fatalf("repeat = %+v, %v; want %+v", again, err, al)
	}
	if len(store.list()) != before {
		t.Fatal("a repeated static allocation created claims")
	}
	// Its MAC is the owner's: another owner cannot have it.
	if _, err := c.AllocateStatic(ctx, s, Addresses{V4: mustAddrNoT("10.0.0.21")}, 0, Request{Owner: pod("c"), MAC: static}); !errors.Is(err, ErrMACInUse) {
		t.Fatalf("static MAC of another owner: %v", err)
	}
	if !s.IsFree(mustAddrNoT("10.0.0.21")) {
		t.Fatal("10.0.0.21 held after a refused allocation")
	}

	// A stale bit (marked, no claim): the claim decides, and it is free.
	s.Mark(mustAddrNoT("10.0.0.30"))
	if _, err := c.AllocateStatic(ctx, s, Addresses{V4: mustAddrNoT("10.0.0.30"), V6: mustAddrNoT("fd00::30")}, 0, Request{Owner: pod("d")}); err != nil {
		t.Fatalf("static on a stale bit: %v", err)
	}
	// Errors that are not about holders.
	for _, bad := range []struct {
		a    Addresses
		want error
	}{
		{Addresses{V4: mustAddrNoT("10.0.1.1")}, ErrNotInRange},
		{Addresses{V4: mustAddrNoT("10.0.0.1")}, ErrReserved},
		{Addresses{}, ErrInvalid},
	} {
		if _, err := c.AllocateStatic(ctx, s, bad.a, 0, Request{Owner: pod("e")}); !errors.Is(err, bad.want) {
			t.Fatalf("AllocateStatic(%s): %v, want %v", bad.a, err, bad.want)
		}
	}
}

func TestClaimsRelease(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	c := newClaims(t, store)
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24", Shards: 1})
	al, err := c.Allocate(ctx, s, 0, Request{Owner: pod("a")})
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's delete does nothing.
	if err := c.Release(ctx, s, al.Addresses, pod("b")); err != nil {
		t.Fatal(err)
	}
	if _, ok := store.has("n", al.Addresses.V4.String()); !ok || s.IsFree(al.Addresses.V4) {
		t.Fatal("a release by another owner deleted the claim")
	}
	// Nor does a delete by a pod of the same name but another UID.
	samename := pod("a")
	samename.UID = "recreated"
	if err := c.Release(ctx, s, al.Addresses, samename); err != nil {
		t.Fatal(err)
	}
	if _, ok := store.has("n", al.Addresses.V4.String()); !ok {
		t.Fatal("a release by an owner with another UID deleted the claim")
	}
	if err := c.Release(ctx, s, al.Addresses, pod("a")); err != nil {
		t.Fatal(err)
	}
	if _, ok := store.has("n", al.Addresses.V4.String()); ok || !s.IsFree(al.Addresses.V4) {
		t.Fatal("claim or bit left after release")
	}
	// Already gone: just frees the bit.
	s.Mark(al.Addresses.V4)
	if err := c.Release(ctx, s, al.Addresses, pod("a")); err != nil || !s.IsFree(al.Addresses.V4) {
		t.Fatalf("release of a gone claim: %v", err)
	}
}

func TestClaimsReleaseUIDPrecondition(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	c := newClaims(t, store)
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24", Shards: 1})
	al, err := c.Allocate(ctx, s, 0, Request{Owner: pod("a")})
	if err != nil {
		t.Fatal(err)
	}
	// Between the read and the delete the claim is deleted and re-created,
	// for the same owner name, by another replica.
	var replaced *v1alpha1.AddressClaim
	store.beforeDelete = func(name string) error {
		store.beforeDelete = nil
		store.mu.Lock()
		delete(store.claims, name)
		store.mu.Unlock()
		replaced = store.put("n", al.Addresses.V4.String(), pod("a"), "")
		return nil
	}
	if err := c.Release(ctx, s, al.Addresses, pod("a")); err != nil {
		t.Fatal(err)
	}
	cl, ok := store.has("n", al.Addresses.V4.String())
	if !ok || cl.UID != replaced.UID {
		t.Fatal("the UID precondition did not protect the re-created claim")
	}
	if s.IsFree(al.Addresses.V4) {
		t.Fatal("bit freed although the claim lives on")
	}
}

func TestClaimsPoolAndList(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	c := newClaims(t, store)
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24,fd00::/64", Shards: 1,
		Pools: []PoolConfig{{Name: "p", IPs: []string{"10.0.0.100..10.0.0.101"}}}})
	al, err := c.AllocateFromPool(ctx, s, "p", 0, Request{Owner: pod("a")})
	if err != nil {
		t.Fatal(err)
	}
	// The pool has no IPv6: that family comes dynamically.
	if al.Addresses.V4 != mustAddrNoT("10.0.0.100") || !al.Addresses.V6.IsValid() {
		t.Fatalf("AllocateFromPool = %s", al.Addresses)
	}
	if _, err := c.AllocateFromPool(ctx, s, "nope", 0, Request{Owner: pod("a")}); !errors.Is(err, ErrUnknownPool) {
		t.Fatalf("unknown pool: %v", err)
	}

	list, err := ParseAddressList("10.0.0.50,fd00::50;10.0.0.51,fd00::51;10.0.0.52,fd00::52")
	if err != nil {
		t.Fatal(err)
	}
	store.put("n", "10.0.0.50", pod("other"), "")
	// Not a StatefulSet pod: the first entry nobody else holds.
	got, err := c.AllocateFromList(ctx, s, list, -1, 0, Request{Owner: pod("b")})
	if err != nil || got.Addresses != list[1] {
		t.Fatalf("first free entry = %s, %v; want %s", got.Addresses, err, list[1])
	}
	if !s.IsFree(mustAddrNoT("fd00::50")) {
		t.Fatal("IPv6 of a refused list entry left held")
	}
	// StatefulSet pods: the entry at the ordinal, whoever holds the others.
	got, err = c.AllocateFromList(ctx, s, list, 2, 0, Request{Owner: pod("web-2")})
	if err != nil || got.Addresses != list[2] {
		t.Fatalf("ordinal 2 = %s, %v", got.Addresses, err)
	}
	if _, err := c.AllocateFromList(ctx, s, list, 0, 0, Request{Owner: pod("web-0")}); !errors.Is(err, ErrAllocated) {
		t.Fatalf("ordinal 0 held by another: %v", err)
	}
	if _, err := c.AllocateFromList(ctx, s, list, 3, 0, Request{Owner: pod("web-3")}); !errors.Is(err, ErrOrdinal) {
		t.Fatalf("ordinal past the end: %v", err)
	}
	if _, err := c.AllocateFromList(ctx, s, list, -1, 0, Request{Owner: pod("c")}); !errors.Is(err, ErrFull) {
		t.Fatalf("list exhausted: %v", err)
	}
}

func listerOf(t testing.TB, claims []*v1alpha1.AddressClaim) listers.AddressClaimLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, c := range claims {
		if err := idx.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	return listers.NewAddressClaimLister(idx)
}

func TestClaimsTrackRestores(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	c := newClaims(t, store)
	cfg := SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24,fd00::/64", Shards: 4}
	s := mustSubnet(t, cfg)
	static, _ := ParseMAC("00:00:5e:00:53:07")
	held := map[netip.Addr]bool{}
	for i := range 50 {
		req := Request{Owner: pod("p" + string(rune('a'+i%26)) + string(rune('a'+i/26)))}
		if i == 7 {
			req.MAC = static
		}
		al, err := c.Allocate(ctx, s, i, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range al.Addresses.List() {
			held[a] = true
		}
	}
	far := store.put("n", "fd00::ab:0:1", pod("far"), "")
	held[mustAddrNoT(far.Spec.Address)] = true
	store.put("other-subnet", "10.0.0.200", pod("x"), "")

	// A fresh allocator (a restart, a takeover) restores exactly the set.
	c2 := newClaims(t, store)
	s2 := mustSubnet(t, cfg)
	n, err := c2.Track(s2, listerOf(t, store.list()))
	if err != nil || n != len(held) {
		t.Fatalf("Track = %d, %v; want %d", n, err, len(held))
	}
	for _, pre := range []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24"), netip.MustParsePrefix("fd00::/120")} {
		for a := pre.Addr(); pre.Contains(a); a = a.Next() {
			if held[a] && s2.IsFree(a) {
				t.Fatalf("%s claimed but free after restore", a)
			}
			if !held[a] && !s2.IsFree(a) && a != s2.Gateways().V4 && a != s2.Gateways().V6 &&
				a != mustAddrNoT("10.0.0.0") && a != mustAddrNoT("10.0.0.255") && a != mustAddrNoT("fd00::") {
				t.Fatalf("%s held after restore but never claimed", a)
			}
		}
	}
	if u := s2.Usage(); u[0].Used != 50 || u[1].Used != 51 {
		t.Fatalf("Usage after restore = %+v", u)
	}
	if _, err := s2.AssignMAC(static, Addresses{V4: mustAddrNoT("10.0.0.99")}, "someone"); !errors.Is(err, ErrMACInUse) {
		t.Fatalf("restored static MAC given to another owner: %v", err)
	}
	if got, ok := c2.Tracked("n"); !ok || got != s2 {
		t.Fatal("Tracked does not return the restored subnet")
	}
	// Allocating after the restore never collides with a restored claim.
	before := store.creates
	al, err := c2.Allocate(ctx, s2, 0, Request{Owner: pod("new")})
	if err != nil || held[al.Addresses.V4] || store.creates-before != 2 {
		t.Fatalf("after restore Allocate = %s, %v with %d creates", al.Addresses, err, store.creates-before)
	}
	c2.Untrack("n")
	if _, ok := c2.Tracked("n"); ok {
		t.Fatal("Untrack left the subnet tracked")
	}
}

func TestClaimsEventHandler(t *testing.T) {
	store := newMemStore()
	c := newClaims(t, store)
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24"})
	if _, err := c.Track(s, listerOf(t, nil)); err != nil {
		t.Fatal(err)
	}
	h := c.EventHandler()
	cl := store.put("n", "10.0.0.77", pod("elsewhere"), "00:00:5e:00:53:09")
	h.OnAdd(cl, false)
	if s.IsFree(mustAddrNoT("10.0.0.77")) {
		t.Fatal("a claim made elsewhere did not mark its address")
	}
	if owner, ok := s.macOwner(mustMAC(t, "00:00:5e:00:53:09")); !ok || owner != OwnerKey(pod("elsewhere")) {
		t.Fatalf("MAC of a claim made elsewhere not recorded: %q", owner)
	}
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: cl.Name, Obj: cl})
	if !s.IsFree(mustAddrNoT("10.0.0.77")) {
		t.Fatal("a deleted claim did not free its address")
	}
	if _, ok := s.macOwner(mustMAC(t, "00:00:5e:00:53:09")); ok {
		t.Fatal("MAC of a deleted claim still recorded")
	}
	// Claims of untracked subnets and other objects are ignored.
	h.OnAdd(store.put("m", "10.0.0.78", pod("x"), ""), false)
	h.OnAdd("not a claim", false)
	if !s.IsFree(mustAddrNoT("10.0.0.78")) {
		t.Fatal("a claim of another subnet marked this one")
	}
}

func mustMAC(t testing.TB, s string) MAC {
	t.Helper()
	m, err := ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestClaimsTwoReplicas: two allocators with their own bitmaps over one
// store and overlapping shards drain a subnet at once; the store never
// holds two claims for one address (by construction of names) and no
// address is granted to both.
func TestClaimsTwoReplicas(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	cfg := SubnetConfig{Name: "n", CIDRBlock: "10.1.0.0/24", Shards: 8}
	var mu sync.Mutex
	granted := map[netip.Addr]string{}
	var wg sync.WaitGroup
	for r, shards := range [][]int{{0, 1, 2, 3, 4}, {3, 4, 5, 6, 7}} {
		c := newClaims(t, store)
		s := mustSubnet(t, cfg)
		for w, shard := range shards {
			wg.Go(func() {
				for i := 0; ; i++ {
					owner := pod("r" + string(rune('0'+r)) + "w" + string(rune('0'+w)) + "-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676)))
					al, err := c.Allocate(ctx, s, shard, Request{Owner: owner})
					if errors.Is(err, ErrFull) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if prev, dup := granted[al.Addresses.V4]; dup {
						t.Errorf("%s granted to %s and %s", al.Addresses.V4, prev, owner.Name)
					}
					granted[al.Addresses.V4] = owner.Name
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(granted) != 253 {
		t.Fatalf("granted %d addresses, want all 253", len(granted))
	}
	for a, owner := range granted {
		cl, ok := store.has("n", a.String())
		if !ok || cl.Spec.Owner.Name != owner {
			t.Fatalf("claim of %s = %+v, want owner %s", a, cl, owner)
		}
	}
}

func TestClaimsStaticCreateErrors(t *testing.T) {
	ctx := context.Background()
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24", Shards: 1})
	a := mustAddrNoT("10.0.0.40")

	// A failed create frees the bit it set.
	store := newMemStore()
	boom := errors.New("etcd timeout")
	store.beforeCreate = func(string) error { return boom }
	c := newClaims(t, store)
	if _, err := c.AllocateStatic(ctx, s, Addresses{V4: a}, 0, Request{Owner: pod("a")}); !errors.Is(err, boom) {
		t.Fatalf("AllocateStatic: %v, want the create error", err)
	}
	if !s.IsFree(a) {
		t.Fatal("bit left set after a failed static create")
	}

	// AlreadyExists, then gone by the time it is read: the claim is tried
	// again and made.
	store = newMemStore()
	calls := 0
	store.beforeCreate = func(name string) error {
		calls++
		if calls == 1 {
			return apierrors.NewAlreadyExists(v1alpha1.Resource("addressclaims"), name)
		}
		return nil
	}
	c = newClaims(t, store)
	al, err := c.AllocateStatic(ctx, s, Addresses{V4: a}, 0, Request{Owner: pod("a")})
	if err != nil || al.Addresses.V4 != a || calls != 2 {
		t.Fatalf("AllocateStatic = %+v, %v after %d creates", al, err, calls)
	}
	if cl, ok := store.has("n", a.String()); !ok || cl.Spec.Owner != pod("a") {
		t.Fatalf("claim %+v", cl)
	}
}

func TestClaimsAdoptedMACSurvivesFailure(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	c := newClaims(t, store)
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24,fd00::/64", Shards: 1})
	static := mustMAC(t, "00:00:5e:00:53:42")
	store.put("n", "10.0.0.50", pod("a"), static.String())
	if _, err := c.Track(s, listerOf(t, store.list())); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("unavailable")
	store.beforeCreate = func(string) error { return boom }
	_, err := c.AllocateStatic(ctx, s, Addresses{V4: mustAddrNoT("10.0.0.50"), V6: mustAddrNoT("fd00::50")}, 0, Request{Owner: pod("a")})
	if !errors.Is(err, boom) {
		t.Fatalf("AllocateStatic: %v", err)
	}
	if _, ok := store.has("n", "10.0.0.50"); !ok {
		t.Fatal("rollback deleted a claim the owner held before the call")
	}
	if owner, ok := s.macOwner(static); !ok || owner != OwnerKey(pod("a")) {
		t.Fatal("rollback took the owner's static MAC away")
	}
	store.beforeCreate = nil
	al, err := c.AllocateStatic(ctx, s, Addresses{V4: mustAddrNoT("10.0.0.50"), V6: mustAddrNoT("fd00::50")}, 0, Request{Owner: pod("a")})
	if err != nil || al.MAC != static {
		t.Fatalf("retry = %+v, %v; want the claimed MAC %s", al, err, static)
	}
	if cl, ok := store.has("n", "fd00::50"); !ok || cl.Spec.MAC != static.String() {
		t.Fatalf("IPv6 claim %+v does not carry the owner's MAC", cl)
	}
}

func TestClaimsDerivedMACFollowsFinalPick(t *testing.T) {
	store := newMemStore()
	store.put("v6", "fd00::2", pod("other"), "")
	c := newClaims(t, store)
	s := mustSubnet(t, SubnetConfig{Name: "v6", CIDRBlock: "fd00::/64", Shards: 1})
	al, err := c.Allocate(context.Background(), s, 0, Request{Owner: pod("a")})
	if err != nil {
		t.Fatal(err)
	}
	if al.Addresses.V6 != mustAddrNoT("fd00::3") || al.MAC != s.DerivedMAC(al.Addresses) || al.MAC.String() != "0a:59:00:00:00:03" {
		t.Fatalf("Allocate = %s with MAC %s", al.Addresses, al.MAC)
	}
	if cl, _ := store.has("v6", "fd00::3"); cl.Spec.MAC != al.MAC.String() {
		t.Fatalf("claim MAC %s, allocation MAC %s", cl.Spec.MAC, al.MAC)
	}
}

func TestTrackReportsUnreadableClaims(t *testing.T) {
	store := newMemStore()
	store.put("n", "10.0.0.5", pod("a"), "")
	bad := store.put("n", "10.0.1.5", pod("b"), "") // outside the subnet
	c := newClaims(t, store)
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24"})
	n, err := c.Track(s, listerOf(t, store.list()))
	if n != 1 || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Track = %d, %v; want 1 applied and ErrInvalid", n, err)
	}
	if want := bad.Name; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v does not name %s", err, want)
	}
	if s.IsFree(mustAddrNoT("10.0.0.5")) {
		t.Fatal("the readable claim was not restored")
	}
	// A subnet name that is not a label value gets a digest label.
	long := strings.Repeat("x", 70)
	if v := SubnetLabelValue(long); v == long || len(v) > 63 || v != SubnetLabelValue(long) {
		t.Fatalf("SubnetLabelValue(70 chars) = %q", v)
	}
	if SubnetLabelValue("ovn-default") != "ovn-default" {
		t.Fatal("a valid name must be its own label value")
	}
}

// A create that commits on the server but reports an error to the client
// (a timeout) frees its bit after the claim's own informer event set it:
// the claim exists and its bit is clear. Repair puts it back; a claim that
// is gone by the time Repair checks again leaves nothing held.
func TestSubnetRepairLostBits(t *testing.T) {
	ctx := context.Background()
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/24", Shards: 1})
	a := mustAddrNoT("10.0.0.40")
	store := newMemStore()
	c := newClaims(t, store)
	if _, err := c.Track(s, listerOf(t, nil)); err != nil {
		t.Fatal(err)
	}
	timeout := errors.New("context deadline exceeded")
	store.afterCreate = func(cl *v1alpha1.AddressClaim) error {
		c.EventHandler().OnAdd(cl, false) // the informer is faster than the reply
		return timeout
	}
	if _, err := c.AllocateStatic(ctx, s, Addresses{V4: a}, 0, Request{Owner: pod("a")}); !errors.Is(err, timeout) {
		t.Fatalf("AllocateStatic: %v, want the create error", err)
	}
	if _, ok := store.has("n", a.String()); !ok {
		t.Fatal("the create did not commit")
	}
	if !s.IsFree(a) {
		t.Fatal("the undo did not clear the bit: the test no longer shows the race")
	}
	before := s.Usage()[0].Used
	present := func(cl *v1alpha1.AddressClaim) bool { _, ok := store.has(cl.Spec.Subnet, cl.Spec.Address); return ok }
	if n := s.Repair(store.list(), present); n != 1 {
		t.Fatalf("Repair marked %d, want 1", n)
	}
	if s.IsFree(a) || s.Usage()[0].Used != before+1 {
		t.Fatal("Repair left the claimed address free")
	}
	if n := s.Repair(store.list(), present); n != 0 {
		t.Fatalf("a second Repair marked %d, want 0", n)
	}

	// A claim listed but deleted before the re-check: the bit is not kept.
	b := mustAddrNoT("10.0.0.41")
	stale := store.put("n", b.String(), pod("b"), "")
	if n := s.Repair([]*v1alpha1.AddressClaim{stale}, func(*v1alpha1.AddressClaim) bool { return false }); n != 0 || !s.IsFree(b) {
		t.Fatalf("Repair of a vanished claim marked %d, free=%v", n, s.IsFree(b))
	}
	// Claims of other subnets and unreadable addresses are skipped.
	other := store.put("m", "10.0.0.42", pod("c"), "")
	bad := other.DeepCopy()
	bad.Spec.Subnet, bad.Spec.Address = "n", "not-an-address"
	if n := s.Repair([]*v1alpha1.AddressClaim{other, bad}, present); n != 0 || !s.IsFree(mustAddrNoT("10.0.0.42")) {
		t.Fatalf("Repair marked %d for foreign or unreadable claims", n)
	}
}
