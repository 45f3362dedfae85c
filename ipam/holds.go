package ipam

import (
	"errors"
	"net/netip"
	"sync"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// Hold is an address found in use in a subnet that no claim may be
// needed for yet: written into a pod's annotations, an IP record, a Vip or
// a Northbound port, by shardnet before its claim or by another controller
// (kube-ovn) that never made one. A held address is marked in the bitmap,
// so a dynamic pick never returns it, and only its holder may claim it
// (adoption): Claims refuses every other owner with an *AllocatedError
// whose Hold says where the address was found.
type Hold struct {
	// Owner is the OwnerKey of the only claim owner that may take the
	// address. Empty when only a name is known (Name).
	Owner string
	// Name is "namespace/name": when Owner is empty, any owner of that
	// namespace and name may take the address (an IP record or port whose
	// pod is gone; the pod re-created under its name takes it back).
	// Empty with Owner empty: nobody may claim it (a Vip, a node's port).
	Name string
	// Source says where the address was found, for messages: "pod
	// ns/name", "IP record x", "Vip x", "port x".
	Source string
	// MAC is the MAC found with the address, zero when none.
	MAC MAC
}

// Allows reports whether an owner may claim an address under this hold.
func (h Hold) Allows(owner v1alpha1.ClaimOwner) bool {
	if h.Owner != "" {
		return h.Owner == OwnerKey(owner)
	}
	return h.Name != "" && h.Name == owner.Namespace+"/"+owner.Name
}

// macKey is the key the MAC table records a held MAC under.
func (h Hold) macKey() string {
	if h.Owner != "" {
		return h.Owner
	}
	return "hold/" + h.Source
}

// holdTable is a subnet's held addresses.
type holdTable struct {
	mu sync.RWMutex
	// by guarded by mu.
	by map[netip.Addr]Hold
}

// SetHolds makes holds the subnet's held addresses: each is marked in the
// bitmap and its MAC recorded for its holder; an address held before and
// not any more is forgotten, and its bit freed unless taken reports that
// something else (a claim, a node) still holds it. It returns how many
// addresses became held and how many were dropped. Addresses outside the
// subnet are ignored.
//
// When every address of holds is in the subnet and unmapped (what
// reconcile.CollectHolds gives), the subnet keeps holds itself rather
// than a copy: the caller must not change it afterwards.
func (s *Subnet) SetHolds(holds map[netip.Addr]Hold, taken func(netip.Addr) bool) (added, dropped int) {
	next := holds
	for a := range holds {
		if a.Unmap() != a || !s.Contains(a) {
			next = nil
			break
		}
	}
	if next == nil {
		next = make(map[netip.Addr]Hold, len(holds))
		for a, h := range holds {
			a = a.Unmap()
			if !s.Contains(a) {
				continue
			}
			next[a] = h
		}
	}
	s.holds.mu.Lock()
	prev := s.holds.by
	s.holds.by = next
	s.holds.mu.Unlock()

	for a, h := range next {
		old, was := prev[a]
		if !was {
			added++
		}
		s.Mark(a)
		if was && old.MAC != h.MAC && !old.MAC.IsZero() {
			s.ReleaseMAC(old.MAC, old.macKey())
		}
		if !h.MAC.IsZero() {
			s.recordMAC(h.MAC, h.macKey())
		}
	}
	for a, h := range prev {
		if _, still := next[a]; still {
			continue
		}
		dropped++
		if !h.MAC.IsZero() {
			s.ReleaseMAC(h.MAC, h.macKey())
		}
		if taken == nil || !taken(a) {
			s.Release(one(a))
		}
	}
	return added, dropped
}

// HeldBy returns the hold of a, if a is held.
func (s *Subnet) HeldBy(a netip.Addr) (Hold, bool) {
	s.holds.mu.RLock()
	defer s.holds.mu.RUnlock()
	h, ok := s.holds.by[a.Unmap()]
	return h, ok
}

// EachHeld calls f with every held address, under the holds' read lock
// (f must not change the holds), so a pass over tens of thousands of them
// copies nothing.
func (s *Subnet) EachHeld(f func(netip.Addr, Hold)) {
	s.holds.mu.RLock()
	defer s.holds.mu.RUnlock()
	for a, h := range s.holds.by {
		f(a, h)
	}
}

// holdConflict returns the error for an owner that may not claim a held
// address, nil when it may (or a is not held).
func (s *Subnet) holdConflict(a netip.Addr, owner v1alpha1.ClaimOwner) error {
	h, ok := s.HeldBy(a)
	if !ok || h.Allows(owner) {
		return nil
	}
	return &AllocatedError{Subnet: s.name, Addr: a, Hold: h.Source}
}

// IsHoldConflict reports whether err is an address refused because it is
// in use outside the claims (a Hold of another owner).
func IsHoldConflict(err error) bool {
	var ae *AllocatedError
	return errors.As(err, &ae) && ae.Hold != ""
}

// releaseUnheld frees a claimed address whose claim is gone, unless it is
// held: a held address stays marked until its hold is dropped (the pod,
// record or port that uses it is gone too), so a released claim never
// hands out an address something still uses.
func (s *Subnet) releaseUnheld(a netip.Addr) {
	if _, held := s.HeldBy(a); !held {
		s.Release(one(a))
	}
}
