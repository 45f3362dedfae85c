package v1alpha1

import (
	"net/netip"
	"testing"
)

// TestClaimName pins the claim names of both families (an IPv4-mapped
// address is named as its IPv4 address) and that AppendClaimName appends
// the same name.
func TestClaimName(t *testing.T) {
	for _, tt := range []struct{ subnet, addr, want string }{
		{"ovn-default", "10.16.0.5", "ovn-default.10.16.0.5"},
		{"s", "::ffff:10.0.0.1", "s.10.0.0.1"},
		{"v6", "fd00::1", "v6.fd000000000000000000000000000001"},
	} {
		a := netip.MustParseAddr(tt.addr)
		if got := ClaimName(tt.subnet, a); got != tt.want {
			t.Errorf("ClaimName(%q, %s) = %q, want %q", tt.subnet, tt.addr, got, tt.want)
		}
		if got := string(AppendClaimName([]byte("x/"), tt.subnet, a)); got != "x/"+tt.want {
			t.Errorf("AppendClaimName(\"x/\", %q, %s) = %q, want %q", tt.subnet, tt.addr, got, "x/"+tt.want)
		}
	}
}
