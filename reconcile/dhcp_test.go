package reconcile

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/ovn/nbdb"
)

func TestParseDHCPOptions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
		err  string
	}{
		{in: "", want: map[string]string{}},
		{in: " lease_time = 600 , router=10.0.0.1,", want: map[string]string{"lease_time": "600", "router": "10.0.0.1"}},
		{in: "classless_static_route={30.0.0.0/24,10.0.0.10, 0.0.0.0/0,10.0.0.1},mtu=1300",
			want: map[string]string{"classless_static_route": "{30.0.0.0/24,10.0.0.10, 0.0.0.0/0,10.0.0.1}", "mtu": "1300"}},
		{in: "dns_server={8.8.8.8,8.8.4.4}", want: map[string]string{"dns_server": "{8.8.8.8,8.8.4.4}"}},
		{in: "lease_time=600,router", err: `"router" is not key=value`},
		{in: "=600", err: `"=600" is not key=value`},
	} {
		got, err := parseDHCPOptions(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseDHCPOptions(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("parseDHCPOptions(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func dhcpSubnet(t *testing.T, spec kubeovnv1.SubnetSpec) (*kubeovnv1.Subnet, *ipam.Subnet) {
	t.Helper()
	s := &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: "vms"}, Spec: spec}
	sub, err := ipam.NewSubnet(ipam.SubnetConfigFrom(s, nil))
	if err != nil {
		t.Fatal(err)
	}
	return s, sub
}

func TestDHCPOptionsSpecs(t *testing.T) {
	none := func(string) map[string]string { return nil }
	mac4, mac6 := dhcpServerMAC("vms", ovn.DHCPv4), dhcpServerMAC("vms", ovn.DHCPv6)
	if mac4 == mac6 || !strings.HasPrefix(mac4, "00:00:00:") {
		t.Fatalf("server MACs %s and %s: want two distinct 00:00:00 MACs", mac4, mac6)
	}

	t.Run("defaults, dual stack", func(t *testing.T) {
		s, sub := dhcpSubnet(t, kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/24,fd00::/120", EnableDHCP: true})
		specs, err := DHCPOptionsSpecs(s, sub, NetworkTypeGeneve, none)
		if err != nil {
			t.Fatal(err)
		}
		if len(specs) != 2 {
			t.Fatalf("specs = %+v, want one per family", specs)
		}
		want4 := map[string]string{"lease_time": "3600", "router": "10.0.0.1", "server_id": "169.254.0.254", "server_mac": mac4, "mtu": "1400"}
		if specs[0].Switch != "vms" || specs[0].CIDR != "10.0.0.0/24" || !maps.Equal(specs[0].Options, want4) {
			t.Errorf("v4 = %+v, want cidr 10.0.0.0/24 options %v", specs[0], want4)
		}
		if specs[1].CIDR != "fd00::/120" || !maps.Equal(specs[1].Options, map[string]string{"server_id": mac6}) {
			t.Errorf("v6 = %+v, want server_id %s", specs[1], mac6)
		}
	})

	t.Run("user options win, missing ones are filled, the row's MAC stays", func(t *testing.T) {
		s, sub := dhcpSubnet(t, kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/24,fd00::/120", Gateway: "10.0.0.254,fd00::fe", EnableDHCP: true,
			DHCPv4Options: "lease_time=600,dns_server={1.1.1.1,8.8.8.8}", DHCPv6Options: "dns_server=fd00::53"})
		have := func(f string) map[string]string {
			if f == ovn.DHCPv4 {
				return map[string]string{"server_mac": "00:00:00:2e:2f:b8"}
			}
			return map[string]string{"server_id": "00:00:00:2e:2f:c5"}
		}
		specs, err := DHCPOptionsSpecs(s, sub, NetworkTypeVxlan, have)
		if err != nil {
			t.Fatal(err)
		}
		want4 := map[string]string{"lease_time": "600", "dns_server": "{1.1.1.1,8.8.8.8}", "router": "10.0.0.254",
			"server_id": "169.254.0.254", "server_mac": "00:00:00:2e:2f:b8", "mtu": "1450"}
		if !maps.Equal(specs[0].Options, want4) {
			t.Errorf("v4 options = %v, want %v", specs[0].Options, want4)
		}
		want6 := map[string]string{"dns_server": "fd00::53", "server_id": "00:00:00:2e:2f:c5"}
		if !maps.Equal(specs[1].Options, want6) {
			t.Errorf("v6 options = %v, want %v", specs[1].Options, want6)
		}
	})

	t.Run("mtu", func(t *testing.T) {
		for _, tc := range []struct {
			spec kubeovnv1.SubnetSpec
			nt   string
			want string
		}{
			{kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/24"}, NetworkTypeGeneve, "1400"},
			{kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/24"}, NetworkTypeStt, "1428"},
			{kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/24"}, NetworkTypeVlan, "1400"},
			{kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/24", Vlan: "vlan10"}, NetworkTypeGeneve, "1500"},
			{kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/24", Mtu: 9000}, NetworkTypeGeneve, "9000"},
			{kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/24", DHCPv4Options: "mtu=1200"}, NetworkTypeGeneve, "1200"},
		} {
			s, sub := dhcpSubnet(t, tc.spec)
			specs, err := DHCPOptionsSpecs(s, sub, tc.nt, none)
			if err != nil {
				t.Fatal(err)
			}
			if got := specs[0].Options["mtu"]; got != tc.want {
				t.Errorf("%+v on %s: mtu %s, want %s", tc.spec, tc.nt, got, tc.want)
			}
		}
	})

	t.Run("IPv6 only", func(t *testing.T) {
		s, sub := dhcpSubnet(t, kubeovnv1.SubnetSpec{CIDRBlock: "fd00::/120", EnableDHCP: true})
		specs, err := DHCPOptionsSpecs(s, sub, NetworkTypeGeneve, none)
		if err != nil || len(specs) != 1 || specs[0].CIDR != "fd00::/120" {
			t.Fatalf("specs = %+v, %v; want the IPv6 row only", specs, err)
		}
	})

	t.Run("bad options name the field", func(t *testing.T) {
		s, sub := dhcpSubnet(t, kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/24,fd00::/120", DHCPv6Options: "server_id"})
		if _, err := DHCPOptionsSpecs(s, sub, NetworkTypeGeneve, none); err == nil || !strings.Contains(err.Error(), "spec.dhcpV6Options") {
			t.Fatalf("err = %v, want one naming spec.dhcpV6Options", err)
		}
	})
}

// TestSubnetReconcilerKeepsDHCPOptions runs the subnet reconciler on a
// real Northbound where kube-ovn left a DHCP options row for a subnet, and
// a pod port that refers to it (docs/contract.md N4, decision 0016): the
// row follows the Subnet in place, its server MAC kept as kube-ovn drew
// it; the status records it; a family the block lacks gets no row;
// enableDHCP off deletes it and the port's reference goes with it.
func TestSubnetReconcilerKeepsDHCPOptions(t *testing.T) {
	f := startTopology(t)
	ctx := context.Background()
	ids := map[string]string{ovn.ExternalIDLogicalSwitch: "kovn", ovn.ExternalIDProtocol: ovn.DHCPv4, ovn.ExternalIDVendor: "kube-ovn"}
	res, err := f.nb.Transact(ctx,
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.DHCPOptionsTable, UUIDName: "kdhcp", Row: ovsdb.Row{
			"cidr": "10.66.0.0/16", "external_ids": topoMap(ids),
			"options": topoMap(map[string]string{"lease_time": "3600", "router": "10.66.0.1", "server_id": "169.254.0.254", "server_mac": "00:00:00:2E:2F:B8", "mtu": "1400"}),
		}},
		ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: nbdb.LogicalSwitchPortTable,
			Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: "p.kovn"}},
			Row:   ovsdb.Row{"dhcpv4_options": named("kdhcp")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	uuid := res[0].UUID.GoUUID
	setSubnet := func(mod func(*kubeovnv1.SubnetSpec)) {
		t.Helper()
		obj, _, _ := f.subnets.GetByKey("kovn")
		s := obj.(*kubeovnv1.Subnet).DeepCopy()
		if cur, err := f.cs.KubeovnV1().Subnets().Get(ctx, "kovn", metav1.GetOptions{}); err == nil {
			s.Status = cur.Status
		}
		mod(&s.Spec)
		if err := f.subnets.Update(s); err != nil {
			t.Fatal(err)
		}
	}
	row := func() (*nbdb.DHCPOptions, bool) { return f.nb.SubnetDHCPOptions("kovn", ovn.DHCPv4) }
	portRef := func() string {
		p, ok := f.nb.Port("p.kovn")
		if !ok || p.Dhcpv4Options == nil {
			return ""
		}
		return *p.Dhcpv4Options
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s", what)
			}
		}
	}
	eventually("kube-ovn's row cached", func() bool { r, ok := row(); return ok && r.UUID == uuid && portRef() == uuid })

	setSubnet(func(s *kubeovnv1.SubnetSpec) { s.EnableDHCP, s.DHCPv4Options, s.Mtu = true, "lease_time=900", 1450 })
	if err := f.reconcile(t, "kovn"); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	want := map[string]string{"lease_time": "900", "router": "10.66.0.1", "server_id": "169.254.0.254", "server_mac": "00:00:00:2E:2F:B8", "mtu": "1450"}
	eventually("the row follows the Subnet in place", func() bool {
		r, ok := row()
		return ok && r.UUID == uuid && maps.Equal(r.Options, want)
	})
	if _, ok := f.nb.SubnetDHCPOptions("kovn", ovn.DHCPv6); ok {
		t.Fatal("an IPv6 row for an IPv4 subnet")
	}
	if portRef() != uuid {
		t.Fatalf("the pod port lost its reference: %q", portRef())
	}
	s, err := f.cs.KubeovnV1().Subnets().Get(ctx, "kovn", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status.DHCPv4OptionsUUID != uuid || s.Status.DHCPv6OptionsUUID != "" {
		t.Fatalf("status records %q/%q, want %s/none", s.Status.DHCPv4OptionsUUID, s.Status.DHCPv6OptionsUUID, uuid)
	}

	// Options that cannot be read: a Warning, Ready=False, the row as it was.
	setSubnet(func(s *kubeovnv1.SubnetSpec) { s.DHCPv4Options = "lease_time" })
	if err := f.reconcile(t, "kovn"); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if c := f.ready(t, "kovn"); c.Reason != ReasonInvalidDHCPOptions {
		t.Fatalf("Ready condition %+v, want reason %s", c, ReasonInvalidDHCPOptions)
	}
	if evs := f.events(); !slices.ContainsFunc(evs, func(e string) bool {
		return strings.Contains(e, ReasonInvalidDHCPOptions) && strings.Contains(e, "dhcpV4Options")
	}) {
		t.Fatalf("events %v, want a Warning naming spec.dhcpV4Options", evs)
	}
	if r, _ := row(); !maps.Equal(r.Options, want) {
		t.Fatalf("unreadable options changed the row: %v", r.Options)
	}

	setSubnet(func(s *kubeovnv1.SubnetSpec) { s.EnableDHCP, s.DHCPv4Options = false, "" })
	if err := f.reconcile(t, "kovn"); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	eventually("row and reference gone", func() bool { _, ok := row(); return !ok && portRef() == "" })
	if s, _ := f.cs.KubeovnV1().Subnets().Get(ctx, "kovn", metav1.GetOptions{}); s.Status.DHCPv4OptionsUUID != "" {
		t.Fatalf("status still records %q", s.Status.DHCPv4OptionsUUID)
	}
}
