package reconcile

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
)

func indexClaim(i int, kind string) *v1alpha1.AddressClaim {
	return &v1alpha1.AddressClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s.10.%d.%d.%d", i>>16&255, i>>8&255, i&255)},
		Spec:       v1alpha1.AddressClaimSpec{Subnet: "s", Owner: v1alpha1.ClaimOwner{Kind: kind, Namespace: "ns", Name: fmt.Sprintf("p%05d", i)}},
	}
}

// TestClaimsOf: a pod's claims come back from the bucketed index, those
// of every other pod of its bucket and of owners that are not pods (Vips)
// do not, and EachClaimPodKey visits every pod and VM key, once a claim.
func TestClaimsOf(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, ClaimIndexers())
	const n = 3 * claimBuckets // every bucket holds several pods
	for i := range n {
		if err := idx.Add(indexClaim(i, v1alpha1.OwnerPod)); err != nil {
			t.Fatal(err)
		}
	}
	second := indexClaim(7, v1alpha1.OwnerStatefulSetPod) // a second claim of p00007
	second.Name = "s6.fd00"
	vip := indexClaim(8, v1alpha1.OwnerVip) // a Vip named like p00008
	vip.Name = "s.vip"
	for _, c := range []*v1alpha1.AddressClaim{second, vip} {
		if err := idx.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	names := func(cs []*v1alpha1.AddressClaim) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(claimsOf(idx, "ns/p00007")); !slices.Equal(got, []string{"s.10.0.0.7", "s6.fd00"}) {
		t.Errorf("claims of ns/p00007 = %v", got)
	}
	if got := names(claimsOf(idx, "ns/p00008")); !slices.Equal(got, []string{"s.10.0.0.8"}) {
		t.Errorf("claims of ns/p00008 = %v, want its own, not the Vip's", got)
	}
	if got := claimsOf(idx, "other/p00009"); len(got) != 0 {
		t.Errorf("claims of other/p00009 = %v, want none", names(got))
	}
	keys := map[string]int{}
	EachClaimPodKey(idx, func(k string) { keys[k]++ })
	if len(keys) != n || keys["ns/p00007"] != 2 {
		t.Errorf("EachClaimPodKey: %d keys, ns/p00007 %d times; want %d keys, ns/p00007 twice", len(keys), keys["ns/p00007"], n)
	}
}

// BenchmarkClaimIndexRetained reports the heap a claim keeps in an
// indexer with ClaimIndexers, beside the same claims indexed by the pod
// key itself (one set per pod), in one run:
//
//	go test -run '^$' -bench ClaimIndexRetained ./reconcile/
func BenchmarkClaimIndexRetained(b *testing.B) {
	const n = 20000
	claims := make([]*v1alpha1.AddressClaim, n)
	for i := range claims {
		claims[i] = indexClaim(i, v1alpha1.OwnerPod)
	}
	byPod := cache.Indexers{ClaimsByPodIndex: func(obj any) ([]string, error) {
		c, _ := claimcache.Of(obj)
		return []string{ClaimPodKey(c)}, nil
	}}
	retained := func(ix cache.Indexers) float64 {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, ix)
		for _, c := range claims {
			if err := idx.Add(c); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(idx)
		return float64(after.HeapAlloc-before.HeapAlloc) / n
	}
	var bucketed, perPod float64
	for range b.N {
		bucketed = retained(ClaimIndexers())
		perPod = retained(byPod)
	}
	b.ReportMetric(bucketed, "B/claim")
	b.ReportMetric(perPod, "per-pod-B/claim")
	b.ReportMetric(bucketed/perPod, "ratio")
}
