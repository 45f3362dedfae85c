package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/reconcile"
)

// TestUnderlayPodWaitsForItsVlan runs an underlay subnet on real servers
// with kube-ovn's own CRDs (docs/contract.md A8, E19): a pod on a subnet
// whose spec.vlan names no Vlan is not allocated and gets a Warning
// naming the subnet and the Vlan; once the Vlan is created the pod is
// allocated (the Vlan's appearance retries the pods put off for it),
// annotated with the Vlan's id and provider network, and its port carries
// its annotated MAC and address on the subnet's switch.
func TestUnderlayPodWaitsForItsVlan(t *testing.T) {
	c := startKubeOVNCluster(t, "ul")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := c.kube.CreateNode(t, "kwok-node-ul", "")
	c.subnet("main", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	c.subnet("ul-net", "10.60.0.0/24", func(s *kubeovnv1.SubnetSpec) {
		s.Namespaces, s.Vlan = []string{"ul"}, "vlan100"
	})
	c.startReplica("shardnet-0")

	pods := c.kube.Client.CoreV1().Pods("ul")
	if _, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "u1", Namespace: "ul"},
		Spec:       corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "a Warning naming the subnet and its missing Vlan", func() error {
		evs, err := c.kube.Client.CoreV1().Events("ul").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "u1" && e.Type == corev1.EventTypeWarning && e.Reason == reconcile.ReasonSubnet &&
				strings.Contains(e.Message, "ul-net") && strings.Contains(e.Message, "vlan100") {
				return nil
			}
		}
		return errorf("no %s Warning on u1 among %d events", reconcile.ReasonSubnet, len(evs.Items))
	})
	p, err := pods.Get(ctx, "u1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := p.Annotations[reconcile.DefaultKey(reconcile.KeyAllocated)]; v == "true" {
		t.Fatalf("u1 allocated although its subnet's Vlan does not exist: %v", p.Annotations)
	}

	if _, err := c.kube.Shardnet.KubeovnV1().Vlans().Create(ctx, &kubeovnv1.Vlan{
		ObjectMeta: metav1.ObjectMeta{Name: "vlan100"}, Spec: kubeovnv1.VlanSpec{ID: 100, Provider: "physnet1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "u1 allocated on the underlay subnet with its Vlan's annotations and its port", func() error {
		p, err := pods.Get(ctx, "u1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		a := p.Annotations
		want := map[string]string{
			reconcile.DefaultKey(reconcile.KeyAllocated):       "true",
			reconcile.DefaultKey(reconcile.KeyLogicalSwitch):   "ul-net",
			reconcile.DefaultKey(reconcile.KeyVlanID):          "100",
			reconcile.DefaultKey(reconcile.KeyProviderNetwork): "physnet1",
		}
		for k, v := range want {
			if a[k] != v {
				return errorf("annotation %s = %q, want %q (all: %v)", k, a[k], v, a)
			}
		}
		port, ok := c.ports(ctx)["u1.ul"]
		if !ok {
			return errorf("no port u1.ul")
		}
		addr := a[reconcile.DefaultKey(reconcile.KeyMACAddress)] + " " + a[reconcile.DefaultKey(reconcile.KeyIPAddress)]
		if len(port.Addresses) != 1 || port.Addresses[0] != addr || port.ExternalIDs["ls"] != "ul-net" || port.ExternalIDs["pod"] != "ul/u1" {
			return errorf("port u1.ul: addresses %v external ids %v; want [%s] on ul-net for ul/u1", port.Addresses, port.ExternalIDs, addr)
		}
		if _, ok := a[reconcile.DefaultKey(reconcile.KeyLogicalRouter)]; ok {
			return errorf("logical_router annotated on an underlay pod without logicalGateway or u2oInterconnection: %v", a)
		}
		return nil
	})
	// G2: no routed-phase rows for an underlay subnet: the port is in no
	// port group and no route or NAT rule has its address.
	p, err = pods.Get(ctx, "u1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip := p.Annotations[reconcile.DefaultKey(reconcile.KeyIPAddress)]
	port := c.ports(ctx)["u1.ul"]
	var pgs []nbdb.PortGroup
	var routes []nbdb.LogicalRouterStaticRoute
	for _, l := range []any{&pgs, &routes} {
		if err := c.view.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	for _, pg := range pgs {
		if slices.Contains(pg.Ports, port.UUID) {
			t.Errorf("underlay port u1.ul is in port group %s", pg.Name)
		}
	}
	for _, r := range routes {
		if r.IPPrefix == ip {
			t.Errorf("a route for the underlay pod's address: %s -> %s", r.IPPrefix, r.Nexthop)
		}
	}
	if nats := c.natsOf(ctx, ip); len(nats) > 0 {
		t.Errorf("NAT rules for the underlay pod's address: %v", nats)
	}
}
