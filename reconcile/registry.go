package reconcile

import (
	"fmt"
	"net/netip"
	"reflect"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	listers "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
)

// Subnets keeps one ipam.Subnet per kubeovn.io Subnet, rebuilt when the
// fields IPAM reads (or the subnet's IP pools, or the node addresses inside
// it) change, and tracked by the claim layer so that claims made by any
// replica keep its bitmap current.
//
// Node InternalIPs inside a subnet are marked held, so a dynamic pick never
// returns one; a node address leaving the subnet is freed on the next
// rebuild.
//
// The claim layer keeps its own name-to-bitmap map (ipam.Claims.Tracked)
// on purpose: a rebuilt bitmap must follow claim events from before its
// restore, but allocations may use it only once it is restored and holds
// the node addresses. Claims sees the new bitmap first, this registry
// publishes it last; one map could not give both moments.
type Subnets struct {
	claims *ipam.Claims
	lister listers.AddressClaimLister
	shards int

	// mu guards entries.
	mu sync.RWMutex
	// entries is by subnet name; an entry with a nil subnet records a spec
	// that could not be built, with its error.
	entries map[string]*subnetEntry
	// repaired counts the bits Refresh marked again (see Repaired).
	repaired atomic.Uint64
}

type subnetEntry struct {
	config  ipam.SubnetConfig
	nodeIPs []netip.Addr
	subnet  *ipam.Subnet
	err     error
	// usage is the last snapshot of the subnet's counters (see Refresh);
	// HasFree reads it instead of scanning the bitmap per pod.
	usage []ipam.FamilyUsage
}

// NewSubnets returns an empty registry whose subnets use the given number
// of shard cursors and are restored from lister.
func NewSubnets(claims *ipam.Claims, lister listers.AddressClaimLister, shards int) *Subnets {
	return &Subnets{claims: claims, lister: lister, shards: shards, entries: map[string]*subnetEntry{}}
}

// Sync builds (or rebuilds, when its config changed) the allocator of
// subnet s with its pools and the node addresses. It returns the build
// error of an invalid spec, which is also what Get returns until the spec
// is fixed.
func (r *Subnets) Sync(s *kubeovnv1.Subnet, pools []*kubeovnv1.IPPool, nodeIPs []netip.Addr) error {
	cfg := ipam.SubnetConfigFrom(s, pools)
	cfg.Shards = r.shards
	r.mu.RLock()
	old := r.entries[s.Name]
	r.mu.RUnlock()
	if old != nil && reflect.DeepEqual(old.config, cfg) && reflect.DeepEqual(old.nodeIPs, nodeIPs) {
		return old.err
	}

	e := &subnetEntry{config: cfg, nodeIPs: nodeIPs}
	sub, err := ipam.NewSubnet(cfg)
	if err != nil {
		e.err = fmt.Errorf("subnet %s: %w", s.Name, err)
	} else {
		// Track first: claims made from here on are applied to the new
		// bitmap, and the restore lists what exists already.
		if _, terr := r.claims.Track(sub, r.lister); terr != nil {
			// The readable claims are applied and the subnet stays usable;
			// an unreadable one only keeps its address out of reach.
			klog.Background().Error(terr, "Restoring subnet from claims", "subnet", s.Name)
		}
		for _, ip := range nodeIPs {
			sub.Mark(ip)
		}
		e.subnet = sub
		e.usage = sub.Usage()
	}
	r.mu.Lock()
	r.entries[s.Name] = e
	r.mu.Unlock()
	return e.err
}

// Remove forgets the subnet.
func (r *Subnets) Remove(name string) {
	r.mu.Lock()
	delete(r.entries, name)
	r.mu.Unlock()
	r.claims.Untrack(name)
}

// Get returns the allocator of the named subnet, or the error its spec
// gave, or ErrUnknownSubnet.
func (r *Subnets) Get(name string) (*ipam.Subnet, error) {
	r.mu.RLock()
	e := r.entries[name]
	r.mu.RUnlock()
	switch {
	case e == nil:
		return nil, fmt.Errorf("subnet %q: %w", name, ErrUnknownSubnet)
	case e.err != nil:
		return nil, e.err
	}
	return e.subnet, nil
}

// HasFree reports whether the named subnet had a free dynamic address at
// the last Refresh (true for a subnet never refreshed).
func (r *Subnets) HasFree(name string) bool {
	r.mu.RLock()
	e := r.entries[name]
	r.mu.RUnlock()
	if e == nil || e.subnet == nil {
		return false
	}
	for _, u := range e.usage {
		if u.Available == 0 {
			return false
		}
	}
	return true
}

// Refresh takes a new usage snapshot of every subnet and returns them by
// subnet name. It scans every bitmap and the claim cache once: call it
// every few seconds, not per pod.
//
// The claims are the truth the bitmaps cache. Refresh first repairs every
// bitmap from them (Subnet.Repair: a claimed address whose bit a local
// undo cleared is marked again), then reports each family's Used as the
// number of claims in it plus the node addresses it holds, so that the
// counters equal the addresses held even while a bitmap is briefly behind.
// Available stays the bitmap's count of positions a dynamic pick could
// still return.
func (r *Subnets) Refresh() map[string][]ipam.FamilyUsage {
	r.mu.RLock()
	entries := make(map[string]*subnetEntry, len(r.entries))
	for k, e := range r.entries {
		entries[k] = e
	}
	r.mu.RUnlock()

	bySubnet := map[string][]*v1alpha1.AddressClaim{}
	if r.lister != nil {
		all, err := r.lister.List(labels.Everything())
		if err != nil {
			klog.Background().Error(err, "Listing address claims for the subnet counters")
		}
		for _, c := range all {
			bySubnet[c.Spec.Subnet] = append(bySubnet[c.Spec.Subnet], c)
		}
	}
	present := func(c *v1alpha1.AddressClaim) bool {
		cur, err := r.lister.Get(c.Name)
		return err == nil && cur.UID == c.UID
	}

	out := make(map[string][]ipam.FamilyUsage, len(entries))
	for name, e := range entries {
		if e.subnet == nil {
			continue
		}
		claims := bySubnet[name]
		if n := e.subnet.Repair(claims, present); n > 0 {
			r.repaired.Add(uint64(n))
			klog.Background().Info("Marked claimed addresses the bitmap had lost", "subnet", name, "addresses", n)
		}
		u := e.subnet.Usage()
		if r.lister != nil {
			// The node addresses inside the subnet are held too (never
			// handed to a pod), so used and available still add up to the
			// usable positions.
			var held [2]uint64 // IPv4, IPv6
			count := func(a netip.Addr) {
				if a.Unmap().Is4() {
					held[0]++
				} else {
					held[1]++
				}
			}
			for _, c := range claims {
				if a, err := netip.ParseAddr(c.Spec.Address); err == nil {
					count(a)
				}
			}
			for _, a := range e.nodeIPs {
				count(a)
			}
			for i := range u {
				if u[i].Family == "IPv4" {
					u[i].Used = held[0]
				} else {
					u[i].Used = held[1]
				}
			}
		}
		out[name] = u
		r.mu.Lock()
		if r.entries[name] == e {
			e.usage = u
		}
		r.mu.Unlock()
	}
	return out
}

// Repaired is how many claimed addresses Refresh has found missing from a
// bitmap and marked again since the registry was made.
func (r *Subnets) Repaired() uint64 { return r.repaired.Load() }

// Names are the subnets in the registry.
func (r *Subnets) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.entries))
	for k := range r.entries {
		out = append(out, k)
	}
	return out
}
