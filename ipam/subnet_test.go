package ipam

import (
	"errors"
	"net/netip"
	"testing"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

func mustSubnet(t testing.TB, c SubnetConfig) *Subnet {
	t.Helper()
	if c.Name == "" {
		c.Name = "net1"
	}
	s, err := NewSubnet(c)
	if err != nil {
		t.Fatalf("NewSubnet(%+v): %v", c, err)
	}
	return s
}

// drain allocates from shard until ErrFull and returns every address.
func drain(t testing.TB, s *Subnet, shard int) []Addresses {
	t.Helper()
	var out []Addresses
	for {
		a, err := s.Allocate(shard)
		if errors.Is(err, ErrFull) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
		if len(out) > 1<<22 {
			t.Fatal("allocation does not end")
		}
	}
}

func TestNewSubnetUsage(t *testing.T) {
	tests := []struct {
		name                        string
		cfg                         SubnetConfig
		family                      string
		window, reserved, available uint64
		gateway                     string
	}{
		{name: "v4 /24", cfg: SubnetConfig{CIDRBlock: "10.0.0.0/24"}, family: "IPv4",
			window: 256, reserved: 3, available: 253, gateway: "10.0.0.1"},
		{name: "v4 /24 custom gateway", cfg: SubnetConfig{CIDRBlock: "10.0.0.0/24", Gateway: "10.0.0.254"}, family: "IPv4",
			window: 256, reserved: 3, available: 253, gateway: "10.0.0.254"},
		{name: "v4 /24 excludes", cfg: SubnetConfig{CIDRBlock: "10.0.0.0/24",
			ExcludeIPs: []string{"10.0.0.10..10.0.0.19", "10.0.0.100", "10.0.0.1", "192.168.0.0/16", "10.0.0.250..10.0.1.9", "fd00::1"}},
			family: "IPv4", window: 256, reserved: 3 + 10 + 1 + 5, available: 256 - 19, gateway: "10.0.0.1"},
		{name: "v4 /30", cfg: SubnetConfig{CIDRBlock: "10.0.0.4/30"}, family: "IPv4",
			window: 4, reserved: 3, available: 1, gateway: "10.0.0.5"},
		{name: "v4 /31", cfg: SubnetConfig{CIDRBlock: "10.0.0.4/31"}, family: "IPv4",
			window: 2, reserved: 1, available: 1, gateway: "10.0.0.4"},
		{name: "v4 /32", cfg: SubnetConfig{CIDRBlock: "10.0.0.4/32"}, family: "IPv4",
			window: 1, reserved: 1, available: 0, gateway: "10.0.0.4"},
		{name: "v4 /8", cfg: SubnetConfig{CIDRBlock: "10.0.0.0/8"}, family: "IPv4",
			window: 1 << 24, reserved: 3, available: 1<<24 - 3, gateway: "10.0.0.1"},
		{name: "v6 /120 whole", cfg: SubnetConfig{CIDRBlock: "fd00::/120"}, family: "IPv6",
			window: 256, reserved: 2, available: 254, gateway: "fd00::1"},
		{name: "v6 /64 default window", cfg: SubnetConfig{CIDRBlock: "fd00::/64"}, family: "IPv6",
			window: DefaultIPv6Window, reserved: 2, available: DefaultIPv6Window - 2, gateway: "fd00::1"},
		{name: "v6 /64 small window", cfg: SubnetConfig{CIDRBlock: "fd00::/64", IPv6Window: 100}, family: "IPv6",
			window: 100, reserved: 2, available: 98, gateway: "fd00::1"},
		{name: "v6 /48 max window", cfg: SubnetConfig{CIDRBlock: "fd00::/48", IPv6Window: MaxIPv6Window}, family: "IPv6",
			window: MaxIPv6Window, reserved: 2, available: MaxIPv6Window - 2, gateway: "fd00::1"},
		{name: "v6 gateway beyond window", cfg: SubnetConfig{CIDRBlock: "fd00::/64", Gateway: "fd00::ffff:0:0:1"}, family: "IPv6",
			window: DefaultIPv6Window, reserved: 1, available: DefaultIPv6Window - 1, gateway: "fd00::ffff:0:0:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSubnet(t, tt.cfg)
			u := s.Usage()
			if len(u) != 1 {
				t.Fatalf("Usage() has %d families, want 1", len(u))
			}
			got := u[0]
			if got.Family != tt.family || got.Window != tt.window || got.Reserved != tt.reserved ||
				got.Available != tt.available || got.Used != 0 || got.Gateway != mustAddr(t, tt.gateway) {
				t.Fatalf("Usage() = %+v; want family %s window %d reserved %d available %d gateway %s",
					got, tt.family, tt.window, tt.reserved, tt.available, tt.gateway)
			}
		})
	}
}

func TestNewSubnetErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  SubnetConfig
		want error
	}{
		{"no name", SubnetConfig{CIDRBlock: "10.0.0.0/24"}, ErrInvalid},
		{"bad cidr", SubnetConfig{Name: "a", CIDRBlock: "10.0.0.0/33"}, ErrInvalid},
		{"empty cidr", SubnetConfig{Name: "a"}, ErrInvalid},
		{"v4 shorter than /8", SubnetConfig{Name: "a", CIDRBlock: "10.0.0.0/7"}, ErrInvalid},
		{"two v4", SubnetConfig{Name: "a", CIDRBlock: "10.0.0.0/24,10.1.0.0/24"}, ErrInvalid},
		{"protocol mismatch", SubnetConfig{Name: "a", CIDRBlock: "10.0.0.0/24", Protocol: "Dual"}, ErrInvalid},
		{"gateway outside", SubnetConfig{Name: "a", CIDRBlock: "10.0.0.0/24", Gateway: "10.0.1.1"}, ErrNotInRange},
		{"gateway is network", SubnetConfig{Name: "a", CIDRBlock: "10.0.0.0/24", Gateway: "10.0.0.0"}, ErrNotInRange},
		{"gateway of missing family", SubnetConfig{Name: "a", CIDRBlock: "10.0.0.0/24", Gateway: "fd00::1"}, ErrNotInRange},
		{"bad exclude", SubnetConfig{Name: "a", CIDRBlock: "10.0.0.0/24", ExcludeIPs: []string{"10.0.0.9..10.0.0.1"}}, ErrInvalid},
		{"window too large", SubnetConfig{Name: "a", CIDRBlock: "fd00::/64", IPv6Window: MaxIPv6Window + 1}, ErrInvalid},
		{"pool outside", SubnetConfig{Name: "a", CIDRBlock: "10.0.0.0/24", Pools: []PoolConfig{{Name: "p", IPs: []string{"10.0.1.1"}}}}, ErrNotInRange},
		{"pool beyond window", SubnetConfig{Name: "a", CIDRBlock: "fd00::/64", Pools: []PoolConfig{{Name: "p", IPs: []string{"fd00::1:0..fd00::1:ff"}}}}, ErrNotInRange},
		{"pool of missing family", SubnetConfig{Name: "a", CIDRBlock: "10.0.0.0/24", Pools: []PoolConfig{{Name: "p", IPs: []string{"fd00::1"}}}}, ErrNotInRange},
		{"pool bad entry", SubnetConfig{Name: "a", CIDRBlock: "10.0.0.0/24", Pools: []PoolConfig{{Name: "p", IPs: []string{"x"}}}}, ErrInvalid},
		{"duplicate pool", SubnetConfig{Name: "a", CIDRBlock: "10.0.0.0/24", Pools: []PoolConfig{{Name: "p", IPs: []string{"10.0.0.5"}}, {Name: "p", IPs: []string{"10.0.0.6"}}}}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSubnet(tt.cfg)
			if !errors.Is(err, tt.want) {
				t.Fatalf("NewSubnet: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestAllocateSkipsReservedAndExcluded(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "10.0.0.0/24", Shards: 4,
		ExcludeIPs: []string{"10.0.0.10..10.0.0.19", "10.0.0.100", "10.0.0.200/29"}})
	excluded := map[netip.Addr]bool{}
	for _, e := range []string{"10.0.0.0", "10.0.0.1", "10.0.0.255", "10.0.0.100"} {
		excluded[mustAddr(t, e)] = true
	}
	for i := 10; i <= 19; i++ {
		excluded[netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})] = true
	}
	for i := 200; i <= 207; i++ {
		excluded[netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})] = true
	}
	got := map[netip.Addr]bool{}
	for shard := range 4 {
		for _, a := range drain(t, s, shard) {
			if excluded[a.V4] {
				t.Fatalf("Allocate gave excluded address %s", a.V4)
			}
			if got[a.V4] {
				t.Fatalf("Allocate gave %s twice", a.V4)
			}
			if a.V6.IsValid() {
				t.Fatalf("IPv4 subnet gave IPv6 address %s", a.V6)
			}
			got[a.V4] = true
		}
	}
	if want := 256 - len(excluded); len(got) != want {
		t.Fatalf("allocated %d addresses, want %d", len(got), want)
	}
	u := s.Usage()[0]
	if u.Available != 0 || u.Used != uint64(len(got)) {
		t.Fatalf("Usage() = %+v after draining", u)
	}
}

func TestAllocateStatic(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "10.0.0.0/24,fd00::/64", ExcludeIPs: []string{"10.0.0.10..10.0.0.19"}})
	a := func(s string) netip.Addr { return mustAddr(t, s) }
	tests := []struct {
		name string
		in   Addresses
		want error
	}{
		{"plain", Addresses{V4: a("10.0.0.5")}, nil},
		{"again", Addresses{V4: a("10.0.0.5")}, ErrAllocated},
		{"excluded may be taken statically", Addresses{V4: a("10.0.0.12")}, nil},
		{"excluded twice", Addresses{V4: a("10.0.0.12")}, ErrAllocated},
		{"gateway", Addresses{V4: a("10.0.0.1")}, ErrReserved},
		{"network", Addresses{V4: a("10.0.0.0")}, ErrReserved},
		{"broadcast", Addresses{V4: a("10.0.0.255")}, ErrReserved},
		{"v6 network", Addresses{V6: a("fd00::")}, ErrReserved},
		{"outside", Addresses{V4: a("10.0.1.5")}, ErrNotInRange},
		{"dual", Addresses{V4: a("10.0.0.6"), V6: a("fd00::6")}, nil},
		{"v6 beyond window", Addresses{V6: a("fd00::ab:0:1")}, nil},
		{"v6 beyond window twice", Addresses{V6: a("fd00::ab:0:1")}, ErrAllocated},
		{"dual, v6 taken: v4 rolled back", Addresses{V4: a("10.0.0.7"), V6: a("fd00::6")}, ErrAllocated},
		{"empty", Addresses{}, ErrInvalid},
	}
	for _, tt := range tests {
		err := s.AllocateStatic(tt.in)
		if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Fatalf("%s: AllocateStatic(%s) = %v, want %v", tt.name, tt.in, err, tt.want)
		}
	}
	if !s.IsFree(a("10.0.0.7")) {
		t.Fatal("10.0.0.7 held after a failed dual-stack static allocation")
	}
	for _, held := range []string{"10.0.0.5", "10.0.0.12", "fd00::6", "fd00::ab:0:1"} {
		if s.IsFree(a(held)) {
			t.Fatalf("%s free after static allocation", held)
		}
	}
	for _, never := range []string{"10.0.0.1", "10.0.1.1", "fd00::", "192.0.2.1"} {
		if s.IsFree(a(never)) {
			t.Fatalf("IsFree(%s) = true", never)
		}
	}
	u := s.Usage()
	if u[0].Used != 3 || u[1].Used != 2 {
		t.Fatalf("Usage() = %+v, want 3 IPv4 and 2 IPv6 held", u)
	}
	if n := s.Release(Addresses{V4: a("10.0.0.12"), V6: a("fd00::ab:0:1")}); n != 2 {
		t.Fatalf("Release freed %d, want 2", n)
	}
	if n := s.Release(Addresses{V4: a("10.0.0.12")}); n != 0 {
		t.Fatalf("second Release freed %d, want 0", n)
	}
	if !s.IsFree(a("fd00::ab:0:1")) || !s.IsFree(a("10.0.0.12")) {
		t.Fatal("released addresses not free")
	}
	// A released excluded address goes back to being excluded, not free for
	// dynamic allocation.
	for _, got := range drain(t, s, 0) {
		if r := (Range{From: a("10.0.0.10"), To: a("10.0.0.19")}); r.Contains(got.V4) {
			t.Fatalf("dynamic allocation gave excluded %s", got.V4)
		}
	}
}

func TestNextFitDoesNotReuseAtOnce(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "10.0.0.0/24", Shards: 1})
	first, err := s.Allocate(0)
	if err != nil {
		t.Fatal(err)
	}
	if want := mustAddr(t, "10.0.0.2"); first.V4 != want {
		t.Fatalf("first address %s, want %s", first.V4, want)
	}
	s.Release(first)
	seen := map[netip.Addr]bool{}
	for range 252 {
		a, err := s.Allocate(0)
		if err != nil {
			t.Fatal(err)
		}
		if a.V4 == first.V4 {
			t.Fatalf("released %s handed out again before the cursor went round", first.V4)
		}
		seen[a.V4] = true
		s.Release(a)
	}
	// Going round, the cursor comes back to it.
	a, err := s.Allocate(0)
	if err != nil {
		t.Fatal(err)
	}
	if a.V4 != first.V4 {
		t.Fatalf("after a full round got %s, want %s", a.V4, first.V4)
	}
}

func TestShardSlices(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "10.0.0.0/24", Shards: 4})
	want := []string{"10.0.0.2", "10.0.0.64", "10.0.0.128", "10.0.0.192"}
	for shard, w := range want {
		a, err := s.Allocate(shard)
		if err != nil {
			t.Fatal(err)
		}
		if a.V4 != mustAddr(t, w) {
			t.Fatalf("shard %d first address %s, want %s", shard, a.V4, w)
		}
	}
	// Shard numbers past the count wrap.
	a, err := s.Allocate(5)
	if err != nil {
		t.Fatal(err)
	}
	if a.V4 != mustAddr(t, "10.0.0.65") {
		t.Fatalf("shard 5 (=1) got %s, want 10.0.0.65", a.V4)
	}
}

func TestShardSliceSpillsOver(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "10.0.0.0/28", Shards: 2})
	// Shard 1 starts at offset 8 and, after 9..14, goes on from the start.
	var got []netip.Addr
	for range 13 {
		a, err := s.Allocate(1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a.V4)
	}
	if got[0] != mustAddr(t, "10.0.0.8") || got[7] != mustAddr(t, "10.0.0.2") {
		t.Fatalf("shard 1 order %v", got)
	}
	if _, err := s.Allocate(0); !errors.Is(err, ErrFull) {
		t.Fatalf("Allocate on a full subnet: %v, want ErrFull", err)
	}
}

func TestIPv6Window(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "fd00:1::/64", IPv6Window: 256, Shards: 1})
	got := drain(t, s, 0)
	if len(got) != 254 {
		t.Fatalf("drained %d addresses from a 256-address window, want 254", len(got))
	}
	for _, a := range got {
		if a.V4.IsValid() {
			t.Fatalf("IPv6 subnet gave IPv4 %s", a.V4)
		}
		off, ok := offsetOf(mustAddr(t, "fd00:1::"), a.V6)
		if !ok || off < 2 || off >= 256 {
			t.Fatalf("address %s outside the window", a.V6)
		}
	}
	// Beyond the window, static allocation still works.
	far := mustAddr(t, "fd00:1::dead:beef:0:1")
	if err := s.AllocateStatic(Addresses{V6: far}); err != nil {
		t.Fatal(err)
	}
	if u := s.Usage()[0]; u.Used != 255 || u.Available != 0 || u.Window != 256 {
		t.Fatalf("Usage() = %+v", u)
	}
	if !s.Mark(far) || s.IsFree(far) {
		t.Fatal("Mark of a held far address")
	}
	if s.Mark(mustAddr(t, "fd00:2::1")) {
		t.Fatal("Mark outside the prefix reported true")
	}
}

func TestDualStack(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "10.0.0.0/29,fd00::/125", Protocol: "Dual", Shards: 1})
	if s.Protocol() != "Dual" {
		t.Fatalf("Protocol() = %s", s.Protocol())
	}
	// IPv4 /29 has 5 dynamic addresses, IPv6 /125 has 6.
	got := drain(t, s, 0)
	if len(got) != 5 {
		t.Fatalf("dual-stack drained %d, want 5 (IPv4 runs out first)", len(got))
	}
	for _, a := range got {
		if !a.V4.IsValid() || !a.V6.IsValid() {
			t.Fatalf("dual-stack allocation %s lacks a family", a)
		}
	}
	u := s.Usage()
	if u[0].Used != 5 || u[1].Used != 5 {
		t.Fatalf("Usage() = %+v: a failed IPv4 pick must not hold IPv6", u)
	}
	// IPv6 exhausted first: the IPv4 pick is undone.
	s2 := mustSubnet(t, SubnetConfig{CIDRBlock: "10.0.0.0/24,fd00::/126", Shards: 1})
	if got := drain(t, s2, 0); len(got) != 2 {
		t.Fatalf("drained %d, want 2", len(got))
	}
	if u := s2.Usage(); u[0].Used != 2 || u[1].Used != 2 {
		t.Fatalf("Usage() = %+v: the IPv4 pick of a failed dual allocation leaked", u)
	}
	if a := (Addresses{V4: mustAddr(t, "10.0.0.2"), V6: mustAddr(t, "fd00::2")}); a.String() != "10.0.0.2,fd00::2" {
		t.Fatalf("String() = %s", a)
	}
}

func TestPools(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "10.0.0.0/24,fd00::/64", Shards: 1,
		ExcludeIPs: []string{"10.0.0.52"},
		Pools: []PoolConfig{
			{Name: "p1", IPs: []string{"10.0.0.50..10.0.0.54", "10.0.0.64/30", "fd00::50..fd00::59"}},
			{Name: "v4only", IPs: []string{"10.0.0.200"}},
		}})
	inP1 := func(a netip.Addr) bool {
		for _, r := range []string{"10.0.0.50..10.0.0.54", "10.0.0.64/30", "fd00::50..fd00::59"} {
			rr, _ := ParseRange(r)
			if rr.Contains(a) {
				return true
			}
		}
		return false
	}
	var got []Addresses
	for {
		a, err := s.AllocateFromPool("p1")
		if errors.Is(err, ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !inP1(a.V4) || !inP1(a.V6) {
			t.Fatalf("pool gave %s", a)
		}
		if a.V4 == mustAddr(t, "10.0.0.52") {
			t.Fatal("pool gave an excluded address")
		}
		got = append(got, a)
	}
	// 5 + 4 entries minus the excluded one.
	if len(got) != 8 {
		t.Fatalf("pool p1 gave %d allocations, want 8", len(got))
	}
	pu, err := s.PoolUsage("p1")
	if err != nil {
		t.Fatal(err)
	}
	if pu[0].Used != 8 || pu[0].Available != 0 || pu[0].Reserved != 1 || pu[1].Used != 8 || pu[1].Available != 2 {
		t.Fatalf("PoolUsage = %+v", pu)
	}
	a, err := s.AllocateFromPool("v4only")
	if err != nil || a.V4 != mustAddr(t, "10.0.0.200") || a.V6.IsValid() {
		t.Fatalf("v4only pool gave %s, %v", a, err)
	}
	if _, err := s.AllocateFromPool("nope"); !errors.Is(err, ErrUnknownPool) {
		t.Fatalf("unknown pool: %v", err)
	}
	// Dynamic allocation never hands out pool addresses.
	for _, a := range drain(t, s, 0) {
		if inP1(a.V4) || a.V4 == mustAddr(t, "10.0.0.200") {
			t.Fatalf("dynamic allocation gave pool address %s", a.V4)
		}
	}
	// A released pool address comes back to the pool (IPv6 still has
	// fd00::58 and fd00::59 free, so only IPv4 is forced).
	s.Release(got[3])
	back, err := s.AllocateFromPool("p1")
	if err != nil || back.V4 != got[3].V4 || !inP1(back.V6) {
		t.Fatalf("after release pool gave %s, %v; want %s", back, err, got[3].V4)
	}
}

func TestPoolCursorWraps(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "10.0.0.0/24", Pools: []PoolConfig{{Name: "p", IPs: []string{"10.0.0.10..10.0.0.12", "10.0.0.20..10.0.0.21"}}}})
	var order []netip.Addr
	for range 5 {
		a, err := s.AllocateFromPool("p")
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, a.V4)
	}
	s.Release(Addresses{V4: order[1]})
	s.Release(Addresses{V4: order[4]})
	// The cursor is past the end: it wraps to the first free one.
	a, err := s.AllocateFromPool("p")
	if err != nil || a.V4 != order[1] {
		t.Fatalf("got %s, %v; want %s", a.V4, err, order[1])
	}
	a, err = s.AllocateFromPool("p")
	if err != nil || a.V4 != order[4] {
		t.Fatalf("got %s, %v; want %s", a.V4, err, order[4])
	}
}

func TestSubnetConfigFrom(t *testing.T) {
	sub := &kubeovnv1.Subnet{}
	sub.Name = "blue"
	sub.Spec = kubeovnv1.SubnetSpec{CIDRBlock: "10.5.0.0/24,fd05::/64", Gateway: "10.5.0.254,fd05::1",
		Protocol: kubeovnv1.ProtocolDual, ExcludeIps: []string{"10.5.0.10..10.5.0.20"}}
	mine, other := &kubeovnv1.IPPool{}, &kubeovnv1.IPPool{}
	mine.Name, mine.Spec = "p1", kubeovnv1.IPPoolSpec{Subnet: "blue", IPs: []string{"10.5.0.100..10.5.0.110"}}
	other.Name, other.Spec = "p2", kubeovnv1.IPPoolSpec{Subnet: "red", IPs: []string{"10.6.0.1"}}
	cfg := SubnetConfigFrom(sub, []*kubeovnv1.IPPool{mine, other})
	s, err := NewSubnet(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "blue" || s.Protocol() != "Dual" || s.Gateways().String() != "10.5.0.254,fd05::1" {
		t.Fatalf("subnet %s %s %s", s.Name(), s.Protocol(), s.Gateways())
	}
	if !s.HasPool("p1") || s.HasPool("p2") {
		t.Fatal("pools of other subnets must be left out")
	}
	v4, v6 := s.Prefixes()
	if v4.String() != "10.5.0.0/24" || v6.String() != "fd05::/64" {
		t.Fatalf("Prefixes() = %s, %s", v4, v6)
	}
	// Gateway, network, broadcast, 11 excluded, 11 pooled.
	if u := s.Usage()[0]; u.Reserved != 3+11+11 {
		t.Fatalf("Usage() = %+v", u)
	}
}

// EachTaken visits every address allocated, in the window and beyond it
// (a static IPv6 address past the bitmap), each once, and nothing free.
func TestEachTakenVisitsEveryHeldAddress(t *testing.T) {
	s, err := NewSubnet(SubnetConfig{Name: "dual", CIDRBlock: "10.0.0.0/24,fd00::/64", IPv6Window: 256, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[netip.Addr]bool{}
	for i := range 5 {
		a, err := s.Allocate(i % 2)
		if err != nil {
			t.Fatal(err)
		}
		want[a.V4], want[a.V6] = true, true
	}
	beyond := Addresses{V4: netip.MustParseAddr("10.0.0.200"), V6: netip.MustParseAddr("fd00::1:0")}
	if err := s.AllocateStatic(beyond); err != nil {
		t.Fatal(err)
	}
	want[beyond.V4], want[beyond.V6] = true, true
	seen := map[netip.Addr]int{}
	s.EachTaken(func(a netip.Addr) { seen[a]++ })
	for a := range want {
		if seen[a] != 1 {
			t.Errorf("%s visited %d times, want once", a, seen[a])
		}
	}
	for a, n := range seen {
		if n != 1 || s.IsFree(a) {
			t.Errorf("%s visited %d times, free %v", a, n, s.IsFree(a))
		}
	}
}
