package ipam

import (
	"errors"
	"testing"
)

func TestParseMAC(t *testing.T) {
	for _, bad := range []string{"", "zz:00:00:00:00:00", "00:00:00:00:00:00", "01:00:5e:00:00:01", "00:11:22:33:44:55:66:77"} {
		if _, err := ParseMAC(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseMAC(%q): %v, want ErrInvalid", bad, err)
		}
	}
	m, err := ParseMAC("00:11:22:AA:bb:cc")
	if err != nil || m.String() != "00:11:22:aa:bb:cc" {
		t.Fatalf("ParseMAC = %s, %v", m, err)
	}
}

func TestDerivedMAC(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "10.1.0.0/16,fd00::/64"})
	v6 := mustSubnet(t, SubnetConfig{CIDRBlock: "fd00::/64", IPv6Window: 1024})
	tests := []struct {
		s    *Subnet
		a    Addresses
		want string
	}{
		{s, Addresses{V4: mustAddr(t, "10.1.2.3")}, "0a:58:0a:01:02:03"},
		{s, Addresses{V4: mustAddr(t, "10.1.2.3"), V6: mustAddr(t, "fd00::7")}, "0a:58:0a:01:02:03"},
		{v6, Addresses{V6: mustAddr(t, "fd00::3ff")}, "0a:59:00:00:03:ff"},
		// Beyond the window: the address's low 32 bits, in its own space.
		{v6, Addresses{V6: mustAddr(t, "fd00::1:0:3ff")}, "0a:5a:00:00:03:ff"},
	}
	for _, tt := range tests {
		if got := tt.s.DerivedMAC(tt.a).String(); got != tt.want {
			t.Errorf("DerivedMAC(%s) = %s, want %s", tt.a, got, tt.want)
		}
	}
	// Unique over a whole IPv6 window.
	seen := map[MAC]bool{}
	for _, a := range drain(t, v6, 0) {
		m := v6.DerivedMAC(a)
		if seen[m] {
			t.Fatalf("derived MAC %s twice", m)
		}
		seen[m] = true
	}
}

func TestAssignMAC(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "10.0.0.0/24"})
	a5 := Addresses{V4: mustAddr(t, "10.0.0.5")}
	a6 := Addresses{V4: mustAddr(t, "10.0.0.6")}
	static, _ := ParseMAC("00:00:00:11:22:33")

	if m, err := s.AssignMAC(MAC{}, a5, "pod-a"); err != nil || m != s.DerivedMAC(a5) {
		t.Fatalf("derived: %s, %v", m, err)
	}
	if m, err := s.AssignMAC(static, a5, "pod-a"); err != nil || m != static {
		t.Fatalf("static: %s, %v", m, err)
	}
	// The same owner again is fine; another owner is refused.
	if _, err := s.AssignMAC(static, a5, "pod-a"); err != nil {
		t.Fatalf("same owner: %v", err)
	}
	if _, err := s.AssignMAC(static, a6, "pod-b"); !errors.Is(err, ErrMACInUse) {
		t.Fatalf("other owner: %v, want ErrMACInUse", err)
	}
	s.ReleaseMAC(static, "pod-b") // not the holder: no effect
	if _, err := s.AssignMAC(static, a6, "pod-b"); !errors.Is(err, ErrMACInUse) {
		t.Fatalf("after a release by a non-holder: %v, want ErrMACInUse", err)
	}
	s.ReleaseMAC(static, "pod-a")
	if _, err := s.AssignMAC(static, a6, "pod-b"); err != nil {
		t.Fatalf("after release: %v", err)
	}
	// A static MAC in the derived space is allowed only as the derived one.
	if _, err := s.AssignMAC(s.DerivedMAC(a5), a6, "pod-c"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("someone else's derived MAC: %v, want ErrInvalid", err)
	}
	if m, err := s.AssignMAC(s.DerivedMAC(a6), a6, "pod-c"); err != nil || m != s.DerivedMAC(a6) {
		t.Fatalf("own derived MAC as static: %s, %v", m, err)
	}
}

// macOwner is who holds m in the table, if anyone.
func (s *Subnet) macOwner(m MAC) (string, bool) {
	s.macs.mu.Lock()
	defer s.macs.mu.Unlock()
	o, ok := s.macs.owner[m]
	return o, ok
}
