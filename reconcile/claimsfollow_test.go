package reconcile

import (
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// TestClaimsFollowThePort: a running pod whose claim holds another address
// than its annotation and its port (two allocations raced across an
// interrupted term, and the claim of the one that reached the pod was
// lost) gets its claims put right: the annotated address is claimed for
// it, the other released; the annotation and the port stay. Without the
// port carrying it, the annotation is a user's edit and is refused.
func TestClaimsFollowThePort(t *testing.T) {
	s := startSlice(t)
	ctx := s.ctx()
	node := s.kube.CreateNode(t, "node-drift", "")
	s.createSubnet("drift", "10.67.0.0/24", func(sp *kubeovnv1.SubnetSpec) { sp.Default = true })
	s.createNamespace("drift")
	s.createPods([]*corev1.Pod{newPod("drift", "p", node.Name, nil)})
	pod := s.waitPod(ctx, "drift", "p", routed)
	annotated := pod.Annotations[DefaultKey(KeyIPAddress)]
	a := netip.MustParseAddr(annotated)
	other := a.Next().Next()
	claims := s.kube.Shardnet.ShardnetV1alpha1().AddressClaims()
	owner := ClaimOwnerOf(pod)

	// The drift: the annotated address's claim gone, another one held.
	if err := claims.Delete(ctx, v1alpha1.ClaimName("drift", a), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := claims.Create(ctx, &v1alpha1.AddressClaim{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClaimName("drift", other)},
		Spec:       v1alpha1.AddressClaimSpec{Subnet: "drift", Address: other.String(), MAC: pod.Annotations[DefaultKey(KeyMACAddress)], Owner: owner},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitView(t, ctx, func() error {
		held := claimsOf(s.caches.ClaimIndex(), "drift/p")
		if len(held) != 1 || held[0].Spec.Address != other.String() {
			return fmt.Errorf("claim cache: %d claims", len(held))
		}
		return nil
	})
	if err := s.term.Reconcile(ctx, "drift/p"); err != nil {
		t.Fatalf("reconcile of the drifted pod: %v", err)
	}
	waitView(t, ctx, func() error {
		c, err := claims.Get(ctx, v1alpha1.ClaimName("drift", a), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.Spec.Owner != owner {
			return fmt.Errorf("claim of %s owned by %+v", a, c.Spec.Owner)
		}
		return nil
	})
	s.waitGone(ctx, "drift", other.String())
	after := s.waitPod(ctx, "drift", "p", routed)
	if got := after.Annotations[DefaultKey(KeyIPAddress)]; got != annotated {
		t.Errorf("annotation %s after the repair, want %s kept", got, annotated)
	}

	// A user's edit of the running pod's address is not followed.
	edited := after.DeepCopy()
	edited.Annotations[DefaultKey(KeyIPAddress)] = other.String()
	if _, err := s.kube.Client.CoreV1().Pods("drift").Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitView(t, ctx, func() error {
		p, err := s.caches.Pods.Pods("drift").Get("p")
		if err != nil || p.Annotations[DefaultKey(KeyIPAddress)] != other.String() {
			return fmt.Errorf("the edit is not in the cache yet")
		}
		return nil
	})
	err := s.term.Reconcile(ctx, "drift/p")
	if err == nil {
		t.Fatal("an edit of a running pod's address was accepted")
	}
	if _, err := claims.Get(ctx, v1alpha1.ClaimName("drift", a), metav1.GetOptions{}); err != nil {
		t.Errorf("the pod's claim after a refused edit: %v", err)
	}
}
