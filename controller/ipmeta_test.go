package controller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/ipcache"
	"github.com/shardnet/shardnet/internal/metawatch"
	"github.com/shardnet/shardnet/test/harness"
)

// TestIPInformerReadsRecordsAsMetadata: on a real API server with
// kube-ovn's IP CRD, the IP informer of a replica (ipInformer) lists and
// watches records as their metadata and caches every record with the
// spec the API server holds: records shardnet wrote (generation 1 at the
// create, the read generation plus one at an update) from their
// metadata; kube-ovn's records (unlabelled), records with attach lists
// (never labelled) and records whose spec another writer changed since
// shardnet wrote it (labelled at an older generation) in full. The
// leader's marking (ipcache.MarkOld) labels those it can, at their
// generation, and leaves a record changed since it was read; and a
// deleted unlabelled record reaches the delete handlers with its spec.
func TestIPInformerReadsRecordsAsMetadata(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	kube := harness.StartKubeWithCRDs(t, harness.DefaultCRDDirs(t)[0], harness.KubeOVNCRDDir(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	fast, err := CRDClient(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	ips := kube.Shardnet.KubeovnV1().IPs()
	record := func(i int, shardnets bool) *kubeovnv1.IP {
		addr := fmt.Sprintf("10.18.0.%d", i+1)
		ip := &kubeovnv1.IP{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d.default", i), Labels: map[string]string{"ovn.kubernetes.io/subnet": "ipmeta-test"}},
			Spec: kubeovnv1.IPSpec{PodName: fmt.Sprintf("pod-%d", i), Namespace: "default", Subnet: "ipmeta-test", NodeName: "n1",
				IPAddress: addr, V4IPAddress: addr, MacAddress: fmt.Sprintf("00:00:00:00:01:%02x", i), PodType: ""},
		}
		if shardnets {
			ipcache.SetSpecInMetadata(ip, 1)
		}
		return ip
	}
	create := func(ip *kubeovnv1.IP) *kubeovnv1.IP {
		t.Helper()
		out, err := ips.Create(ctx, ip, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	create(record(0, true))
	create(record(1, false))
	attach := record(2, false)
	attach.Spec.AttachSubnets, attach.Spec.AttachIPs = []string{"other"}, []string{"10.19.0.1"}
	create(attach)
	// Written by shardnet, then its spec changed by another writer that
	// keeps the annotation: generation 2, annotation of 1.
	changed := create(record(3, true))
	changed.Spec.ContainerID = "changed-by-kube-ovn"
	if _, err := ips.Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	meta, err := metawatch.NewClient(Protobuf(kube.Config), nil)
	if err != nil {
		t.Fatal(err)
	}
	count := func(how string) float64 { return testutil.ToFloat64(metawatch.FullReads.WithLabelValues("ips", how)) }
	listed, got := count("list"), count("get")
	inf := ipInformer(fast, meta, 0)
	inf.SetTransform(trimCRD)
	events := recordEvents(t, ctx, inf, func(obj any) (kubeovnv1.IPSpec, bool) {
		ip, ok := ipcache.Of(obj)
		if !ok {
			return kubeovnv1.IPSpec{}, false
		}
		return ip.Spec, true
	})
	stop := make(chan struct{})
	defer close(stop)
	go inf.Run(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the IP informer did not sync")
	}
	if d := count("list") - listed; d != 2 {
		t.Errorf("records read in full by the list: %v, want 2 (kube-ovn's and the attach lists')", d)
	}
	if d := count("get") - got; d != 1 {
		t.Errorf("records read in full by a get: %v, want 1 (the one changed since)", d)
	}
	lister := ipcache.NewLister(inf.GetIndexer())
	check := func(name string, compact bool) *kubeovnv1.IP {
		t.Helper()
		obj, exists, err := inf.GetIndexer().GetByKey(name)
		if err != nil || !exists {
			t.Fatalf("record %s not cached (%v)", name, err)
		}
		if _, isCompact := obj.(*ipcache.IP); isCompact != compact {
			t.Errorf("record %s cached as %T, want compact %v", name, obj, compact)
		}
		c, err := lister.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ips.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(c.Spec) != fmt.Sprint(want.Spec) || c.UID != want.UID || c.Generation != want.Generation {
			t.Errorf("record %s cached as %+v (generation %d), the API server has %+v (generation %d)", name, c.Spec, c.Generation, want.Spec, want.Generation)
		}
		return c
	}
	check(record(0, true).Name, true)
	check(record(1, false).Name, true)
	check(attach.Name, false)
	check(changed.Name, false)
	wait := events.next
	for range 4 {
		if e := wait(); e.kind != "add" {
			t.Fatalf("event %+v before the watch, want the list's adds", e)
		}
	}

	// An update as shardnet writes one (ensureIPRecord): read from the
	// metadata, at the generation it makes.
	cur := check(record(0, true).Name, true)
	upd := cur.DeepCopy()
	upd.Spec.NodeName = "n2"
	ipcache.SetSpecInMetadata(upd, cur.Generation+1)
	if _, err := ips.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := wait(); e.kind != "update" || e.obj.NodeName != "n2" {
		t.Errorf("event %+v, want the update to node n2", e)
	}
	check(upd.Name, true)
	if d := count("get") - got; d != 1 {
		t.Errorf("records read in full by a get: %v, want still 1: shardnet's own update's generation is not the one it wrote", d)
	}
	now, err := ips.Get(ctx, upd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if spec, ok, err := ipcache.DecodeSpec(now.Generation, now.Labels, now.Annotations); !ok || err != nil || fmt.Sprint(spec) != fmt.Sprint(now.Spec) {
		t.Errorf("after shardnet's update the record is at generation %d with %q: reads %+v, %v, %v; the next list would read it in full",
			now.Generation, now.Annotations[v1alpha1.AnnotationSpec], spec, ok, err)
	}

	// A deleted unlabelled record reaches the handlers with its spec.
	gone := record(1, false)
	if err := ips.Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := wait(); e.kind != "delete" || e.obj.IPAddress != gone.Spec.IPAddress || e.obj.MacAddress != gone.Spec.MacAddress {
		t.Errorf("event %+v, want the delete of %+v", e, gone.Spec)
	}

	// The leader's marking: the record changed since shardnet wrote it is
	// marked at its generation; the attach lists' is left; a record
	// changed after it was cached is refused by its resourceVersion.
	create(record(4, false))
	if e := wait(); e.kind != "add" {
		t.Fatalf("event %+v, want the add of %s", e, record(4, false).Name)
	}
	late, err := ips.Get(ctx, record(4, false).Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	late.Spec.ContainerID = "changed-after-the-read"
	if _, err := ips.Update(ctx, late, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var patched []string
	patch := func(ctx context.Context, name string, p []byte) error {
		_, err := ips.Patch(ctx, name, types.MergePatchType, p, metav1.PatchOptions{})
		if err == nil {
			patched = append(patched, name)
		}
		return err
	}
	// The update of record 4 may or may not be cached yet: marking it
	// from the cached version before is refused, from the one after is
	// right. Either way what is marked must read back from the metadata.
	marked, left, err := ipcache.MarkOld(ctx, inf.GetIndexer(), patch, 100)
	if err != nil || marked < 1 || left < 1 {
		t.Fatalf("MarkOld: %d marked, %d left, %v; want the record changed since marked and the attach lists' left", marked, left, err)
	}
	for _, name := range patched {
		ip, err := ips.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec, ok, err := ipcache.DecodeSpec(ip.Generation, ip.Labels, ip.Annotations)
		if !ok || err != nil || fmt.Sprint(spec) != fmt.Sprint(ip.Spec) {
			t.Errorf("record %s marked with %q at generation %d (spec %+v): reads %+v, %v, %v", name, ip.Annotations[v1alpha1.AnnotationSpec], ip.Generation, ip.Spec, spec, ok, err)
		}
	}
	if !slices.Contains(patched, changed.Name) || slices.Contains(patched, attach.Name) {
		t.Errorf("marked %v: want %s among them and not %s", patched, changed.Name, attach.Name)
	}
}
