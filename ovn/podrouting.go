package ovn

import (
	"context"
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// RoutingRow is a static route or NAT rule that serves one address of a
// pod: one shardnet wrote (external_ids:pod names the pod), or one that
// kube-ovn's pod controller wrote for the same address, which carries no
// pod external id (its source routes carry vendor=kube-ovn only, its NAT
// rules no external ids at all). The pod path reads them to bring them in
// line with the pod's annotations (docs/contract.md G7), so that an edit
// neither leaks the old row nor adds a second one beside kube-ovn's.
type RoutingRow struct {
	UUID string
	// Kind is RowRoute, or the NAT type ("dnat_and_snat", "snat").
	Kind string
	// Address is the route's ip_prefix or the NAT's logical_ip.
	Address string
	// Target is the route's nexthop or the NAT's external_ip.
	Target string
	// Router is external_ids:lr; "" for kube-ovn's rows, whose router is
	// known only to the server (RoutingRowRouter).
	Router string
	// Pod is external_ids:pod; "" for kube-ovn's rows.
	Pod string
}

// RowRoute is the Kind of a static route.
const RowRoute = "route"

// Foreign reports whether the row was written by another controller.
func (r RoutingRow) Foreign() bool { return r.Pod == "" }

// PodRouting returns the source routes (policy src-ip, main route table)
// and NAT rules of the pod's addresses: the rows whose external_ids:pod is
// pod, and the rows without a pod external id whose prefix or logical IP
// is one of addrs. Rows of other pods are left out. Every lookup is served
// by a client index.
func (c *Client) PodRouting(pod string, addrs []string) ([]RoutingRow, error) {
	if err := c.Ready(); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, a := range addrs {
		want[a] = true
	}
	var out []RoutingRow
	seen := map[string]bool{}
	addRoute := func(r *nbdb.LogicalRouterStaticRoute) {
		if seen[r.UUID] || !want[r.IPPrefix] || r.RouteTable != "" || r.Policy == nil || *r.Policy != nbdb.LogicalRouterStaticRoutePolicySrcIP {
			return
		}
		if p := r.ExternalIDs[ExternalIDPod]; p != pod && (p != "" || r.ExternalIDs[ExternalIDVendor] != DefaultVendor) {
			return
		}
		seen[r.UUID] = true
		out = append(out, RoutingRow{UUID: r.UUID, Kind: RowRoute, Address: r.IPPrefix, Target: r.Nexthop,
			Router: r.ExternalIDs[ExternalIDRouter], Pod: r.ExternalIDs[ExternalIDPod]})
	}
	addNAT := func(n *nbdb.NAT) {
		if seen[n.UUID] || !want[n.LogicalIP] || (n.Type != nbdb.NATTypeDNATAndSNAT && n.Type != nbdb.NATTypeSNAT) {
			return
		}
		if p := n.ExternalIDs[ExternalIDPod]; p != pod && (p != "" || n.ExternalIDs[ExternalIDRouter] != "") {
			return
		}
		seen[n.UUID] = true
		out = append(out, RoutingRow{UUID: n.UUID, Kind: string(n.Type), Address: n.LogicalIP, Target: n.ExternalIP,
			Router: n.ExternalIDs[ExternalIDRouter], Pod: n.ExternalIDs[ExternalIDPod]})
	}
	for _, r := range lookupBy[*nbdb.LogicalRouterStaticRoute](c, nbdb.LogicalRouterStaticRouteTable, podKey, pod) {
		addRoute(r)
	}
	for _, n := range lookupBy[*nbdb.NAT](c, nbdb.NATTable, podKey, pod) {
		addNAT(n)
	}
	for _, a := range addrs {
		for _, r := range lookupBy[*nbdb.LogicalRouterStaticRoute](c, nbdb.LogicalRouterStaticRouteTable, byIPPrefix, a) {
			addRoute(r)
		}
		for _, n := range lookupBy[*nbdb.NAT](c, nbdb.NATTable, byLogicalIP, a) {
			addNAT(n)
		}
	}
	return out, nil
}

// NATsByExternalIP returns the NAT rules of type typ whose external_ip is
// ip, on any router, through a client index.
func (c *Client) NATsByExternalIP(typ, ip string) []RoutingRow {
	var out []RoutingRow
	for _, n := range lookupBy[*nbdb.NAT](c, nbdb.NATTable, byExternalIP, ip) {
		if string(n.Type) == typ && n.ExternalIP == ip {
			out = append(out, RoutingRow{UUID: n.UUID, Kind: string(n.Type), Address: n.LogicalIP, Target: n.ExternalIP,
				Router: n.ExternalIDs[ExternalIDRouter], Pod: n.ExternalIDs[ExternalIDPod]})
		}
	}
	return out
}

// RoutingRowRouter returns the name of the router that holds the row,
// read from the server ("" when none does): kube-ovn's rows do not name
// their router, and one of another VPC's router must not be changed.
func (c *Client) RoutingRowRouter(ctx context.Context, row RoutingRow) (string, error) {
	if err := c.Ready(); err != nil {
		return "", err
	}
	column := "nat"
	if row.Kind == RowRoute {
		column = "static_routes"
	}
	ref := ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: row.UUID}}}
	res, err := c.Transact(ctx, ovsdb.Operation{
		Op: ovsdb.OperationSelect, Table: nbdb.LogicalRouterTable, Columns: []string{"name"},
		Where: []ovsdb.Condition{{Column: column, Function: ovsdb.ConditionIncludes, Value: ref}},
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

// UpdateRoutingRow returns the ops that point an existing row at target
// (a route's nexthop, a NAT's external_ip) and record it as the pod's on
// router, so that it is found and released with the pod's own rows. A
// kube-ovn row keeps its other columns and keys.
func UpdateRoutingRow(row RoutingRow, target, router, pod string) []ovsdb.Operation {
	table, column := nbdb.NATTable, "external_ip"
	if row.Kind == RowRoute {
		table, column = nbdb.LogicalRouterStaticRouteTable, "nexthop"
	}
	var ops []ovsdb.Operation
	if row.Target != target {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: table, Where: uuidWhere(row.UUID), Row: ovsdb.Row{column: target}})
	}
	have := map[string]string{}
	if row.Router != "" {
		have[ExternalIDRouter] = row.Router
	}
	if row.Pod != "" {
		have[ExternalIDPod] = row.Pod
	}
	if muts := setKeys("external_ids", have, map[string]string{ExternalIDRouter: router, ExternalIDPod: pod}); len(muts) > 0 {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: table, Where: uuidWhere(row.UUID), Mutations: muts})
	}
	return ops
}

// DeleteRoutingRow returns the ops that remove the row from the routers
// that reference it and delete it.
func DeleteRoutingRow(row RoutingRow) []ovsdb.Operation {
	if row.Kind == RowRoute {
		return deleteRouterChild(nbdb.LogicalRouterStaticRouteTable, "static_routes", row.UUID)
	}
	return deleteRouterChild(nbdb.NATTable, "nat", row.UUID)
}

// PodRowAbsent is a wait that aborts the request when the pod already has
// a row of kind for address: an insert built from a cache that has not
// yet shown the pod's last write then fails instead of adding a second
// row, and its retry reads the row. (The wait passes unless exactly one
// row matches: an empty rows member cannot be sent, and the one row the
// pod's earlier insert made is what it guards against.)
func PodRowAbsent(kind, address, pod string) ovsdb.Operation {
	zero := 0
	table, column := nbdb.NATTable, "logical_ip"
	where := []ovsdb.Condition{eq(column, address), eq("type", kind)}
	if kind == RowRoute {
		table, column = nbdb.LogicalRouterStaticRouteTable, "ip_prefix"
		where = []ovsdb.Condition{eq(column, address)}
	}
	where = append(where, hasKey("external_ids", ExternalIDPod, pod))
	return ovsdb.Operation{Op: ovsdb.OperationWait, Table: table, Timeout: &zero, Where: where,
		Columns: []string{column}, Until: string(ovsdb.WaitConditionNotEqual), Rows: []ovsdb.Row{{column: address}}}
}

// String names the row in logs and errors.
func (r RoutingRow) String() string {
	return fmt.Sprintf("%s %s->%s", r.Kind, r.Address, r.Target)
}
