package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/reconcile"
)

// TestEIPPodWaitsForTheExternalGateway runs a pod with eip and snat on
// real servers with kube-ovn's own CRDs (docs/contract.md G11, E25): while
// kube-system/ovn-external-gw-config is missing the pod is allocated, its
// port written, its routed phase held back with a Warning naming the
// ConfigMap; once the ConfigMap is created (the replica watches it by
// name) the pod is routed: a src-ip route of its address to the
// ConfigMap's external-gw-addr on the cluster router, its dnat_and_snat
// and snat rules, and the port in no node port group.
func TestEIPPodWaitsForTheExternalGateway(t *testing.T) {
	c := startKubeOVNCluster(t, "eip")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := c.kube.CreateNode(t, "kwok-node-eip", "")
	c.subnet("main", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	c.startReplica("shardnet-0")

	pods := c.kube.Client.CoreV1().Pods("eip")
	if _, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "eip", Annotations: map[string]string{
			reconcile.DefaultKey(reconcile.KeyEIP): "172.19.0.10", reconcile.DefaultKey(reconcile.KeySNAT): "172.19.0.11",
		}},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "a Warning naming the missing ConfigMap, the pod allocated and its port written", func() error {
		evs, err := c.kube.Client.CoreV1().Events("eip").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		warned := false
		for _, e := range evs.Items {
			warned = warned || (e.InvolvedObject.Name == "e1" && e.Type == corev1.EventTypeWarning &&
				e.Reason == reconcile.ReasonExternalGateway && strings.Contains(e.Message, "kube-system/ovn-external-gw-config"))
		}
		if !warned {
			return errorf("no %s Warning on e1 among %d events", reconcile.ReasonExternalGateway, len(evs.Items))
		}
		p, err := pods.Get(ctx, "e1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Annotations[reconcile.DefaultKey(reconcile.KeyAllocated)] != "true" {
			return errorf("e1 not allocated: %v", p.Annotations)
		}
		if _, ok := c.ports(ctx)["e1.eip"]; !ok {
			return errorf("no port e1.eip")
		}
		return nil
	})
	p, err := pods.Get(ctx, "e1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Annotations[reconcile.DefaultKey(reconcile.KeyRouted)] == "true" {
		t.Fatalf("e1 routed without an external gateway: %v", p.Annotations)
	}
	if nats := c.natsOf(ctx, p.Annotations[reconcile.DefaultKey(reconcile.KeyIPAddress)]); len(nats) != 0 {
		t.Fatalf("NAT rules written before the routed phase: %v", nats)
	}

	if _, err := c.kube.Client.CoreV1().ConfigMaps(reconcile.DefaultExternalGatewayNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: reconcile.ExternalGatewayConfigMap},
		Data:       map[string]string{reconcile.ExternalGatewayKey: "172.19.0.1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "e1 routed with its route to the external gateway and its NAT rules", func() error {
		p, err := pods.Get(ctx, "e1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Annotations[reconcile.DefaultKey(reconcile.KeyRouted)] != "true" {
			return errorf("e1 not routed yet")
		}
		ip := p.Annotations[reconcile.DefaultKey(reconcile.KeyIPAddress)]
		var routes []nbdb.LogicalRouterStaticRoute
		if err := c.view.List(ctx, &routes); err != nil {
			return err
		}
		found := false
		for _, r := range routes {
			if r.IPPrefix == ip {
				if r.Nexthop != "172.19.0.1" || r.Policy == nil || *r.Policy != nbdb.LogicalRouterStaticRoutePolicySrcIP || r.ExternalIDs["pod"] != "eip/e1" {
					return errorf("route %s: nexthop %s policy %v external ids %v; want 172.19.0.1 src-ip for eip/e1", ip, r.Nexthop, r.Policy, r.ExternalIDs)
				}
				found = true
			}
		}
		if !found {
			return errorf("no route for %s", ip)
		}
		nats := c.natsOf(ctx, ip)
		if nats["dnat_and_snat"] != "172.19.0.10" || nats["snat"] != "172.19.0.11" || len(nats) != 2 {
			return errorf("NAT rules of %s: %v; want dnat_and_snat 172.19.0.10 and snat 172.19.0.11", ip, nats)
		}
		var pgs []nbdb.PortGroup
		if err := c.view.List(ctx, &pgs); err != nil {
			return err
		}
		port := c.ports(ctx)["e1.eip"]
		for _, pg := range pgs {
			for _, u := range pg.Ports {
				if u == port.UUID {
					return errorf("e1.eip is in port group %s", pg.Name)
				}
			}
		}
		return nil
	})
}

// natsOf are the NAT rules of a logical IP: external IP by type.
func (c *cluster) natsOf(ctx context.Context, ip string) map[string]string {
	var nats []nbdb.NAT
	if err := c.view.List(ctx, &nats); err != nil {
		c.t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range nats {
		if n.LogicalIP == ip {
			out[string(n.Type)] = n.ExternalIP
		}
	}
	return out
}
