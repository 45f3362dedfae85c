package ovn

import (
	"context"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// TestPodRoutingFindsKubeOVNRows shows that the rows kube-ovn's pod
// controller writes for a pod's address (a src-ip route with only
// vendor=kube-ovn, NAT rules without external ids) are found, located on
// their router, changed in place and deleted, and that an insert guarded
// by PodRowAbsent fails once the pod has its own row (docs/contract.md G7).
func TestPodRoutingFindsKubeOVNRows(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const addr, pod = "10.16.0.9", "ns/p"
	mustTransact(t, c, []ovsdb.Operation{
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterStaticRouteTable, UUIDName: "r1", Row: ovsdb.Row{
			"ip_prefix": addr, "nexthop": "172.18.0.1", "policy": ovsdb.OvsSet{GoSet: []any{"src-ip"}},
			"external_ids": toOvsMap(map[string]string{"vendor": "kube-ovn"})}},
		{Op: ovsdb.OperationInsert, Table: nbdb.NATTable, UUIDName: "n1", Row: ovsdb.Row{
			"type": "dnat_and_snat", "external_ip": "172.18.0.10", "logical_ip": addr}},
		{Op: ovsdb.OperationInsert, Table: nbdb.NATTable, UUIDName: "n2", Row: ovsdb.Row{
			"type": "dnat_and_snat", "external_ip": "172.18.0.20", "logical_ip": "10.16.0.10"}},
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable, Row: ovsdb.Row{"name": "ovn-cluster",
			"static_routes": ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "r1"}}},
			"nat":           ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "n1"}, ovsdb.UUID{GoUUID: "n2"}}}}},
	})
	var rows []RoutingRow
	eventually(t, "kube-ovn's rows in the cache", func() bool {
		var err error
		rows, err = c.PodRouting(pod, []string{addr})
		return err == nil && len(rows) == 2
	})
	for _, r := range rows {
		if !r.Foreign() || r.Router != "" {
			t.Errorf("%v: want a foreign row without a router, got pod=%q lr=%q", r, r.Pod, r.Router)
		}
		router, err := c.RoutingRowRouter(ctx, r)
		if err != nil || router != "ovn-cluster" {
			t.Errorf("%v: router %q, %v; want ovn-cluster", r, router, err)
		}
	}
	if users := c.NATsByExternalIP("dnat_and_snat", "172.18.0.20"); len(users) != 1 || users[0].Address != "10.16.0.10" {
		t.Errorf("users of 172.18.0.20: %v", users)
	}

	// Change both in place: they become the pod's, still one row each.
	var ops []ovsdb.Operation
	for _, r := range rows {
		target := "172.18.0.11"
		if r.Kind == RowRoute {
			target = "100.64.0.5"
		}
		ops = append(ops, UpdateRoutingRow(r, target, "ovn-cluster", pod)...)
	}
	mustTransact(t, c, ops)
	eventually(t, "updated rows carrying the pod", func() bool {
		got, err := c.PodRouting(pod, []string{addr})
		if err != nil || len(got) != 2 {
			return false
		}
		for _, r := range got {
			if r.Foreign() || r.Router != "ovn-cluster" || (r.Target != "172.18.0.11" && r.Target != "100.64.0.5") {
				return false
			}
		}
		rows = got
		return true
	})
	if n := len(selectRows(t, c, nbdb.NATTable, "_uuid")); n != 2 {
		t.Errorf("%d NAT rows, want 2 (no duplicate)", n)
	}

	// The pod now has its NAT row: a guarded insert fails.
	if _, err := c.Transact(ctx, PodRowAbsent("dnat_and_snat", addr, pod)); err == nil {
		t.Errorf("PodRowAbsent passed although the pod has its row")
	}
	if _, err := c.Transact(ctx, PodRowAbsent("snat", addr, pod)); err != nil {
		t.Errorf("PodRowAbsent of a missing snat: %v", err)
	}

	for _, r := range rows {
		mustTransact(t, c, DeleteRoutingRow(r))
	}
	eventually(t, "rows deleted", func() bool {
		got, err := c.PodRouting(pod, []string{addr})
		return err == nil && len(got) == 0
	})
	for _, r := range selectRows(t, c, nbdb.LogicalRouterTable, "static_routes", "nat") {
		if setLen(r["static_routes"]) != 0 || setLen(r["nat"]) != 1 {
			t.Errorf("router still references deleted rows: %v", r)
		}
	}
}
