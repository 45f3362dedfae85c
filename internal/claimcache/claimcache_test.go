package claimcache

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	listers "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// decoded is a claim as the API server sends it and a decoder reads it:
// every field Claim keeps set.
func decoded(t *testing.T, name string) *v1alpha1.AddressClaim {
	t.Helper()
	doc := `{"metadata":{"name":"` + name + `","uid":"u-` + name + `","resourceVersion":"42","generation":1,"creationTimestamp":"2026-12-05T10:11:12Z",
		"labels":{"shardnet.io/subnet":"ovn-default","shardnet.io/family":"IPv4"}},
		"spec":{"subnet":"ovn-default","address":"10.16.0.5","provider":"ovn","mac":"00:00:00:aa:bb:cc","nodeName":"n1",
		"owner":{"kind":"Pod","namespace":"ns","name":"p","uid":"pod-uid"}}}`
	c := new(v1alpha1.AddressClaim)
	if err := json.Unmarshal([]byte(doc), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRoundTrip: a claim of the common shape is cached as a Claim and
// comes back exactly as it was decoded, through Claim, Into and Of.
func TestRoundTrip(t *testing.T) {
	in := decoded(t, "ovn-default.10.16.0.5")
	want := in.DeepCopy()
	c, ok := New(in).(*Claim)
	if !ok {
		t.Fatalf("New(%+v) is not a *Claim", in)
	}
	if got := c.Claim(); !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	reused := decoded(t, "other")
	reused.Annotations = map[string]string{"a": "b"}
	reused.Finalizers = []string{"f"}
	c.Into(reused)
	if !reflect.DeepEqual(reused, want) {
		t.Fatalf("Into a used claim:\n got %+v\nwant %+v", reused, want)
	}
	if got, ok := Of(c); !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("Of a cached Claim = %+v, %v", got, ok)
	}
	if got, ok := Of(want); !ok || got != want {
		t.Fatal("Of a *v1alpha1.AddressClaim does not return it as is")
	}
	if _, ok := Of(cache.DeletedFinalStateUnknown{Key: "x", Obj: c}); ok {
		t.Fatal("Of took a tombstone for a claim")
	}
	if s, name, ok := SpecOf(c); !ok || s != &c.Spec || name != c.Name {
		t.Fatalf("SpecOf a cached Claim = %p %q %v, want its own spec", s, name, ok)
	}
	if s, _, ok := SpecOf(want); !ok || s != &want.Spec {
		t.Fatal("SpecOf a *v1alpha1.AddressClaim is not its spec")
	}
	if _, _, ok := SpecOf("x"); ok {
		t.Fatal("SpecOf took a string for a claim")
	}
	// The cached claim shares the decoded one's strings and labels.
	if unsafe.StringData(c.Claim().Spec.Address) != unsafe.StringData(in.Spec.Address) ||
		reflect.ValueOf(c.Claim().Labels).UnsafePointer() != reflect.ValueOf(in.Labels).UnsafePointer() {
		t.Fatal("the cached claim copied the decoded one's strings or labels")
	}
	listed := decoded(t, "ovn-default.10.16.0.5")
	listed.Kind, listed.APIVersion = "AddressClaim", "shardnet.io/v1alpha1"
	if c, ok := New(listed).(*Claim); !ok || !reflect.DeepEqual(c.Claim(), want) {
		t.Fatalf("a listed claim (with its kind) cached as %T", New(listed))
	}
	bare := &v1alpha1.AddressClaim{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1alpha1.AddressClaimSpec{Address: "10.0.0.1"}}
	if got := New(bare).(*Claim).Claim(); !reflect.DeepEqual(got, bare) {
		t.Fatalf("round trip without a creation time:\n got %+v\nwant %+v", got, bare)
	}
}

// TestSmaller: what the package is for.
func TestSmaller(t *testing.T) {
	if c, a := unsafe.Sizeof(Claim{}), unsafe.Sizeof(v1alpha1.AddressClaim{}); c > 224 || a <= 400 {
		t.Fatalf("a Claim is %d bytes, an AddressClaim %d", c, a)
	}
}

// TestUncommonShapeKeptWhole: a claim with anything Claim does not keep
// is cached as it came.
func TestUncommonShapeKeptWhole(t *testing.T) {
	now := metav1.Now()
	grace := int64(1)
	for name, edit := range map[string]func(*v1alpha1.AddressClaim){
		"another kind":       func(c *v1alpha1.AddressClaim) { c.Kind, c.APIVersion = "IP", "kubeovn.io/v1" },
		"namespace":          func(c *v1alpha1.AddressClaim) { c.Namespace = "ns" },
		"generateName":       func(c *v1alpha1.AddressClaim) { c.GenerateName = "g" },
		"selfLink":           func(c *v1alpha1.AddressClaim) { c.SelfLink = "/x" },
		"deletionTimestamp":  func(c *v1alpha1.AddressClaim) { c.DeletionTimestamp = &now },
		"deletionGrace":      func(c *v1alpha1.AddressClaim) { c.DeletionGracePeriodSeconds = &grace },
		"annotations":        func(c *v1alpha1.AddressClaim) { c.Annotations = map[string]string{} },
		"ownerReferences":    func(c *v1alpha1.AddressClaim) { c.OwnerReferences = []metav1.OwnerReference{{Name: "o"}} },
		"finalizers":         func(c *v1alpha1.AddressClaim) { c.Finalizers = []string{"f"} },
		"managedFields":      func(c *v1alpha1.AddressClaim) { c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}} },
		"sub-second created": func(c *v1alpha1.AddressClaim) { c.CreationTimestamp = metav1.NewTime(now.Add(1)) },
		"created in UTC":     func(c *v1alpha1.AddressClaim) { c.CreationTimestamp = metav1.NewTime(c.CreationTimestamp.UTC()) },
	} {
		c := decoded(t, "x")
		edit(c)
		if got := New(c); got != any(c) {
			t.Errorf("%s: New gave %T, want the claim itself", name, got)
		}
	}
}

// TestObjectAccessors: a Claim is the metav1.Object client-go's key and
// label functions read, with the claim's own metadata, and reading its
// key builds nothing.
func TestObjectAccessors(t *testing.T) {
	in := decoded(t, "ovn-default.10.16.0.5")
	want := in.DeepCopy()
	c := New(in).(*Claim)
	m, err := meta.Accessor(c)
	if err != nil || m != metav1.Object(c) {
		t.Fatalf("meta.Accessor(Claim) = %T, %v; want the claim itself", m, err)
	}
	if m.GetName() != want.Name || m.GetUID() != want.UID || m.GetResourceVersion() != want.ResourceVersion ||
		m.GetGeneration() != want.Generation || !reflect.DeepEqual(m.GetLabels(), want.Labels) ||
		!m.GetCreationTimestamp().Time.Equal(want.CreationTimestamp.Time) || m.GetNamespace() != "" ||
		m.GetAnnotations() != nil || m.GetFinalizers() != nil || m.GetOwnerReferences() != nil || m.GetDeletionTimestamp() != nil {
		t.Fatalf("accessors read %+v, want the metadata of %+v", c, want.ObjectMeta)
	}
	if n := testing.AllocsPerRun(100, func() {
		if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(c); err != nil || k != want.Name {
			t.Fatalf("key %q, %v", k, err)
		}
	}); n != 0 {
		t.Errorf("the informer's key function allocates %v times per Claim", n)
	}
	m.SetName("renamed")
	m.SetUID(types.UID("u2"))
	m.SetResourceVersion("43")
	m.SetGeneration(2)
	m.SetLabels(map[string]string{"a": "b"})
	created := metav1.Unix(1_700_000_000, 0)
	m.SetCreationTimestamp(created)
	m.SetAnnotations(map[string]string{"ignored": "x"})
	got := c.Claim()
	if got.Name != "renamed" || got.UID != "u2" || got.ResourceVersion != "43" || got.Generation != 2 || got.Labels["a"] != "b" ||
		!got.CreationTimestamp.Equal(&created) || got.Annotations != nil {
		t.Fatalf("after the setters: %+v", got.ObjectMeta)
	}
	m.SetCreationTimestamp(metav1.Time{})
	if !c.Claim().CreationTimestamp.IsZero() {
		t.Fatal("a zero creation time did not read back as zero")
	}
}

// TestDeepCopyObject: the copy shares no map a writer could change.
func TestDeepCopyObject(t *testing.T) {
	c := New(decoded(t, "x")).(*Claim)
	cp := c.DeepCopyObject().(*Claim)
	cp.Labels["x"] = "y"
	if _, ok := c.Labels["x"]; ok {
		t.Fatal("the copy shares its labels with the original")
	}
	cp.Labels = c.Labels
	if !reflect.DeepEqual(cp, c) {
		t.Fatalf("copy %+v differs from %+v", cp, c)
	}
}

// TestInIndexerAndLister: an informer's indexer keys cached claims by
// name, and Each and Exists read cached and plain claims alike, over
// this package's lister and another.
func TestInIndexerAndLister(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	cached := New(decoded(t, "a"))
	plain := decoded(t, "b")
	plain.Finalizers = []string{"f"}
	other := New(&v1alpha1.AddressClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "u-c", Labels: map[string]string{v1alpha1.LabelSubnet: "s2"}},
		Spec: v1alpha1.AddressClaimSpec{Subnet: "s2", Address: "10.1.0.1"}})
	for _, o := range []any{cached, plain, other} {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	if keys := idx.ListKeys(); len(keys) != 3 {
		t.Fatalf("indexer keys %v, want three names", keys)
	}
	// The lister is cachemeta.Lister, as ipcache's is (whose test reads
	// it through): here, that it builds claims.
	l := NewLister(idx)
	if got, err := l.Get("a"); err != nil || !reflect.DeepEqual(got, decoded(t, "a")) {
		t.Fatalf("Get(a) = %+v, %v", got, err)
	}
	if all, err := l.List(labels.Everything()); err != nil || len(all) != 3 {
		t.Fatalf("List = %d claims, %v", len(all), err)
	}
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelSubnet: "ovn-default"})
	for name, lister := range map[string]listers.AddressClaimLister{"Lister": l, "generated": listers.NewAddressClaimLister(plainIndexer(t, idx))} {
		seen := map[string]string{}
		if err := Each(lister, labels.Everything(), func(c *v1alpha1.AddressClaim) { seen[c.Name] = c.Spec.Address }); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 3 || seen["a"] != "10.16.0.5" || seen["b"] != "10.16.0.5" || seen["c"] != "10.1.0.1" {
			t.Errorf("%s: Each saw %v", name, seen)
		}
		seen = map[string]string{}
		if err := Each(lister, sel, func(c *v1alpha1.AddressClaim) { seen[c.Name] = c.Spec.Subnet }); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 2 || seen["a"] != "ovn-default" || seen["b"] != "ovn-default" {
			t.Errorf("%s: Each(%s) saw %v", name, sel, seen)
		}
		for claim, uid := range map[string]types.UID{"a": "u-a", "b": "u-b", "c": "u-c"} {
			if got, ok := Exists(lister, claim); !ok || got != uid {
				t.Errorf("%s: Exists(%s) = %q, %v; want %q", name, claim, got, ok, uid)
			}
		}
		if _, ok := Exists(lister, "missing"); ok {
			t.Errorf("%s: Exists(missing)", name)
		}
	}
}

// plainIndexer is an indexer with the claims of idx as the generated
// lister's informer would hold them: *v1alpha1.AddressClaim.
func plainIndexer(t *testing.T, idx cache.Indexer) cache.Indexer {
	out := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, o := range idx.List() {
		c, ok := Of(o)
		if !ok {
			t.Fatalf("%T in the indexer", o)
		}
		if err := out.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
