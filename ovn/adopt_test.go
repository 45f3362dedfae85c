package ovn

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// The tests in this file check that the builders adopt a Northbound that
// kube-ovn built as it is (docs/decisions/0011-adopt-topology.md): what
// is missing is added, nothing that exists is rewritten, and a difference
// that matters is returned instead of written.

// kubeOVN describes the rows kube-ovn leaves for one subnet on the cluster
// router; the zero value of a field takes kube-ovn's value for the subnet
// "kovn", 10.66.0.0/16.
type kubeOVN struct {
	subnet      string
	otherConfig map[string]string
	networks    []string
	// lspType and lspOptions are the router-type switch port's.
	lspType    *string
	lspOptions map[string]string
	// groups are extra port groups: name → external ids. The pod port is
	// in each of them.
	groups map[string]map[string]string
}

// build writes the rows in one transaction: router ovn-cluster, the
// subnet's switch with kube-ovn's other_config and external ids, the
// router port ovn-cluster-<subnet> with a random upper-case MAC, its peer
// <subnet>-ovn-cluster of type router, a DHCP_Options row, a pod port
// pointing at it, and the port groups.
func (k kubeOVN) build(t *testing.T, c *Client) {
	t.Helper()
	if k.subnet == "" {
		k.subnet = "kovn"
	}
	if k.otherConfig == nil {
		k.otherConfig = map[string]string{"subnet": "10.66.0.0/16", "exclude_ips": "10.66.0.1"}
	}
	if k.networks == nil {
		k.networks = []string{"10.66.0.1/16"}
	}
	typ := "router"
	if k.lspType != nil {
		typ = *k.lspType
	}
	if k.lspOptions == nil {
		k.lspOptions = map[string]string{"router-port": "ovn-cluster-" + k.subnet}
	}
	vendor := map[string]string{"vendor": "kube-ovn"}
	ref := func(name string) ovsdb.OvsSet { return ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: name}}} }
	ops := []ovsdb.Operation{
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterPortTable, UUIDName: "lrp", Row: ovsdb.Row{
			"name": "ovn-cluster-" + k.subnet, "mac": "00:00:00:AB:CD:EF", "networks": strSet(k.networks), "external_ids": toOvsMap(vendor),
		}},
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable, UUIDName: "lr", Row: ovsdb.Row{
			"name": "ovn-cluster", "external_ids": toOvsMap(vendor), "ports": ref("lrp"),
		}},
		{Op: ovsdb.OperationInsert, Table: nbdb.DHCPOptionsTable, UUIDName: "dhcp", Row: ovsdb.Row{
			"cidr": "10.66.0.0/16", "external_ids": toOvsMap(map[string]string{"subnet": k.subnet, "vendor": "kube-ovn"}),
			"options": toOvsMap(map[string]string{"lease_time": "3600", "router": "10.66.0.1", "server_id": "169.254.0.254", "server_mac": "00:00:00:2E:2F:B8"}),
		}},
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: "lsp_router", Row: ovsdb.Row{
			"name": k.subnet + "-ovn-cluster", "type": typ, "addresses": strSet([]string{"router"}),
			"options": toOvsMap(k.lspOptions), "external_ids": toOvsMap(map[string]string{"ls": k.subnet, "vendor": "kube-ovn"}),
		}},
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: "lsp_pod", Row: ovsdb.Row{
			"name": "p.ns", "addresses": strSet([]string{"00:00:00:11:22:33 10.66.0.5"}), "dhcpv4_options": ref("dhcp"),
			"external_ids": toOvsMap(map[string]string{"ls": k.subnet, "pod": "ns/p", "vendor": "kube-ovn"}),
		}},
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable, UUIDName: "ls", Row: ovsdb.Row{
			"name": k.subnet, "other_config": toOvsMap(k.otherConfig), "external_ids": toOvsMap(vendor),
			"ports": ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "lsp_router"}, ovsdb.UUID{GoUUID: "lsp_pod"}}},
		}},
	}
	i := 0
	for name, ids := range k.groups {
		i++
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.PortGroupTable, UUIDName: fmt.Sprintf("pg%d", i), Row: ovsdb.Row{
			"name": name, "external_ids": toOvsMap(ids), "ports": ref("lsp_pod"),
		}})
	}
	mustTransact(t, c, ops)
	eventually(t, "kube-ovn's rows in the cache", func() bool {
		_, ls := c.Switch(k.subnet)
		_, lrp := c.RouterPort("ovn-cluster-" + k.subnet)
		_, lsp := c.Port(k.subnet + "-ovn-cluster")
		_, pod := c.Port("p.ns")
		for name := range k.groups {
			if _, ok := c.PortGroup(name); !ok {
				return false
			}
		}
		return ls && lrp && lsp && pod
	})
}

// nbTables are the tables a subnet's topology touches.
var nbTables = []string{
	nbdb.LogicalSwitchTable, nbdb.LogicalSwitchPortTable, nbdb.LogicalRouterTable,
	nbdb.LogicalRouterPortTable, nbdb.PortGroupTable, nbdb.DHCPOptionsTable,
}

// snapshot reads every column (_version included, which changes on any
// write to the row) of every row of nbTables from the server.
func snapshot(t *testing.T, c *Client) map[string]ovsdb.Row {
	t.Helper()
	out := map[string]ovsdb.Row{}
	for _, table := range nbTables {
		for _, r := range selectRows(t, c, table) {
			out[table+" "+r["_uuid"].(ovsdb.UUID).GoUUID] = r
		}
	}
	return out
}

// unchanged fails for every row of before that is gone or differs in any
// column, and returns the keys of rows that are new.
func unchanged(t *testing.T, before, after map[string]ovsdb.Row) []string {
	t.Helper()
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok:
			t.Errorf("row %s (%v) was deleted", k, b["name"])
		case !reflect.DeepEqual(a, b):
			t.Errorf("row %s (%v) changed:\n before %v\n after  %v", k, b["name"], b, a)
		}
	}
	var added []string
	for k, a := range after {
		if _, ok := before[k]; !ok {
			added = append(added, fmt.Sprintf("%s %v", strings.Fields(k)[0], a["name"]))
		}
	}
	slices.Sort(added)
	return added
}

func adoptedSwitchSpec() SwitchSpec {
	return SwitchSpec{Name: "kovn", CIDRs: []string{"10.66.0.0/16"}, ExcludeIPs: []string{"10.66.0.1", "10.66.0.2..10.66.0.9"},
		ExternalIDs: map[string]string{"subnet": "kovn"}}
}

func adoptedRouterPortSpec() RouterPortSpec {
	return RouterPortSpec{Router: "ovn-cluster", Switch: "kovn", RouterPort: "ovn-cluster-kovn", SwitchPort: "kovn-ovn-cluster",
		MAC: "0a:58:0a:42:00:01", Networks: []string{"10.66.0.1/16"}}
}

// TestAdoptKubeOVNTopology runs every builder of the subnet and pod path
// over the rows kube-ovn leaves, with a spec that agrees with them on
// everything that matters and differs in the rest (a derived MAC, more
// excluded addresses, no DHCP options, ids kube-ovn does not write): only
// the missing port group is written, and every existing row keeps every
// column.
func TestAdoptKubeOVNTopology(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	kubeOVN{groups: map[string]map[string]string{
		// kube-ovn before v1.14, and since.
		"kovn.node1": {"np": "kovn/node1"},
		"kovn.node2": {"subnet": "kovn", "node": "node2", "vendor": "kube-ovn", "np": "kovn/node2"},
	}}.build(t, c)
	before := snapshot(t, c)

	var ops []ovsdb.Operation
	noDiffs := func(what string, diffs []Difference, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(diffs) > 0 {
			t.Errorf("%s: differences %v, want none", what, diffs)
		}
	}
	// Every op built is sent, so that the snapshot below sees any write.
	wantNoOps := func(what string, o []ovsdb.Operation) {
		t.Helper()
		if len(o) > 0 {
			t.Errorf("%s: ops %+v on an adopted row, want none", what, o)
		}
		ops = append(ops, o...)
	}
	o, _, err := c.EnsureRouter(RouterSpec{Name: "ovn-cluster", ExternalIDs: map[string]string{"x": "y"}})
	noDiffs("router", nil, err)
	wantNoOps("router", o)
	o, _, diffs, err := c.EnsureSwitch(adoptedSwitchSpec())
	noDiffs("switch", diffs, err)
	wantNoOps("switch", o)
	o, diffs, err = c.EnsureRouterPort(adoptedRouterPortSpec())
	noDiffs("router port", diffs, err)
	wantNoOps("router port", o)
	for _, node := range []string{"node1", "node2"} {
		o, _, diffs, err := c.EnsurePortGroup("kovn."+node, map[string]string{ExternalIDSubnet: "kovn", "node": node})
		noDiffs("port group of "+node, diffs, err)
		wantNoOps("port group of "+node, o)
	}
	o, _, diffs, err = c.EnsurePortGroup("kovn.node3", map[string]string{ExternalIDSubnet: "kovn", "node": "node3"})
	noDiffs("port group of node3", diffs, err)
	if len(o) != 1 || o[0].Op != ovsdb.OperationInsert {
		t.Fatalf("missing port group: ops %+v, want one insert", o)
	}
	ops = append(ops, o...)
	// The pod's port as shardnet plans it: no DHCP options.
	o, _, err = c.EnsurePort(PortSpec{Name: "p.ns", Switch: "kovn", Pod: "ns/p", MAC: "00:00:00:11:22:33", IPs: []string{"10.66.0.5"}})
	noDiffs("pod port", nil, err)
	wantNoOps("pod port", o)

	mustTransact(t, c, ops)
	if added := unchanged(t, before, snapshot(t, c)); !slices.Equal(added, []string{"Port_Group kovn.node3"}) {
		t.Errorf("rows added %v, want the missing port group only", added)
	}
}

// TestAdoptedPortKeepsItsDHCPOptions changes a kube-ovn port's addresses:
// the update carries the addresses and leaves dhcpv4_options alone.
func TestAdoptedPortKeepsItsDHCPOptions(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	kubeOVN{}.build(t, c)
	ops, _, err := c.EnsurePort(PortSpec{Name: "p.ns", Switch: "kovn", Pod: "ns/p", MAC: "00:00:00:11:22:33", IPs: []string{"10.66.0.6"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if _, ok := op.Row["dhcpv4_options"]; ok {
			t.Errorf("op %+v writes dhcpv4_options", op)
		}
		if _, ok := op.Row["dhcpv6_options"]; ok {
			t.Errorf("op %+v writes dhcpv6_options", op)
		}
	}
	mustTransact(t, c, ops)
	for _, r := range selectRows(t, c, nbdb.LogicalSwitchPortTable, "name", "addresses", "dhcpv4_options") {
		if r["name"] != "p.ns" {
			continue
		}
		if setLen(r["dhcpv4_options"]) != 1 {
			t.Errorf("dhcpv4_options is %v after the update, want kube-ovn's row", r["dhcpv4_options"])
		}
		if r["addresses"] != "00:00:00:11:22:33 10.66.0.6" {
			t.Errorf("addresses %v, want the new address", r["addresses"])
		}
	}
}

// TestAdoptReportsDifferences gives kube-ovn's rows values that matter and
// that the spec does not accept: each is returned as a Difference and
// none is written.
func TestAdoptReportsDifferences(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	vif := ""
	kubeOVN{
		otherConfig: map[string]string{"subnet": "10.67.0.0/16", "ipv6_prefix": "fd00:66::"},
		networks:    []string{"10.66.0.1/24"},
		lspType:     &vif,
		lspOptions:  map[string]string{},
		groups:      map[string]map[string]string{"kovn.node1": {"subnet": "other", "node": "node1"}},
	}.build(t, c)
	before := snapshot(t, c)

	_, _, diffs, err := c.EnsureSwitch(adoptedSwitchSpec())
	if err != nil {
		t.Fatal(err)
	}
	// The spec has no IPv6 block: a switch with one differs too.
	want := []Difference{
		{Object: ObjectSwitch, Table: nbdb.LogicalSwitchTable, Row: "kovn", Field: "other_config:subnet", Have: "10.67.0.0/16", Want: "10.66.0.0/16"},
		{Object: ObjectSwitch, Table: nbdb.LogicalSwitchTable, Row: "kovn", Field: "other_config:ipv6_prefix", Have: "fd00:66::", Want: ""},
	}
	if !reflect.DeepEqual(diffs, want) {
		t.Errorf("switch differences\n %v\nwant\n %v", diffs, want)
	}
	ops, diffs, err := c.EnsureRouterPort(adoptedRouterPortSpec())
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) > 0 {
		t.Errorf("router port: ops %+v, want none", ops)
	}
	want = []Difference{
		{Object: ObjectRouterPort, Table: nbdb.LogicalRouterPortTable, Row: "ovn-cluster-kovn", Field: "networks", Have: "10.66.0.1/24", Want: "10.66.0.1/16"},
		{Object: ObjectRouterPort, Table: nbdb.LogicalSwitchPortTable, Row: "kovn-ovn-cluster", Field: "type", Have: "", Want: "router"},
		{Object: ObjectRouterPort, Table: nbdb.LogicalSwitchPortTable, Row: "kovn-ovn-cluster", Field: "options:router-port", Have: "", Want: "ovn-cluster-kovn"},
	}
	if !reflect.DeepEqual(diffs, want) {
		t.Errorf("router port differences\n %v\nwant\n %v", diffs, want)
	}
	ops, _, diffs, err = c.EnsurePortGroup("kovn.node1", map[string]string{ExternalIDSubnet: "kovn", "node": "node1"})
	if err != nil || len(ops) > 0 {
		t.Fatalf("port group: %+v, %v; want no ops", ops, err)
	}
	want = []Difference{{Object: ObjectPortGroup, Table: nbdb.PortGroupTable, Row: "kovn.node1", Field: "external_ids:subnet", Have: "other", Want: "kovn"}}
	if !reflect.DeepEqual(diffs, want) {
		t.Errorf("port group differences %v, want %v", diffs, want)
	}
	if added := unchanged(t, before, snapshot(t, c)); len(added) > 0 {
		t.Errorf("rows added: %v", added)
	}

	// The router port's holder is read from the server.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if got, err := c.RouterOfPort(ctx, "ovn-cluster-kovn"); err != nil || got != "ovn-cluster" {
		t.Errorf("RouterOfPort = %q, %v; want ovn-cluster", got, err)
	}
	if got, err := c.RouterOfPort(ctx, "no-such-port"); err != nil || got != "" {
		t.Errorf("RouterOfPort of a missing port = %q, %v; want \"\"", got, err)
	}
}

// TestManagedRowsFollowTheSpec creates a switch and a router port, which
// carry the managed mark, then changes the spec: those rows follow it.
// A router port that carries the mark for another switch is adopted.
func TestManagedRowsFollowTheSpec(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	spec := SwitchSpec{Name: "own", CIDRs: []string{"10.70.0.0/24"}, ExcludeIPs: []string{"10.70.0.2"}, ExternalIDs: map[string]string{"subnet": "own"}}
	ops, _, diffs, err := c.EnsureSwitch(spec)
	if err != nil || len(diffs) > 0 || len(ops) != 1 || ops[0].Op != ovsdb.OperationInsert {
		t.Fatalf("new switch: %+v, %v, %v", ops, diffs, err)
	}
	ro, _, err := c.EnsureRouter(RouterSpec{Name: "ovn-cluster"})
	if err != nil {
		t.Fatal(err)
	}
	mustTransact(t, c, append(ops, ro...))
	eventually(t, "switch and router in cache", func() bool {
		_, ls := c.Switch("own")
		_, lr := c.Router("ovn-cluster")
		return ls && lr
	})
	ls, _ := c.Switch("own")
	if ls.ExternalIDs[ExternalIDManaged] != "true" || ls.ExternalIDs["subnet"] != "own" {
		t.Errorf("new switch external ids %v, want the managed mark and subnet", ls.ExternalIDs)
	}
	lr, _ := c.Router("ovn-cluster")
	if _, ok := lr.ExternalIDs[ExternalIDManaged]; ok {
		t.Errorf("router external ids %v: the mark is for rows shardnet updates", lr.ExternalIDs)
	}

	rp := RouterPortSpec{Router: "ovn-cluster", Switch: "own", RouterPort: "ovn-cluster-own", SwitchPort: "own-ovn-cluster",
		MAC: "0a:58:0a:46:00:01", Networks: []string{"10.70.0.1/24"}}
	ops, diffs, err = c.EnsureRouterPort(rp)
	if err != nil || len(diffs) > 0 {
		t.Fatalf("new router port: %v, %v", diffs, err)
	}
	mustTransact(t, c, ops)
	eventually(t, "router port in cache", func() bool {
		_, lrp := c.RouterPort("ovn-cluster-own")
		_, lsp := c.Port("own-ovn-cluster")
		return lrp && lsp
	})
	if lrp, _ := c.RouterPort("ovn-cluster-own"); lrp.ExternalIDs[ExternalIDManaged] != "true" {
		t.Errorf("new router port external ids %v, want the managed mark", lrp.ExternalIDs)
	}

	// The Subnet moves to another block and gateway.
	spec.CIDRs, spec.ExcludeIPs = []string{"10.71.0.0/24"}, nil
	ops, _, diffs, err = c.EnsureSwitch(spec)
	if err != nil || len(diffs) > 0 || len(ops) != 1 || ops[0].Op != ovsdb.OperationMutate {
		t.Fatalf("changed switch: %+v, %v, %v; want one mutate", ops, diffs, err)
	}
	rp.MAC, rp.Networks = "0a:58:0a:47:00:01", []string{"10.71.0.1/24"}
	rops, diffs, err := c.EnsureRouterPort(rp)
	if err != nil || len(diffs) > 0 || len(rops) != 1 || rops[0].Op != ovsdb.OperationUpdate {
		t.Fatalf("changed router port: %+v, %v, %v; want one update", rops, diffs, err)
	}
	mustTransact(t, c, append(ops, rops...))
	eventually(t, "the changes in cache", func() bool {
		ls, _ := c.Switch("own")
		lrp, _ := c.RouterPort("ovn-cluster-own")
		_, excluded := ls.OtherConfig["exclude_ips"]
		return ls.OtherConfig["subnet"] == "10.71.0.0/24" && !excluded &&
			lrp.MAC == rp.MAC && slices.Equal(lrp.Networks, rp.Networks)
	})

	// The same router port name reached from another switch is not that
	// switch's row to update.
	other := rp
	other.Switch, other.SwitchPort, other.Networks = "elsewhere", "elsewhere-ovn-cluster", []string{"10.72.0.1/24"}
	makeSwitch(t, c, "elsewhere")
	ops, diffs, err = c.EnsureRouterPort(other)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.Table == nbdb.LogicalRouterPortTable {
			t.Errorf("op %+v on a router port shardnet made for another switch", op)
		}
	}
	if len(diffs) != 1 || diffs[0].Field != "networks" {
		t.Errorf("differences %v, want the networks", diffs)
	}
}
