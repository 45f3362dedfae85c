package ipam

import (
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	listers "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
)

// Restore marks in s the address (and records the static MAC) of every
// claim that names s, so that a new Subnet, after a restart or a shard
// takeover, starts from the claimed set. Claims of other subnets are
// skipped; it returns how many claims were applied and the names of
// claims it could not read (bad address, address outside the subnet).
func (s *Subnet) Restore(claims []*v1alpha1.AddressClaim) (applied int, bad []string) {
	r := restoring{s: s}
	for _, c := range claims {
		r.add(c)
	}
	return r.applied, r.bad
}

// restoring is a Restore under way: the claims applied so far and the
// names of those that could not be.
type restoring struct {
	s       *Subnet
	applied int
	bad     []string
}

// add applies one claim, when it names s.
func (r *restoring) add(c *v1alpha1.AddressClaim) {
	if c.Spec.Subnet != r.s.name {
		return
	}
	if r.s.apply(&c.Spec) {
		r.applied++
	} else {
		r.bad = append(r.bad, c.Name)
	}
}

// apply marks one claim of s.
func (s *Subnet) apply(c *v1alpha1.AddressClaimSpec) bool {
	a, err := netip.ParseAddr(c.Address)
	if err != nil || !s.Mark(a) {
		return false
	}
	if m, err := ParseMAC(c.MAC); err == nil {
		s.recordMAC(m, OwnerKey(c.Owner))
	}
	return true
}

// forget undoes apply for a claim that was deleted.
func (s *Subnet) forget(c *v1alpha1.AddressClaimSpec) {
	a, err := netip.ParseAddr(c.Address)
	if err != nil {
		return
	}
	a = a.Unmap()
	s.releaseUnheld(a)
	if m, err := ParseMAC(c.MAC); err == nil {
		s.ReleaseMAC(m, OwnerKey(c.Owner))
	}
}

// recordMAC notes a MAC found in a claim, when it is one the table keeps
// (not unique by construction). The first holder seen keeps it.
func (s *Subnet) recordMAC(m MAC, ownerKey string) {
	if m[0] == macPrefix && (m[1] == macFromV4 || m[1] == macFromV6Offset) {
		return
	}
	s.macs.mu.Lock()
	defer s.macs.mu.Unlock()
	if s.macs.owner == nil {
		s.macs.owner = make(map[MAC]string)
	}
	if _, ok := s.macs.owner[m]; !ok {
		s.macs.owner[m] = ownerKey
	}
}

// Track makes s the tracked subnet of its name, replacing any earlier one,
// and restores it from the claims in lister (an AddressClaim informer's).
// From then on EventHandler keeps s in step with claims made and deleted
// elsewhere. Track before allocating from s.
//
// Claims that name s but cannot be applied (an address outside the subnet,
// after a CIDR change) are reported in an error matching ErrInvalid; s is
// tracked and restored from the others all the same, and the count says
// how many were applied.
//
// s is registered before the list is read, so an event between the two is
// applied to s as well. A claim deleted while the list is being applied
// may leave its bit set (an address lost until the next restore, never
// one given twice).
func (c *Claims) Track(s *Subnet, lister listers.AddressClaimLister) (int, error) {
	c.mu.Lock()
	c.subnets[s.name] = s
	c.mu.Unlock()
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelSubnet: SubnetLabelValue(s.name)})
	// Each builds no claim per cached one: at 50,000 claims a list would
	// be some 20 MB of garbage while a restarted replica's caches load.
	r := restoring{s: s}
	if err := claimcache.Each(lister, sel, r.add); err != nil {
		return 0, fmt.Errorf("listing claims of subnet %s: %w", s.name, err)
	}
	if len(r.bad) > 0 {
		return r.applied, fmt.Errorf("subnet %s: %d unreadable claims (first %s): %w", s.name, len(r.bad), r.bad[0], ErrInvalid)
	}
	return r.applied, nil
}

// Untrack stops following claims for the named subnet.
func (c *Claims) Untrack(name string) {
	c.mu.Lock()
	delete(c.subnets, name)
	c.mu.Unlock()
}

// Tracked is the subnet tracked under name.
func (c *Claims) Tracked(name string) (*Subnet, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.subnets[name]
	return s, ok
}

// EventHandler is the handler to add to the AddressClaim informer: it
// marks a claim's address in its tracked subnet when the claim appears and
// frees it when the claim goes. The bitmap is a cache of the claims, so a
// late event can only cost a wasted create (AlreadyExists) or leave an
// address unused for a while; it cannot give an address twice.
func (c *Claims) EventHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onClaim(obj, true) },
		UpdateFunc: func(_, obj any) { c.onClaim(obj, true) },
		DeleteFunc: func(obj any) { c.onClaim(obj, false) },
	}
}

func (c *Claims) onClaim(obj any, present bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	claim, _, ok := claimcache.SpecOf(obj)
	if !ok {
		return
	}
	s, ok := c.Tracked(claim.Subnet)
	if !ok {
		return
	}
	if present {
		s.apply(claim)
	} else {
		s.forget(claim)
	}
}

// Repair marks in s the address of every claim of s whose bit is clear, and
// returns how many it marked. The bitmap is a cache of the claims: a local
// undo that raced the claim's own informer event (a create that timed out
// on the client but committed on the server, a release racing a new claim
// of the same address) can clear the bit of an address that is still
// claimed. Such a bit costs no duplicate (the next create of that name
// fails), but it hides the address from the counters; Repair, run every
// few seconds over the informer's claims, puts it back.
//
// present is asked again after a bit was set: a claim deleted meanwhile
// (whose delete event may already have run) has its bit cleared again, so
// Repair cannot leave an address held that nobody claims.
func (s *Subnet) Repair(claims []*v1alpha1.AddressClaim, present func(*v1alpha1.AddressClaim) bool) int {
	n := 0
	for _, c := range claims {
		if c.Spec.Subnet != s.name {
			continue
		}
		a, err := netip.ParseAddr(c.Spec.Address)
		if err != nil {
			continue
		}
		if s.RepairAddr(a, func() bool { return present(c) }) {
			n++
		}
	}
	return n
}

// RepairAddr is Repair for the address a of one claim of s: it marks a
// when its bit is clear and the claim is still present, and reports
// whether it did.
func (s *Subnet) RepairAddr(a netip.Addr, present func() bool) bool {
	a = a.Unmap()
	if !s.IsFree(a) || !s.Mark(a) {
		return false
	}
	if !present() {
		s.Release(one(a))
		return false
	}
	return true
}
