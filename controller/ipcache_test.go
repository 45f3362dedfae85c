package controller

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/api/client/informers/externalversions"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/internal/ipcache"
)

// TestIPInformerCachesCompactRecords: on a real API server, the IP record
// informer of a replica (CRDClient, trimCRD) caches the records of the
// common shape as ipcache.IP, whether its first list or a watch event
// brought them, keeps a record with more as it came, and its lister reads
// back what the API server holds.
func TestIPInformerCachesCompactRecords(t *testing.T) {
	kube, fast, ctx := startWithCRDClient(t)
	record := func(i int) *kubeovnv1.IP {
		return &kubeovnv1.IP{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d.default", i),
				Labels: map[string]string{"ovn.kubernetes.io/subnet": "ovn-default", "ovn-default": ""}},
			Spec: kubeovnv1.IPSpec{PodName: fmt.Sprintf("pod-%d", i), Namespace: "default", Subnet: "ovn-default", NodeName: "n1",
				IPAddress: fmt.Sprintf("10.16.0.%d", i+1), V4IPAddress: fmt.Sprintf("10.16.0.%d", i+1), MacAddress: "00:00:00:00:00:01"},
		}
	}
	create := func(ip *kubeovnv1.IP) {
		t.Helper()
		if _, err := kube.Shardnet.KubeovnV1().IPs().Create(ctx, ip, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Before the informer starts, so that its first list brings them: the
	// common shape, and one kube-ovn wrote with attach lists and a
	// finalizer.
	for i := range 3 {
		create(record(i))
	}
	odd := record(100)
	odd.Finalizers = []string{"kube-ovn-controller"}
	odd.Spec.AttachIPs, odd.Spec.AttachSubnets = []string{"192.168.0.5"}, []string{"net1"}
	create(odd)

	factory := externalversions.NewSharedInformerFactoryWithOptions(fast, 0, externalversions.WithTransform(trimCRD))
	inf := factory.Kubeovn().V1().IPs().Informer()
	lister := ipcache.NewLister(inf.GetIndexer())
	checkCompactCache(t, ctx, factory, inf, compactCheck{
		// And after, so that watch events bring them.
		createAfter: func() {
			for i := 3; i < 6; i++ {
				create(record(i))
			}
		},
		want: 7, odd: odd.Name,
		cached: func(o any) (string, bool, bool) {
			switch r := o.(type) {
			case *ipcache.IP:
				return r.Name, true, true
			case *kubeovnv1.IP:
				return r.Name, false, true
			}
			return "", false, false
		},
		readBack: func(name string) (any, any) {
			got, err := lister.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			want, err := kube.Shardnet.KubeovnV1().IPs().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// The kind is the only thing a cached record may lack.
			g, w := got.DeepCopy(), want.DeepCopy()
			g.TypeMeta, w.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
			w.ManagedFields = nil
			return g, w
		},
	})
}

// compactCheck is what checkCompactCache needs of one resource.
type compactCheck struct {
	// createAfter creates more objects once the informer has synced.
	createAfter func()
	// want is how many objects the informer ends up with; odd the name of
	// the one of uncommon shape, which is cached as it came.
	want int
	odd  string
	// cached reads a cached object: its name, whether it is of the
	// compact type, and whether it is of the resource at all.
	cached func(any) (name string, compact, ok bool)
	// readBack is what the lister reads of a name and what the API
	// server holds, to compare.
	readBack func(name string) (got, want any)
}

// checkCompactCache starts factory, which must have inf, and checks that
// inf caches every object of c but the odd one in the compact type,
// whether the first list or a watch event brought it, and that its lister
// reads back what the API server holds.
func checkCompactCache(t *testing.T, ctx context.Context, factory externalversions.SharedInformerFactory, inf cache.SharedIndexInformer, c compactCheck) {
	t.Helper()
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	c.createAfter()
	idx := inf.GetIndexer()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return len(idx.ListKeys()) == c.want, nil
	}); err != nil {
		t.Fatalf("the informer holds %d objects, want %d: %v", len(idx.ListKeys()), c.want, err)
	}
	for _, o := range idx.List() {
		name, compact, ok := c.cached(o)
		switch {
		case !ok:
			t.Fatalf("the informer holds a %T", o)
		case compact && name == c.odd:
			t.Errorf("%s, of an uncommon shape, is cached as a %T", name, o)
		case !compact && name != c.odd:
			t.Errorf("%s, of the common shape, is cached as a %T", name, o)
		}
		if got, want := c.readBack(name); !reflect.DeepEqual(got, want) {
			t.Errorf("the lister reads %s as\n%#v\nthe API server holds\n%#v", name, got, want)
		}
	}
}
