package reconcile

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// TestStatefulSetRetentionEnds pins R9: a retained StatefulSet address is
// released, not kept for the next pod, once its subnet's CIDR no longer
// contains it, or once the pod's namespace is selected by another subnet.
func TestStatefulSetRetentionEnds(t *testing.T) {
	s := startSlice(t)
	ctx, cancel := context.WithTimeout(s.ctx(), 3*time.Minute)
	defer cancel()
	node := s.kube.CreateNode(t, "node-sts", "")
	s.createSubnet("main", "10.46.0.0/24", func(sp *kubeovnv1.SubnetSpec) { sp.Default = true })
	s.createSubnet("cidr", "10.44.0.0/24", func(sp *kubeovnv1.SubnetSpec) { sp.Namespaces = []string{"sts-cidr"} })
	s.createSubnet("from", "10.45.0.0/24", func(sp *kubeovnv1.SubnetSpec) { sp.Namespaces = []string{"sts-move"} })
	s.createSubnet("to", "10.47.0.0/24", nil)

	// retainedPod runs web-0 of a one-replica StatefulSet in ns, deletes
	// the pod, and checks its address is retained; it returns the address.
	retainedPod := func(ns, subnet string) string {
		t.Helper()
		s.createNamespace(ns)
		one := int32(1)
		sts, err := s.kube.Client.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.StatefulSetSpec{Replicas: &one,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := newPod(ns, "web-0", node.Name, nil)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: sts.UID, Controller: new(bool)}}
		s.createPods([]*corev1.Pod{p})
		got := s.waitPod(ctx, ns, "web-0", routed)
		addr := got.Annotations[DefaultKey(KeyIPAddress)]
		if sw := got.Annotations[DefaultKey(KeyLogicalSwitch)]; sw != subnet {
			t.Fatalf("%s/web-0 on %s, want %s", ns, sw, subnet)
		}
		s.deletePod(ctx, ns, "web-0")
		s.waitUncached(ctx, ns+"/web-0")
		// The delete has been reconciled by the slice's workers or is
		// reconciled now: either way the claim stays.
		if err := s.term.Reconcile(ctx, ns+"/web-0"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Get(ctx, subnet+"."+addr, metav1.GetOptions{}); err != nil {
			t.Fatalf("the retained claim of %s/web-0: %v", ns, err)
		}
		return addr
	}

	t.Run("the subnet's CIDR no longer contains it", func(t *testing.T) {
		addr := retainedPod("sts-cidr", "cidr")
		patch := []byte(`{"spec":{"cidrBlock":"10.48.0.0/24"}}`)
		if _, err := s.kube.Shardnet.KubeovnV1().Subnets().Patch(ctx, "cidr", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitView(t, ctx, func() error {
			sub, err := s.caches.Registry.Get("cidr")
			if err != nil {
				return err
			}
			if v4, _ := sub.Prefixes(); v4.String() != "10.48.0.0/24" {
				return fmt.Errorf("registry still has %s", v4)
			}
			return nil
		})
		if err := s.term.Reconcile(ctx, "sts-cidr/web-0"); err != nil {
			t.Fatal(err)
		}
		s.waitGone(ctx, "cidr", addr)
	})

	t.Run("another subnet now selects the namespace", func(t *testing.T) {
		addr := retainedPod("sts-move", "from")
		for name, nss := range map[string]string{"from": `[]`, "to": `["sts-move"]`} {
			patch := []byte(`{"spec":{"namespaces":` + nss + `}}`)
			if _, err := s.kube.Shardnet.KubeovnV1().Subnets().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitView(t, ctx, func() error {
			to, ok := s.caches.Subnet("to")
			if !ok || len(to.Spec.Namespaces) == 0 {
				return fmt.Errorf("the cache has not seen the namespace move")
			}
			if from, _ := s.caches.Subnet("from"); len(from.Spec.Namespaces) != 0 {
				return fmt.Errorf("the cache has not seen the namespace move")
			}
			return nil
		})
		if err := s.term.Reconcile(ctx, "sts-move/web-0"); err != nil {
			t.Fatal(err)
		}
		s.waitGone(ctx, "from", addr)
	})
}

// waitUncached waits until the slice's pod cache no longer has key.
func (s *slice) waitUncached(ctx context.Context, key string) {
	s.t.Helper()
	waitView(s.t, ctx, func() error {
		_, exists, err := s.caches.PodInformer.GetIndexer().GetByKey(key)
		if err != nil {
			return err
		}
		if exists {
			return apierrors.NewAlreadyExists(corev1.Resource("pods"), key)
		}
		return nil
	})
}
