package reconcile

import (
	"context"
	"fmt"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ovn/nbdb"
)

// TestDeletedPodTakesKubeOVNRowsAlong deletes a pod for whose address
// kube-ovn's pod controller left a source route and NAT rules, as an
// adopted pod with eip/snat that was never edited has them (docs/contract.md
// G7): the rows on the cluster router go with the pod, a rule for the same
// address on another VPC's router stays.
func TestDeletedPodTakesKubeOVNRowsAlong(t *testing.T) {
	s := startSlice(t)
	ctx := s.ctx()
	node := s.kube.CreateNode(t, "node-fr", "")
	s.createSubnet("main", "10.40.0.0/24", func(sp *kubeovnv1.SubnetSpec) { sp.Default = true })
	s.createNamespace("fr")
	s.createPods([]*corev1.Pod{newPod("fr", "adopted", node.Name, nil)})
	p := s.waitPod(ctx, "fr", "adopted", routed)
	addr := p.Annotations[DefaultKey(KeyIPAddress)]

	// kube-ovn's rows: a src-ip route with vendor=kube-ovn only, NAT
	// rules without external ids, on ovn-cluster; and a NAT rule of the
	// same address on another router.
	res, err := s.nb.Transact(ctx,
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterStaticRouteTable, UUIDName: "kr", Row: ovsdb.Row{
			"ip_prefix": addr, "nexthop": "172.18.0.1", "policy": "src-ip",
			"external_ids": ovsdb.OvsMap{GoMap: map[any]any{"vendor": "kube-ovn"}}}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.NATTable, UUIDName: "kn", Row: ovsdb.Row{
			"type": "dnat_and_snat", "logical_ip": addr, "external_ip": "172.18.0.10"}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.NATTable, UUIDName: "ks", Row: ovsdb.Row{
			"type": "snat", "logical_ip": addr, "external_ip": "172.18.0.11"}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.NATTable, UUIDName: "other", Row: ovsdb.Row{
			"type": "dnat_and_snat", "logical_ip": addr, "external_ip": "172.18.0.12"}},
		ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalRouterTable,
			Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: "ovn-cluster"}},
			Mutations: []ovsdb.Mutation{
				{Column: "static_routes", Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "kr"}}}},
				{Column: "nat", Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "kn"}, ovsdb.UUID{GoUUID: "ks"}}}},
			}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable, Row: ovsdb.Row{
			"name": "vpc-other", "nat": ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "other"}}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	other := res[3].UUID.GoUUID

	if err := s.kube.Client.CoreV1().Pods("fr").Delete(ctx, "adopted", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitView(t, ctx, func() error {
		var routes []nbdb.LogicalRouterStaticRoute
		var nats []nbdb.NAT
		if err := s.view.List(context.Background(), &routes); err != nil {
			return err
		}
		if err := s.view.List(context.Background(), &nats); err != nil {
			return err
		}
		for _, r := range routes {
			if r.IPPrefix == addr {
				return fmt.Errorf("kube-ovn's route %s -> %s is still there", r.IPPrefix, r.Nexthop)
			}
		}
		if len(nats) != 1 || nats[0].UUID != other {
			return fmt.Errorf("NAT rules left: %+v; want only the other router's %s", nats, other)
		}
		return nil
	})
}
