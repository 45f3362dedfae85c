package metawatch

import (
	"context"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// oneList is a metadata client that answers List with one page.
type oneList struct {
	metadata.ResourceInterface
	list *metav1.PartialObjectMetadataList
}

func (o oneList) List(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	return o.list.DeepCopy(), nil
}

// testKind stands objects for themselves: a marked object's metadata is
// the object, an unmarked one is read from full (ListFull) or current
// (Get).
type testKind struct {
	full    []runtime.Object
	current map[string]*metav1.PartialObjectMetadata
	gets    atomic.Int32
}

func (k *testKind) Resource() string { return "things" }
func (k *testKind) FromMetadata(m *metav1.PartialObjectMetadata) (runtime.Object, bool) {
	return m, m.Labels[v1alpha1.LabelSpecInMetadata] == v1alpha1.SpecInMetadataV1
}
func (k *testKind) Cached(obj runtime.Object) runtime.Object { return obj }
func (k *testKind) ListFull(context.Context, metav1.ListOptions) ([]runtime.Object, error) {
	return k.full, nil
}
func (k *testKind) Get(_ context.Context, name string) (runtime.Object, error) {
	k.gets.Add(1)
	if m, ok := k.current[name]; ok {
		return m.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "things"}, name)
}
func (k *testKind) Deleted(m *metav1.PartialObjectMetadata, _ any) runtime.Object { return m }

func thing(name, uid, version string, marked bool) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("u-" + uid), ResourceVersion: version}}
	if marked {
		m.Labels = map[string]string{v1alpha1.LabelSpecInMetadata: v1alpha1.SpecInMetadataV1}
	}
	return m
}

// TestListTakesFullObjectsAtTheListedVersion: an unmarked object the
// full list has at the metadata list's version is taken from it; one it
// has at another version (changed between the two lists) or of another
// UID is read again, so the cache holds the version the list stands at.
func TestListTakesFullObjectsAtTheListedVersion(t *testing.T) {
	k := &testKind{
		full: []runtime.Object{
			thing("same", "1", "10", false),
			thing("changed", "2", "11", false), // the metadata list has 12
			thing("replaced", "old", "13", false),
		},
		current: map[string]*metav1.PartialObjectMetadata{
			"changed":  thing("changed", "2", "12", false),
			"replaced": thing("replaced", "3", "14", false),
		},
	}
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "20"}}
	for _, m := range []*metav1.PartialObjectMetadata{
		thing("same", "1", "10", false), thing("changed", "2", "12", false),
		thing("replaced", "3", "14", false), thing("marked", "4", "15", true),
	} {
		list.Items = append(list.Items, *m)
	}
	l := New(oneList{list: list}, k)
	out, err := l.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, it := range out.(*metav1.List).Items {
		m := it.Object.(*metav1.PartialObjectMetadata)
		got[m.Name] = string(m.UID) + "@" + m.ResourceVersion
	}
	want := map[string]string{"same": "u-1@10", "changed": "u-2@12", "replaced": "u-3@14", "marked": "u-4@15"}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: listed %q, want %q", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	if n := k.gets.Load(); n != 2 {
		t.Errorf("%d objects read again, want 2 (changed, replaced)", n)
	}
	if rv := out.(*metav1.List).ResourceVersion; rv != "20" {
		t.Errorf("list at %q, want the metadata list's 20", rv)
	}
}
