package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/reconcile"
)

// TestVirtualPortsFollowPods runs a Subnet's spec.vips on real servers
// with two replica processes (docs/contract.md N14): each VIP gets a
// virtual port <subnet>-vip-<address> of type virtual, whose
// virtual-parents are the ports of the pods that list it in port_vips,
// written by the leader alone; the parents follow pods as they are
// created and deleted, whichever replica's shard serves them; a VIP
// removed from the Subnet loses its port, the pods keep theirs.
func TestVirtualPortsFollowPods(t *testing.T) {
	c := startKubeOVNCluster(t, "vp")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	node := c.kube.CreateNode(t, "kwok-node-vp", "")
	c.subnet("main", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) {
		s.Default, s.Vips = true, []string{"10.16.0.100", "10.16.0.101", "10.99.0.1"}
	})
	c.startProcess("shardnet-0")
	c.startProcess("shardnet-1")

	pods := c.kube.Client.CoreV1().Pods("vp")
	create := func(name, vips string) {
		t.Helper()
		if _, err := pods.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vp",
				Annotations: map[string]string{reconcile.DefaultKey(reconcile.KeyPortVIPs): vips}},
			Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Pods whose names hash to different shards, so that both replicas
	// are likely to serve some.
	names := []string{"web-0", "web-1", "web-2", "web-3", "web-4", "web-5"}
	for i, n := range names {
		vips := "10.16.0.100"
		if i%2 == 1 {
			vips = "10.16.0.100,10.16.0.101"
		}
		create(n, vips)
	}
	virtual := func() map[string]nbdb.LogicalSwitchPort {
		var lsps []nbdb.LogicalSwitchPort
		if err := c.view.List(ctx, &lsps); err != nil {
			t.Fatal(err)
		}
		out := map[string]nbdb.LogicalSwitchPort{}
		for _, p := range lsps {
			if p.Type == "virtual" {
				out[p.Name] = p
			}
		}
		return out
	}
	want := func(parents100, parents101 string) func() error {
		return func() error {
			vs := virtual()
			for vip, parents := range map[string]string{"10.16.0.100": parents100, "10.16.0.101": parents101} {
				name := ovn.VirtualPortName("main", vip)
				p, ok := vs[name]
				if !ok {
					if parents == "-" {
						continue
					}
					return errorf("no virtual port %s (have %v)", name, len(vs))
				}
				if parents == "-" {
					return errorf("virtual port %s is still there", name)
				}
				if p.Options["virtual-ip"] != vip || p.Options["virtual-parents"] != parents || p.ExternalIDs["ls"] != "main" || p.ExternalIDs["vendor"] != "kube-ovn" {
					return errorf("%s: options %v external ids %v; want virtual-ip %s, virtual-parents %q", name, p.Options, p.ExternalIDs, vip, parents)
				}
			}
			if n := len(vs); n > 2 {
				return errorf("%d virtual ports, want at most 2 (10.99.0.1 is outside the subnet)", n)
			}
			return nil
		}
	}
	waitFor(t, ctx, "virtual ports with every pod as parent", want(
		"web-0.vp,web-1.vp,web-2.vp,web-3.vp,web-4.vp,web-5.vp", "web-1.vp,web-3.vp,web-5.vp"))

	for _, n := range []string{"web-1", "web-2"} {
		if err := pods.Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	create("web-6", "10.16.0.101")
	waitFor(t, ctx, "parents follow the pods", want("web-0.vp,web-3.vp,web-4.vp,web-5.vp", "web-3.vp,web-5.vp,web-6.vp"))

	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"vips": []string{"10.16.0.100"}}})
	if _, err := c.kube.Shardnet.KubeovnV1().Subnets().Patch(ctx, "main", types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the VIP removed from the Subnet loses its port", want("web-0.vp,web-3.vp,web-4.vp,web-5.vp", "-"))
	ports := c.ports(ctx)
	for _, n := range []string{"web-0", "web-3", "web-4", "web-5", "web-6"} {
		if _, ok := ports[n+".vp"]; !ok {
			t.Errorf("pod %s lost its port", n)
		}
	}
}
