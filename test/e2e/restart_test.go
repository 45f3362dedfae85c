package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/reconcile"
)

// cutTransport fails every new request while cut is set; streams already
// open (watches) go on, as they do when a member's renewals time out.
type cutTransport struct {
	next http.RoundTripper
	cut  *atomic.Bool
}

func (c cutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errors.New("test: the API server is cut off from this replica")
	}
	return c.next.RoundTrip(req)
}

// TestReplicaStartsAfreshAfterLosingMembership: a replica whose member
// Lease cannot be renewed past the renew deadline stops its shards; they
// move to the other replica, and once the API server answers again the
// cut-off replica, instead of rejoining with the caches it had, starts
// afresh (new caches, Northbound connection and member incarnation). Pods deleted and created while it was cut off, some
// re-created under a deleted pod's name, end with one port each, equal to
// their annotations, no address twice, and nothing left of the deleted
// ones.
func TestReplicaStartsAfreshAfterLosingMembership(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	node := c.kube.CreateNode(t, "kwok-node-1", "")
	c.subnet("ovn-default", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	const ns = "restart"
	c.namespace(ns)

	var cut atomic.Bool
	rc := rest.CopyConfig(c.kube.Config)
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return cutTransport{next: rt, cut: &cut} }
	c.startReplicaWith(c.options("shardnet-0"), rc)
	c.startReplica("shardnet-1")
	c.mu.Lock()
	victim := c.replicas["shardnet-0"].r
	c.mu.Unlock()
	waitFor(t, ctx, "both replicas own shards", func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		for id, rr := range c.replicas {
			if len(rr.r.Owned()) == 0 {
				return fmt.Errorf("%s owns no shard", id)
			}
		}
		return nil
	})
	c.createPods(ns, "pod", node.Name, 200)
	c.waitRouted(ctx, ns, 200)

	// A loaded machine can delay a renewal past the deadline before the
	// cut too: count from here.
	before := victim.Restarts()
	cut.Store(true)
	waitFor(t, ctx, "the cut-off replica not ready, its shards elsewhere", func() error {
		if victim.Ready() {
			return errors.New("ready while it cannot reach the API server")
		}
		if len(victim.Owned()) != 0 {
			return errors.New("still runs shards")
		}
		return nil
	})
	// While it is away, the other replica serves every shard: half the pods
	// go, and come back under the same names with new addresses.
	zero := int64(0)
	for i := range 100 {
		name := fmt.Sprintf("pod-%05d", 2*i)
		if err := c.kube.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, "deleted pods gone", func() error {
		list, err := c.kube.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != 100 {
			return fmt.Errorf("%d pods left", len(list.Items))
		}
		return nil
	})
	// 75 of the deleted names come back, and 25 new pods.
	for i := range 75 {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", 2*i), Namespace: ns},
			Spec:       corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
		}
		if _, err := c.kube.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.createPods(ns, "new", node.Name, 25)
	c.waitRouted(ctx, ns, 200)

	cut.Store(false)
	waitFor(t, ctx, "the replica starts afresh and rejoins with shards", func() error {
		if victim.Restarts() == before {
			return errors.New("no restart yet")
		}
		if len(victim.Owned()) == 0 {
			return errors.New("owns no shard")
		}
		if !victim.Ready() {
			return errors.New("not ready")
		}
		return nil
	})
	c.createPods(ns, "late", node.Name, 100)
	pods := c.waitRouted(ctx, ns, 300)
	c.checkPods(ctx, pods)
	waitFor(t, ctx, "ports only for live pods", func() error {
		live := map[string]bool{}
		for _, p := range pods {
			live[reconcile.PortName(p.Name, p.Namespace, reconcile.DefaultProvider)] = true
		}
		ports := c.ports(ctx)
		for name := range ports {
			if !live[name] {
				return fmt.Errorf("port %s has no live pod", name)
			}
		}
		if len(ports) != len(live) {
			return fmt.Errorf("%d ports for %d pods", len(ports), len(live))
		}
		return nil
	})
	// More than one restart is possible on a loaded machine (a renewal
	// late past the renew deadline); the invariants above hold either way.
	t.Logf("the cut-off replica started afresh %d times", victim.Restarts())
}
