package ovn

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// TestSubnetDHCPOptions follows a subnet's DHCP_Options rows on a real
// server (docs/contract.md N4): inserted with kube-ovn's external ids,
// updated in place (a port's reference survives), never taken from a
// per-port row or another vendor's, and deleted with the references of
// the ports that pointed at them.
func TestSubnetDHCPOptions(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	makeSwitch(t, c, "vms")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	apply := func(ops []ovsdb.Operation, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Transact(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}

	// A per-port row and another vendor's row of the same switch are not
	// the subnet's.
	apply([]ovsdb.Operation{
		{Op: ovsdb.OperationInsert, Table: nbdb.DHCPOptionsTable, Row: ovsdb.Row{"cidr": "10.0.0.0/24",
			"external_ids": toOvsMap(map[string]string{ExternalIDLogicalSwitch: "vms", ExternalIDProtocol: DHCPv4, ExternalIDVendor: DefaultVendor, ExternalIDDHCPPort: "vm1.default"})}},
		{Op: ovsdb.OperationInsert, Table: nbdb.DHCPOptionsTable, Row: ovsdb.Row{"cidr": "10.0.0.0/24",
			"external_ids": toOvsMap(map[string]string{ExternalIDLogicalSwitch: "vms", ExternalIDProtocol: DHCPv4, ExternalIDVendor: "neutron"})}},
	}, nil)
	eventually(t, "foreign rows cached", func() bool { return len(selectRows(t, c, nbdb.DHCPOptionsTable, "_uuid")) == 2 })
	if row, ok := c.SubnetDHCPOptions("vms", DHCPv4); ok {
		t.Fatalf("SubnetDHCPOptions took %+v, a row that is not the subnet's", row)
	}

	v4 := DHCPSpec{Switch: "vms", CIDR: "10.0.0.0/24", Options: map[string]string{"lease_time": "3600", "router": "10.0.0.1", "server_id": "169.254.0.254", "server_mac": "00:00:00:aa:bb:cc", "mtu": "1400"}}
	v6 := DHCPSpec{Switch: "vms", CIDR: "fd00::/120", Options: map[string]string{"server_id": "00:00:00:aa:bb:cd"}}
	apply(c.EnsureDHCPOptions(v4))
	apply(c.EnsureDHCPOptions(v6))
	var row4, row6 *nbdb.DHCPOptions
	eventually(t, "subnet rows cached", func() bool {
		var ok4, ok6 bool
		row4, ok4 = c.SubnetDHCPOptions("vms", DHCPv4)
		row6, ok6 = c.SubnetDHCPOptions("vms", DHCPv6)
		return ok4 && ok6
	})
	wantIDs := map[string]string{ExternalIDLogicalSwitch: "vms", ExternalIDProtocol: DHCPv4, ExternalIDVendor: DefaultVendor}
	if row4.Cidr != v4.CIDR || !maps.Equal(row4.Options, v4.Options) || !maps.Equal(row4.ExternalIDs, wantIDs) {
		t.Fatalf("IPv4 row = %+v, want cidr %s options %v external ids %v", row4, v4.CIDR, v4.Options, wantIDs)
	}
	if row6.ExternalIDs[ExternalIDProtocol] != DHCPv6 || row6.Cidr != v6.CIDR {
		t.Fatalf("IPv6 row = %+v", row6)
	}
	for _, spec := range []DHCPSpec{v4, v6} {
		if ops, err := c.EnsureDHCPOptions(spec); err != nil || len(ops) != 0 {
			t.Fatalf("EnsureDHCPOptions of a matching row = %v, %v; want no op", ops, err)
		}
	}

	// A port refers to both rows.
	pops, _, err := c.EnsurePort(PortSpec{Name: "vm1.default", Switch: "vms", Pod: "default/vm1", MAC: "0a:58:0a:00:00:02",
		IPs: []string{"10.0.0.2", "fd00::2"}, DHCPv4: row4.UUID, DHCPv6: row6.UUID})
	apply(pops, err)
	eventually(t, "port cached", func() bool { _, ok := c.Port("vm1.default"); return ok })
	p, _ := c.Port("vm1.default")
	if deref(p.Dhcpv4Options) != row4.UUID || deref(p.Dhcpv6Options) != row6.UUID {
		t.Fatalf("port refers to %s and %s, want %s and %s", deref(p.Dhcpv4Options), deref(p.Dhcpv6Options), row4.UUID, row6.UUID)
	}

	// The subnet changes: the row is updated in place, the port's
	// reference stays.
	v4.CIDR = "10.0.0.0/23"
	v4.Options = maps.Clone(v4.Options)
	v4.Options["lease_time"] = "600"
	ops, err := c.EnsureDHCPOptions(v4)
	if err != nil || len(ops) != 1 || ops[0].Op != ovsdb.OperationUpdate {
		t.Fatalf("EnsureDHCPOptions of a changed subnet = %v, %v; want one update", ops, err)
	}
	apply(ops, nil)
	eventually(t, "row updated", func() bool {
		r, ok := c.SubnetDHCPOptions("vms", DHCPv4)
		return ok && r.UUID == row4.UUID && r.Cidr == "10.0.0.0/23" && r.Options["lease_time"] == "600"
	})
	p, _ = c.Port("vm1.default")
	if deref(p.Dhcpv4Options) != row4.UUID {
		t.Fatalf("port lost its IPv4 DHCP reference after an update: %q", deref(p.Dhcpv4Options))
	}

	// The subnet becomes IPv4 only: its IPv6 row goes, and with it the
	// port's reference.
	dops, _, err := c.DeleteDHCPOptions("vms", DHCPv4)
	apply(dops, err)
	eventually(t, "IPv6 row gone, reference cleared", func() bool {
		_, ok := c.SubnetDHCPOptions("vms", DHCPv6)
		p, _ := c.Port("vm1.default")
		return !ok && p.Dhcpv6Options == nil && deref(p.Dhcpv4Options) == row4.UUID
	})
	// enableDHCP off: every subnet row goes; the foreign rows stay.
	dops, _, err = c.DeleteDHCPOptions("vms")
	apply(dops, err)
	eventually(t, "subnet rows gone", func() bool {
		_, ok := c.SubnetDHCPOptions("vms", DHCPv4)
		p, _ := c.Port("vm1.default")
		return !ok && p.Dhcpv4Options == nil
	})
	if n := len(selectRows(t, c, nbdb.DHCPOptionsTable, "_uuid")); n != 2 {
		t.Fatalf("%d DHCP_Options rows left, want the 2 that are not the subnet's", n)
	}
}
