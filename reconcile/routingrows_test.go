package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// TestRoutingRowsFollowTheAnnotations runs north_gateway, eip and snat on
// real servers (docs/contract.md G3-G7) and compares every row the pods
// own, field by field, with the shape kube-ovn's pod controller writes,
// through create, change and removal: a src-ip static route on the
// cluster router to the north gateway, a dnat_and_snat and a snat rule
// for the EIP and SNAT with a src-ip route to the external gateway of
// kube-system/ovn-external-gw-config (G11), each carrying external_ids
// pod, lr and vendor;
// changed annotations change the rows in place (same row); removed
// annotations delete them; and the port leaves its node port group while
// it has any of the three and rejoins it when none is left. It runs on
// the default network and on an OVN attachment, whose provider's keys
// ask for the rows of its own address (X23).
func TestRoutingRowsFollowTheAnnotations(t *testing.T) {
	t.Run("default", func(t *testing.T) { routingRowsFollow(t, DefaultProvider) })
	t.Run("attachment", func(t *testing.T) { routingRowsFollow(t, "net1.rr.ovn") })
}

func routingRowsFollow(t *testing.T, provider string) {
	s := startSlice(t)
	ctx := s.ctx()
	node := s.kube.CreateNode(t, "node-rr", "")
	subnet, base := s.networkUnderTest("rr", provider, "10.42.0.0/24", "10.43.0.0/24")
	with := func(ann map[string]string) map[string]string {
		out := maps.Clone(base)
		for k, v := range ann {
			out[Key(provider, k)] = v
		}
		return out
	}
	key := func(k string) string { return Key(provider, k) }
	if _, err := s.kube.Client.CoreV1().ConfigMaps(DefaultExternalGatewayNamespace).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ExternalGatewayConfigMap},
		Data:       map[string]string{ExternalGatewayKey: "172.19.0.1/16"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.createPods([]*corev1.Pod{
		newPod("rr", "ng", node.Name, with(map[string]string{KeyNorthGateway: "10.42.0.254"})),
		newPod("rr", "nat", node.Name, with(map[string]string{KeyEIP: "172.19.0.10", KeySNAT: "172.19.0.11"})),
	})
	ng := s.waitPod(ctx, "rr", "ng", routedOn(DefaultProvider, provider)).Annotations[key(KeyIPAddress)]
	nat := s.waitPod(ctx, "rr", "nat", routedOn(DefaultProvider, provider)).Annotations[key(KeyIPAddress)]
	group := NodePortGroupName(subnet, node.Name)
	ids := func(pod string) map[string]string {
		return map[string]string{"pod": "rr/" + pod, "lr": "ovn-cluster", "vendor": "kube-ovn"}
	}

	// rows reads what the pods own: the routes and NAT rules of their
	// addresses on ovn-cluster, and which of their ports are in the node
	// group.
	type rows struct {
		routes  map[string]nbdb.LogicalRouterStaticRoute // by ip_prefix
		nats    map[string]nbdb.NAT                      // by type
		inGroup map[string]bool                          // by pod
	}
	read := func() (rows, error) {
		r := rows{routes: map[string]nbdb.LogicalRouterStaticRoute{}, nats: map[string]nbdb.NAT{}, inGroup: map[string]bool{}}
		var lrs []nbdb.LogicalRouter
		var routes []nbdb.LogicalRouterStaticRoute
		var nats []nbdb.NAT
		var pgs []nbdb.PortGroup
		var lsps []nbdb.LogicalSwitchPort
		for _, l := range []any{&lrs, &routes, &nats, &pgs, &lsps} {
			if err := s.view.List(context.Background(), l); err != nil {
				return r, err
			}
		}
		var cluster nbdb.LogicalRouter
		for _, lr := range lrs {
			if lr.Name == "ovn-cluster" {
				cluster = lr
			}
		}
		for _, rt := range routes {
			if rt.IPPrefix == ng || rt.IPPrefix == nat {
				if !slices.Contains(cluster.StaticRoutes, rt.UUID) {
					return r, fmt.Errorf("route %s -> %s is not on ovn-cluster", rt.IPPrefix, rt.Nexthop)
				}
				r.routes[rt.IPPrefix] = rt
			}
		}
		for _, n := range nats {
			if n.LogicalIP == ng || n.LogicalIP == nat {
				if !slices.Contains(cluster.Nat, n.UUID) {
					return r, fmt.Errorf("NAT %s %s is not on ovn-cluster", n.Type, n.ExternalIP)
				}
				if _, dup := r.nats[string(n.Type)]; dup {
					return r, fmt.Errorf("two %s rules", n.Type)
				}
				r.nats[string(n.Type)] = n
			}
		}
		uuids := map[string]string{}
		for _, p := range lsps {
			if p.ExternalIDs["ls"] == subnet {
				uuids[p.UUID] = p.ExternalIDs["pod"]
			}
		}
		for _, pg := range pgs {
			if pg.Name != group {
				continue
			}
			for _, u := range pg.Ports {
				r.inGroup[uuids[u]] = true
			}
		}
		return r, nil
	}
	policy := func(rt nbdb.LogicalRouterStaticRoute) string {
		if rt.Policy == nil {
			return ""
		}
		return string(*rt.Policy)
	}
	wantRoute := func(r rows, pod, prefix, nexthop string) error {
		rt, ok := r.routes[prefix]
		if !ok {
			return fmt.Errorf("no route for %s", prefix)
		}
		if rt.Nexthop != nexthop || policy(rt) != "src-ip" || !maps.Equal(rt.ExternalIDs, ids(pod)) || rt.RouteTable != "" {
			return fmt.Errorf("route %s: nexthop %s policy %s table %q external ids %v; want %s src-ip main %v",
				prefix, rt.Nexthop, policy(rt), rt.RouteTable, rt.ExternalIDs, nexthop, ids(pod))
		}
		return nil
	}
	wantNAT := func(r rows, kind, external, logical string) error {
		n, ok := r.nats[kind]
		if !ok {
			return fmt.Errorf("no %s rule", kind)
		}
		if n.ExternalIP != external || n.LogicalIP != logical || !maps.Equal(n.ExternalIDs, ids("nat")) {
			return fmt.Errorf("%s rule: %s -> %s, external ids %v; want %s -> %s, %v", kind, n.ExternalIP, n.LogicalIP, n.ExternalIDs, external, logical, ids("nat"))
		}
		return nil
	}
	annotate := func(pod string, ann map[string]any) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
		if _, err := s.kube.Client.CoreV1().Pods("rr").Patch(ctx, pod, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Created: the rows, and both ports out of the node group.
	var first rows
	waitView(t, ctx, func() error {
		r, err := read()
		if err != nil {
			return err
		}
		first = r
		switch {
		case len(r.routes) != 2 || len(r.nats) != 2:
			return fmt.Errorf("%d routes and %d NAT rules, want 2 and 2", len(r.routes), len(r.nats))
		case r.inGroup["rr/ng"] || r.inGroup["rr/nat"]:
			return fmt.Errorf("a port with a north gateway, an EIP or a SNAT is in %s: %v", group, r.inGroup)
		}
		if err := wantRoute(r, "ng", ng, "10.42.0.254"); err != nil {
			return err
		}
		if err := wantRoute(r, "nat", nat, "172.19.0.1"); err != nil {
			return err
		}
		if err := wantNAT(r, "dnat_and_snat", "172.19.0.10", nat); err != nil {
			return err
		}
		return wantNAT(r, "snat", "172.19.0.11", nat)
	})

	// Changed: the same rows, pointed elsewhere.
	annotate("ng", map[string]any{key(KeyNorthGateway): "10.42.0.253"})
	annotate("nat", map[string]any{key(KeyEIP): "172.19.0.20"})
	waitView(t, ctx, func() error {
		r, err := read()
		if err != nil {
			return err
		}
		if err := wantRoute(r, "ng", ng, "10.42.0.253"); err != nil {
			return err
		}
		if err := wantRoute(r, "nat", nat, "172.19.0.1"); err != nil {
			return err
		}
		if err := wantNAT(r, "dnat_and_snat", "172.19.0.20", nat); err != nil {
			return err
		}
		if err := wantNAT(r, "snat", "172.19.0.11", nat); err != nil {
			return err
		}
		if r.routes[ng].UUID != first.routes[ng].UUID || r.routes[nat].UUID != first.routes[nat].UUID || r.nats["dnat_and_snat"].UUID != first.nats["dnat_and_snat"].UUID {
			return fmt.Errorf("a changed annotation replaced its row instead of changing it in place")
		}
		return nil
	})

	// Removed: no rows, both ports back in the node group.
	annotate("ng", map[string]any{key(KeyNorthGateway): nil})
	annotate("nat", map[string]any{key(KeyEIP): nil, key(KeySNAT): nil})
	waitView(t, ctx, func() error {
		r, err := read()
		if err != nil {
			return err
		}
		if len(r.routes) != 0 || len(r.nats) != 0 {
			return fmt.Errorf("rows left after the annotations were removed: routes %v, NAT %v", r.routes, r.nats)
		}
		if !r.inGroup["rr/ng"] || !r.inGroup["rr/nat"] {
			return fmt.Errorf("ports in %s: %v; want both back", group, r.inGroup)
		}
		return nil
	})
}
