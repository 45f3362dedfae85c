package reconcile

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/test/harness"
)

// TestConditionOfANewSubnet writes the Ready condition of a Subnet that
// has no status yet (created without one, no status pass made) on a real
// API server with kube-ovn's CRD, which requires the four counters in a
// status: the condition's patch carries them, so it is not refused.
func TestConditionOfANewSubnet(t *testing.T) {
	kube := harness.StartKube(t)
	ctx := context.Background()
	sn, err := kube.Shardnet.KubeovnV1().Subnets().Create(ctx, &kubeovnv1.Subnet{
		ObjectMeta: metav1.ObjectMeta{Name: "fresh"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.40.0.0/24"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &SubnetReconciler{cfg: SubnetConfig{Shardnet: kube.Shardnet}}
	if err := r.setCondition(ctx, sn, corev1.ConditionTrue, "Ready", "switch and router port in place"); err != nil {
		t.Fatalf("writing the Ready condition of a Subnet without a status: %v", err)
	}
	got, err := kube.Shardnet.KubeovnV1().Subnets().Get(ctx, "fresh", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != ConditionReady || got.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Fatalf("conditions %+v, want Ready True", got.Status.Conditions)
	}
	// The counters went with it, as zeros the status loop corrects; a
	// second write, from the copy now cached, keeps what is there.
	got.Status.V4UsingIPs = 3
	if _, err := kube.Shardnet.KubeovnV1().Subnets().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cur, err := kube.Shardnet.KubeovnV1().Subnets().Get(ctx, "fresh", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.setCondition(ctx, cur, corev1.ConditionFalse, "Waiting", "router missing"); err != nil {
		t.Fatal(err)
	}
	after, err := kube.Shardnet.KubeovnV1().Subnets().Get(ctx, "fresh", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Status.V4UsingIPs != 3 || after.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Fatalf("status %+v, want the counters kept and Ready False", after.Status)
	}
}
