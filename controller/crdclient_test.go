package controller

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/test/harness"
)

type clientset = versioned.Interface

// startWithCRDClient starts etcd and kube-apiserver (skipped in -short
// runs) and returns them, a CRDClient of theirs and a context of two
// minutes, cancelled when the test ends.
func startWithCRDClient(t *testing.T) (*harness.Kube, clientset, context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	kube := harness.StartKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	fast, err := CRDClient(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	return kube, fast, ctx
}

// CRDClient reads what the API server writes as the generated clientset
// does: the same lists, the same watch events, the same objects, for
// claims and IP records with escaped and non-ASCII content.
func TestCRDClientReadsAsGenerated(t *testing.T) {
	kube, fast, ctx := startWithCRDClient(t)
	std := kube.Shardnet

	odd := `"quoted" \back\slash <tag> & ünïcödé {"kind":"IP"} ` + "\u2028"
	claim := func(i int) *v1alpha1.AddressClaim {
		return &v1alpha1.AddressClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ovn-default.10.16.0.%d", i+1),
				Labels: map[string]string{v1alpha1.LabelSubnet: "ovn-default"}, Annotations: map[string]string{"note": odd}},
			Spec: v1alpha1.AddressClaimSpec{Subnet: "ovn-default", Address: fmt.Sprintf("10.16.0.%d", i+1), Provider: "ovn",
				Owner: v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "default", Name: fmt.Sprintf("pod-%d", i), UID: "u"}},
		}
	}
	ip := func(i int) *kubeovnv1.IP {
		return &kubeovnv1.IP{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d.default", i), Annotations: map[string]string{"note": odd}},
			Spec: kubeovnv1.IPSpec{PodName: fmt.Sprintf("pod-%d", i), Namespace: "default", Subnet: "ovn-default",
				IPAddress: fmt.Sprintf("10.16.0.%d", i+1), AttachIPs: []string{"192.168.0.1"}},
		}
	}
	list, err := std.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.ListOptions{ResourceVersion: list.ResourceVersion}
	var watches [2][2]watch.Interface // [generated, CRDClient][claims, IPs]
	for i, cs := range []clientset{std, fast} {
		if watches[i][0], err = cs.ShardnetV1alpha1().AddressClaims().Watch(ctx, opts); err != nil {
			t.Fatal(err)
		}
		if watches[i][1], err = cs.KubeovnV1().IPs().Watch(ctx, opts); err != nil {
			t.Fatal(err)
		}
		defer watches[i][0].Stop()
		defer watches[i][1].Stop()
	}

	const n = 20
	for i := range n {
		c, err := std.ShardnetV1alpha1().AddressClaims().Create(ctx, claim(i), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A create's response is read by CRDClient too.
		got, err := fast.KubeovnV1().IPs().Create(ctx, ip(i), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := std.KubeovnV1().IPs().Get(ctx, got.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("CRDClient read its create's response as\n%#v\nthe generated clientset's get as\n%#v", got, want)
		}
		if i%4 == 0 {
			if err := std.ShardnetV1alpha1().AddressClaims().Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	for kind := range 2 {
		// Each watch sees n creates, and the claim watches n/4 deletes.
		events := n + (1-kind)*n/4
		for e := range events {
			var seen [2]watch.Event
			for i := range 2 {
				select {
				case ev, ok := <-watches[i][kind].ResultChan():
					if !ok {
						t.Fatalf("watch %d of kind %d closed after %d events", i, kind, e)
					}
					seen[i] = ev
				case <-ctx.Done():
					t.Fatalf("watch %d of kind %d: %d of %d events", i, kind, e, events)
				}
			}
			if !reflect.DeepEqual(seen[0], seen[1]) {
				t.Fatalf("event %d of kind %d: generated clientset\n%#v\nCRDClient\n%#v", e, kind, seen[0], seen[1])
			}
		}
	}

	for _, list := range []func(clientset) (any, error){
		func(cs clientset) (any, error) {
			return cs.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
		},
		func(cs clientset) (any, error) { return cs.KubeovnV1().IPs().List(ctx, metav1.ListOptions{}) },
	} {
		a, err := list(std)
		if err != nil {
			t.Fatal(err)
		}
		b, err := list(fast)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("lists differ:\n%#v\n%#v", a, b)
		}
	}
}
