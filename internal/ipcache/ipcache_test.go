package ipcache

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// decoded is an IP record as the API server sends it and a decoder reads
// it: every field IP keeps set.
func decoded(t *testing.T, name string) *kubeovnv1.IP {
	t.Helper()
	doc := `{"metadata":{"name":"` + name + `","uid":"u-` + name + `","resourceVersion":"42","generation":1,"creationTimestamp":"2026-12-05T10:11:12Z",
		"labels":{"ovn.kubernetes.io/subnet":"ovn-default","ovn-default":""}},
		"spec":{"podName":"p","namespace":"ns","subnet":"ovn-default","nodeName":"n1","ipAddress":"10.16.0.5,fd00::5",
		"v4IpAddress":"10.16.0.5","v6IpAddress":"fd00::5","macAddress":"00:00:00:aa:bb:cc","containerID":"c1","podType":"StatefulSet"}}`
	ip := new(kubeovnv1.IP)
	if err := json.Unmarshal([]byte(doc), ip); err != nil {
		t.Fatal(err)
	}
	return ip
}

// TestRoundTrip: a record of the common shape is cached as an IP and
// comes back exactly as it was decoded, through IP, Into and Of.
func TestRoundTrip(t *testing.T) {
	in := decoded(t, "p.ns")
	want := in.DeepCopy()
	c, ok := New(in).(*IP)
	if !ok {
		t.Fatalf("New(%+v) is not an *IP", in)
	}
	if got := c.IP(); !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	// Into overwrites whatever the reused record held.
	reused := decoded(t, "other.ns")
	reused.Annotations = map[string]string{"a": "b"}
	reused.Spec.AttachIPs = []string{"192.0.2.1"}
	c.Into(reused)
	if !reflect.DeepEqual(reused, want) {
		t.Fatalf("Into a used record:\n got %+v\nwant %+v", reused, want)
	}
	if got, ok := Of(c); !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("Of a cached IP = %+v, %v", got, ok)
	}
	if got, ok := Of(want); !ok || got != want {
		t.Fatal("Of a *kubeovnv1.IP does not return it as is")
	}
	if _, ok := Of(cache.DeletedFinalStateUnknown{Key: "p.ns", Obj: c}); ok {
		t.Fatal("Of took a tombstone for a record")
	}
	// The cached record shares the decoded one's strings and labels.
	if unsafe.StringData(c.IP().Spec.V4IPAddress) != unsafe.StringData(in.Spec.V4IPAddress) ||
		reflect.ValueOf(c.IP().Labels).UnsafePointer() != reflect.ValueOf(in.Labels).UnsafePointer() {
		t.Fatal("the cached record copied the decoded one's strings or labels")
	}
	// A list response's item carries its kind, a watch event's object
	// does not: both are cached alike.
	listed := decoded(t, "p.ns")
	listed.Kind, listed.APIVersion = "IP", "kubeovn.io/v1"
	if c, ok := New(listed).(*IP); !ok || !reflect.DeepEqual(c.IP(), want) {
		t.Fatalf("a listed record (with its kind) cached as %T", New(listed))
	}
	// A record without a creation time (as tests build them) too.
	bare := &kubeovnv1.IP{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: kubeovnv1.IPSpec{IPAddress: "10.0.0.1"}}
	if got := New(bare).(*IP).IP(); !reflect.DeepEqual(got, bare) {
		t.Fatalf("round trip without a creation time:\n got %+v\nwant %+v", got, bare)
	}
}

// TestUncommonShapeKeptWhole: a record with anything IP does not keep is
// cached as it came.
func TestUncommonShapeKeptWhole(t *testing.T) {
	now := metav1.Now()
	grace := int64(1)
	for name, edit := range map[string]func(*kubeovnv1.IP){
		"another kind":       func(ip *kubeovnv1.IP) { ip.Kind, ip.APIVersion = "Vip", "kubeovn.io/v1" },
		"namespace":          func(ip *kubeovnv1.IP) { ip.Namespace = "ns" },
		"generateName":       func(ip *kubeovnv1.IP) { ip.GenerateName = "g" },
		"selfLink":           func(ip *kubeovnv1.IP) { ip.SelfLink = "/x" },
		"deletionTimestamp":  func(ip *kubeovnv1.IP) { ip.DeletionTimestamp = &now },
		"deletionGrace":      func(ip *kubeovnv1.IP) { ip.DeletionGracePeriodSeconds = &grace },
		"annotations":        func(ip *kubeovnv1.IP) { ip.Annotations = map[string]string{} },
		"ownerReferences":    func(ip *kubeovnv1.IP) { ip.OwnerReferences = []metav1.OwnerReference{{Name: "o"}} },
		"finalizers":         func(ip *kubeovnv1.IP) { ip.Finalizers = []string{"f"} },
		"managedFields":      func(ip *kubeovnv1.IP) { ip.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}} },
		"attachSubnets":      func(ip *kubeovnv1.IP) { ip.Spec.AttachSubnets = []string{"s"} },
		"attachIps":          func(ip *kubeovnv1.IP) { ip.Spec.AttachIPs = []string{} },
		"attachMacs":         func(ip *kubeovnv1.IP) { ip.Spec.AttachMacs = []string{"m"} },
		"sub-second created": func(ip *kubeovnv1.IP) { ip.CreationTimestamp = metav1.NewTime(now.Add(1)) },
		"created in UTC":     func(ip *kubeovnv1.IP) { ip.CreationTimestamp = metav1.NewTime(ip.CreationTimestamp.UTC()) },
	} {
		ip := decoded(t, "p.ns")
		edit(ip)
		if got := New(ip); got != any(ip) {
			t.Errorf("%s: New gave %T, want the record itself", name, got)
		}
	}
}

// TestKeyBuildsNothing: an IP is the metav1.Object client-go's key
// function reads, so keying it allocates nothing.
func TestKeyBuildsNothing(t *testing.T) {
	c := New(decoded(t, "p.ns")).(*IP)
	if n := testing.AllocsPerRun(100, func() {
		if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(c); err != nil || k != "p.ns" {
			t.Fatalf("key %q, %v", k, err)
		}
	}); n != 0 {
		t.Errorf("the informer's key function allocates %v times per IP", n)
	}
}

// TestDeepCopyObject: the copy shares no map a writer could change.
func TestDeepCopyObject(t *testing.T) {
	c := New(decoded(t, "p.ns")).(*IP)
	cp := c.DeepCopyObject().(*IP)
	cp.Labels["x"] = "y"
	if _, ok := c.Labels["x"]; ok {
		t.Fatal("the copy shares its labels with the original")
	}
	cp.Labels = c.Labels
	if !reflect.DeepEqual(cp, c) {
		t.Fatalf("copy %+v differs from %+v", cp, c)
	}
}

// TestInIndexerAndLister: an informer's indexer keys cached records by
// name, and the lister and Each read cached and plain records alike.
func TestInIndexerAndLister(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	cached := New(decoded(t, "a.ns"))
	plain := decoded(t, "b.ns")
	plain.Finalizers = []string{"f"}
	other := New(&kubeovnv1.IP{ObjectMeta: metav1.ObjectMeta{Name: "c.ns", Labels: map[string]string{"ovn.kubernetes.io/subnet": "s2"}}})
	for _, o := range []any{cached, plain, other} {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	if keys := idx.ListKeys(); len(keys) != 3 {
		t.Fatalf("indexer keys %v, want three names", keys)
	}
	l := NewLister(idx)
	got, err := l.Get("a.ns")
	if err != nil || !reflect.DeepEqual(got, decoded(t, "a.ns")) {
		t.Fatalf("Get(a.ns) = %+v, %v", got, err)
	}
	if got, err := l.Get("b.ns"); err != nil || got != plain {
		t.Fatalf("Get(b.ns) = %+v, %v; want the plain record", got, err)
	}
	if _, err := l.Get("missing"); !errors.IsNotFound(err) {
		t.Fatalf("Get(missing) error %v, want NotFound", err)
	}
	all, err := l.List(labels.Everything())
	if err != nil || len(all) != 3 {
		t.Fatalf("List = %d records, %v", len(all), err)
	}
	sel := labels.SelectorFromSet(labels.Set{"ovn.kubernetes.io/subnet": "ovn-default"})
	some, err := l.List(sel)
	if err != nil || len(some) != 2 {
		t.Fatalf("List(%s) = %d records, %v; want a.ns and b.ns", sel, len(some), err)
	}
	seen := map[string]string{}
	Each(idx, func(ip *kubeovnv1.IP) { seen[ip.Name] = ip.Spec.IPAddress })
	if len(seen) != 3 || seen["a.ns"] != "10.16.0.5,fd00::5" || seen["b.ns"] != "10.16.0.5,fd00::5" || seen["c.ns"] != "" {
		t.Fatalf("Each saw %v", seen)
	}
}
