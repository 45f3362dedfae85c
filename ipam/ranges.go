package ipam

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"strings"
)

// Range is an inclusive span of addresses of one family, From <= To.
type Range struct {
	From, To netip.Addr
}

// Contains reports whether a lies in r.
func (r Range) Contains(a netip.Addr) bool {
	a = a.Unmap()
	return a.BitLen() == r.From.BitLen() && r.From.Compare(a) <= 0 && a.Compare(r.To) <= 0
}

func (r Range) String() string {
	if r.From == r.To {
		return r.From.String()
	}
	return r.From.String() + ".." + r.To.String()
}

// ParseRange parses one excludeIps or IPPool entry: an address, an "a..b"
// range (both ends included, same family, a <= b) or a CIDR (every address
// of the prefix). IPv4-mapped IPv6 addresses are taken as IPv4.
func ParseRange(s string) (Range, error) {
	in := s
	s = strings.TrimSpace(s)
	if from, to, ok := strings.Cut(s, ".."); ok {
		a, err := parseAddr(from)
		if err != nil {
			return Range{}, parseErr("range", in, err)
		}
		b, err := parseAddr(to)
		if err != nil {
			return Range{}, parseErr("range", in, err)
		}
		if a.BitLen() != b.BitLen() {
			return Range{}, parseErr("range", in, errors.New("ends of different families"))
		}
		if a.Compare(b) > 0 {
			return Range{}, parseErr("range", in, errors.New("start after end"))
		}
		return Range{From: a, To: b}, nil
	}
	if strings.Contains(s, "/") {
		p, err := parsePrefix(s)
		if err != nil {
			return Range{}, parseErr("range", in, err)
		}
		return prefixRange(p), nil
	}
	a, err := parseAddr(s)
	if err != nil {
		return Range{}, parseErr("range", in, err)
	}
	return Range{From: a, To: a}, nil
}

// ParseRanges parses a list of entries with ParseRange; the first bad entry
// fails the whole list.
func ParseRanges(entries []string) ([]Range, error) {
	out := make([]Range, 0, len(entries))
	for _, e := range entries {
		if strings.TrimSpace(e) == "" {
			continue
		}
		r, err := ParseRange(e)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func parseAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return netip.Addr{}, err
	}
	if a.Zone() != "" {
		return netip.Addr{}, errors.New("zoned address")
	}
	return a.Unmap(), nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, err
	}
	if p.Addr().Is4In6() {
		// A mapped prefix is accepted only when it covers IPv4 space.
		if p.Bits() < 96 {
			return netip.Prefix{}, errors.New("IPv4-mapped prefix shorter than /96")
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// prefixRange is the first and last address of p.
func prefixRange(p netip.Prefix) Range {
	p = p.Masked()
	first := p.Addr()
	hi, lo := u128(first)
	host := uint(first.BitLen() - p.Bits())
	// Set the host bits of the 128-bit value; for IPv4 only the low 32 of
	// lo carry the address.
	switch {
	case host == 0:
	case host < 64:
		lo |= 1<<host - 1
	case host == 64:
		lo = ^uint64(0)
	default:
		lo = ^uint64(0)
		hi |= 1<<(host-64) - 1
	}
	return Range{From: first, To: fromU128(hi, lo, first.Is4())}
}

// u128 is a as a 128-bit number; an IPv4 address is its 32-bit value.
func u128(a netip.Addr) (hi, lo uint64) {
	if a.Is4() {
		b := a.As4()
		return 0, uint64(binary.BigEndian.Uint32(b[:]))
	}
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

func fromU128(hi, lo uint64, is4 bool) netip.Addr {
	if is4 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(lo))
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], lo)
	return netip.AddrFrom16(b)
}

// offsetOf is a's distance from base, when a >= base and the distance fits
// 64 bits.
func offsetOf(base, a netip.Addr) (uint64, bool) {
	bh, bl := u128(base)
	ah, al := u128(a)
	if ah < bh || (ah == bh && al < bl) {
		return 0, false
	}
	dl := al - bl
	dh := ah - bh
	if al < bl {
		dh--
	}
	if dh != 0 {
		return 0, false
	}
	return dl, true
}

// addrAt is base plus off, wrapping within the family.
func addrAt(base netip.Addr, off uint64) netip.Addr {
	hi, lo := u128(base)
	nl := lo + off
	if nl < lo {
		hi++
	}
	return fromU128(hi, nl, base.Is4())
}

// offRange is an inclusive span of bitmap offsets.
type offRange struct{ lo, hi uint64 }

// clip maps r onto the offsets [0, size) of a bitmap based at base; ok is
// false when nothing of r falls inside.
func clip(r Range, base netip.Addr, size uint64) (offRange, bool) {
	if r.From.BitLen() != base.BitLen() || size == 0 {
		return offRange{}, false
	}
	last := addrAt(base, size-1)
	if r.To.Compare(base) < 0 || r.From.Compare(last) > 0 {
		return offRange{}, false
	}
	var o offRange
	if r.From.Compare(base) <= 0 {
		o.lo = 0
	} else {
		o.lo, _ = offsetOf(base, r.From)
	}
	if r.To.Compare(last) >= 0 {
		o.hi = size - 1
	} else {
		o.hi, _ = offsetOf(base, r.To)
	}
	return o, true
}

// mergeOffRanges sorts and coalesces overlapping or adjacent spans.
func mergeOffRanges(rs []offRange) []offRange {
	if len(rs) == 0 {
		return nil
	}
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b offRange) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.lo <= last.hi || r.lo == last.hi+1 {
			last.hi = max(last.hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}
