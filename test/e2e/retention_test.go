package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/reconcile"
)

// TestAddressesOutlivingPods runs two replica processes through the
// retention rows (docs/contract.md R3, R9): a StatefulSet pod re-created
// under its name keeps its address; one whose subnet's CIDR no longer
// contains it, or whose namespace another subnet now selects, is given a
// new address in its subnet; and a pod stuck terminating on a node whose
// kubelet is gone is released at the end of its grace period, its address
// then given to a pod that waited for it.
func TestAddressesOutlivingPods(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	node := c.kube.CreateNode(t, "kwok-node-keep", "")
	c.subnet("main", "10.46.0.0/24", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	c.subnet("cidr", "10.44.0.0/24", func(s *kubeovnv1.SubnetSpec) { s.Namespaces = []string{"sts-cidr"} })
	c.subnet("from", "10.45.0.0/24", func(s *kubeovnv1.SubnetSpec) { s.Namespaces = []string{"sts-move"} })
	c.subnet("to", "10.47.0.0/24", nil)
	// A /30: one usable address, for the pod waiting on a stuck one.
	c.subnet("one", "10.66.0.0/30", func(s *kubeovnv1.SubnetSpec) { s.Namespaces = []string{"stuck"} })
	for _, ns := range []string{"sts-cidr", "sts-move", "stuck"} {
		c.namespace(ns)
	}
	c.startProcess("shardnet-0")
	c.startProcess("shardnet-1")

	pods := func(ns string) podsClient { return c.kube.Client.CoreV1().Pods(ns) }
	routedPod := func(ns, name string) *corev1.Pod {
		t.Helper()
		var got *corev1.Pod
		waitFor(t, ctx, ns+"/"+name+" routed", func() error {
			p, err := pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !isRouted(p) {
				return fmt.Errorf("not routed: %v", p.Annotations)
			}
			got = p
			return nil
		})
		return got
	}
	deleted := func(ns, name string) {
		t.Helper()
		zero := int64(0)
		if err := pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, ns+"/"+name+" gone", func() error {
			if _, err := pods(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there: %v", err)
			}
			return nil
		})
	}
	// webPod creates web-0 of the StatefulSet web in ns (made once) and
	// returns it routed.
	webPod := func(ns string) *corev1.Pod {
		t.Helper()
		sts, err := c.kube.Client.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			one := int32(1)
			sts, err = c.kube.Client.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
				ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: appsv1.StatefulSetSpec{Replicas: &one,
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}},
				},
			}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		controller := true
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: ns, Labels: map[string]string{"app": "web"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: sts.UID, Controller: &controller}}},
			Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
		}
		if _, err := pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return routedPod(ns, "web-0")
	}
	ipOf := func(p *corev1.Pod) string { return p.Annotations[reconcile.DefaultKey(reconcile.KeyIPAddress)] }
	switchOf := func(p *corev1.Pod) string { return p.Annotations[reconcile.DefaultKey(reconcile.KeyLogicalSwitch)] }
	patchSubnet := func(name, patch string) {
		t.Helper()
		if _, err := c.kube.Shardnet.KubeovnV1().Subnets().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("StatefulSet pod re-created keeps its address", func(t *testing.T) {
		first := webPod("sts-cidr")
		deleted("sts-cidr", "web-0")
		if again := webPod("sts-cidr"); ipOf(again) != ipOf(first) || switchOf(again) != "cidr" {
			t.Fatalf("re-created web-0 has %s on %s, want %s on cidr", ipOf(again), switchOf(again), ipOf(first))
		}
	})

	// claimGone waits until the claim of subnet/addr is released: the
	// retention ended, so the shard that re-creates the pod has seen why.
	claimGone := func(subnet, addr string) {
		t.Helper()
		waitFor(t, ctx, "the retained claim of "+addr+" released", func() error {
			_, err := c.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Get(ctx, subnet+"."+addr, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still claimed: %v", err)
		})
	}

	t.Run("the subnet's CIDR no longer contains it", func(t *testing.T) {
		before := routedPod("sts-cidr", "web-0")
		patchSubnet("cidr", `{"spec":{"cidrBlock":"10.48.0.0/24","gateway":"10.48.0.1","excludeIps":["10.48.0.1"]}}`)
		deleted("sts-cidr", "web-0")
		claimGone("cidr", ipOf(before))
		got := webPod("sts-cidr")
		a, err := netip.ParseAddr(ipOf(got))
		if err != nil || !netip.MustParsePrefix("10.48.0.0/24").Contains(a) || switchOf(got) != "cidr" {
			t.Fatalf("web-0 after the CIDR change has %q on %s, want an address of 10.48.0.0/24 on cidr", ipOf(got), switchOf(got))
		}
	})

	t.Run("another subnet now selects the namespace", func(t *testing.T) {
		first := webPod("sts-move")
		if switchOf(first) != "from" {
			t.Fatalf("web-0 on %s, want from", switchOf(first))
		}
		patchSubnet("from", `{"spec":{"namespaces":[]}}`)
		patchSubnet("to", `{"spec":{"namespaces":["sts-move"]}}`)
		deleted("sts-move", "web-0")
		claimGone("from", ipOf(first))
		got := webPod("sts-move")
		a, err := netip.ParseAddr(ipOf(got))
		if err != nil || switchOf(got) != "to" || !netip.MustParsePrefix("10.47.0.0/24").Contains(a) {
			t.Fatalf("web-0 after the namespace moved has %q on %s, want an address of to", ipOf(got), switchOf(got))
		}
	})

	t.Run("a pod stuck terminating is released at its grace end", func(t *testing.T) {
		// A node with no kubelet (kwok does not manage it), as one that
		// died: nothing finishes a delete there.
		if _, err := c.kube.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gone-node"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		mk := func(name string) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "stuck"},
				Spec: corev1.PodSpec{NodeName: "gone-node", Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}}
			if _, err := pods("stuck").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		mk("first")
		addr := ipOf(routedPod("stuck", "first"))
		mk("second") // waits: the /30 has one address
		grace := int64(3)
		if err := pods("stuck").Delete(ctx, "first", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
		cur, err := pods("stuck").Get(ctx, "first", metav1.GetOptions{})
		if err != nil || cur.DeletionTimestamp == nil {
			t.Fatalf("the deleted pod should stay terminating: %v", err)
		}
		end, _ := reconcile.GraceEnd(cur)
		second := routedPod("stuck", "second")
		if ipOf(second) != addr {
			t.Fatalf("the waiting pod got %q, want the stuck pod's %s", ipOf(second), addr)
		}
		if time.Now().Before(end) {
			t.Fatalf("the address moved before the stuck pod's grace ran out (%v)", end)
		}
		t.Logf("the stuck pod's address went to the waiting pod %v after its grace end", time.Since(end).Round(time.Millisecond))
	})
}

type podsClient = interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}
