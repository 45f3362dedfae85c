package reconcile

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	listers "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
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
	// repaired counts the bits Refresh marked again (see Repaired); freed
	// the stray bits it cleared (see StraysFreed).
	repaired, freed atomic.Uint64
	// sweepMu serialises the sweeps of Refresh, which keep each entry's
	// strays from one pass to the next.
	sweepMu sync.Mutex

	// holdSource reads the places an address can be in use outside the
	// claims; nil until SetHoldSource. holds is the last result, applied
	// to every subnet built afterwards; guarded by mu.
	holdSource func() (HoldInputs, error)
	holds      Holds
	lastAdopt  AdoptStats
	// adoptSpacing and nextAdopt space Refresh's Adopt passes (see
	// SetAdoptSpacing); guarded by mu.
	adoptSpacing int
	nextAdopt    time.Time
	// adoptMu is held by the spaced passes (AdoptSpaced, Refresh's), so
	// that one does not run while another does.
	adoptMu sync.Mutex
	// runAdopt runs each spaced pass (SetAdoptRunner); guarded by mu.
	runAdopt func(pass func())
}

type subnetEntry struct {
	config  ipam.SubnetConfig
	nodeIPs []netip.Addr
	subnet  *ipam.Subnet
	err     error
	// usage is the last snapshot of the subnet's counters (see Refresh);
	// HasFree reads it instead of scanning the bitmap per pod.
	usage []ipam.FamilyUsage
	// strays are the addresses the last sweep found held in the bitmap
	// with nothing behind them (guarded by Subnets.sweepMu).
	strays map[netip.Addr]bool
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
		r.mu.RLock()
		held := r.holds[s.Name]
		r.mu.RUnlock()
		if held != nil {
			sub.SetHolds(held, r.takenIn(s.Name, nodeIPs))
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
	var usage []ipam.FamilyUsage
	if e != nil {
		// Refresh replaces usage under the write lock: read it under ours.
		usage = e.usage
	}
	r.mu.RUnlock()
	if e == nil || e.subnet == nil {
		return false
	}
	for _, u := range usage {
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
	src := r.holdSource
	r.mu.RUnlock()
	// A pass already running (the one before the replica joins, which
	// starts once the caches are synced, as this loop's passes do) is
	// not doubled: this one is skipped, and that one spaces the next.
	if src != nil && r.adoptMu.TryLock() {
		r.mu.RLock()
		due := !time.Now().Before(r.nextAdopt)
		r.mu.RUnlock()
		if due {
			start := time.Now()
			st, err := r.adoptSpacedLocked()
			if err != nil {
				klog.Background().V(2).Info("Addresses in use not re-read this pass", "err", err)
			} else {
				klog.Background().V(4).Info("Addresses in use re-read", "took", time.Since(start), "held", st.HeldTotal())
			}
		}
		r.adoptMu.Unlock()
	}
	r.mu.RLock()
	entries := make(map[string]*subnetEntry, len(r.entries))
	// sizeHint: the addresses each subnet had in use at the last pass,
	// to size its set of claimed addresses.
	sizeHint := make(map[string]int, len(r.entries))
	for k, e := range r.entries {
		entries[k] = e
		for _, u := range e.usage {
			sizeHint[k] += int(u.Used)
		}
	}
	r.mu.RUnlock()

	// One pass over the cached claims, building none (claimcache.Each),
	// repairs every bitmap (Subnet.RepairAddr) and gathers each subnet's
	// set of claimed addresses, which serves the sweep and the counters:
	// at 50,000 pods the copies each pass made of the claims and holds
	// were tens of megabytes of garbage.
	claimedBy := make(map[string]map[netip.Addr]bool, len(entries))
	repaired := map[string]int{}
	if r.lister != nil {
		err := claimcache.Each(r.lister, labels.Everything(), func(c *v1alpha1.AddressClaim) {
			e := entries[c.Spec.Subnet]
			if e == nil || e.subnet == nil {
				return
			}
			a, err := netip.ParseAddr(c.Spec.Address)
			if err != nil {
				return
			}
			a = a.Unmap()
			m := claimedBy[c.Spec.Subnet]
			if m == nil {
				m = make(map[netip.Addr]bool, sizeHint[c.Spec.Subnet])
				claimedBy[c.Spec.Subnet] = m
			}
			m[a] = true
			// Asked only when the bit was clear: is the claim still
			// there, the same one (its UID)?
			name, uid := c.Name, c.UID
			if e.subnet.RepairAddr(a, func() bool {
				cur, ok := claimcache.Exists(r.lister, name)
				return ok && cur == uid
			}) {
				repaired[c.Spec.Subnet]++
			}
		})
		if err != nil {
			klog.Background().Error(err, "Listing address claims for the subnet counters")
		}
	}

	out := make(map[string][]ipam.FamilyUsage, len(entries))
	for name, e := range entries {
		if e.subnet == nil {
			continue
		}
		claimed := claimedBy[name]
		if n := repaired[name]; n > 0 {
			r.repaired.Add(uint64(n))
			klog.Background().Info("Marked claimed addresses the bitmap had lost", "subnet", name, "addresses", n)
		}
		if r.lister != nil {
			if freed := r.sweep(name, e, claimed); len(freed) > 0 {
				r.freed.Add(uint64(len(freed)))
				klog.Background().Info("Freed addresses the bitmap held with no claim, hold or node address behind them",
					"subnet", name, "addresses", len(freed), "first", freed[0])
			}
		}
		u := e.subnet.Usage()
		if r.lister != nil {
			// The node addresses inside the subnet are held too (never
			// handed to a pod), so used and available still add up to the
			// usable positions.
			// Addresses found in use without a claim (Adopt) are held
			// too; each address counts once.
			var held [2]uint64 // IPv4, IPv6
			count := func(a netip.Addr) {
				if a.Is4() {
					held[0]++
				} else {
					held[1]++
				}
			}
			for a := range claimed {
				count(a)
			}
			var nodes []netip.Addr
			for _, a := range e.nodeIPs {
				if a = a.Unmap(); !claimed[a] && !slices.Contains(nodes, a) {
					nodes = append(nodes, a)
					count(a)
				}
			}
			e.subnet.EachHeld(func(a netip.Addr, _ ipam.Hold) {
				if a = a.Unmap(); !claimed[a] && !slices.Contains(nodes, a) {
					count(a)
				}
			})
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

// sweep is Repair's other half: it frees the addresses the bitmap holds
// with no claim, no hold and no node address behind them, once two passes
// in a row found them so, and returns them. Such a bit is left behind when
// a claim's delete event is handled before a pick of its address learns
// that it was claimed (AlreadyExists keeps the bit set), or by holds read
// from caches that had fallen behind (a watch that expired and relisted):
// it hides the address from every pick and the counters until restart.
// The second pass spares an allocation in flight (its bit set, its claim
// not yet in the cache), and each address is asked again just before it
// is freed. Freeing a bit whose claim arrives meanwhile costs at most a
// create that fails (the claim's name is the address) until Repair marks
// it again; it never hands an address out twice.
func (r *Subnets) sweep(name string, e *subnetEntry, claimed map[netip.Addr]bool) []netip.Addr {
	r.sweepMu.Lock()
	defer r.sweepMu.Unlock()
	next := map[netip.Addr]bool{}
	var unclaimed []netip.Addr
	e.subnet.EachTaken(func(a netip.Addr) {
		if !claimed[a] && !slices.Contains(e.nodeIPs, a) {
			unclaimed = append(unclaimed, a)
		}
	})
	var freed []netip.Addr
	for _, a := range unclaimed {
		if _, h := e.subnet.HeldBy(a); h {
			continue
		}
		if !e.strays[a] {
			next[a] = true
			continue
		}
		if _, h := e.subnet.HeldBy(a); h || r.claimed(name, a) {
			continue
		}
		one := ipam.Addresses{V4: a}
		if !a.Is4() {
			one = ipam.Addresses{V6: a}
		}
		if e.subnet.Release(one) > 0 {
			freed = append(freed, a)
		}
	}
	e.strays = next
	return freed
}

// StraysFreed is how many stray bits Refresh has freed since the registry
// was made (see sweep).
func (r *Subnets) StraysFreed() uint64 { return r.freed.Load() }

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

// SetHoldSource gives the registry what Adopt reads: the pods, IP
// records, Vips and Northbound ports of the cluster. It returns an error
// while one of them is not readable yet (a Northbound not connected).
func (r *Subnets) SetHoldSource(f func() (HoldInputs, error)) {
	r.mu.Lock()
	r.holdSource = f
	r.mu.Unlock()
}

// AdoptStats is the outcome of one Adopt pass.
type AdoptStats struct {
	// Held is the number of held addresses by subnet.
	Held map[string]int
	// Pending is, by subnet, the held addresses of live pods that no
	// claim covers yet: what the pods' shard owners still have to adopt.
	Pending map[string]int
	// Conflicts are addresses more than one holder names.
	Conflicts []HoldConflict
}

// PendingTotal is the sum of Pending.
func (s AdoptStats) PendingTotal() int {
	n := 0
	for _, v := range s.Pending {
		n += v
	}
	return n
}

// HeldTotal is the sum of Held.
func (s AdoptStats) HeldTotal() int {
	n := 0
	for _, v := range s.Held {
		n += v
	}
	return n
}

// Adopt finds every address in use outside the claims (CollectHolds) and
// holds it in its subnet's allocator, so that no pick returns it and only
// its holder may claim it; addresses no longer in use anywhere are freed
// unless claimed. Run it once every source is synced before the first
// allocation, then periodically (Refresh does).
func (r *Subnets) Adopt() (AdoptStats, error) {
	r.mu.RLock()
	src := r.holdSource
	r.mu.RUnlock()
	if src == nil {
		return AdoptStats{}, errors.New("no hold source")
	}
	in, err := src()
	if err != nil {
		return AdoptStats{}, err
	}
	holds, conflicts := CollectHolds(in)
	r.mu.Lock()
	r.holds = holds
	entries := make(map[string]*subnetEntry, len(r.entries))
	for k, e := range r.entries {
		entries[k] = e
	}
	r.mu.Unlock()
	st := AdoptStats{Held: map[string]int{}, Pending: map[string]int{}, Conflicts: conflicts}
	for name, e := range entries {
		if e.subnet == nil {
			continue
		}
		held := holds[name]
		e.subnet.SetHolds(held, r.takenIn(name, e.nodeIPs))
		st.Held[name] = len(held)
		pending := 0
		for a, h := range held {
			if h.Owner != "" && !r.claimed(name, a) {
				pending++
			}
		}
		st.Pending[name] = pending
	}
	return st, nil
}

// AdoptSpaced runs an Adopt pass as Refresh does: a successful one
// becomes LastAdopt, and Refresh's next pass is spaced from it
// (SetAdoptSpacing). The pass a replica makes before it joins runs it
// too, so that the first status interval does not repeat a pass that has
// just been made, at 50,000 pods while the shards' first passes run.
func (r *Subnets) AdoptSpaced() (AdoptStats, error) {
	r.adoptMu.Lock()
	defer r.adoptMu.Unlock()
	return r.adoptSpacedLocked()
}

func (r *Subnets) adoptSpacedLocked() (AdoptStats, error) {
	r.mu.RLock()
	run := r.runAdopt
	r.mu.RUnlock()
	start := time.Now()
	var st AdoptStats
	var err error
	if run != nil {
		run(func() { st, err = r.Adopt() })
	} else {
		st, err = r.Adopt()
	}
	took := time.Since(start)
	r.mu.Lock()
	defer r.mu.Unlock()
	// At least a millisecond per unit: a pass too quick for the clock
	// still spaces the next.
	r.nextAdopt = start.Add(time.Duration(r.adoptSpacing) * max(took, time.Millisecond))
	if err == nil {
		r.lastAdopt = st
	}
	return st, err
}

// takenIn reports whether an address of the subnet is held by something
// other than a hold: a claim, or a node address inside the subnet.
func (r *Subnets) takenIn(subnet string, nodeIPs []netip.Addr) func(netip.Addr) bool {
	return func(a netip.Addr) bool {
		return slices.Contains(nodeIPs, a) || r.claimed(subnet, a)
	}
}

// claimed reports whether the claim cache has a claim of a in subnet.
func (r *Subnets) claimed(subnet string, a netip.Addr) bool {
	if r.lister == nil {
		return false
	}
	var buf [80]byte
	_, ok := claimcache.Exists(r.lister, string(v1alpha1.AppendClaimName(buf[:0], subnet, a)))
	return ok
}

// SetAdoptSpacing makes Refresh skip its Adopt pass until k times as long
// as the last pass took has passed since that pass started, so that the
// pass (every pod, IP record, Vip and Northbound port, read and collected
// again) costs at most about 1/k of a core however large the cluster.
// At 10,000 pods a pass took about 0.12 s and ran every status interval
// (3 s): a third of an idle replica's CPU; at 50,000, five times that,
// on each replica. Addresses taken into use outside the claims (a
// foreign IP record, a Vip) are held that much later, and a hold whose
// holder went away is dropped that much later; claims, which are what
// keeps two pods from one address, are not affected. 0 (the default)
// re-reads at every pass.
func (r *Subnets) SetAdoptSpacing(k int) {
	r.mu.Lock()
	r.adoptSpacing = k
	r.mu.Unlock()
}

// SetAdoptRunner makes run the way the spaced passes (AdoptSpaced,
// Refresh's) run: run must call pass once, and may do something before
// and after it (controller.RoomForPass makes room in the heap goal for
// the pass's garbage). The time run takes counts in the spacing.
func (r *Subnets) SetAdoptRunner(run func(pass func())) {
	r.mu.Lock()
	r.runAdopt = run
	r.mu.Unlock()
}

// LastAdopt is the outcome of the last Adopt pass Refresh made.
func (r *Subnets) LastAdopt() AdoptStats {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.lastAdopt
}
