package ipam

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
)

// Bitmap window limits for IPv6 (IPv4 prefixes are covered whole).
const (
	// DefaultIPv6Window is the number of addresses, from the start of an
	// IPv6 prefix, that a bitmap covers when SubnetConfig.IPv6Window is 0.
	// 65,536 positions cost 8 KiB of bitmap (16 KiB with the mask).
	DefaultIPv6Window = 1 << 16
	// MaxIPv6Window bounds SubnetConfig.IPv6Window: 2^24 positions, as
	// many as an IPv4 /8, so an IPv6 bitmap never costs more than 4 MiB.
	MaxIPv6Window = 1 << 24
	// minIPv4Bits is the shortest IPv4 prefix accepted: /8.
	minIPv4Bits = 8
)

// cursor is a shard's next-fit position, alone on its cache line so that
// shards allocating in parallel do not share one.
type cursor struct {
	pos atomic.Uint64
	_   [56]byte
}

// family is the allocator of one address family of one subnet: a bitmap
// over the first size offsets of the prefix. It holds no owners; who holds
// an address is what claims record.
type family struct {
	prefix netip.Prefix
	// base is the prefix's first address, offset 0.
	base netip.Addr
	// is4 and base4 short-cut the offset math for IPv4, the hot case:
	// base4 is base as a number.
	is4   bool
	base4 uint32
	// baseHi and baseLo are base as a 128-bit number, for IPv6. The window
	// (at most 2^24 addresses from base) never crosses a carry into
	// baseHi, since a prefix of /64 or shorter starts at baseLo 0 and a
	// longer one lies inside a single baseHi.
	baseHi, baseLo uint64
	// size is the number of bitmap positions: the whole prefix, or the
	// IPv6 window. Addresses at offsets >= size are outside the window.
	size uint64
	// network, broadcast and gateway are the offsets never handed out at
	// all, not even statically; has* say whether each exists in the window.
	network, broadcast, gateway          uint64
	hasNetwork, hasBroadcast, hasGateway bool
	gatewayAddr                          netip.Addr
	// alloc has a bit set for every held address in the window, whatever
	// way it was taken (dynamic, static, pool, restore).
	alloc bitmap
	// dynMask is immutable: positions a dynamic pick skips (network,
	// broadcast, gateway, excludeIps, pool addresses, and the bits past
	// size in the last word).
	dynMask []uint64
	// poolMask is immutable: positions a pool pick skips (the same minus
	// pool addresses). It is dynMask itself when the subnet has no pools.
	poolMask []uint64
	// cursors has one next-fit position per shard, starting at the shard's
	// slice of the window.
	cursors []cursor
	// outside holds the static IPv6 addresses beyond the window.
	outside outsideSet
}

// outsideSet is the few IPv6 addresses taken statically beyond the window.
type outsideSet struct {
	mu sync.Mutex
	// m guarded by mu; a member is held.
	m map[netip.Addr]struct{}
}

func newFamily(p netip.Prefix, gw netip.Addr, excludes []Range, pools [][]Range, shards int, window uint64) (*family, error) {
	f := &family{prefix: p, base: p.Addr(), is4: p.Addr().Is4()}
	if f.is4 {
		b := f.base.As4()
		f.base4 = binary.BigEndian.Uint32(b[:])
	}
	f.baseHi, f.baseLo = u128(f.base)
	host := uint(p.Addr().BitLen() - p.Bits())
	if p.Addr().Is4() && p.Bits() < minIPv4Bits {
		return nil, parseErr("CIDR", p.String(), fmt.Errorf("IPv4 prefixes shorter than /%d are not supported", minIPv4Bits))
	}
	f.size = window
	if host < 64 && uint64(1)<<host <= window || p.Addr().Is4() {
		f.size = uint64(1) << host
	}
	f.alloc = newBitmap(f.size)
	words := len(f.alloc.words)
	fixed := make([]uint64, words)
	setBit := func(m []uint64, i uint64) { m[i>>6] |= 1 << (i & 63) }
	// Bits past size in the last word are never handed out.
	for i := f.size; i < uint64(words)*64; i++ {
		setBit(fixed, i)
	}
	if host >= 2 || (p.Addr().Is6() && host >= 1) {
		f.network, f.hasNetwork = 0, true
		setBit(fixed, 0)
	}
	if p.Addr().Is4() && host >= 2 {
		f.broadcast, f.hasBroadcast = f.size-1, true
		setBit(fixed, f.size-1)
	}
	if !gw.IsValid() {
		gw = addrAt(f.base, 0)
		if f.hasNetwork {
			gw = addrAt(f.base, 1)
		}
	}
	if !p.Contains(gw) {
		return nil, fmt.Errorf("gateway %s outside %s: %w", gw, p, ErrNotInRange)
	}
	f.gatewayAddr = gw
	if off, ok := f.offset(gw); ok {
		if (f.hasNetwork && off == f.network) || (f.hasBroadcast && off == f.broadcast) {
			return nil, fmt.Errorf("gateway %s is the network or broadcast address of %s: %w", gw, p, ErrNotInRange)
		}
		f.gateway, f.hasGateway = off, true
		setBit(fixed, off)
	}
	for _, r := range excludes {
		if o, ok := clip(r, f.base, f.size); ok {
			setMaskRange(fixed, o)
		}
	}
	f.poolMask = fixed
	f.dynMask = fixed
	if len(pools) > 0 {
		f.dynMask = make([]uint64, words)
		copy(f.dynMask, fixed)
		for _, rs := range pools {
			for _, r := range rs {
				if o, ok := clip(r, f.base, f.size); ok {
					setMaskRange(f.dynMask, o)
				}
			}
		}
	}
	if shards < 1 {
		shards = 1
	}
	f.cursors = make([]cursor, shards)
	for s := range f.cursors {
		f.cursors[s].pos.Store(uint64(s) * f.size / uint64(shards))
	}
	return f, nil
}

func setMaskRange(m []uint64, o offRange) {
	for i := o.lo; ; i++ {
		if i&63 == 0 && o.hi-i >= 63 {
			m[i>>6] = ^uint64(0)
			i += 63
		} else {
			m[i>>6] |= 1 << (i & 63)
		}
		if i >= o.hi {
			return
		}
	}
}

// offset is a's position in the bitmap, if it has one.
func (f *family) offset(a netip.Addr) (uint64, bool) {
	if f.is4 {
		if !a.Is4() {
			return 0, false
		}
		b := a.As4()
		off := uint64(binary.BigEndian.Uint32(b[:]) - f.base4)
		return off, off < f.size
	}
	if !a.Is6() || a.Zone() != "" {
		return 0, false
	}
	hi, lo := u128(a)
	if hi != f.baseHi || lo < f.baseLo || lo-f.baseLo >= f.size {
		return 0, false
	}
	return lo - f.baseLo, true
}

func (f *family) addr(off uint64) netip.Addr {
	if f.is4 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], f.base4+uint32(off))
		return netip.AddrFrom4(b)
	}
	return fromU128(f.baseHi, f.baseLo+off, false)
}

func (f *family) isFixed(off uint64) bool {
	return (f.hasNetwork && off == f.network) || (f.hasBroadcast && off == f.broadcast) ||
		(f.hasGateway && off == f.gateway)
}

func (f *family) name() string {
	if f.base.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// allocate picks a free dynamic address next-fit from the shard's cursor.
func (f *family) allocate(shard uint) (netip.Addr, bool) {
	if n := uint(len(f.cursors)); shard >= n {
		shard %= n
	}
	c := &f.cursors[shard]
	start := c.pos.Load()
	// Fast path: a free bit in the cursor's own word, the common case
	// below high fill; the same rule as pick, without its calls.
	if start < f.size {
		wi := start >> 6
		m := ^f.dynMask[wi] & (^uint64(0) << (start & 63))
		w := &f.alloc.words[wi]
		for m != 0 {
			old := w.Load()
			free := ^old & m
			if free == 0 {
				break
			}
			bit := uint64(bits.TrailingZeros64(free))
			if w.CompareAndSwap(old, old|1<<bit) {
				off := wi<<6 | bit
				c.pos.Store(off + 1)
				return f.addr(off), true
			}
		}
	}
	off, ok := f.alloc.pick(0, f.size-1, start, f.dynMask)
	if !ok {
		return netip.Addr{}, false
	}
	// A plain store: two pickers of one shard racing here both leave the
	// cursor just past a recent pick, which is all next-fit needs.
	c.pos.Store(off + 1)
	return f.addr(off), true
}

// allocateStatic takes a exactly. It fails with ErrNotInRange outside the
// prefix, ErrReserved on the network, broadcast or gateway address, and
// ErrAllocated (bare) when the address is already held here.
func (f *family) allocateStatic(a netip.Addr) error {
	if !f.prefix.Contains(a) {
		return fmt.Errorf("%s outside %s: %w", a, f.prefix, ErrNotInRange)
	}
	off, ok := f.offset(a)
	if !ok {
		f.outside.mu.Lock()
		defer f.outside.mu.Unlock()
		if _, held := f.outside.m[a]; held {
			return ErrAllocated
		}
		if f.outside.m == nil {
			f.outside.m = make(map[netip.Addr]struct{})
		}
		f.outside.m[a] = struct{}{}
		return nil
	}
	if f.isFixed(off) {
		return fmt.Errorf("%s is the network, broadcast or gateway address of %s: %w", a, f.prefix, ErrReserved)
	}
	if !f.alloc.set(off) {
		return ErrAllocated
	}
	return nil
}

// mark records a as held whatever its state, for restore and for a claim
// found taken. It reports false only when a is not in the prefix.
func (f *family) mark(a netip.Addr) bool {
	if !f.prefix.Contains(a) {
		return false
	}
	off, ok := f.offset(a)
	if !ok {
		f.outside.mu.Lock()
		if f.outside.m == nil {
			f.outside.m = make(map[netip.Addr]struct{})
		}
		f.outside.m[a] = struct{}{}
		f.outside.mu.Unlock()
		return true
	}
	if !f.isFixed(off) {
		f.alloc.set(off)
	}
	return true
}

// release frees a and reports whether it was held.
func (f *family) release(a netip.Addr) bool {
	off, ok := f.offset(a)
	if !ok {
		f.outside.mu.Lock()
		defer f.outside.mu.Unlock()
		_, held := f.outside.m[a]
		delete(f.outside.m, a)
		return held
	}
	if f.isFixed(off) {
		return false
	}
	return f.alloc.clear(off)
}

// eachTaken calls fn with every address held in the family: the set bits
// of the window and the static addresses beyond it. fn must not allocate
// or release in the family (the static addresses are visited under their
// lock).
func (f *family) eachTaken(fn func(netip.Addr)) {
	for i := range f.alloc.words {
		w := f.alloc.words[i].Load()
		for w != 0 {
			b := uint64(bits.TrailingZeros64(w))
			w &= w - 1
			if off := uint64(i)*64 + b; off < f.size {
				fn(f.addr(off))
			}
		}
	}
	f.outside.mu.Lock()
	for a := range f.outside.m {
		fn(a)
	}
	f.outside.mu.Unlock()
}

// isFree reports whether a static allocation of a could succeed here.
func (f *family) isFree(a netip.Addr) bool {
	if !f.prefix.Contains(a) {
		return false
	}
	off, ok := f.offset(a)
	if !ok {
		f.outside.mu.Lock()
		defer f.outside.mu.Unlock()
		_, held := f.outside.m[a]
		return !held
	}
	return !f.isFixed(off) && !f.alloc.isSet(off)
}

func (f *family) usage() FamilyUsage {
	u := FamilyUsage{Family: f.name(), Prefix: f.prefix, Window: f.size, Gateway: f.gatewayAddr}
	var masked, taken uint64
	for i := range f.alloc.words {
		w := f.alloc.words[i].Load()
		taken += uint64(bits.OnesCount64(w))
		masked += uint64(bits.OnesCount64(w | f.dynMask[i]))
		u.Reserved += uint64(bits.OnesCount64(f.dynMask[i]))
	}
	pad := uint64(len(f.alloc.words))*64 - f.size
	u.Reserved -= pad
	u.Available = uint64(len(f.alloc.words))*64 - masked
	f.outside.mu.Lock()
	u.Used = taken + uint64(len(f.outside.m))
	f.outside.mu.Unlock()
	return u
}

// familyPool is the part of one IPPool in one family: spans of bitmap
// offsets, sorted and disjoint.
type familyPool struct {
	ranges []offRange
	// size is the number of offsets in ranges.
	size uint64
	// cursor is the pool's next-fit position (an offset).
	cursor atomic.Uint64
}

func newFamilyPool(f *family, rs []Range) (*familyPool, error) {
	var offs []offRange
	for _, r := range rs {
		if !f.prefix.Contains(r.From) || !f.prefix.Contains(r.To) {
			return nil, fmt.Errorf("pool entry %s outside %s: %w", r, f.prefix, ErrNotInRange)
		}
		o, ok := clip(r, f.base, f.size)
		if !ok || addrAt(f.base, o.lo) != r.From || addrAt(f.base, o.hi) != r.To {
			return nil, fmt.Errorf("pool entry %s beyond the %d-address window of %s: %w", r, f.size, f.prefix, ErrNotInRange)
		}
		offs = append(offs, o)
	}
	p := &familyPool{ranges: mergeOffRanges(offs)}
	for _, o := range p.ranges {
		p.size += o.hi - o.lo + 1
	}
	if len(p.ranges) > 0 {
		p.cursor.Store(p.ranges[0].lo)
	}
	return p, nil
}

// allocatePool picks next-fit among the pool's offsets.
func (f *family) allocatePool(p *familyPool) (netip.Addr, bool) {
	n := len(p.ranges)
	if n == 0 {
		return netip.Addr{}, false
	}
	start := p.cursor.Load()
	idx := sort.Search(n, func(i int) bool { return p.ranges[i].hi >= start })
	if idx == n {
		idx, start = 0, p.ranges[0].lo
	}
	for k := 0; k <= n; k++ {
		r := p.ranges[(idx+k)%n]
		lo, hi := r.lo, r.hi
		switch {
		case k == 0:
			lo = max(lo, start)
		case k == n:
			if start <= r.lo {
				continue
			}
			hi = min(hi, start-1)
		}
		if off, ok := f.alloc.pickIn(lo, hi, f.poolMask); ok {
			p.cursor.Store(off + 1)
			return f.addr(off), true
		}
	}
	return netip.Addr{}, false
}

func (f *family) poolUsage(p *familyPool) (used, avail uint64) {
	for _, r := range p.ranges {
		for i := r.lo; i <= r.hi; i++ {
			taken := f.alloc.isSet(i)
			if taken {
				used++
			}
			if !taken && f.poolMask[i>>6]&(1<<(i&63)) == 0 {
				avail++
			}
		}
	}
	return used, avail
}
