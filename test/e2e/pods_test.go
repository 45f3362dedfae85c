package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/reconcile"
)

// TestThreeReplicas2000Pods: three replicas share 16 shards; 2,000 kwok
// pods in four namespaces and three subnets (one dual-stack) all become
// allocated and routed with ports that match their annotations, no address
// twice, subnet counters that match, and nothing left once they are gone.
func TestThreeReplicas2000Pods(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	node := c.kube.CreateNode(t, "kwok-node-1", "")
	c.subnet("ovn-default", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	c.subnet("blue", "10.20.0.0/20", func(s *kubeovnv1.SubnetSpec) { s.Namespaces = []string{"ns-blue"} })
	c.subnet("dual", "10.30.0.0/20,fd00:30::/112", func(s *kubeovnv1.SubnetSpec) {
		s.Protocol = kubeovnv1.ProtocolDual
		s.Namespaces = []string{"ns-dual"}
	})
	namespaces := map[string]string{"ns-a": "ovn-default", "ns-b": "ovn-default", "ns-blue": "blue", "ns-dual": "dual"}
	for ns := range namespaces {
		c.namespace(ns)
	}
	for _, id := range []string{"shardnet-0", "shardnet-1", "shardnet-2"} {
		c.startReplica(id)
	}

	const perNS = 500
	start := time.Now()
	for ns := range namespaces {
		c.createPods(ns, "pod", node.Name, perNS)
	}
	t.Logf("created %d pods in %v", 4*perNS, time.Since(start).Round(time.Millisecond))
	var all []podList
	for ns, subnet := range namespaces {
		pods := c.waitRouted(ctx, ns, perNS)
		for _, p := range pods {
			if got := p.Annotations[reconcile.DefaultKey(reconcile.KeyLogicalSwitch)]; got != subnet {
				t.Fatalf("%s/%s is on %s, want %s", p.Namespace, p.Name, got, subnet)
			}
			if subnet == "dual" && !strings.Contains(p.Annotations[reconcile.DefaultKey(reconcile.KeyIPAddress)], ":") {
				t.Fatalf("dual-stack pod %s has no IPv6 address", p.Name)
			}
		}
		all = append(all, podList{ns, pods})
	}
	elapsed := time.Since(start)
	t.Logf("%d pods allocated and routed in %v (%.0f pods/s)", 4*perNS, elapsed.Round(time.Millisecond), float64(4*perNS)/elapsed.Seconds())
	for _, l := range all {
		c.checkPods(ctx, l.pods)
	}

	// Every replica took part.
	c.mu.Lock()
	for id, rr := range c.replicas {
		if len(rr.r.Owned()) == 0 {
			t.Errorf("replica %s owns no shard", id)
		}
	}
	c.mu.Unlock()

	waitFor(t, ctx, "subnet counters", func() error {
		for name, want := range map[string][2]float64{"ovn-default": {2 * perNS, 0}, "blue": {perNS, 0}, "dual": {perNS, perNS}} {
			s, err := c.kube.Shardnet.KubeovnV1().Subnets().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s.Status.V4UsingIPs != want[0] || s.Status.V6UsingIPs != want[1] {
				return errorf("subnet %s counts %v/%v used, want %v/%v", name, s.Status.V4UsingIPs, s.Status.V6UsingIPs, want[0], want[1])
			}
		}
		return nil
	})

	for ns := range namespaces {
		if err := c.kube.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, "nothing left behind", func() error {
		claims, err := c.kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ips, err := c.kube.Shardnet.KubeovnV1().IPs().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ports := c.ports(ctx)
		if len(claims.Items)+len(ips.Items)+len(ports) != 0 {
			return errorf("%d claims, %d IP records, %d pod ports left", len(claims.Items), len(ips.Items), len(ports))
		}
		return nil
	})
}

type podList struct {
	ns   string
	pods []corev1Pod
}
