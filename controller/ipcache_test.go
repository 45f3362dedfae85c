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
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("IP informer did not sync")
	}
	// And after, so that watch events bring them.
	for i := 3; i < 6; i++ {
		create(record(i))
	}
	idx := inf.GetIndexer()
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return len(idx.ListKeys()) == 7, nil
	}); err != nil {
		t.Fatalf("the informer holds %d records, want 7: %v", len(idx.ListKeys()), err)
	}

	lister := ipcache.NewLister(idx)
	for _, o := range idx.List() {
		var name string
		switch r := o.(type) {
		case *ipcache.IP:
			name = r.Name
			if name == odd.Name {
				t.Errorf("%s, with attach lists and a finalizer, is cached as an ipcache.IP", name)
			}
		case *kubeovnv1.IP:
			name = r.Name
			if name != odd.Name {
				t.Errorf("%s, of the common shape, is cached as a %T", name, o)
			}
		default:
			t.Fatalf("the informer holds a %T", o)
		}
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
		if !reflect.DeepEqual(g, w) {
			t.Errorf("the lister reads %s as\n%#v\nthe API server holds\n%#v", name, g, w)
		}
	}
}
