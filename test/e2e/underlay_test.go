package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/reconcile"
	"github.com/shardnet/shardnet/test/harness"
)

// TestUnderlayPodWaitsForItsVlan runs an underlay subnet on real servers
// with kube-ovn's own CRDs (docs/contract.md A8, E19): a pod on a subnet
// whose spec.vlan names no Vlan is not allocated and gets a Warning
// naming the subnet and the Vlan; once the Vlan is created the pod is
// allocated (the Vlan's appearance retries the pods put off for it),
// annotated with the Vlan's id and provider network, and its port carries
// its annotated MAC and address on the subnet's switch; no port group,
// route or NAT rule has it (G2). The pod's OVN attachment, on an underlay
// subnet of its provider, gets the same.
func TestUnderlayPodWaitsForItsVlan(t *testing.T) {
	c := startKubeOVNCluster(t, "ul")
	c.kube.InstallNADCRD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := c.kube.CreateNode(t, "kwok-node-ul", "")
	const provider = "net1.ul.ovn"
	nad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"name": "net1", "namespace": "ul"},
		"spec":     map[string]any{"config": `{"type":"kube-ovn"}`},
	}}
	if _, err := dynamic.NewForConfigOrDie(c.kube.Config).Resource(harness.NADResource).Namespace("ul").Create(ctx, nad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.subnet("main", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	c.subnet("ul-net", "10.60.0.0/24", func(s *kubeovnv1.SubnetSpec) {
		s.Namespaces, s.Vlan = []string{"ul"}, "vlan100"
	})
	c.subnet("ul-att", "10.61.0.0/24", func(s *kubeovnv1.SubnetSpec) {
		s.Provider, s.Vlan = provider, "vlan100"
	})
	c.startReplica("shardnet-0")

	pods := c.kube.Client.CoreV1().Pods("ul")
	if _, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "u1", Namespace: "ul", Annotations: map[string]string{reconcile.AnnotationNetworks: "net1"}},
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
	networks := []struct{ provider, subnet, port string }{
		{reconcile.DefaultProvider, "ul-net", "u1.ul"},
		{provider, "ul-att", reconcile.PortName("u1", "ul", provider)},
	}
	waitFor(t, ctx, "u1 allocated on both underlay subnets with the Vlan's annotations and its ports", func() error {
		p, err := pods.Get(ctx, "u1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		a := p.Annotations
		for _, n := range networks {
			key := func(k string) string { return reconcile.Key(n.provider, k) }
			want := map[string]string{
				key(reconcile.KeyAllocated):       "true",
				key(reconcile.KeyLogicalSwitch):   n.subnet,
				key(reconcile.KeyVlanID):          "100",
				key(reconcile.KeyProviderNetwork): "physnet1",
			}
			for k, v := range want {
				if a[k] != v {
					return errorf("annotation %s = %q, want %q (all: %v)", k, a[k], v, a)
				}
			}
			port, ok := c.ports(ctx)[n.port]
			if !ok {
				return errorf("no port %s", n.port)
			}
			addr := a[key(reconcile.KeyMACAddress)] + " " + a[key(reconcile.KeyIPAddress)]
			if len(port.Addresses) != 1 || port.Addresses[0] != addr || port.ExternalIDs["ls"] != n.subnet || port.ExternalIDs["pod"] != "ul/u1" {
				return errorf("port %s: addresses %v external ids %v; want [%s] on %s for ul/u1", n.port, port.Addresses, port.ExternalIDs, addr, n.subnet)
			}
			if _, ok := a[key(reconcile.KeyLogicalRouter)]; ok {
				return errorf("logical_router annotated on an underlay network without logicalGateway or u2oInterconnection: %v", a)
			}
		}
		return nil
	})
	// G2: no routed-phase rows for an underlay subnet: the ports are in no
	// port group and no route or NAT rule has their addresses.
	p, err = pods.Get(ctx, "u1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pgs []nbdb.PortGroup
	var routes []nbdb.LogicalRouterStaticRoute
	for _, l := range []any{&pgs, &routes} {
		if err := c.view.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range networks {
		ip := p.Annotations[reconcile.Key(n.provider, reconcile.KeyIPAddress)]
		port := c.ports(ctx)[n.port]
		for _, pg := range pgs {
			if slices.Contains(pg.Ports, port.UUID) {
				t.Errorf("underlay port %s is in port group %s", n.port, pg.Name)
			}
		}
		for _, r := range routes {
			if r.IPPrefix == ip {
				t.Errorf("a route for the underlay address %s: -> %s", r.IPPrefix, r.Nexthop)
			}
		}
		if nats := c.natsOf(ctx, ip); len(nats) > 0 {
			t.Errorf("NAT rules for the underlay address %s: %v", ip, nats)
		}
	}
}
