package podcache

import (
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// kept is a pod with every field Pod keeps set, and nothing else.
func kept(ns, name string) *corev1.Pod {
	grace := int64(30)
	now := metav1.Now()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID("u-" + ns + "-" + name), ResourceVersion: "7",
			Labels:            map[string]string{"app": name},
			Annotations:       map[string]string{"ovn.kubernetes.io/ip_address": "10.0.0.5"},
			OwnerReferences:   []metav1.OwnerReference{{Kind: "StatefulSet", Name: "db", UID: "s1"}},
			Finalizers:        []string{"f"},
			CreationTimestamp: now, DeletionTimestamp: &now, DeletionGracePeriodSeconds: &grace,
		},
		Spec: corev1.PodSpec{NodeName: "node-1", HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace},
		Status: corev1.PodStatus{
			Phase: corev1.PodFailed, Reason: "Evicted", PodIP: "10.0.0.5", PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}},
			HostIP: "192.0.2.1", HostIPs: []corev1.HostIP{{IP: "192.0.2.1"}},
		},
	}
}

// TestRoundTrip: every field Pod keeps comes back in Pod.Pod, and
// nothing else is there.
func TestRoundTrip(t *testing.T) {
	in := kept("ns", "p")
	full := in.DeepCopy()
	full.Spec.Containers = []corev1.Container{{Name: "c", Image: "img"}}
	full.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady}}
	got := New(full, full.ObjectMeta).Pod()
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, in)
	}
	if p, ok := Of(New(full, full.ObjectMeta)); !ok || !reflect.DeepEqual(p, in) {
		t.Fatalf("Of a cached pod = %+v, %v", p, ok)
	}
	if p, ok := Of(full); !ok || p != full {
		t.Fatal("Of a *corev1.Pod does not return it as is")
	}
	if _, ok := Of(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: New(in, in.ObjectMeta)}); ok {
		t.Fatal("Of took a tombstone for a pod")
	}
}

// TestCompact: a pod of the common shape (created, scheduled, running,
// not terminating) keeps no rare record and fits the struct's 224 bytes;
// every field that goes to rare, or is kept as an index or a position,
// comes back as it was, whatever its value; the three fields a cached pod
// does not keep are dropped; and emptying the rare fields through the
// setters drops the record again.
func TestCompact(t *testing.T) {
	if n := unsafe.Sizeof(Pod{}); n > 224 {
		t.Errorf("Pod is %d bytes, want at most 224", n)
	}
	common := kept("ns", "p")
	common.DeletionTimestamp, common.DeletionGracePeriodSeconds, common.Finalizers = nil, nil, nil
	common.Status.Phase, common.Status.Reason, common.Spec.RestartPolicy = corev1.PodRunning, "", corev1.RestartPolicyAlways
	common.CreationTimestamp = metav1.NewTime(time.Unix(1700000000, 0))
	common.UID = "0b6f6c1e-6d2a-4c55-9d3e-3f1f2a7c9e10" // as the API server makes them
	c := New(common, common.ObjectMeta)
	if c.rare != nil {
		t.Errorf("a pod of the common shape keeps a rare record: %+v", *c.rare)
	}
	if got := c.Pod(); !reflect.DeepEqual(got, common) {
		t.Fatalf("round trip of the common shape:\n got %+v\nwant %+v", got, common)
	}

	odd := kept("ns", "odd") // its UID is not a UUID
	odd.CreationTimestamp = metav1.NewTime(time.Unix(1700000000, 5).UTC())
	odd.Spec.RestartPolicy = "Sometimes"
	odd.Status.Phase = "Hibernating"
	odd.Status.PodIP = "10.0.0.9" // not the first of status.podIPs
	odd.Status.HostIP = "192.0.2.9"
	if got := New(odd, odd.ObjectMeta).Pod(); !reflect.DeepEqual(got, odd) {
		t.Fatalf("round trip of unusual values:\n got %+v\nwant %+v", got, odd)
	}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "ns"}, Status: corev1.PodStatus{PodIP: "10.0.0.1"}}
	if got := New(bare, bare.ObjectMeta).Pod(); !reflect.DeepEqual(got, bare) {
		t.Fatalf("round trip of an address without a list:\n got %+v\nwant %+v", got, bare)
	}

	dropped := kept("ns", "d")
	dropped.GenerateName, dropped.SelfLink, dropped.Generation = "d-", "/api/v1/namespaces/ns/pods/d", 3
	got := New(dropped, dropped.ObjectMeta).Pod()
	if got.GenerateName != "" || got.SelfLink != "" || got.Generation != 0 {
		t.Errorf("kept generateName %q, selfLink %q, generation %d", got.GenerateName, got.SelfLink, got.Generation)
	}

	term := kept("ns", "t")
	term.CreationTimestamp = common.CreationTimestamp
	c = New(term, term.ObjectMeta)
	if c.rare == nil {
		t.Fatal("a terminating, evicted pod keeps no rare record")
	}
	c.SetDeletionTimestamp(nil)
	c.SetDeletionGracePeriodSeconds(nil)
	c.SetFinalizers(nil)
	c.setReason("")
	c.SetUID(common.UID)
	if c.rare != nil {
		t.Errorf("emptied rare fields still keep a record: %+v", *c.rare)
	}
	if c.GetDeletionTimestamp() != nil || c.GetFinalizers() != nil || c.Reason() != "" || c.Phase() != corev1.PodFailed || c.GetUID() != common.UID {
		t.Error("emptying the rare fields changed what the pod reads")
	}
}

// TestDeepCopyObject: the copy shares nothing a writer could change.
func TestDeepCopyObject(t *testing.T) {
	in := kept("ns", "p")
	c := New(in, in.ObjectMeta)
	cp := c.DeepCopyObject().(*Pod)
	if !reflect.DeepEqual(cp, c) {
		t.Fatalf("copy differs: %+v", cp)
	}
	cp.Annotations.vals[0] = "10.9.9.9"
	cp.Labels["x"] = "y"
	cp.PodIPs[0].IP = "10.9.9.9"
	*cp.TerminationGracePeriodSeconds = 1
	cp.rare.Finalizers[0] = "g"
	*cp.rare.DeletionGracePeriodSeconds = 2
	if _, ok := c.Labels["x"]; ok || c.Annotations.vals[0] != "10.0.0.5" || c.PodIPs[0].IP != "10.0.0.5" || *c.TerminationGracePeriodSeconds != 30 ||
		c.rare.Finalizers[0] != "f" || *c.rare.DeletionGracePeriodSeconds != 30 {
		t.Fatal("the copy shares the original's maps, slices or pointers")
	}
	if !c.GetObjectKind().GroupVersionKind().Empty() {
		t.Fatal("a cached pod carries a kind")
	}
}

// TestLister reads an informer-style indexer holding cached pods and a
// plain *corev1.Pod side by side.
func TestLister(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []*corev1.Pod{kept("a", "p1"), kept("a", "p2"), kept("b", "p1")} {
		if err := idx.Add(New(p, p.ObjectMeta)); err != nil {
			t.Fatal(err)
		}
	}
	plain := kept("b", "plain")
	if err := idx.Add(plain); err != nil {
		t.Fatal(err)
	}
	l := NewLister(idx)
	all, err := l.List(labels.Everything())
	if err != nil || len(all) != 4 {
		t.Fatalf("List = %d pods, %v; want 4", len(all), err)
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "p1"})
	if got, err := l.List(sel); err != nil || len(got) != 2 {
		t.Fatalf("List(app=p1) = %d pods, %v; want 2", len(got), err)
	}
	if got, err := l.Pods("a").List(labels.Everything()); err != nil || len(got) != 2 || got[0].Namespace != "a" || got[1].Namespace != "a" {
		t.Fatalf("Pods(a).List = %v, %v", got, err)
	}
	p, err := l.Pods("b").Get("p1")
	if err != nil || p.Name != "p1" || p.Namespace != "b" || p.Spec.NodeName != "node-1" || p.Status.PodIP != "10.0.0.5" {
		t.Fatalf("Get(b/p1) = %+v, %v", p, err)
	}
	if p, err := l.Pods("b").Get("plain"); err != nil || p != plain {
		t.Fatalf("Get(b/plain) = %p, %v; want the stored *corev1.Pod %p", p, err, plain)
	}
	if _, err := l.Pods("a").Get("missing"); !errors.IsNotFound(err) {
		t.Fatalf("Get of a missing pod: %v, want NotFound", err)
	}
}

// TestAnnotations: a cached pod's annotations, kept as values beside shared sorted keys, read
// back as the map they came from through every way in: Get, All, Map,
// the metav1.Object accessors, and Into over a pod used before.
func TestAnnotations(t *testing.T) {
	m := map[string]string{
		"ovn.kubernetes.io/routed": "true", "ovn.kubernetes.io/allocated": "true", "b": "", "a": "1",
		"ovn.kubernetes.io/ip_address": "10.16.0.5", "ovn.kubernetes.io/mac_address": "00:00:00:aa:bb:cc",
		"ovn.kubernetes.io/cidr": "10.16.0.0/16", "ovn.kubernetes.io/gateway": "10.16.0.1",
		"ovn.kubernetes.io/logical_switch": "ovn-default", "ovn.kubernetes.io/logical_router": "ovn-cluster",
	}
	a := NewAnnotations(m)
	if a.Len() != len(m) {
		t.Fatalf("Len %d, want %d", a.Len(), len(m))
	}
	var keys []string
	for k, v := range a.All() {
		keys = append(keys, k)
		if m[k] != v {
			t.Errorf("All: %s=%q, want %q", k, v, m[k])
		}
	}
	if !slices.IsSorted(keys) || len(keys) != len(m) {
		t.Errorf("All yields %v, want every key once, sorted", keys)
	}
	for k, v := range m {
		if got, ok := a.Get(k); !ok || got != v {
			t.Errorf("Get(%s) = %q, %v; want %q", k, got, ok, v)
		}
	}
	for _, k := range []string{"", "0", "c", "ovn.kubernetes.io/", "zzz"} {
		if got, ok := a.Get(k); ok {
			t.Errorf("Get(%q) = %q, true; want nothing", k, got)
		}
	}
	if got := a.Map(); !reflect.DeepEqual(got, m) {
		t.Errorf("Map = %v, want %v", got, m)
	}
	if !NewAnnotations(nil).IsNil() || NewAnnotations(nil).Map() != nil || NewAnnotations(nil).Len() != 0 {
		t.Error("no annotations became some")
	}
	if e := NewAnnotations(map[string]string{}); e.IsNil() || e.Map() == nil || len(e.Map()) != 0 {
		t.Error("an empty map did not come back empty")
	}
	// Pods with the same annotation names share their keys, not their
	// values, and a copy has values of its own.
	m2 := maps.Clone(m)
	m2["ovn.kubernetes.io/ip_address"] = "10.16.0.6"
	b := NewAnnotations(m2)
	if a.keys != b.keys {
		t.Error("two pods with the same annotation names keep their keys apart")
	}
	if v, _ := b.Get("ovn.kubernetes.io/ip_address"); v != "10.16.0.6" {
		t.Errorf("the second pod reads %q", v)
	}
	fewer := NewAnnotations(map[string]string{"a": "1"})
	if fewer.keys == a.keys || fewer.Len() != 1 {
		t.Error("pods with other annotation names share keys")
	}
	cl := a.Clone()
	cl.vals[0] = "changed"
	if got := a.Map(); !reflect.DeepEqual(got, m) {
		t.Errorf("changing a copy changed the original: %v", got)
	}
	dropped := NewAnnotationsFunc(m, func(k, v string) (string, string, bool) { return k, v + "!", k != "a" })
	if _, ok := dropped.Get("a"); ok || dropped.Len() != len(m)-1 {
		t.Errorf("NewAnnotationsFunc kept %v", dropped)
	}
	if v, _ := dropped.Get("b"); v != "!" {
		t.Errorf("NewAnnotationsFunc value %q, want the changed one", v)
	}

	in := kept("ns", "p")
	in.Annotations = m
	c := New(in, in.ObjectMeta)
	if c.ObjectMeta().Annotations != nil {
		t.Error("the cached pod keeps the annotation map too")
	}
	if got := c.GetAnnotations(); !reflect.DeepEqual(got, m) {
		t.Errorf("GetAnnotations = %v", got)
	}
	var o metav1.Object = c
	if got := o.GetAnnotations(); !reflect.DeepEqual(got, m) {
		t.Errorf("metav1.Object GetAnnotations = %v", got)
	}
	c.SetAnnotations(map[string]string{"k": "v"})
	if got := c.GetAnnotations(); !reflect.DeepEqual(got, map[string]string{"k": "v"}) {
		t.Errorf("after SetAnnotations: %v", got)
	}

	// Into fills one pod again and again: the annotations of the pod read
	// before do not stay, and a pod without annotations has none.
	scratch := new(corev1.Pod)
	other := kept("ns", "q")
	other.Annotations = map[string]string{"only": "q"}
	bare := kept("ns", "r")
	bare.Annotations = nil
	for _, want := range []*corev1.Pod{in, other, in, bare, other} {
		New(want, want.ObjectMeta).Into(scratch)
		if !reflect.DeepEqual(scratch, want) {
			t.Fatalf("Into over a used pod:\n got %+v\nwant %+v", scratch, want)
		}
	}
}
