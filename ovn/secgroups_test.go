package ovn

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// TestPortSecurityGroupsAndVIPs follows one port through the changes of
// its security groups and VIPs (docs/contract.md N2, N3, E24) on a real
// server: external ids as kube-ovn writes them, port group membership,
// and no op once the port matches.
func TestPortSecurityGroupsAndVIPs(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	makeSwitch(t, c, "ovn-default")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newShardBatcher(t, c, 1, 1, BatcherConfig{})
	submit := func(ops []ovsdb.Operation, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Submit(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	group := func(sg string) {
		t.Helper()
		ops, _, _, err := c.EnsurePortGroup(SecurityGroupPortGroup(sg), map[string]string{"sg": sg})
		submit(ops, err)
		eventually(t, "group "+sg, func() bool { _, ok := c.PortGroup(SecurityGroupPortGroup(sg)); return ok })
	}
	if got := SecurityGroupPortGroup("sg-a"); got != "ovn.sg.sg.a" {
		t.Fatalf("port group name %q, want kube-ovn's ovn.sg.sg.a", got)
	}
	group("sg-a")

	spec := PortSpec{Name: "p.ns", Switch: "ovn-default", Pod: "ns/p", MAC: "00:00:00:00:00:01", IPs: []string{"10.16.0.9"},
		PortSecurity: true, VIPs: []string{"10.16.0.90", "10.16.0.91"}, SecurityGroups: []string{"sg-a", "sg-b"}}
	// ensure writes spec and waits until the cache shows want's external
	// ids, then checks that a rerun has nothing to do.
	ensure := func(want map[string]string) {
		t.Helper()
		ops, _, err := c.EnsurePort(spec)
		submit(ops, err)
		eventually(t, "port external ids", func() bool {
			p, ok := c.Port(spec.Name)
			return ok && maps.Equal(p.ExternalIDs, want)
		})
		if ops, _, err := c.EnsurePort(spec); err != nil || len(ops) != 0 {
			t.Fatalf("rerun: %d ops, %v; want none", len(ops), err)
		}
	}
	members := func() map[string][]string {
		out := map[string][]string{}
		p, _ := c.Port(spec.Name)
		for _, r := range selectRows(t, c, nbdb.PortGroupTable, "name", "ports") {
			set, _ := r["ports"].(ovsdb.OvsSet)
			for _, u := range set.GoSet {
				if uu, ok := u.(ovsdb.UUID); ok && uu.GoUUID == p.UUID {
					out[r["name"].(string)] = append(out[r["name"].(string)], spec.Name)
				}
			}
			if u, ok := r["ports"].(ovsdb.UUID); ok && u.GoUUID == p.UUID {
				out[r["name"].(string)] = append(out[r["name"].(string)], spec.Name)
			}
		}
		return out
	}
	inGroups := func(want ...string) {
		t.Helper()
		got := slices.Sorted(maps.Keys(members()))
		if !slices.Equal(got, want) {
			t.Fatalf("port is in %v, want %v", got, want)
		}
	}

	// sg-b has no port group yet: recorded in security_groups, not
	// associated, not joined.
	base := map[string]string{"pod": "ns/p", "ls": "ovn-default", "vendor": DefaultVendor}
	with := func(kv ...string) map[string]string {
		m := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	ensure(with("vips", "10.16.0.90,10.16.0.91", "attach-vips", "true", "security_groups", "sg-a/sg-b", "associated_sg_sg-a", "true"))
	inGroups("ovn.sg.sg.a")
	p, _ := c.Port(spec.Name)
	if want := []string{"00:00:00:00:00:01 10.16.0.9 10.16.0.90 10.16.0.91"}; !slices.Equal(p.PortSecurity, want) {
		t.Fatalf("port_security %q, want %q", p.PortSecurity, want)
	}

	// Its group appears: the next ensure joins it.
	group("sg-b")
	ensure(with("vips", "10.16.0.90,10.16.0.91", "attach-vips", "true", "security_groups", "sg-a/sg-b",
		"associated_sg_sg-a", "true", "associated_sg_sg-b", "true"))
	inGroups("ovn.sg.sg.a", "ovn.sg.sg.b")

	// sg-a and the VIPs removed: left and marked false, the VIP keys go.
	spec.SecurityGroups, spec.VIPs = []string{"sg-b"}, nil
	ensure(with("security_groups", "sg-b", "associated_sg_sg-a", "false", "associated_sg_sg-b", "true"))
	inGroups("ovn.sg.sg.b")

	// No group left: security_groups stays, empty, as kube-ovn leaves it.
	spec.SecurityGroups = nil
	ensure(with("security_groups", "", "associated_sg_sg-a", "false", "associated_sg_sg-b", "false"))
	inGroups()
}
