package ipam

import (
	"errors"
	"net/netip"
	"testing"
)

func mustAddr(t testing.TB, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		in       string
		from, to string
		wantErr  bool
	}{
		{in: "10.0.0.1", from: "10.0.0.1", to: "10.0.0.1"},
		{in: " 10.0.0.1 ", from: "10.0.0.1", to: "10.0.0.1"},
		{in: "10.0.0.1..10.0.0.9", from: "10.0.0.1", to: "10.0.0.9"},
		{in: "10.0.0.5..10.0.0.5", from: "10.0.0.5", to: "10.0.0.5"},
		{in: "10.0.1.0/24", from: "10.0.1.0", to: "10.0.1.255"},
		{in: "10.0.1.7/24", from: "10.0.1.0", to: "10.0.1.255"},
		{in: "10.0.0.0/8", from: "10.0.0.0", to: "10.255.255.255"},
		{in: "0.0.0.0/0", from: "0.0.0.0", to: "255.255.255.255"},
		{in: "10.1.2.3/32", from: "10.1.2.3", to: "10.1.2.3"},
		{in: "::ffff:10.0.0.1", from: "10.0.0.1", to: "10.0.0.1"},
		{in: "::ffff:10.0.0.0/120", from: "10.0.0.0", to: "10.0.0.255"},
		{in: "fd00::1..fd00::ff", from: "fd00::1", to: "fd00::ff"},
		{in: "fd00::/64", from: "fd00::", to: "fd00::ffff:ffff:ffff:ffff"},
		{in: "fd00::/63", from: "fd00::", to: "fd00:0:0:1:ffff:ffff:ffff:ffff"},
		{in: "fd00::/65", from: "fd00::", to: "fd00::7fff:ffff:ffff:ffff"},
		{in: "::/0", from: "::", to: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{in: "fd00::1/128", from: "fd00::1", to: "fd00::1"},
		{in: "10.0.0.9..10.0.0.1", wantErr: true},
		{in: "10.0.0.1..fd00::1", wantErr: true},
		{in: "10.0.0.1..", wantErr: true},
		{in: "..10.0.0.1", wantErr: true},
		{in: "10.0.0.256", wantErr: true},
		{in: "10.0.0.0/33", wantErr: true},
		{in: "fe80::1%eth0", wantErr: true},
		{in: "::ffff:10.0.0.0/90", wantErr: true},
		{in: "", wantErr: true},
		{in: "pool-a", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := ParseRange(tt.in)
			if tt.wantErr {
				var pe *ParseError
				if !errors.As(err, &pe) || !errors.Is(err, ErrInvalid) || pe.Input != tt.in {
					t.Fatalf("ParseRange(%q) = %v, %v; want a *ParseError with the input", tt.in, r, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Range{From: mustAddr(t, tt.from), To: mustAddr(t, tt.to)}
			if r != want {
				t.Fatalf("ParseRange(%q) = %v, want %v", tt.in, r, want)
			}
		})
	}
}

func TestOffsetMath(t *testing.T) {
	tests := []struct {
		base, addr string
		off        uint64
		ok         bool
	}{
		{"10.0.0.0", "10.0.0.0", 0, true},
		{"10.0.0.0", "10.0.1.5", 261, true},
		{"10.0.0.0", "9.255.255.255", 0, false},
		{"0.0.0.0", "255.255.255.255", 1<<32 - 1, true},
		{"fd00::", "fd00::1:0", 65536, true},
		{"fd00::", "fd00::ffff:ffff:ffff:ffff", 1<<64 - 1, true},
		{"fd00::", "fd00:0:0:1::", 0, false},
		{"fd00::ffff:ffff:ffff:fff0", "fd00:0:0:1::5", 0x15, true},
		{"fd00::1", "fd00::", 0, false},
	}
	for _, tt := range tests {
		base, a := mustAddr(t, tt.base), mustAddr(t, tt.addr)
		off, ok := offsetOf(base, a)
		if ok != tt.ok || (ok && off != tt.off) {
			t.Errorf("offsetOf(%s, %s) = %d, %v; want %d, %v", base, a, off, ok, tt.off, tt.ok)
		}
		if ok {
			if back := addrAt(base, off); back != a {
				t.Errorf("addrAt(%s, %d) = %s, want %s", base, off, back, a)
			}
		}
	}
}

func TestClip(t *testing.T) {
	base := mustAddr(t, "10.0.0.0")
	tests := []struct {
		r      string
		size   uint64
		lo, hi uint64
		ok     bool
	}{
		{"10.0.0.5..10.0.0.9", 256, 5, 9, true},
		{"9.0.0.0..10.0.0.3", 256, 0, 3, true},
		{"10.0.0.250..10.0.1.3", 256, 250, 255, true},
		{"10.0.1.0..10.0.1.3", 256, 0, 0, false},
		{"9.0.0.0..9.0.0.3", 256, 0, 0, false},
		{"8.0.0.0/6", 256, 0, 255, true},
		{"fd00::1", 256, 0, 0, false},
	}
	for _, tt := range tests {
		r, err := ParseRange(tt.r)
		if err != nil {
			t.Fatal(err)
		}
		o, ok := clip(r, base, tt.size)
		if ok != tt.ok || (ok && (o.lo != tt.lo || o.hi != tt.hi)) {
			t.Errorf("clip(%s) = %v, %v; want [%d,%d], %v", tt.r, o, ok, tt.lo, tt.hi, tt.ok)
		}
	}
}

func TestMergeOffRanges(t *testing.T) {
	got := mergeOffRanges([]offRange{{10, 20}, {0, 3}, {4, 5}, {15, 30}, {40, 40}, {32, 39}})
	want := []offRange{{0, 5}, {10, 30}, {32, 40}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
