package ovn

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// External id keys shardnet writes (docs/contract.md §Names and records,
// N2 and N8: ports, routes and NAT rules carry pod, so that they can be
// found per pod).
const (
	ExternalIDPod    = "pod"
	ExternalIDSwitch = "ls"
	ExternalIDVendor = "vendor"
	// ExternalIDRouter on routes, policies and NAT rules names the router
	// holding the row: those rows have no back reference, and the builders
	// find them through an index on (lr, key column).
	ExternalIDRouter = "lr"
)

// DefaultVendor is the vendor external id written when a spec leaves it
// empty: kube-ovn's value, so that kube-ovn's tools see the rows as theirs.
const DefaultVendor = "kube-ovn"

// Ref names a row for later ops of the same request: the real UUID of a row
// that exists, or the named UUID of a row the request inserts. Use it only
// in the request that produced it.
type Ref string

func (r Ref) uuid() ovsdb.UUID { return ovsdb.UUID{GoUUID: string(r)} }

// named reports whether the Ref is a named UUID of a row the request
// inserts, which the server knows only inside that request.
func (r Ref) named() bool { return strings.HasPrefix(string(r), "sn_") }

// ExternalIDManaged marks the switches and router ports shardnet inserted
// (docs/decisions/0011-adopt-topology.md). Only a row carrying it is
// brought in line with a changed Subnet, and only in the fields shardnet
// wrote; every other existing row is adopted as it is. It is never added
// to a row that exists.
const (
	ExternalIDManaged = "shardnet.io/managed"
	managedValue      = "true"
)

// Object kinds of a Difference, also the object label of
// shardnet_topology_differences_total.
const (
	ObjectSwitch     = "switch"
	ObjectRouterPort = "router_port"
	ObjectPortGroup  = "port_group"
)

// Difference is a field of an existing row that is not what a spec asks
// for and that matters, left as it is: the builders never rewrite a row
// they did not insert, they report it.
type Difference struct {
	// Object is the kind of row (ObjectSwitch, ...); Table and Row name
	// it.
	Object, Table, Row string
	// Field is the column, "column:key" for a map key, or "router" for the
	// router that holds a router port.
	Field string
	// Have is what the row holds ("" for nothing), Want what the spec
	// asks for.
	Have, Want string
}

func (d Difference) String() string {
	return fmt.Sprintf("%s %s: %s is %q, want %q", d.Table, d.Row, d.Field, d.Have, d.Want)
}

func managed(ids map[string]string) bool { return ids[ExternalIDManaged] == managedValue }

// uuidNames makes named UUIDs unique in the process, so that requests built
// independently never collide inside one batch. A named UUID must match
// [_a-zA-Z][_a-zA-Z0-9]*.
var uuidNames atomic.Uint64

func newUUIDName(kind string) string {
	return "sn_" + kind + "_" + strconv.FormatUint(uuidNames.Add(1), 36)
}

// SwitchSpec is the logical switch of one subnet.
type SwitchSpec struct {
	Name string
	// CIDRs are the subnet's blocks; the IPv4 one becomes
	// other_config:subnet and the IPv6 one other_config:ipv6_prefix.
	CIDRs []string
	// ExcludeIPs (addresses or "a..b" ranges) become other_config:exclude_ips
	// for the IPv4 block; an empty list removes the key.
	ExcludeIPs  []string
	Vendor      string
	ExternalIDs map[string]string
}

// PortSpec is a pod's logical switch port.
type PortSpec struct {
	Name   string
	Switch string
	// Pod is "namespace/name", written as external_ids:pod.
	Pod string
	MAC string
	IPs []string
	// PortSecurity restricts the port to MAC, IPs and VIPs.
	PortSecurity bool
	// VIPs are also written as external_ids vips and attach-vips=true
	// (none: both keys go).
	VIPs []string
	// SecurityGroups are kube-ovn SecurityGroup names: the port joins the
	// port group of each that exists (SecurityGroupPortGroup) and leaves
	// those it was associated with before, recorded in its external ids
	// security_groups and associated_sg_<group>. The groups' ACLs are
	// kube-ovn's SecurityGroup controller's.
	SecurityGroups []string
	// Layer2Forward adds "unknown" to the addresses, so that the port
	// receives frames for addresses it does not own.
	Layer2Forward bool
	// DHCPv4 and DHCPv6 are DHCP_Options UUIDs. Empty leaves an existing
	// port's column as it is: shardnet does not manage DHCP options, and a
	// port made by kube-ovn may point at its rows.
	DHCPv4, DHCPv6 string
	// Type and Options are written as given ("" is a VIF).
	Type    string
	Options map[string]string
	Vendor  string
	// ExternalIDs are extra keys; pod, ls and vendor are set from the spec.
	ExternalIDs map[string]string
}

func (s *PortSpec) validate() error {
	switch {
	case s.Name == "":
		return fmt.Errorf("port without a name")
	case s.Switch == "":
		return fmt.Errorf("port %s without a switch", s.Name)
	case s.MAC == "" && len(s.IPs) > 0:
		return fmt.Errorf("port %s has addresses but no MAC", s.Name)
	}
	for _, ip := range append(slices.Clone(s.IPs), s.VIPs...) {
		if _, err := netip.ParseAddr(ip); err != nil {
			return fmt.Errorf("port %s: %w", s.Name, err)
		}
	}
	return nil
}

func (s *PortSpec) addresses() []string {
	var out []string
	if s.MAC != "" {
		out = append(out, strings.Join(append([]string{s.MAC}, s.IPs...), " "))
	}
	if s.Layer2Forward {
		out = append(out, "unknown")
	}
	return out
}

func (s *PortSpec) portSecurity() []string {
	if !s.PortSecurity || s.MAC == "" {
		return nil
	}
	return []string{strings.Join(append(append([]string{s.MAC}, s.IPs...), s.VIPs...), " ")}
}

func (s *PortSpec) externalIDs() map[string]string {
	ids := make(map[string]string, len(s.ExternalIDs)+3)
	for k, v := range s.ExternalIDs {
		ids[k] = v
	}
	ids[ExternalIDSwitch] = s.Switch
	ids[ExternalIDVendor] = vendor(s.Vendor)
	if s.Pod != "" {
		ids[ExternalIDPod] = s.Pod
	}
	return ids
}

func vendor(v string) string {
	if v == "" {
		return DefaultVendor
	}
	return v
}

// EnsurePort returns the ops that make the port match spec: an insert into
// the switch when the cache has no port by that name, otherwise only the
// changes (none when it already matches, so a rerun is free). Owned map keys
// are changed by mutation, leaving other writers' keys alone. The Ref names
// the port for port group ops of the same request.
//
// It fails with ErrNotFound when a port it inserts, or moves to another
// subnet's switch, names a switch that is not in the cache, and with
// ErrNotReady while the cache is being rebuilt. The insert carries a wait
// that the switch still exists, so that a switch deleted meanwhile fails the
// request instead of leaving an unreferenced port for the server to drop.
func (c *Client) EnsurePort(spec PortSpec) ([]ovsdb.Operation, Ref, error) {
	cur, _ := c.Port(spec.Name)
	return c.EnsurePortFrom(spec, cur)
}

// EnsurePortFrom is EnsurePort for a caller that has just read the port
// from this client's cache (Port, PortsByPod): cur is that row, nil when
// the cache had none, and the cache is not searched for it again. A
// reconcile that finds nothing to change reads the cache a few times per
// port; each search costs more than the comparison it serves.
func (c *Client) EnsurePortFrom(spec PortSpec, cur *nbdb.LogicalSwitchPort) ([]ovsdb.Operation, Ref, error) {
	if err := spec.validate(); err != nil {
		return nil, "", fmt.Errorf("ovn: %w", err)
	}
	if err := c.Ready(); err != nil {
		return nil, "", err
	}
	if cur != nil && cur.Name != spec.Name {
		return nil, "", fmt.Errorf("ovn: port %s built from the row of port %s", spec.Name, cur.Name)
	}
	exists := cur != nil
	// The switch is read only where the ops name it: a port inserted
	// into it, or moved there from another subnet's switch.
	var ls *nbdb.LogicalSwitch
	if !exists || cur.ExternalIDs[ExternalIDSwitch] != spec.Switch {
		var ok bool
		if ls, ok = c.Switch(spec.Switch); !ok {
			return nil, "", fmt.Errorf("ovn: port %s: switch %s: %w", spec.Name, spec.Switch, ErrNotFound)
		}
	}
	addrs, sec, ids := spec.addresses(), spec.portSecurity(), spec.externalIDs()
	var have map[string]string
	if exists {
		have = cur.ExternalIDs
	}
	member := c.membership(&spec, have, exists)
	maps.Copy(ids, member.set)
	if !exists {
		name := newUUIDName("lsp")
		// Columns left out take their empty defaults; every column sent
		// costs encoding on the hot path.
		row := ovsdb.Row{"name": spec.Name, "external_ids": toOvsMap(ids)}
		if len(addrs) > 0 {
			row["addresses"] = strSet(addrs)
		}
		if len(sec) > 0 {
			row["port_security"] = strSet(sec)
		}
		if spec.DHCPv4 != "" {
			row["dhcpv4_options"] = optUUID(spec.DHCPv4)
		}
		if spec.DHCPv6 != "" {
			row["dhcpv6_options"] = optUUID(spec.DHCPv6)
		}
		if spec.Type != "" {
			row["type"] = spec.Type
		}
		if len(spec.Options) > 0 {
			row["options"] = toOvsMap(spec.Options)
		}
		ops := []ovsdb.Operation{
			{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: name, Row: row},
			waitExists(nbdb.LogicalSwitchTable, ls.UUID),
			insertRefs(nbdb.LogicalSwitchTable, ls.UUID, "ports", ovsdb.UUID{GoUUID: name}),
		}
		gops, err := c.membershipOps(member, Ref(name))
		if err != nil {
			return nil, "", err
		}
		return append(ops, gops...), Ref(name), nil
	}

	var ops []ovsdb.Operation
	where := uuidWhere(cur.UUID)
	row := ovsdb.Row{}
	if !sameSet(cur.Addresses, addrs) {
		row["addresses"] = strSet(addrs)
	}
	if !sameSet(cur.PortSecurity, sec) {
		row["port_security"] = strSet(sec)
	}
	if spec.DHCPv4 != "" && deref(cur.Dhcpv4Options) != spec.DHCPv4 {
		row["dhcpv4_options"] = optUUID(spec.DHCPv4)
	}
	if spec.DHCPv6 != "" && deref(cur.Dhcpv6Options) != spec.DHCPv6 {
		row["dhcpv6_options"] = optUUID(spec.DHCPv6)
	}
	if cur.Type != spec.Type {
		row["type"] = spec.Type
	}
	if len(row) > 0 {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: nbdb.LogicalSwitchPortTable, Where: where, Row: row})
	}
	var muts []ovsdb.Mutation
	muts = append(muts, setKeys("external_ids", cur.ExternalIDs, ids)...)
	muts = append(muts, dropKeys("external_ids", cur.ExternalIDs, member.drop)...)
	muts = append(muts, setKeys("options", cur.Options, spec.Options)...)
	if len(muts) > 0 {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchPortTable, Where: where, Mutations: muts})
	}
	if old := cur.ExternalIDs[ExternalIDSwitch]; old != spec.Switch {
		// The port moves to another subnet's switch.
		ops = append(ops,
			removeRefEverywhere(nbdb.LogicalSwitchTable, "ports", cur.UUID),
			waitExists(nbdb.LogicalSwitchTable, ls.UUID),
			insertRefs(nbdb.LogicalSwitchTable, ls.UUID, "ports", ovsdb.UUID{GoUUID: cur.UUID}),
		)
	}
	gops, err := c.membershipOps(member, Ref(cur.UUID))
	if err != nil {
		return nil, "", err
	}
	return append(ops, gops...), Ref(cur.UUID), nil
}

// DeletePort returns the ops that remove the port from its switch and delete
// it; none when the cache has no such port.
func (c *Client) DeletePort(name string) ([]ovsdb.Operation, error) {
	if err := c.Ready(); err != nil {
		return nil, err
	}
	cur, ok := c.Port(name)
	if !ok {
		return nil, nil
	}
	return deleteSwitchPort(cur.UUID), nil
}

// DeletePodPorts returns the ops that delete every port whose
// external_ids:pod is pod, found through the pod index.
func (c *Client) DeletePodPorts(pod string) ([]ovsdb.Operation, error) {
	if err := c.Ready(); err != nil {
		return nil, err
	}
	var ops []ovsdb.Operation
	for _, p := range c.PortsByPod(pod) {
		ops = append(ops, deleteSwitchPort(p.UUID)...)
	}
	return ops, nil
}

// deleteSwitchPort drops the switch's reference (found by the server, so the
// switch need not be cached) and the row. Port groups hold weak references
// and forget the port by themselves.
func deleteSwitchPort(uuid string) []ovsdb.Operation {
	return []ovsdb.Operation{
		removeRefEverywhere(nbdb.LogicalSwitchTable, "ports", uuid),
		{Op: ovsdb.OperationDelete, Table: nbdb.LogicalSwitchPortTable, Where: uuidWhere(uuid)},
	}
}

// EnsureSwitch returns the ops that create the subnet's switch, marked as
// shardnet's (ExternalIDManaged). A switch shardnet created is brought in
// line with spec: its other_config keys and the external ids spec names.
// Any other switch (kube-ovn's) is adopted as it is: no op, and the
// differences that matter are returned instead, an other_config:subnet or
// ipv6_prefix that is not the spec's block. A key that is missing is not a
// difference and is not added.
func (c *Client) EnsureSwitch(spec SwitchSpec) ([]ovsdb.Operation, Ref, []Difference, error) {
	if spec.Name == "" {
		return nil, "", nil, fmt.Errorf("ovn: switch without a name")
	}
	if err := c.Ready(); err != nil {
		return nil, "", nil, err
	}
	oc := map[string]string{}
	for _, cidr := range spec.CIDRs {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return nil, "", nil, fmt.Errorf("ovn: switch %s: %w", spec.Name, err)
		}
		if p.Addr().Is4() {
			oc["subnet"] = p.Masked().String()
		} else {
			oc["ipv6_prefix"] = p.Masked().Addr().String()
		}
	}
	if len(spec.ExcludeIPs) > 0 {
		oc["exclude_ips"] = strings.Join(spec.ExcludeIPs, " ")
	}
	// On a switch shardnet made, a key spec no longer has goes.
	var drop []string
	for _, k := range []string{"subnet", "ipv6_prefix", "exclude_ips"} {
		if _, ok := oc[k]; !ok {
			drop = append(drop, k)
		}
	}
	ids := withVendor(spec.ExternalIDs, spec.Vendor)
	cur, ok := c.Switch(spec.Name)
	if !ok {
		ids[ExternalIDManaged] = managedValue
		name := newUUIDName("ls")
		return []ovsdb.Operation{{
			Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable, UUIDName: name,
			Row: ovsdb.Row{"name": spec.Name, "other_config": toOvsMap(oc), "external_ids": toOvsMap(ids)},
		}}, Ref(name), nil, nil
	}
	if !managed(cur.ExternalIDs) {
		return nil, Ref(cur.UUID), switchDifferences(cur, oc), nil
	}
	var muts []ovsdb.Mutation
	muts = append(muts, setKeys("other_config", cur.OtherConfig, oc)...)
	muts = append(muts, dropKeys("other_config", cur.OtherConfig, drop)...)
	muts = append(muts, setKeys("external_ids", cur.ExternalIDs, ids)...)
	if len(muts) == 0 {
		return nil, Ref(cur.UUID), nil, nil
	}
	return []ovsdb.Operation{{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable, Where: uuidWhere(cur.UUID), Mutations: muts}}, Ref(cur.UUID), nil, nil
}

// switchDifferences compares an adopted switch's address blocks with
// want's. exclude_ips is not compared: shardnet's IPAM reads the Subnet,
// and OVN reads the key only for dynamic addresses, which shardnet never
// asks for.
func switchDifferences(cur *nbdb.LogicalSwitch, want map[string]string) []Difference {
	var out []Difference
	for _, key := range []string{"subnet", "ipv6_prefix"} {
		have, ok := cur.OtherConfig[key]
		if !ok || sameBlock(have, want[key]) {
			continue
		}
		out = append(out, Difference{Object: ObjectSwitch, Table: nbdb.LogicalSwitchTable, Row: cur.Name,
			Field: "other_config:" + key, Have: have, Want: want[key]})
	}
	return out
}

// sameBlock compares two CIDRs, or two prefix addresses, as values.
func sameBlock(a, b string) bool {
	if a == b {
		return true
	}
	if pa, err := netip.ParsePrefix(a); err == nil {
		pb, err := netip.ParsePrefix(b)
		return err == nil && pa.Masked() == pb.Masked()
	}
	aa, err := netip.ParseAddr(a)
	if err != nil {
		return false
	}
	ab, err := netip.ParseAddr(b)
	return err == nil && aa == ab
}

// DeleteSwitch returns the op that deletes the switch (its ports go with
// it: they are not root rows); none when it is not cached.
func (c *Client) DeleteSwitch(name string) ([]ovsdb.Operation, error) {
	if err := c.Ready(); err != nil {
		return nil, err
	}
	cur, ok := c.Switch(name)
	if !ok {
		return nil, nil
	}
	return []ovsdb.Operation{{Op: ovsdb.OperationDelete, Table: nbdb.LogicalSwitchTable, Where: uuidWhere(cur.UUID)}}, nil
}

// RouterSpec is a VPC's logical router.
type RouterSpec struct {
	Name        string
	Vendor      string
	ExternalIDs map[string]string
}

// EnsureRouter returns the op that creates the router when it is not
// cached. An existing router is adopted as it is: nothing of it is
// compared or written.
func (c *Client) EnsureRouter(spec RouterSpec) ([]ovsdb.Operation, Ref, error) {
	if spec.Name == "" {
		return nil, "", fmt.Errorf("ovn: router without a name")
	}
	if err := c.Ready(); err != nil {
		return nil, "", err
	}
	if cur, ok := c.Router(spec.Name); ok {
		return nil, Ref(cur.UUID), nil
	}
	name := newUUIDName("lr")
	return []ovsdb.Operation{{
		Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable, UUIDName: name,
		Row: ovsdb.Row{"name": spec.Name, "external_ids": toOvsMap(withVendor(spec.ExternalIDs, spec.Vendor))},
	}}, Ref(name), nil
}

// RouterPortSpec connects a subnet's switch to its router: a router port
// carrying the gateway address and a switch port of type router peering it.
type RouterPortSpec struct {
	Router, Switch string
	// RouterPort and SwitchPort name the two ports; kube-ovn's names are
	// "<router>-<switch>" and "<switch>-<router>".
	RouterPort, SwitchPort string
	MAC                    string
	// Networks are the gateway addresses with prefix length, e.g.
	// "10.16.0.1/16".
	Networks []string
	Vendor   string
}

// EnsureRouterPort returns the ops that create whichever of the two ports
// of the switch-to-router link is missing. A router port shardnet created
// (ExternalIDManaged, for this switch and router) follows spec in its MAC
// and networks. Any other router port is adopted as it is, MAC included:
// the difference returned is networks that lack one of spec's. An existing
// switch port is never written; it differs when it is not a router port
// peering spec.RouterPort on spec.Switch.
//
// Which router holds an existing router port is not cached (routers' port
// sets are not monitored): RouterOfPort reads it from the server.
func (c *Client) EnsureRouterPort(spec RouterPortSpec) ([]ovsdb.Operation, []Difference, error) {
	if spec.Router == "" || spec.Switch == "" || spec.RouterPort == "" || spec.SwitchPort == "" || spec.MAC == "" || len(spec.Networks) == 0 {
		return nil, nil, fmt.Errorf("ovn: incomplete router port spec %+v", spec)
	}
	for _, n := range spec.Networks {
		if _, err := netip.ParsePrefix(n); err != nil {
			return nil, nil, fmt.Errorf("ovn: router port %s: %w", spec.RouterPort, err)
		}
	}
	if err := c.Ready(); err != nil {
		return nil, nil, err
	}
	lr, ok := c.Router(spec.Router)
	if !ok {
		return nil, nil, fmt.Errorf("ovn: router port %s: router %s: %w", spec.RouterPort, spec.Router, ErrNotFound)
	}
	ids := withVendor(map[string]string{ExternalIDSwitch: spec.Switch, ExternalIDRouter: spec.Router}, spec.Vendor)
	var (
		ops   []ovsdb.Operation
		diffs []Difference
	)
	cur, ok := c.RouterPort(spec.RouterPort)
	switch {
	case !ok:
		ids[ExternalIDManaged] = managedValue
		name := newUUIDName("lrp")
		ops = append(ops,
			ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterPortTable, UUIDName: name,
				Row: ovsdb.Row{"name": spec.RouterPort, "mac": spec.MAC, "networks": strSet(spec.Networks), "external_ids": toOvsMap(ids)}},
			waitExists(nbdb.LogicalRouterTable, lr.UUID),
			insertRefs(nbdb.LogicalRouterTable, lr.UUID, "ports", ovsdb.UUID{GoUUID: name}),
		)
	case managed(cur.ExternalIDs) && cur.ExternalIDs[ExternalIDSwitch] == spec.Switch && cur.ExternalIDs[ExternalIDRouter] == spec.Router:
		// shardnet's own port: the MAC is derived from the gateway, and
		// one left behind after a gateway change would be the derived MAC
		// of an address pods can now be given.
		row := ovsdb.Row{}
		if cur.MAC != spec.MAC {
			row["mac"] = spec.MAC
		}
		if !sameSet(cur.Networks, spec.Networks) {
			row["networks"] = strSet(spec.Networks)
		}
		if len(row) > 0 {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: nbdb.LogicalRouterPortTable, Where: uuidWhere(cur.UUID), Row: row})
		}
	default:
		if missing := missingNetworks(cur.Networks, spec.Networks); len(missing) > 0 {
			diffs = append(diffs, Difference{Object: ObjectRouterPort, Table: nbdb.LogicalRouterPortTable, Row: cur.Name,
				Field: "networks", Have: strings.Join(cur.Networks, " "), Want: strings.Join(spec.Networks, " ")})
		}
	}

	lsp, ok := c.Port(spec.SwitchPort)
	if ok {
		return ops, append(diffs, switchPortDifferences(lsp, spec)...), nil
	}
	lspOps, _, err := c.EnsurePort(PortSpec{
		Name: spec.SwitchPort, Switch: spec.Switch, Type: "router",
		Options: map[string]string{"router-port": spec.RouterPort},
		Vendor:  spec.Vendor,
	})
	if err != nil {
		return nil, nil, err
	}
	// A router-type port's addresses are the literal "router".
	for i := range lspOps {
		if lspOps[i].Op == ovsdb.OperationInsert {
			lspOps[i].Row["addresses"] = strSet([]string{"router"})
		}
	}
	return append(ops, lspOps...), diffs, nil
}

// missingNetworks returns the networks of want that have does not hold
// (as the same address with the same prefix length).
func missingNetworks(have, want []string) []string {
	var out []string
	for _, w := range want {
		pw, err := netip.ParsePrefix(w)
		if err != nil {
			out = append(out, w)
			continue
		}
		if !slices.ContainsFunc(have, func(h string) bool {
			ph, err := netip.ParsePrefix(h)
			return err == nil && ph == pw
		}) {
			out = append(out, w)
		}
	}
	return out
}

// switchPortDifferences checks that an existing switch port is the
// router-type peer of spec's router port, on spec's switch as far as its
// external_ids:ls tells.
func switchPortDifferences(lsp *nbdb.LogicalSwitchPort, spec RouterPortSpec) []Difference {
	d := func(field, have, want string) Difference {
		return Difference{Object: ObjectRouterPort, Table: nbdb.LogicalSwitchPortTable, Row: lsp.Name, Field: field, Have: have, Want: want}
	}
	var out []Difference
	if lsp.Type != "router" {
		out = append(out, d("type", lsp.Type, "router"))
	}
	if rp := lsp.Options["router-port"]; rp != spec.RouterPort {
		out = append(out, d("options:router-port", rp, spec.RouterPort))
	}
	if ls, ok := lsp.ExternalIDs[ExternalIDSwitch]; ok && ls != spec.Switch {
		out = append(out, d("external_ids:"+ExternalIDSwitch, ls, spec.Switch))
	}
	return out
}

// RouterOfPort returns the name of the router that holds the router port,
// read from the server; "" when no router holds it.
func (c *Client) RouterOfPort(ctx context.Context, port string) (string, error) {
	if err := c.Ready(); err != nil {
		return "", err
	}
	cur, ok := c.RouterPort(port)
	if !ok {
		return "", nil
	}
	ref := ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: cur.UUID}}}
	res, err := c.Transact(ctx, ovsdb.Operation{
		Op: ovsdb.OperationSelect, Table: nbdb.LogicalRouterTable, Columns: []string{"name"},
		Where: []ovsdb.Condition{{Column: "ports", Function: ovsdb.ConditionIncludes, Value: ref}},
	})
	if err != nil {
		return "", err
	}
	for _, r := range res[0].Rows {
		if name, ok := r["name"].(string); ok {
			return name, nil
		}
	}
	return "", nil
}

// EnsurePortGroup returns the op that creates the port group when it is not
// cached (a node's group, for instance). An existing group is adopted as it
// is: its external ids are never written, a missing key included. It
// differs when it carries one of externalIDs' keys (vendor aside) with
// another value: a group of that name that belongs to something else.
func (c *Client) EnsurePortGroup(name string, externalIDs map[string]string) ([]ovsdb.Operation, Ref, []Difference, error) {
	if name == "" {
		return nil, "", nil, fmt.Errorf("ovn: port group without a name")
	}
	if err := c.Ready(); err != nil {
		return nil, "", nil, err
	}
	if cur, ok := c.PortGroup(name); ok {
		var diffs []Difference
		for _, k := range slices.Sorted(maps.Keys(externalIDs)) {
			if have, ok := cur.ExternalIDs[k]; ok && have != externalIDs[k] && k != ExternalIDVendor {
				diffs = append(diffs, Difference{Object: ObjectPortGroup, Table: nbdb.PortGroupTable, Row: name,
					Field: "external_ids:" + k, Have: have, Want: externalIDs[k]})
			}
		}
		return nil, Ref(cur.UUID), diffs, nil
	}
	un := newUUIDName("pg")
	return []ovsdb.Operation{{
		Op: ovsdb.OperationInsert, Table: nbdb.PortGroupTable, UUIDName: un,
		Row: ovsdb.Row{"name": name, "external_ids": toOvsMap(withVendor(externalIDs, ""))},
	}}, Ref(un), nil, nil
}

// AddToPortGroup returns the op that adds ports to the group by set
// mutation, which is idempotent. The group must be cached.
func (c *Client) AddToPortGroup(group string, ports ...Ref) ([]ovsdb.Operation, error) {
	return c.portGroupMutation(group, ovsdb.MutateOperationInsert, ports)
}

// ExternalIDSubnet on a node port group names the subnet it belongs to.
const ExternalIDSubnet = "subnet"

// LeaveNodePortGroups returns the ops that take an existing port out of
// every node port group of subnet, whatever the node: a pod re-created
// under the same name on another node, before its predecessor's port was
// deleted, keeps the old port and must not stay in the old node's group.
// Groups of other kinds (security groups, network policies) are left
// alone.
//
// The groups carrying external_ids:subnet (shardnet's, and kube-ovn's
// since v1.14) are found by the server, so the builder needs neither their
// names nor their large port sets. kube-ovn before v1.14 marked them with
// np=<subnet>/<node> alone (legacyNodeGroupSubnet), which no server-side
// condition can match by subnet: when a cache-fed index says the subnet
// has such groups, the server is asked which of its groups hold the port,
// and those that are the subnet's node groups get an op each.
func (c *Client) LeaveNodePortGroups(subnet string, port Ref) []ovsdb.Operation {
	ref := ovsdb.OvsSet{GoSet: []any{port.uuid()}}
	leave := func(where ovsdb.Condition) ovsdb.Operation {
		return ovsdb.Operation{
			Op: ovsdb.OperationMutate, Table: nbdb.PortGroupTable,
			Where:     []ovsdb.Condition{where, {Column: "ports", Function: ovsdb.ConditionIncludes, Value: ref}},
			Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationDelete, Value: ref}},
		}
	}
	ops := []ovsdb.Operation{leave(hasKey("external_ids", ExternalIDSubnet, subnet))}
	idx := c.legacyNodeGroups()
	if port.named() || idx == nil || !idx.has(subnet) {
		return ops
	}
	for _, uuid := range c.legacyGroupsHolding(idx, subnet, port) {
		ops = append(ops, leave(ovsdb.Condition{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: uuid}}))
	}
	return ops
}

// externalIDNetworkPolicy is kube-ovn's "np" external id on port groups.
const externalIDNetworkPolicy = "np"

// legacyNodeGroupSubnet returns the subnet of a node port group made by
// kube-ovn before v1.14: no subnet or node external id, np=<subnet>/<node>,
// and the name kube-ovn derives from the two (<subnet>.<node> with dashes
// as dots, as reconcile.NodePortGroupName). A network policy's group
// (np=<namespace>/<policy>, named <policy>.<namespace>) and a node's own
// group (node=<node>, np=node/<node>) do not match, except a policy named
// like its namespace, whose group kube-ovn itself names like that node
// port group.
func legacyNodeGroupSubnet(name string, ids map[string]string) (string, bool) {
	if _, ok := ids[ExternalIDSubnet]; ok {
		return "", false
	}
	if _, ok := ids["node"]; ok {
		return "", false
	}
	subnet, node, ok := strings.Cut(ids[externalIDNetworkPolicy], "/")
	if !ok || subnet == "" || node == "" || name != strings.ReplaceAll(subnet+"."+node, "-", ".") {
		return "", false
	}
	return subnet, true
}

// legacyGroupTimeout bounds the read of a port's groups.
const legacyGroupTimeout = 5 * time.Second

// legacyGroupsHolding returns the UUIDs of the subnet's legacy node groups
// that hold port, read from the server (port sets are not cached). When
// the read fails it returns every such group the index knows: an op for a
// group that does not hold the port changes nothing.
func (c *Client) legacyGroupsHolding(idx *legacyGroupIndex, subnet string, port Ref) []string {
	ctx, cancel := context.WithTimeout(context.Background(), legacyGroupTimeout)
	defer cancel()
	res, err := c.Transact(ctx, ovsdb.Operation{
		Op: ovsdb.OperationSelect, Table: nbdb.PortGroupTable, Columns: []string{"_uuid", "name", "external_ids"},
		Where: []ovsdb.Condition{{Column: "ports", Function: ovsdb.ConditionIncludes, Value: ovsdb.OvsSet{GoSet: []any{port.uuid()}}}},
	})
	if err != nil {
		return idx.groups(subnet)
	}
	var out []string
	for _, r := range res[0].Rows {
		uuid, _ := r["_uuid"].(ovsdb.UUID)
		name, _ := r["name"].(string)
		if s, ok := legacyNodeGroupSubnet(name, stringMap(r["external_ids"])); ok && s == subnet && uuid.GoUUID != "" {
			out = append(out, uuid.GoUUID)
		}
	}
	return out
}

func stringMap(v any) map[string]string {
	m, ok := v.(ovsdb.OvsMap)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m.GoMap))
	for k, v := range m.GoMap {
		ks, _ := k.(string)
		vs, _ := v.(string)
		out[ks] = vs
	}
	return out
}

// legacyGroupIndex holds, for one client's cache, the UUIDs of the legacy
// node port groups by subnet, fed by the cache's events. It answers
// whether a subnet has any without a scan of the port group table per
// pod. A group deleted while the client was disconnected may stay listed;
// that costs one needless read per leave, never a wrong op.
type legacyGroupIndex struct {
	once sync.Once
	mu   sync.RWMutex
	// bySubnet is subnet → group UUID → name.
	bySubnet map[string]map[string]string
}

// legacyIndexes is the index of each client cache, keyed weakly so that a
// closed client's cache can go; its cleanup drops the entry.
var legacyIndexes sync.Map // weak.Pointer[cache.TableCache] → *legacyGroupIndex

// legacyNodeGroups returns the client's index, built on first use: one
// pass over the cached port groups, then the cache's events.
func (c *Client) legacyNodeGroups() *legacyGroupIndex {
	tc := c.nb.Cache()
	if tc == nil {
		return nil
	}
	key := weak.Make(tc)
	v, ok := legacyIndexes.Load(key)
	if !ok {
		var loaded bool
		v, loaded = legacyIndexes.LoadOrStore(key, &legacyGroupIndex{bySubnet: map[string]map[string]string{}})
		if !loaded {
			runtime.AddCleanup(tc, func(k weak.Pointer[cache.TableCache]) { legacyIndexes.Delete(k) }, key)
		}
	}
	idx := v.(*legacyGroupIndex)
	idx.once.Do(func() { idx.start(tc) })
	return idx
}

func (g *legacyGroupIndex) start(tc *cache.TableCache) {
	// Events first, then the pass: a row changed meanwhile is seen by one
	// or the other (or both; the index is a set).
	tc.AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc: func(table string, m model.Model) {
			if table == nbdb.PortGroupTable {
				g.apply(nil, m)
			}
		},
		UpdateFunc: func(table string, old, m model.Model) {
			if table == nbdb.PortGroupTable {
				g.apply(old, m)
			}
		},
		DeleteFunc: func(table string, m model.Model) {
			if table == nbdb.PortGroupTable {
				g.apply(m, nil)
			}
		},
	})
	if rc := tc.Table(nbdb.PortGroupTable); rc != nil {
		for _, m := range rc.RowsShallow() {
			g.apply(nil, m)
		}
	}
}

// apply moves a row from its old state to its new one (nil for none).
func (g *legacyGroupIndex) apply(old, cur model.Model) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if pg, ok := old.(*nbdb.PortGroup); ok {
		if s, ok := legacyNodeGroupSubnet(pg.Name, pg.ExternalIDs); ok {
			delete(g.bySubnet[s], pg.UUID)
			if len(g.bySubnet[s]) == 0 {
				delete(g.bySubnet, s)
			}
		}
	}
	if pg, ok := cur.(*nbdb.PortGroup); ok {
		if s, ok := legacyNodeGroupSubnet(pg.Name, pg.ExternalIDs); ok {
			if g.bySubnet[s] == nil {
				g.bySubnet[s] = map[string]string{}
			}
			g.bySubnet[s][pg.UUID] = pg.Name
		}
	}
}

func (g *legacyGroupIndex) has(subnet string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.bySubnet[subnet]) > 0
}

// groups returns the UUIDs of the subnet's legacy node groups.
func (g *legacyGroupIndex) groups(subnet string) []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return slices.Sorted(maps.Keys(g.bySubnet[subnet]))
}

// RemoveFromPortGroup returns the op that removes ports from the group.
func (c *Client) RemoveFromPortGroup(group string, ports ...Ref) ([]ovsdb.Operation, error) {
	return c.portGroupMutation(group, ovsdb.MutateOperationDelete, ports)
}

func (c *Client) portGroupMutation(group string, m ovsdb.Mutator, ports []Ref) ([]ovsdb.Operation, error) {
	if len(ports) == 0 {
		return nil, nil
	}
	if err := c.Ready(); err != nil {
		return nil, err
	}
	pg, ok := c.PortGroup(group)
	if !ok {
		return nil, fmt.Errorf("ovn: port group %s: %w", group, ErrNotFound)
	}
	refs := make([]any, len(ports))
	for i, p := range ports {
		refs[i] = p.uuid()
	}
	return []ovsdb.Operation{{
		Op: ovsdb.OperationMutate, Table: nbdb.PortGroupTable, Where: uuidWhere(pg.UUID),
		Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: m, Value: ovsdb.OvsSet{GoSet: refs}}},
	}}, nil
}

// RouteSpec is a static route on a router, identified by (Router,
// RouteTable, Policy, Prefix).
type RouteSpec struct {
	Router string
	Prefix string
	// Nexthop is the address traffic is sent to.
	Nexthop string
	// Policy is "dst-ip" (default) or "src-ip".
	Policy     string
	RouteTable string
	Pod        string
	Vendor     string
}

// EnsureStaticRoute returns the ops that add the route or update its next
// hop.
func (c *Client) EnsureStaticRoute(spec RouteSpec) ([]ovsdb.Operation, error) {
	if spec.Router == "" || spec.Prefix == "" || spec.Nexthop == "" {
		return nil, fmt.Errorf("ovn: incomplete route %+v", spec)
	}
	policy := nbdb.LogicalRouterStaticRoutePolicyDstIP
	if spec.Policy == string(nbdb.LogicalRouterStaticRoutePolicySrcIP) {
		policy = nbdb.LogicalRouterStaticRoutePolicySrcIP
	} else if spec.Policy != "" && spec.Policy != string(policy) {
		return nil, fmt.Errorf("ovn: route policy %q", spec.Policy)
	}
	if err := c.Ready(); err != nil {
		return nil, err
	}
	lr, ok := c.Router(spec.Router)
	if !ok {
		return nil, fmt.Errorf("ovn: route %s: router %s: %w", spec.Prefix, spec.Router, ErrNotFound)
	}
	ids := withVendor(map[string]string{ExternalIDRouter: spec.Router}, spec.Vendor)
	if spec.Pod != "" {
		ids[ExternalIDPod] = spec.Pod
	}
	if cur := c.findRoute(spec.Router, spec.Prefix, string(policy), spec.RouteTable); cur != nil {
		var ops []ovsdb.Operation
		if cur.Nexthop != spec.Nexthop {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: nbdb.LogicalRouterStaticRouteTable, Where: uuidWhere(cur.UUID), Row: ovsdb.Row{"nexthop": spec.Nexthop}})
		}
		if muts := setKeys("external_ids", cur.ExternalIDs, ids); len(muts) > 0 {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalRouterStaticRouteTable, Where: uuidWhere(cur.UUID), Mutations: muts})
		}
		return ops, nil
	}
	name := newUUIDName("sr")
	row := ovsdb.Row{"ip_prefix": spec.Prefix, "nexthop": spec.Nexthop, "policy": ovsdb.OvsSet{GoSet: []any{string(policy)}}, "external_ids": toOvsMap(ids)}
	if spec.RouteTable != "" {
		row["route_table"] = spec.RouteTable
	}
	return []ovsdb.Operation{
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterStaticRouteTable, UUIDName: name, Row: row},
		waitExists(nbdb.LogicalRouterTable, lr.UUID),
		insertRefs(nbdb.LogicalRouterTable, lr.UUID, "static_routes", ovsdb.UUID{GoUUID: name}),
	}, nil
}

// DeleteStaticRoute returns the ops that remove the route; none when it is
// not cached.
func (c *Client) DeleteStaticRoute(router, prefix, policy, routeTable string) ([]ovsdb.Operation, error) {
	if err := c.Ready(); err != nil {
		return nil, err
	}
	if policy == "" {
		policy = string(nbdb.LogicalRouterStaticRoutePolicyDstIP)
	}
	cur := c.findRoute(router, prefix, policy, routeTable)
	if cur == nil {
		return nil, nil
	}
	return deleteRouterChild(nbdb.LogicalRouterStaticRouteTable, "static_routes", cur.UUID), nil
}

func (c *Client) findRoute(router, prefix, policy, routeTable string) *nbdb.LogicalRouterStaticRoute {
	rows := lookup[*nbdb.LogicalRouterStaticRoute](c, nbdb.LogicalRouterStaticRouteTable,
		hasKey("external_ids", ExternalIDRouter, router), eq("ip_prefix", prefix))
	for _, r := range rows {
		p := string(nbdb.LogicalRouterStaticRoutePolicyDstIP)
		if r.Policy != nil {
			p = string(*r.Policy)
		}
		if r.ExternalIDs[ExternalIDRouter] == router && r.IPPrefix == prefix && p == policy && r.RouteTable == routeTable {
			return r
		}
	}
	return nil
}

// PolicySpec is a reroute policy on a router (a pod's north gateway),
// identified by (Router, Priority, Match).
type PolicySpec struct {
	Router   string
	Priority int
	Match    string
	Nexthops []string
	Pod      string
	Vendor   string
}

// EnsureReroutePolicy returns the ops that add the policy or update its next
// hops.
func (c *Client) EnsureReroutePolicy(spec PolicySpec) ([]ovsdb.Operation, error) {
	if spec.Router == "" || spec.Match == "" || len(spec.Nexthops) == 0 || spec.Priority < 0 || spec.Priority > 32767 {
		return nil, fmt.Errorf("ovn: invalid reroute policy %+v", spec)
	}
	if err := c.Ready(); err != nil {
		return nil, err
	}
	lr, ok := c.Router(spec.Router)
	if !ok {
		return nil, fmt.Errorf("ovn: policy %q: router %s: %w", spec.Match, spec.Router, ErrNotFound)
	}
	ids := withVendor(map[string]string{ExternalIDRouter: spec.Router}, spec.Vendor)
	if spec.Pod != "" {
		ids[ExternalIDPod] = spec.Pod
	}
	if cur := c.findPolicy(spec.Router, spec.Priority, spec.Match); cur != nil {
		var ops []ovsdb.Operation
		row := ovsdb.Row{}
		if !sameSet(cur.Nexthops, spec.Nexthops) {
			row["nexthops"] = strSet(spec.Nexthops)
		}
		if cur.Action != nbdb.LogicalRouterPolicyActionReroute {
			row["action"] = string(nbdb.LogicalRouterPolicyActionReroute)
		}
		if len(row) > 0 {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: nbdb.LogicalRouterPolicyTable, Where: uuidWhere(cur.UUID), Row: row})
		}
		if muts := setKeys("external_ids", cur.ExternalIDs, ids); len(muts) > 0 {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalRouterPolicyTable, Where: uuidWhere(cur.UUID), Mutations: muts})
		}
		return ops, nil
	}
	name := newUUIDName("pol")
	return []ovsdb.Operation{
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterPolicyTable, UUIDName: name, Row: ovsdb.Row{
			"priority": spec.Priority, "match": spec.Match, "action": string(nbdb.LogicalRouterPolicyActionReroute),
			"nexthops": strSet(spec.Nexthops), "external_ids": toOvsMap(ids),
		}},
		waitExists(nbdb.LogicalRouterTable, lr.UUID),
		insertRefs(nbdb.LogicalRouterTable, lr.UUID, "policies", ovsdb.UUID{GoUUID: name}),
	}, nil
}

// DeleteReroutePolicy returns the ops that remove the policy; none when it
// is not cached.
func (c *Client) DeleteReroutePolicy(router string, priority int, match string) ([]ovsdb.Operation, error) {
	if err := c.Ready(); err != nil {
		return nil, err
	}
	cur := c.findPolicy(router, priority, match)
	if cur == nil {
		return nil, nil
	}
	return deleteRouterChild(nbdb.LogicalRouterPolicyTable, "policies", cur.UUID), nil
}

func (c *Client) findPolicy(router string, priority int, match string) *nbdb.LogicalRouterPolicy {
	rows := lookup[*nbdb.LogicalRouterPolicy](c, nbdb.LogicalRouterPolicyTable,
		hasKey("external_ids", ExternalIDRouter, router), eq("match", match))
	for _, p := range rows {
		if p.ExternalIDs[ExternalIDRouter] == router && p.Match == match && p.Priority == priority {
			return p
		}
	}
	return nil
}

// NATSpec is a NAT rule on a router, identified by (Router, Type,
// LogicalIP).
type NATSpec struct {
	Router string
	// Type is "dnat_and_snat" (an EIP) or "snat".
	Type       string
	ExternalIP string
	// LogicalIP is the pod address (or CIDR, for snat).
	LogicalIP string
	// LogicalPort and ExternalMAC make a dnat_and_snat distributed.
	LogicalPort, ExternalMAC string
	Pod                      string
	Vendor                   string
}

// EnsureNAT returns the ops that add the rule or update it.
func (c *Client) EnsureNAT(spec NATSpec) ([]ovsdb.Operation, error) {
	typ := nbdb.NATType(spec.Type)
	if typ != nbdb.NATTypeDNATAndSNAT && typ != nbdb.NATTypeSNAT {
		return nil, fmt.Errorf("ovn: NAT type %q", spec.Type)
	}
	if spec.Router == "" || spec.ExternalIP == "" || spec.LogicalIP == "" {
		return nil, fmt.Errorf("ovn: incomplete NAT %+v", spec)
	}
	if err := c.Ready(); err != nil {
		return nil, err
	}
	lr, ok := c.Router(spec.Router)
	if !ok {
		return nil, fmt.Errorf("ovn: NAT %s: router %s: %w", spec.LogicalIP, spec.Router, ErrNotFound)
	}
	ids := withVendor(map[string]string{ExternalIDRouter: spec.Router}, spec.Vendor)
	if spec.Pod != "" {
		ids[ExternalIDPod] = spec.Pod
	}
	if cur := c.findNAT(spec.Router, typ, spec.LogicalIP); cur != nil {
		var ops []ovsdb.Operation
		row := ovsdb.Row{}
		if cur.ExternalIP != spec.ExternalIP {
			row["external_ip"] = spec.ExternalIP
		}
		if deref(cur.LogicalPort) != spec.LogicalPort {
			row["logical_port"] = optString(spec.LogicalPort)
		}
		if deref(cur.ExternalMAC) != spec.ExternalMAC {
			row["external_mac"] = optString(spec.ExternalMAC)
		}
		if len(row) > 0 {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: nbdb.NATTable, Where: uuidWhere(cur.UUID), Row: row})
		}
		if muts := setKeys("external_ids", cur.ExternalIDs, ids); len(muts) > 0 {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.NATTable, Where: uuidWhere(cur.UUID), Mutations: muts})
		}
		return ops, nil
	}
	name := newUUIDName("nat")
	row := ovsdb.Row{"type": string(typ), "external_ip": spec.ExternalIP, "logical_ip": spec.LogicalIP, "external_ids": toOvsMap(ids)}
	if spec.LogicalPort != "" {
		row["logical_port"] = optString(spec.LogicalPort)
	}
	if spec.ExternalMAC != "" {
		row["external_mac"] = optString(spec.ExternalMAC)
	}
	return []ovsdb.Operation{
		{Op: ovsdb.OperationInsert, Table: nbdb.NATTable, UUIDName: name, Row: row},
		waitExists(nbdb.LogicalRouterTable, lr.UUID),
		insertRefs(nbdb.LogicalRouterTable, lr.UUID, "nat", ovsdb.UUID{GoUUID: name}),
	}, nil
}

// DeleteNAT returns the ops that remove the rule; none when it is not cached.
func (c *Client) DeleteNAT(router, typ, logicalIP string) ([]ovsdb.Operation, error) {
	if err := c.Ready(); err != nil {
		return nil, err
	}
	cur := c.findNAT(router, nbdb.NATType(typ), logicalIP)
	if cur == nil {
		return nil, nil
	}
	return deleteRouterChild(nbdb.NATTable, "nat", cur.UUID), nil
}

func (c *Client) findNAT(router string, typ nbdb.NATType, logicalIP string) *nbdb.NAT {
	rows := lookup[*nbdb.NAT](c, nbdb.NATTable,
		hasKey("external_ids", ExternalIDRouter, router), eq("logical_ip", logicalIP))
	for _, n := range rows {
		if n.ExternalIDs[ExternalIDRouter] == router && n.LogicalIP == logicalIP && n.Type == typ {
			return n
		}
	}
	return nil
}

// DeletePodRouting returns the ops that remove every static route, reroute
// policy and NAT rule whose external_ids:pod is pod, found through the pod
// indexes.
func (c *Client) DeletePodRouting(pod string) ([]ovsdb.Operation, error) {
	if pod == "" {
		return nil, nil
	}
	if err := c.Ready(); err != nil {
		return nil, err
	}
	byPod := hasKey("external_ids", ExternalIDPod, pod)
	var ops []ovsdb.Operation
	for _, r := range lookup[*nbdb.LogicalRouterStaticRoute](c, nbdb.LogicalRouterStaticRouteTable, byPod) {
		if r.ExternalIDs[ExternalIDPod] == pod {
			ops = append(ops, deleteRouterChild(nbdb.LogicalRouterStaticRouteTable, "static_routes", r.UUID)...)
		}
	}
	for _, p := range lookup[*nbdb.LogicalRouterPolicy](c, nbdb.LogicalRouterPolicyTable, byPod) {
		if p.ExternalIDs[ExternalIDPod] == pod {
			ops = append(ops, deleteRouterChild(nbdb.LogicalRouterPolicyTable, "policies", p.UUID)...)
		}
	}
	for _, n := range lookup[*nbdb.NAT](c, nbdb.NATTable, byPod) {
		if n.ExternalIDs[ExternalIDPod] == pod {
			ops = append(ops, deleteRouterChild(nbdb.NATTable, "nat", n.UUID)...)
		}
	}
	return ops, nil
}

func deleteRouterChild(table, column, uuid string) []ovsdb.Operation {
	return []ovsdb.Operation{
		removeRefEverywhere(nbdb.LogicalRouterTable, column, uuid),
		{Op: ovsdb.OperationDelete, Table: table, Where: uuidWhere(uuid)},
	}
}

// --- op helpers ---

func uuidWhere(uuid string) []ovsdb.Condition {
	return []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: uuid}}}
}

// waitExists aborts the transaction at once unless the row exists.
func waitExists(table, uuid string) ovsdb.Operation {
	zero := 0
	return ovsdb.Operation{
		Op: ovsdb.OperationWait, Table: table, Timeout: &zero, Where: uuidWhere(uuid),
		Columns: []string{"_uuid"}, Until: string(ovsdb.WaitConditionEqual),
		Rows: []ovsdb.Row{{"_uuid": ovsdb.UUID{GoUUID: uuid}}},
	}
}

func insertRefs(table, uuid, column string, refs ...ovsdb.UUID) ovsdb.Operation {
	set := make([]any, len(refs))
	for i, r := range refs {
		set[i] = r
	}
	return ovsdb.Operation{
		Op: ovsdb.OperationMutate, Table: table, Where: uuidWhere(uuid),
		Mutations: []ovsdb.Mutation{{Column: column, Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsSet{GoSet: set}}},
	}
}

// removeRefEverywhere drops a reference from every row of table holding it,
// so the builder needs neither the parent in the cache nor its big set.
func removeRefEverywhere(table, column, uuid string) ovsdb.Operation {
	ref := ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: uuid}}}
	return ovsdb.Operation{
		Op: ovsdb.OperationMutate, Table: table,
		Where:     []ovsdb.Condition{{Column: column, Function: ovsdb.ConditionIncludes, Value: ref}},
		Mutations: []ovsdb.Mutation{{Column: column, Mutator: ovsdb.MutateOperationDelete, Value: ref}},
	}
}

// setKeys returns the mutations that give column's keys in want their
// values, leaving other keys alone: delete the stale keys, then insert
// (a map insert does not overwrite an existing key).
func setKeys(column string, have, want map[string]string) []ovsdb.Mutation {
	var keys []any
	pairs := map[any]any{}
	for k, v := range want {
		if hv, ok := have[k]; ok && hv == v {
			continue
		}
		if _, ok := have[k]; ok {
			keys = append(keys, k)
		}
		pairs[k] = v
	}
	if len(pairs) == 0 {
		return nil
	}
	var muts []ovsdb.Mutation
	if len(keys) > 0 {
		muts = append(muts, ovsdb.Mutation{Column: column, Mutator: ovsdb.MutateOperationDelete, Value: ovsdb.OvsSet{GoSet: keys}})
	}
	return append(muts, ovsdb.Mutation{Column: column, Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsMap{GoMap: pairs}})
}

func dropKeys(column string, have map[string]string, drop []string) []ovsdb.Mutation {
	var keys []any
	for _, k := range drop {
		if _, ok := have[k]; ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return []ovsdb.Mutation{{Column: column, Mutator: ovsdb.MutateOperationDelete, Value: ovsdb.OvsSet{GoSet: keys}}}
}

func withVendor(ids map[string]string, v string) map[string]string {
	out := make(map[string]string, len(ids)+1)
	for k, val := range ids {
		out[k] = val
	}
	out[ExternalIDVendor] = vendor(v)
	return out
}

func strSet(ss []string) ovsdb.OvsSet {
	set := make([]any, len(ss))
	for i, s := range ss {
		set[i] = s
	}
	return ovsdb.OvsSet{GoSet: set}
}

func optUUID(u string) ovsdb.OvsSet {
	if u == "" {
		return ovsdb.OvsSet{GoSet: []any{}}
	}
	return ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: u}}}
}

func optString(s string) ovsdb.OvsSet {
	if s == "" {
		return ovsdb.OvsSet{GoSet: []any{}}
	}
	return ovsdb.OvsSet{GoSet: []any{s}}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
