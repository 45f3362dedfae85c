package reconcile

import (
	"testing"

	"github.com/shardnet/shardnet/ovn"
)

// TestDiffRouting pins how a network's routes and NAT rules follow its
// north_gateway, eip and snat annotations (docs/contract.md G3-G7), with
// shardnet's rows and kube-ovn's.
func TestDiffRouting(t *testing.T) {
	const pod, addr = "default/p1", "10.16.0.5"
	route := func(nexthop string) ovn.RouteSpec {
		return ovn.RouteSpec{Router: "ovn-cluster", Prefix: addr, Nexthop: nexthop, Policy: "src-ip", Pod: pod}
	}
	nat := func(typ, ext string) ovn.NATSpec {
		return ovn.NATSpec{Router: "ovn-cluster", Type: typ, ExternalIP: ext, LogicalIP: addr, Pod: pod}
	}
	own := func(uuid, kind, target string) ovn.RoutingRow {
		return ovn.RoutingRow{UUID: uuid, Kind: kind, Address: addr, Target: target, Router: "ovn-cluster", Pod: pod}
	}
	kubeovn := func(uuid, kind, target string) ovn.RoutingRow {
		return ovn.RoutingRow{UUID: uuid, Kind: kind, Address: addr, Target: target}
	}
	group := "main.node.a"
	for _, tc := range []struct {
		name   string
		want   RouteWrites
		have   []ovn.RoutingRow
		used   map[string]string
		follow bool
		out    string
	}{
		{name: "G3 nothing asked, nothing there", want: RouteWrites{PortGroup: group}, follow: true, out: "nothing"},
		{name: "G4 first north gateway", want: RouteWrites{Routes: []ovn.RouteSpec{route("10.0.0.1")}},
			out: "insert route 10.16.0.5->10.0.0.1"},
		{name: "G4 north gateway added on a routed pod leaves the group", want: RouteWrites{Routes: []ovn.RouteSpec{route("10.0.0.1")}},
			follow: true, out: "insert route 10.16.0.5->10.0.0.1; leave groups"},
		{name: "G7 north gateway unchanged", want: RouteWrites{Routes: []ovn.RouteSpec{route("10.0.0.1")}},
			have: []ovn.RoutingRow{own("r1", ovn.RowRoute, "10.0.0.1")}, follow: true, out: "nothing"},
		{name: "G7 north gateway changed", want: RouteWrites{Routes: []ovn.RouteSpec{route("10.0.0.2")}},
			have: []ovn.RoutingRow{own("r1", ovn.RowRoute, "10.0.0.1")}, follow: true, out: "update own route 10.16.0.5->10.0.0.2"},
		{name: "G7 north gateway removed rejoins the group", want: RouteWrites{PortGroup: group},
			have: []ovn.RoutingRow{own("r1", ovn.RowRoute, "10.0.0.1")}, follow: true, out: "delete own route 10.16.0.5->10.0.0.1; join group"},
		{name: "G7 north gateway removed, centralized gateway: no group", want: RouteWrites{},
			have: []ovn.RoutingRow{own("r1", ovn.RowRoute, "10.0.0.1")}, follow: true, out: "delete own route 10.16.0.5->10.0.0.1"},
		{name: "G7 kube-ovn's route kept when it matches", want: RouteWrites{Routes: []ovn.RouteSpec{route("10.0.0.1")}},
			have: []ovn.RoutingRow{kubeovn("k1", ovn.RowRoute, "10.0.0.1")}, follow: true, out: "nothing"},
		{name: "G7 kube-ovn's route updated in place", want: RouteWrites{Routes: []ovn.RouteSpec{route("10.0.0.2")}},
			have: []ovn.RoutingRow{kubeovn("k1", ovn.RowRoute, "10.0.0.1")}, follow: true, out: "update kube-ovn route 10.16.0.5->10.0.0.2"},
		{name: "G7 a duplicate beside kube-ovn's goes", want: RouteWrites{Routes: []ovn.RouteSpec{route("10.0.0.1")}},
			have: []ovn.RoutingRow{kubeovn("k1", ovn.RowRoute, "10.0.0.1"), own("r1", ovn.RowRoute, "10.0.0.1")}, follow: true,
			out: "delete kube-ovn route 10.16.0.5->10.0.0.1"},
		{name: "G5 EIP added", want: RouteWrites{NATs: []ovn.NATSpec{nat("dnat_and_snat", "172.18.0.10")}}, follow: true,
			out: "insert dnat_and_snat 10.16.0.5->172.18.0.10; leave groups"},
		{name: "G7 EIP changed", want: RouteWrites{NATs: []ovn.NATSpec{nat("dnat_and_snat", "172.18.0.11")}},
			have: []ovn.RoutingRow{own("n1", "dnat_and_snat", "172.18.0.10")}, follow: true, out: "update own dnat_and_snat 10.16.0.5->172.18.0.11"},
		{name: "G7 EIP replaced by SNAT", want: RouteWrites{NATs: []ovn.NATSpec{nat("snat", "172.18.0.12")}},
			have: []ovn.RoutingRow{own("n1", "dnat_and_snat", "172.18.0.10")}, follow: true,
			out: "insert snat 10.16.0.5->172.18.0.12; delete own dnat_and_snat 10.16.0.5->172.18.0.10"},
		{name: "G7 kube-ovn's EIP and external gateway route removed", want: RouteWrites{PortGroup: group},
			have: []ovn.RoutingRow{kubeovn("k1", ovn.RowRoute, "172.18.0.1"), kubeovn("k2", "dnat_and_snat", "172.18.0.10")}, follow: true,
			out: "delete kube-ovn route 10.16.0.5->172.18.0.1; delete kube-ovn dnat_and_snat 10.16.0.5->172.18.0.10; join group"},
		{name: "G11 kube-ovn's external gateway route adopted while the EIP stays", want: RouteWrites{Routes: []ovn.RouteSpec{route("172.18.0.1")}, NATs: []ovn.NATSpec{nat("dnat_and_snat", "172.18.0.11")}},
			have: []ovn.RoutingRow{kubeovn("k1", ovn.RowRoute, "172.18.0.1"), kubeovn("k2", "dnat_and_snat", "172.18.0.10")}, follow: true,
			out: "update kube-ovn dnat_and_snat 10.16.0.5->172.18.0.11"},
		{name: "G7 north gateway replaces an EIP: own rows", want: RouteWrites{Routes: []ovn.RouteSpec{route("10.0.0.1")}},
			have: []ovn.RoutingRow{own("n1", "dnat_and_snat", "172.18.0.10")}, follow: true,
			out: "insert route 10.16.0.5->10.0.0.1; delete own dnat_and_snat 10.16.0.5->172.18.0.10"},
		{name: "E4 EIP used by another pod", want: RouteWrites{Provider: DefaultProvider, NATs: []ovn.NATSpec{nat("dnat_and_snat", "172.18.0.10")}},
			used: map[string]string{"172.18.0.10": "10.16.0.9"}, follow: true, out: "leave groups; conflict ovn.kubernetes.io/eip"},
		{name: "E4 EIP used by another pod keeps the old one", want: RouteWrites{Provider: DefaultProvider, NATs: []ovn.NATSpec{nat("dnat_and_snat", "172.18.0.10")}},
			have: []ovn.RoutingRow{own("n1", "dnat_and_snat", "172.18.0.9")},
			used: map[string]string{"172.18.0.10": "10.16.0.9"}, follow: true, out: "conflict ovn.kubernetes.io/eip"},
		{name: "SNAT next to an EIP in use is still written", want: RouteWrites{Provider: DefaultProvider,
			NATs: []ovn.NATSpec{nat("dnat_and_snat", "172.18.0.10"), nat("snat", "172.18.0.12")}},
			used: map[string]string{"172.18.0.10": "10.16.0.9"}, follow: true,
			out: "insert snat 10.16.0.5->172.18.0.12; leave groups; conflict ovn.kubernetes.io/eip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			got := describeChange(diffRouting(&want, tc.have, func(eip string) string { return tc.used[eip] }, tc.follow))
			if got != tc.out {
				t.Errorf("got  %s\nwant %s", got, tc.out)
			}
		})
	}
}
