package controller

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardnet/shardnet/api/client/informers/externalversions"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
)

// TestClaimInformerCachesCompactClaims: on a real API server, the claim
// informer of a replica (CRDClient, trimCRD) caches the claims shardnet
// writes as claimcache.Claim, whether its first list or a watch event
// brought them, keeps a claim with more (a finalizer) as it came, and its
// lister reads back what the API server holds.
func TestClaimInformerCachesCompactClaims(t *testing.T) {
	kube, fast, ctx := startWithCRDClient(t)
	// A subnet of its own: the API server is shared with other tests.
	const subnet = "claimcache-test"
	claim := func(i int) *v1alpha1.AddressClaim {
		addr := fmt.Sprintf("10.16.0.%d", i+1)
		return &v1alpha1.AddressClaim{
			ObjectMeta: metav1.ObjectMeta{Name: subnet + "." + addr,
				Labels: map[string]string{v1alpha1.LabelSubnet: subnet, v1alpha1.LabelFamily: "IPv4"}},
			Spec: v1alpha1.AddressClaimSpec{Subnet: subnet, Address: addr, Provider: "ovn", NodeName: "n1", MAC: "00:00:00:00:00:01",
				Owner: v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "default", Name: fmt.Sprintf("pod-%d", i), UID: "u"}},
		}
	}
	claims := kube.Shardnet.ShardnetV1alpha1().AddressClaims()
	var created []string
	create := func(c *v1alpha1.AddressClaim) {
		t.Helper()
		if _, err := claims.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		created = append(created, c.Name)
	}
	t.Cleanup(func() {
		for _, name := range created {
			_, _ = claims.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			_ = claims.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	for i := range 3 {
		create(claim(i))
	}
	odd := claim(100)
	odd.Finalizers = []string{"example.com/keep"}
	create(odd)

	factory := externalversions.NewSharedInformerFactoryWithOptions(fast, 0, externalversions.WithTransform(trimCRD))
	inf := factory.Shardnet().V1alpha1().AddressClaims().Informer()
	lister := claimcache.NewLister(inf.GetIndexer())
	checkCompactCache(t, ctx, factory, inf, compactCheck{
		createAfter: func() {
			for i := 3; i < 6; i++ {
				create(claim(i))
			}
		},
		want: 7, odd: odd.Name,
		cached: func(o any) (string, bool, bool) {
			switch c := o.(type) {
			case *claimcache.Claim:
				return c.Name, true, true
			case *v1alpha1.AddressClaim:
				return c.Name, false, true
			}
			return "", false, false
		},
		readBack: func(name string) (any, any) {
			got, err := lister.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			want, err := claims.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			g, w := got.DeepCopy(), want.DeepCopy()
			g.TypeMeta, w.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
			w.ManagedFields = nil
			return g, w
		},
	})
}
