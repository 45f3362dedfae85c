package reconcile

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// TestStuckTerminatingPodReleasedAtGraceEnd: a pod being deleted on a node
// whose kubelet never finishes the delete (R3) keeps its address while its
// grace period runs, its key comes back when the grace runs out (one
// delayed re-add, no polling), and the address is then given to a pod that
// was waiting for it.
func TestStuckTerminatingPodReleasedAtGraceEnd(t *testing.T) {
	s := startSlice(t)
	ctx, cancel := context.WithTimeout(s.ctx(), 3*time.Minute)
	defer cancel()
	// A /30: one usable address.
	s.createSubnet("one", "10.66.0.0/30", func(sp *kubeovnv1.SubnetSpec) { sp.Default = true })
	s.createNamespace("stuck")
	// A node with no kubelet (kwok does not manage it): nothing finishes a
	// delete there.
	if _, err := s.kube.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gone-node"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.createPods([]*corev1.Pod{newPod("stuck", "first", "gone-node", nil)})
	first := s.waitPods(ctx, "stuck", 1, routed)[0]
	addr := first.Annotations[DefaultKey(KeyIPAddress)]
	if addr != "10.66.0.2" {
		t.Fatalf("first pod got %q", addr)
	}

	// A second pod waits for the only address.
	s.createPods([]*corev1.Pod{newPod("stuck", "second", "gone-node", nil)})
	grace := int64(3)
	if err := s.kube.Client.CoreV1().Pods("stuck").Delete(ctx, "first", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	cur, err := s.kube.Client.CoreV1().Pods("stuck").Get(ctx, "first", metav1.GetOptions{})
	if err != nil || cur.DeletionTimestamp == nil {
		t.Fatalf("the deleted pod should stay terminating: %v %+v", err, cur)
	}
	end, _ := GraceEnd(cur)

	// The second pod gets the address once the first's grace has run out.
	got := s.waitPods(ctx, "stuck", 2, func(p *corev1.Pod) bool {
		return p.Name == "first" || p.Annotations[DefaultKey(KeyIPAddress)] == addr
	})
	for _, p := range got {
		if p.Name == "second" && p.Annotations[DefaultKey(KeyIPAddress)] != addr {
			t.Fatalf("second pod %v", p.Annotations)
		}
	}
	if time.Now().Before(end) {
		t.Fatalf("the address moved before the first pod's grace ran out (%v)", end)
	}
	// The term asked for the key once its grace would be over, instead of
	// polling it.
	s.laterMu.Lock()
	defer s.laterMu.Unlock()
	var asked []laterCall
	for _, c := range s.laterCalls {
		if c.key == "stuck/first" {
			asked = append(asked, c)
		}
	}
	if len(asked) == 0 {
		t.Fatal("the terminating pod's key was never queued for its grace end")
	}
	for _, c := range asked {
		if c.after <= 0 || c.after > time.Duration(2*grace)*time.Second+graceMargin {
			t.Errorf("re-add after %v; want the time left to the grace end (at most %v)", c.after, time.Duration(2*grace)*time.Second+graceMargin)
		}
	}
}
