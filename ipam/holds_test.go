package ipam

import (
	"context"
	"errors"
	"net/netip"
	"testing"
)

// TestHoldsAdoption pins what a held address means to the claim layer:
// never a dynamic pick, never another owner's static address, its holder's
// to claim (adoption), a MAC kept for its holder, and freed once dropped
// unless something else still takes it.
func TestHoldsAdoption(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	c := newClaims(t, store)
	// A /29: .1 is the gateway, .2-.6 usable.
	s := mustSubnet(t, SubnetConfig{Name: "n", CIDRBlock: "10.0.0.0/29", Shards: 1})
	kubeMAC := mustMAC(t, "00:00:00:AB:CD:EF")
	holds := map[netip.Addr]Hold{
		mustAddrNoT("10.0.0.2"): {Owner: OwnerKey(pod("running")), Source: "pod ns/running", MAC: kubeMAC},
		mustAddrNoT("10.0.0.3"): {Name: "ns/gone", Source: "IP record gone.ns"},
		mustAddrNoT("10.0.0.4"): {Source: "port node-a"},
		mustAddrNoT("10.9.9.9"): {Source: "port elsewhere"}, // outside: ignored
	}
	if added, dropped := s.SetHolds(holds, nil); added != 3 || dropped != 0 {
		t.Fatalf("SetHolds = %d added, %d dropped; want 3, 0", added, dropped)
	}

	// Dynamic picks skip every held address.
	for i := 0; i < 2; i++ {
		al, err := c.Allocate(ctx, s, 0, Request{Owner: pod("new" + string(rune('a'+i)))})
		if err != nil {
			t.Fatal(err)
		}
		if _, held := holds[al.Addresses.V4]; held {
			t.Fatalf("dynamic pick %s is held", al.Addresses.V4)
		}
	}
	if _, err := c.Allocate(ctx, s, 0, Request{Owner: pod("late")}); !errors.Is(err, ErrFull) {
		t.Fatalf("subnet with every free address taken: %v, want ErrFull", err)
	}

	// Another owner is refused each held address, with where it was found.
	for a := range holds {
		if !s.Contains(a) {
			continue
		}
		_, err := c.AllocateStatic(ctx, s, Addresses{V4: a}, 0, Request{Owner: pod("thief")})
		if !IsHoldConflict(err) || !errors.Is(err, ErrAllocated) {
			t.Fatalf("static %s by another owner: %v, want a hold conflict", a, err)
		}
	}
	// Nor may another owner take the held MAC.
	if _, err := c.AllocateStatic(ctx, s, Addresses{V4: mustAddrNoT("10.0.0.5")}, 0, Request{Owner: pod("thief"), MAC: kubeMAC}); err != nil {
		// .5 was taken by a dynamic pick above; either refusal is fine
		// as long as nothing was created.
		if !errors.Is(err, ErrAllocated) && !errors.Is(err, ErrMACInUse) {
			t.Fatalf("static with a held MAC: %v", err)
		}
	}

	// The holder adopts its address with its MAC, byte for byte.
	al, err := c.AllocateStatic(ctx, s, Addresses{V4: mustAddrNoT("10.0.0.2")}, 0, Request{Owner: pod("running"), MAC: kubeMAC})
	if err != nil || al.MAC != kubeMAC {
		t.Fatalf("adoption = %+v, %v", al, err)
	}
	if cl, ok := store.has("n", "10.0.0.2"); !ok || cl.Spec.Owner != pod("running") {
		t.Fatalf("adoption claim %+v", cl)
	}
	// A pod re-created under a name the hold names takes it back.
	gone := pod("gone")
	gone.UID = "new-uid"
	if _, err := c.AllocateStatic(ctx, s, Addresses{V4: mustAddrNoT("10.0.0.3")}, 0, Request{Owner: gone}); err != nil {
		t.Fatalf("same-named owner: %v", err)
	}

	// Dropping holds: .4 nothing else takes is freed; .2 (claimed) stays.
	taken := func(a netip.Addr) bool { _, ok := store.has("n", a.String()); return ok }
	if _, dropped := s.SetHolds(nil, taken); dropped != 3 {
		t.Fatalf("dropped %d holds, want 3", dropped)
	}
	if !s.IsFree(mustAddrNoT("10.0.0.4")) {
		t.Fatal("a dropped hold nobody claims was not freed")
	}
	if s.IsFree(mustAddrNoT("10.0.0.2")) || s.IsFree(mustAddrNoT("10.0.0.3")) {
		t.Fatal("a dropped hold that is claimed was freed")
	}
	if _, ok := s.HeldBy(mustAddrNoT("10.0.0.4")); ok {
		t.Fatal("HeldBy after the hold was dropped")
	}
}
