package reconcile

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	kubeovnlisters "github.com/shardnet/shardnet/api/client/listers/kubeovn/v1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/internal/ipcache"
)

// ipWrites counts the IP record creates, answering AlreadyExists to a
// second create of one name, as the API server does.
type ipWrites struct {
	KubeWrites
	creates map[string]int
}

func (w *ipWrites) CreateIP(_ context.Context, ip *kubeovnv1.IP) error {
	w.creates[ip.Name]++
	if w.creates[ip.Name] > 1 {
		return apierrors.NewAlreadyExists(kubeovnv1.Resource("ips"), ip.Name)
	}
	return nil
}

func (w *ipWrites) DeleteIP(context.Context, string, types.UID) error { return nil }

// TestIPRecordCreateAwaited: while the informer has not delivered a record
// this replica just created, a reconcile of the pod does not send the
// create again (the API server would answer AlreadyExists, a wasted write
// and a retry); once CreatedTTL has passed, or the wanted record differs,
// or the record was deleted, it does.
func TestIPRecordCreateAwaited(t *testing.T) {
	now := time.Unix(1000, 0)
	w := &ipWrites{creates: map[string]int{}}
	// An informer's cache that never delivers the record: the lag.
	lister := kubeovnlisters.NewIPLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	p := &Pods{cfg: PodConfig{Writes: w, IPs: lister}, ipCreated: ipcache.NewCreated(func() time.Time { return now })}
	term := &Term{p: p}
	ctx := context.Background()
	rec := &IPRecord{Name: "p.ns", Labels: map[string]string{"ovn.kubernetes.io/subnet": "ovn-default"},
		Spec: kubeovnv1.IPSpec{PodName: "p", Namespace: "ns", Subnet: "ovn-default", IPAddress: "10.16.0.5", V4IPAddress: "10.16.0.5"}}
	for range 3 {
		if err := term.ensureIPRecord(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if w.creates["p.ns"] != 1 {
		t.Fatalf("%d creates of a record the informer had not delivered yet, want 1", w.creates["p.ns"])
	}
	// Another address: written as before (here answered AlreadyExists,
	// which retries the pod).
	moved := *rec
	moved.Spec.IPAddress, moved.Spec.V4IPAddress = "10.16.0.6", "10.16.0.6"
	if err := term.ensureIPRecord(ctx, &moved); err == nil {
		t.Error("a record wanted with another spec was not written")
	}
	if w.creates["p.ns"] != 2 {
		t.Fatalf("%d creates after the spec changed, want 2", w.creates["p.ns"])
	}
	// createdOnce starts afresh: nothing remembered, one create sent.
	createdOnce := func() {
		t.Helper()
		w.creates = map[string]int{}
		p.ipCreated = ipcache.NewCreated(func() time.Time { return now })
		if err := term.ensureIPRecord(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	// After CreatedTTL the create is sent again.
	createdOnce()
	now = now.Add(ipcache.CreatedTTL)
	_ = term.ensureIPRecord(ctx, rec)
	if w.creates["p.ns"] != 2 {
		t.Errorf("%d creates once the TTL passed, want 2", w.creates["p.ns"])
	}
	// A deleted record is created again at once.
	createdOnce()
	if err := term.deleteIPRecord(ctx, rec.Name, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	_ = term.ensureIPRecord(ctx, rec)
	if w.creates["p.ns"] != 2 {
		t.Errorf("%d creates after a delete, want 2", w.creates["p.ns"])
	}
}
