package ipam

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// FuzzParseMAC: ParseMAC's allocation-free reading of the usual forms
// agrees with net.ParseMAC on every input: the same MAC, or both refuse.
func FuzzParseMAC(f *testing.F) {
	for _, s := range []string{"00:11:22:aa:BB:cc", "00-11-22-33-44-55", "00:11-22:33:44:55", "0011.2233.4455",
		"00:00:00:00:00:00", "01:00:5e:00:00:01", "00:11:22:33:44:5g", "", "00:11:22:33:44:55:66:77"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseMAC(s)
		var want MAC
		hw, werr := net.ParseMAC(s)
		if werr == nil && len(hw) == 6 {
			copy(want[:], hw)
		}
		valid := werr == nil && len(hw) == 6 && want != (MAC{}) && want[0]&1 == 0
		if (err == nil) != valid || got != map[bool]MAC{true: want}[valid] {
			t.Fatalf("ParseMAC(%q) = %v, %v; net.ParseMAC says %v, %v", s, got, err, hw, werr)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("ParseMAC(%q) error %v is not ErrInvalid", s, err)
		}
	})
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "10.0.0.1..10.0.0.9", "10.0.0.0/8", "fd00::/64",
		"fd00::1..fd00::ff", "::ffff:10.0.0.0/120", "10.0.0.9..10.0.0.1", "", "..", "1.2.3.4/33"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRange(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Input != s || !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseRange(%q) error %v is not a *ParseError with the input", s, err)
			}
			return
		}
		if !r.From.IsValid() || r.From.BitLen() != r.To.BitLen() || r.From.Compare(r.To) > 0 || r.From.Is4In6() {
			t.Fatalf("ParseRange(%q) = %v: not an ordered single-family range", s, r)
		}
		back, err := ParseRange(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRange(%q).String() = %q re-parses to %v, %v", s, r.String(), back, err)
		}
	})
}

func FuzzPrefixMath(f *testing.F) {
	f.Add([]byte{10, 0, 0, 0}, 8, uint64(5))
	f.Add([]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 64, uint64(1<<63))
	f.Add([]byte{255, 255, 255, 255}, 0, uint64(1))
	f.Fuzz(func(t *testing.T, raw []byte, bits int, off uint64) {
		var a netip.Addr
		switch len(raw) {
		case 4:
			a = netip.AddrFrom4([4]byte(raw))
		case 16:
			a = netip.AddrFrom16([16]byte(raw)).Unmap()
		default:
			return
		}
		if bits < 0 || bits > a.BitLen() {
			return
		}
		p, err := a.Prefix(bits)
		if err != nil {
			t.Fatal(err)
		}
		r := prefixRange(p)
		if r.From != p.Addr() || !p.Contains(r.To) || r.From.Compare(r.To) > 0 {
			t.Fatalf("prefixRange(%s) = %v", p, r)
		}
		if next := r.To.Next(); next.IsValid() && p.Contains(next) {
			t.Fatalf("prefixRange(%s) ends at %s before the prefix does", p, r.To)
		}
		b := addrAt(a, off)
		if b.BitLen() != a.BitLen() {
			t.Fatalf("addrAt changed family: %s -> %s", a, b)
		}
		// IPv4 offsets wrap modulo 2^32, so only IPv6 round-trips every
		// offset that did not wrap past the top of the family.
		if got, ok := offsetOf(a, b); ok && a.Is6() && got != off {
			t.Fatalf("offsetOf(%s, addrAt(%s, %d)) = %d", a, a, off, got)
		}
		if a.Is6() {
			// 128-bit arithmetic: no wrap is possible when a's low word has room.
			if _, lo := u128(a); lo <= ^uint64(0)-off {
				if got, ok := offsetOf(a, b); !ok || got != off {
					t.Fatalf("offsetOf(%s, %s) = %d, %v; want %d", a, b, got, ok, off)
				}
			}
		} else if uint64(uint32(off)) == off {
			_, lo := u128(a)
			if lo+off <= 1<<32-1 {
				if got, ok := offsetOf(a, b); !ok || got != off {
					t.Fatalf("offsetOf(%s, %s) = %d, %v; want %d", a, b, got, ok, off)
				}
			}
		}
	})
}

func FuzzNewSubnet(f *testing.F) {
	f.Add("10.0.0.0/24", "", "10.0.0.10..10.0.0.20,10.0.0.5", "10.0.0.100..10.0.0.110", uint16(0))
	f.Add("10.0.0.0/28,fd00::/64", "10.0.0.14,fd00::1", "fd00::2..fd00::ff", "fd00::100/120", uint16(300))
	f.Add("fd00::/120", "fd00::ff", "", "", uint16(64))
	f.Fuzz(func(t *testing.T, cidr, gw, excludes, pool string, window uint16) {
		cfg := SubnetConfig{Name: "fz", CIDRBlock: cidr, Gateway: gw, IPv6Window: uint64(window), Shards: 3}
		if excludes != "" {
			cfg.ExcludeIPs = strings.Split(excludes, ",")
		}
		if pool != "" {
			cfg.Pools = []PoolConfig{{Name: "p", IPs: strings.Split(pool, ",")}}
		}
		s, err := NewSubnet(cfg)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrNotInRange) {
				t.Fatalf("NewSubnet error %v matches neither ErrInvalid nor ErrNotInRange", err)
			}
			return
		}
		ex, _ := ParseRanges(cfg.ExcludeIPs)
		gws := s.Gateways()
		for _, u := range s.Usage() {
			if u.Window > MaxIPv6Window || u.Reserved+u.Available != u.Window || u.Used != 0 {
				t.Fatalf("fresh Usage() = %+v", u)
			}
			if u.Window > 1<<12 {
				return // draining is for small subnets only
			}
		}
		for i := 0; ; i++ {
			a, err := s.Allocate(i)
			if errors.Is(err, ErrFull) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, ip := range a.List() {
				if !s.Contains(ip) || ip == gws.V4 || ip == gws.V6 {
					t.Fatalf("Allocate gave %s", ip)
				}
				for _, r := range ex {
					if r.Contains(ip) {
						t.Fatalf("Allocate gave %s, excluded by %s", ip, r)
					}
				}
			}
		}
	})
}

func FuzzParseIPPoolAnnotation(f *testing.F) {
	for _, s := range []string{"pool-a", "10.0.0.5", "10.0.0.5,fd00::5", "10.0.0.5,fd00::5;10.0.0.6,fd00::6",
		"10.0.0.1,10.0.0.2,10.0.0.3", ";", ",", "10.0.0.5,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := ParseIPPoolAnnotation(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		if (ref.Pool == "") == (len(ref.List) == 0) {
			t.Fatalf("ParseIPPoolAnnotation(%q) = %+v: want exactly one of pool and list", s, ref)
		}
		for i, a := range ref.List {
			if a.IsZero() {
				t.Fatalf("entry %d empty", i)
			}
			back, err := ParseAddresses(a.String())
			if err != nil || back != a {
				t.Fatalf("entry %s does not round-trip: %v, %v", a, back, err)
			}
		}
	})
}
