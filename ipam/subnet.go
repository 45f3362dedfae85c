package ipam

import (
	"fmt"
	"net/netip"
	"strings"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// DefaultShards is the number of shard cursors when SubnetConfig.Shards
// is 0; it matches the default number of virtual shards of a cluster.
const DefaultShards = 64

// SubnetConfig is what a Subnet is built from: the kubeovn.io Subnet spec
// fields IPAM reads, and the subnet's IP pools.
type SubnetConfig struct {
	// Name is the Subnet's name; claims are named and labelled by it.
	Name string
	// CIDRBlock is one CIDR, or an IPv4 and an IPv6 CIDR separated by a
	// comma. IPv4 prefixes must be /8 or longer.
	CIDRBlock string
	// Gateway is one address per family, comma separated; empty (or a
	// family left out) means the first usable address of that family.
	Gateway string
	// Protocol is IPv4, IPv6 or Dual; empty means derived from CIDRBlock.
	// A value that disagrees with CIDRBlock is an error.
	Protocol string
	// ExcludeIPs are addresses, "a..b" ranges and CIDRs never handed out
	// dynamically; they may still be taken statically. Entries of a family
	// the subnet lacks, and the parts of entries outside the prefix (or the
	// IPv6 window), are ignored. Node InternalIPs inside an underlay subnet
	// belong here.
	ExcludeIPs []string
	// Pools are the subnet's IPPools. Their addresses are kept out of
	// dynamic allocation and handed out only by AllocateFromPool. Every
	// entry must lie in the subnet (and in the IPv6 window).
	Pools []PoolConfig
	// Shards is the number of next-fit cursors; the cursor of shard s
	// starts at s/Shards of the range. 0 means DefaultShards. Allocate
	// takes any shard number and reduces it modulo Shards.
	Shards int
	// IPv6Window is how many addresses from the start of an IPv6 prefix
	// the bitmap covers. 0 means DefaultIPv6Window; at most MaxIPv6Window.
	// Addresses past the window can be taken statically (they are kept in
	// a small set) but are never handed out dynamically.
	IPv6Window uint64
}

// PoolConfig is one IPPool of a subnet.
type PoolConfig struct {
	Name string
	// IPs are addresses, "a..b" ranges and CIDRs, of either family.
	IPs []string
}

// SubnetConfigFrom builds a SubnetConfig from a kubeovn.io Subnet and the
// IPPools whose spec.subnet names it (others are skipped).
func SubnetConfigFrom(s *kubeovnv1.Subnet, pools []*kubeovnv1.IPPool) SubnetConfig {
	c := SubnetConfig{
		Name:       s.Name,
		CIDRBlock:  s.Spec.CIDRBlock,
		Gateway:    s.Spec.Gateway,
		Protocol:   s.Spec.Protocol,
		ExcludeIPs: s.Spec.ExcludeIps,
	}
	for _, p := range pools {
		if p.Spec.Subnet == s.Name {
			c.Pools = append(c.Pools, PoolConfig{Name: p.Name, IPs: p.Spec.IPs})
		}
	}
	return c
}

// Addresses are the addresses of one allocation: one per family of the
// subnet. A family the subnet lacks is the zero Addr.
type Addresses struct {
	V4, V6 netip.Addr
}

// String is the kube-ovn annotation form: "v4", "v6" or "v4,v6".
func (a Addresses) String() string {
	switch {
	case a.V4.IsValid() && a.V6.IsValid():
		return a.V4.String() + "," + a.V6.String()
	case a.V4.IsValid():
		return a.V4.String()
	case a.V6.IsValid():
		return a.V6.String()
	}
	return ""
}

// IsZero reports whether a holds no address.
func (a Addresses) IsZero() bool { return !a.V4.IsValid() && !a.V6.IsValid() }

// List is the valid addresses of a, IPv4 first.
func (a Addresses) List() []netip.Addr {
	out := make([]netip.Addr, 0, 2)
	if a.V4.IsValid() {
		out = append(out, a.V4)
	}
	if a.V6.IsValid() {
		out = append(out, a.V6)
	}
	return out
}

// ParseAddresses parses "v4", "v6" or "v4,v6" (either order); two
// addresses of one family are an error.
func ParseAddresses(s string) (Addresses, error) {
	var a Addresses
	// Split without allocating: adoption parses every pod's addresses
	// each pass.
	first, rest, two := strings.Cut(s, ",")
	if n := strings.Count(rest, ",") + 2; two && n > 2 {
		return a, parseErr("address list", s, fmt.Errorf("%d addresses, want one per family", n))
	}
	for i, p := range [2]string{first, rest} {
		if i == 1 && !two {
			break
		}
		ip, err := parseAddr(p)
		if err != nil {
			return Addresses{}, parseErr("address", s, err)
		}
		slot := &a.V6
		if ip.Is4() {
			slot = &a.V4
		}
		if slot.IsValid() {
			return Addresses{}, parseErr("address list", s, fmt.Errorf("two addresses of one family"))
		}
		*slot = ip
	}
	return a, nil
}

// Subnet allocates the addresses of one subnet, one bitmap per family.
// All methods are safe for concurrent use; none blocks on another caller
// except for static IPv6 addresses beyond the window and the MAC table.
type Subnet struct {
	name     string
	protocol string
	// v4 and v6 are nil when the subnet lacks the family; never changed.
	v4, v6 *family
	// pools is immutable after NewSubnet.
	pools map[string]*ipPool
	macs  macTable
	// holds are the addresses found in use without a claim (holds.go).
	holds holdTable
}

// ipPool is one IPPool of a subnet.
type ipPool struct {
	name   string
	v4, v6 *familyPool
}

// NewSubnet parses and validates c. Errors match ErrInvalid (with the
// offending input) or ErrNotInRange.
func NewSubnet(c SubnetConfig) (*Subnet, error) {
	if c.Name == "" {
		return nil, parseErr("subnet name", c.Name, nil)
	}
	window := c.IPv6Window
	if window == 0 {
		window = DefaultIPv6Window
	}
	if window > MaxIPv6Window {
		return nil, parseErr("IPv6 window", fmt.Sprint(c.IPv6Window), fmt.Errorf("more than %d", MaxIPv6Window))
	}
	shards := c.Shards
	if shards == 0 {
		shards = DefaultShards
	}
	if shards < 0 {
		return nil, parseErr("shard count", fmt.Sprint(c.Shards), nil)
	}
	var p4, p6 netip.Prefix
	for _, part := range strings.Split(c.CIDRBlock, ",") {
		p, err := parsePrefix(part)
		if err != nil {
			return nil, parseErr("CIDR", c.CIDRBlock, err)
		}
		slot := &p6
		if p.Addr().Is4() {
			slot = &p4
		}
		if slot.IsValid() {
			return nil, parseErr("CIDR", c.CIDRBlock, fmt.Errorf("two prefixes of one family"))
		}
		*slot = p
	}
	proto := kubeovnv1.ProtocolDual
	switch {
	case !p6.IsValid():
		proto = kubeovnv1.ProtocolIPv4
	case !p4.IsValid():
		proto = kubeovnv1.ProtocolIPv6
	}
	if c.Protocol != "" && c.Protocol != proto {
		return nil, parseErr("protocol", c.Protocol, fmt.Errorf("cidrBlock %q is %s", c.CIDRBlock, proto))
	}
	var gw Addresses
	if strings.TrimSpace(c.Gateway) != "" {
		var err error
		if gw, err = ParseAddresses(c.Gateway); err != nil {
			return nil, err
		}
	}
	excludes, err := ParseRanges(c.ExcludeIPs)
	if err != nil {
		return nil, err
	}
	poolRanges := make([][]Range, len(c.Pools))
	var pools4, pools6 [][]Range
	for i, pc := range c.Pools {
		if poolRanges[i], err = ParseRanges(pc.IPs); err != nil {
			return nil, fmt.Errorf("pool %s: %w", pc.Name, err)
		}
		r4, r6 := splitFamilies(poolRanges[i])
		pools4, pools6 = append(pools4, r4), append(pools6, r6)
	}
	ex4, ex6 := splitFamilies(excludes)
	s := &Subnet{name: c.Name, protocol: proto, pools: make(map[string]*ipPool, len(c.Pools))}
	if p4.IsValid() {
		if s.v4, err = newFamily(p4, gw.V4, ex4, pools4, shards, window); err != nil {
			return nil, err
		}
	} else if gw.V4.IsValid() {
		return nil, fmt.Errorf("gateway %s: subnet has no IPv4 prefix: %w", gw.V4, ErrNotInRange)
	}
	if p6.IsValid() {
		if s.v6, err = newFamily(p6, gw.V6, ex6, pools6, shards, window); err != nil {
			return nil, err
		}
	} else if gw.V6.IsValid() {
		return nil, fmt.Errorf("gateway %s: subnet has no IPv6 prefix: %w", gw.V6, ErrNotInRange)
	}
	for i, pc := range c.Pools {
		if _, dup := s.pools[pc.Name]; dup {
			return nil, parseErr("pool name", pc.Name, fmt.Errorf("duplicate"))
		}
		pool := &ipPool{name: pc.Name}
		r4, r6 := splitFamilies(poolRanges[i])
		if len(r4) > 0 {
			if s.v4 == nil {
				return nil, fmt.Errorf("pool %s: IPv4 entries in a subnet without IPv4: %w", pc.Name, ErrNotInRange)
			}
			if pool.v4, err = newFamilyPool(s.v4, r4); err != nil {
				return nil, fmt.Errorf("pool %s: %w", pc.Name, err)
			}
		}
		if len(r6) > 0 {
			if s.v6 == nil {
				return nil, fmt.Errorf("pool %s: IPv6 entries in a subnet without IPv6: %w", pc.Name, ErrNotInRange)
			}
			if pool.v6, err = newFamilyPool(s.v6, r6); err != nil {
				return nil, fmt.Errorf("pool %s: %w", pc.Name, err)
			}
		}
		s.pools[pc.Name] = pool
	}
	return s, nil
}

func splitFamilies(rs []Range) (v4, v6 []Range) {
	for _, r := range rs {
		if r.From.Is4() {
			v4 = append(v4, r)
		} else {
			v6 = append(v6, r)
		}
	}
	return v4, v6
}

// Name is the subnet's name.
func (s *Subnet) Name() string { return s.name }

// Protocol is IPv4, IPv6 or Dual.
func (s *Subnet) Protocol() string { return s.protocol }

// Prefixes is the subnet's CIDR per family (zero Prefix where absent).
func (s *Subnet) Prefixes() (v4, v6 netip.Prefix) {
	if s.v4 != nil {
		v4 = s.v4.prefix
	}
	if s.v6 != nil {
		v6 = s.v6.prefix
	}
	return v4, v6
}

// Gateways is the subnet's gateway per family.
func (s *Subnet) Gateways() Addresses {
	var g Addresses
	if s.v4 != nil {
		g.V4 = s.v4.gatewayAddr
	}
	if s.v6 != nil {
		g.V6 = s.v6.gatewayAddr
	}
	return g
}

func (s *Subnet) familyOf(a netip.Addr) *family {
	if a.Is4() {
		return s.v4
	}
	return s.v6
}

// Contains reports whether a is in one of the subnet's prefixes.
func (s *Subnet) Contains(a netip.Addr) bool {
	a = a.Unmap()
	f := s.familyOf(a)
	return f != nil && f.prefix.Contains(a)
}

// Allocate picks one free address per family, next-fit from shard's
// cursor. It is lock-free and does not make the addresses durable; see
// Claims.Allocate for that. On ErrFull nothing is held.
func (s *Subnet) Allocate(shard int) (Addresses, error) {
	var a Addresses
	if s.v4 != nil {
		v4, ok := s.v4.allocate(uint(shard))
		if !ok {
			return Addresses{}, fmt.Errorf("subnet %s IPv4: %w", s.name, ErrFull)
		}
		a.V4 = v4
	}
	if s.v6 != nil {
		v6, ok := s.v6.allocate(uint(shard))
		if !ok {
			s.Release(a)
			return Addresses{}, fmt.Errorf("subnet %s IPv6: %w", s.name, ErrFull)
		}
		a.V6 = v6
	}
	return a, nil
}

// allocateFamily picks one dynamic address of one family, or one of pool
// p's addresses of that family when p is not nil.
func (s *Subnet) allocateFamily(is4 bool, shard int, p *ipPool) (netip.Addr, error) {
	f, fp := s.v6, (*familyPool)(nil)
	if is4 {
		f = s.v4
	}
	if p != nil {
		fp = p.v6
		if is4 {
			fp = p.v4
		}
	}
	if f == nil {
		return netip.Addr{}, fmt.Errorf("subnet %s has no such family: %w", s.name, ErrNotInRange)
	}
	var a netip.Addr
	var ok bool
	if p != nil {
		if fp == nil {
			return netip.Addr{}, fmt.Errorf("subnet %s pool %s %s: %w", s.name, p.name, f.name(), ErrFull)
		}
		a, ok = f.allocatePool(fp)
	} else {
		a, ok = f.allocate(uint(shard))
	}
	if !ok {
		where := "subnet " + s.name
		if p != nil {
			where += " pool " + p.name
		}
		return netip.Addr{}, fmt.Errorf("%s %s: %w", where, f.name(), ErrFull)
	}
	return a, nil
}

// AllocateFromPool picks one free address per family of the pool, next-fit.
// A pool without entries of one of the subnet's families gives only the
// families it has. It fails with ErrUnknownPool or ErrFull.
func (s *Subnet) AllocateFromPool(pool string) (Addresses, error) {
	p, ok := s.pools[pool]
	if !ok {
		return Addresses{}, fmt.Errorf("subnet %s: pool %q: %w", s.name, pool, ErrUnknownPool)
	}
	var a Addresses
	var err error
	if p.v4 != nil {
		if a.V4, err = s.allocateFamily(true, 0, p); err != nil {
			return Addresses{}, err
		}
	}
	if p.v6 != nil {
		if a.V6, err = s.allocateFamily(false, 0, p); err != nil {
			s.Release(a)
			return Addresses{}, err
		}
	}
	if a.IsZero() {
		return Addresses{}, fmt.Errorf("subnet %s pool %s: %w", s.name, pool, ErrFull)
	}
	return a, nil
}

// AllocateStatic takes exactly the valid addresses of a, all or none.
// Addresses in excludeIps may be taken. Errors: ErrNotInRange (outside the
// subnet), ErrReserved (network, broadcast, gateway), *AllocatedError
// (already held in this allocator; the owner is not known here).
func (s *Subnet) AllocateStatic(a Addresses) error {
	if a.IsZero() {
		return parseErr("static address", "", fmt.Errorf("empty"))
	}
	var done Addresses
	for _, ip := range a.List() {
		f := s.familyOf(ip)
		if f == nil {
			s.Release(done)
			return fmt.Errorf("subnet %s has no prefix for %s: %w", s.name, ip, ErrNotInRange)
		}
		if err := f.allocateStatic(ip); err != nil {
			s.Release(done)
			if err == ErrAllocated {
				return &AllocatedError{Subnet: s.name, Addr: ip}
			}
			return fmt.Errorf("subnet %s: %w", s.name, err)
		}
		if ip.Is4() {
			done.V4 = ip
		} else {
			done.V6 = ip
		}
	}
	return nil
}

// Mark records addr as held whatever its state (idempotent). Restore and
// claim conflicts use it. It reports false when addr is not in the subnet.
func (s *Subnet) Mark(addr netip.Addr) bool {
	addr = addr.Unmap()
	f := s.familyOf(addr)
	return f != nil && f.mark(addr)
}

// Release frees the valid addresses of a; releasing an address that is
// not held is a no-op. It reports how many were held.
func (s *Subnet) Release(a Addresses) int {
	n := 0
	if a.V4.IsValid() && a.V4.Is4() && s.v4 != nil && s.v4.release(a.V4) {
		n++
	}
	if a.V6.IsValid() {
		if f := s.familyOf(a.V6.Unmap()); f != nil && f.release(a.V6.Unmap()) {
			n++
		}
	}
	return n
}

// EachTaken calls fn with every address held in the subnet, both
// families, without building the list (at 50,000 pods a list was 6 MB of
// allocations per call). It is a snapshot taken as it goes; fn must not
// allocate or release in the subnet.
func (s *Subnet) EachTaken(fn func(netip.Addr)) {
	if s.v4 != nil {
		s.v4.eachTaken(fn)
	}
	if s.v6 != nil {
		s.v6.eachTaken(fn)
	}
}

// IsFree reports whether addr is in the subnet, is not the network,
// broadcast or gateway address, and is not held: whether AllocateStatic
// of it could succeed now. It is a snapshot.
func (s *Subnet) IsFree(addr netip.Addr) bool {
	addr = addr.Unmap()
	f := s.familyOf(addr)
	return f != nil && f.isFree(addr)
}

// FamilyUsage is one family's counters.
type FamilyUsage struct {
	// Family is "IPv4" or "IPv6".
	Family string
	Prefix netip.Prefix
	// Gateway is the family's gateway address.
	Gateway netip.Addr
	// Window is the number of bitmap positions: the prefix's size for IPv4
	// and small IPv6 prefixes, the window otherwise.
	Window uint64
	// Reserved is the positions never handed out dynamically: network,
	// broadcast, gateway, excludeIps and pool addresses.
	Reserved uint64
	// Used is the held addresses, however taken, including static ones on
	// excluded positions and beyond the IPv6 window.
	Used uint64
	// Available is the positions a dynamic Allocate could still return.
	Available uint64
}

// Usage is a snapshot of the subnet's counters, IPv4 first; it is exact
// when nothing allocates meanwhile. It costs a scan of the bitmap (about
// 256 Ki words for an IPv4 /8), so call it for status, not per pod.
func (s *Subnet) Usage() []FamilyUsage {
	var out []FamilyUsage
	if s.v4 != nil {
		out = append(out, s.v4.usage())
	}
	if s.v6 != nil {
		out = append(out, s.v6.usage())
	}
	return out
}

// PoolUsage is a pool's counters: held and still free positions, per
// family (IPv4 first, families the pool lacks left out).
func (s *Subnet) PoolUsage(pool string) ([]FamilyUsage, error) {
	p, ok := s.pools[pool]
	if !ok {
		return nil, fmt.Errorf("subnet %s: pool %q: %w", s.name, pool, ErrUnknownPool)
	}
	var out []FamilyUsage
	for _, x := range []struct {
		f  *family
		fp *familyPool
	}{{s.v4, p.v4}, {s.v6, p.v6}} {
		if x.fp == nil {
			continue
		}
		used, avail := x.f.poolUsage(x.fp)
		out = append(out, FamilyUsage{Family: x.f.name(), Prefix: x.f.prefix, Gateway: x.f.gatewayAddr,
			Window: x.fp.size, Used: used, Available: avail, Reserved: x.fp.size - used - avail})
	}
	return out, nil
}

// HasPool reports whether the subnet was built with the named pool.
func (s *Subnet) HasPool(name string) bool {
	_, ok := s.pools[name]
	return ok
}
