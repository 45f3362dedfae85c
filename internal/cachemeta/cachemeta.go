// Package cachemeta is the object metadata that the informers' compact
// cached types keep (ipcache.IP, claimcache.Claim). A metav1.ObjectMeta
// has fifteen fields; an IP record or claim of the common shape uses the
// name, UID, version, generation, creation time and labels of them, which
// Meta keeps in 80 bytes, the UID packed in 16 of them (internal/uid):
// as a string it was 16 bytes and an allocation of 48 more.
//
// Meta is a metav1.Object, and so is every type that embeds it, so
// client-go's key and label functions read a cached object's name and
// labels without building metadata: every object passes the key function
// several times while a replica's caches load. The setters change the
// fields Meta keeps and ignore the others; nothing writes through them,
// since an update starts from the API type the cached object is built
// into.
package cachemeta

import (
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/internal/uid"
)

// Meta is the metadata of a compact cached object.
type Meta struct {
	Name string
	// uid is the UID packed (internal/uid); uidText the UID when it
	// could not be, nil otherwise.
	uid             uid.Packed
	uidText         *types.UID
	ResourceVersion string
	// Generation is 1 on every custom resource the API server has
	// created, and counts its spec's changes.
	Generation int64
	Labels     map[string]string
	// created is the creation time in Unix seconds, the API's precision,
	// plus createdOffset; 0 when there is none, so that a zero Meta has
	// none.
	created int64
}

// createdOffset is far from any Unix time a metav1.Time can hold but
// the zero time's.
const createdOffset = 1 << 62

// Keeps reports whether Meta keeps everything of m a reader uses:
// nothing is set but the fields it has (managedFields included: the
// transforms drop those first), and the creation time is whole seconds in
// local time, as metav1.Time decodes it, so that it comes back as it was.
func Keeps(m *metav1.ObjectMeta) bool {
	if m.Namespace != "" || m.GenerateName != "" || m.SelfLink != "" ||
		m.DeletionTimestamp != nil || m.DeletionGracePeriodSeconds != nil || m.Annotations != nil ||
		m.OwnerReferences != nil || m.Finalizers != nil || m.ManagedFields != nil {
		return false
	}
	t := m.CreationTimestamp.Time
	return t.IsZero() || (t.Nanosecond() == 0 && t.Location() == time.Local)
}

// From is what Meta keeps of m (see Keeps), sharing its label map and
// strings.
func From(m *metav1.ObjectMeta) Meta {
	out := Meta{Name: m.Name, ResourceVersion: m.ResourceVersion, Generation: m.Generation, Labels: m.Labels}
	out.SetUID(m.UID)
	out.SetCreationTimestamp(m.CreationTimestamp)
	return out
}

// ObjectMeta is the metadata m stands for, sharing m's label map.
func (m *Meta) ObjectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, UID: m.GetUID(), ResourceVersion: m.ResourceVersion, Generation: m.Generation, Labels: m.Labels,
		CreationTimestamp: m.GetCreationTimestamp()}
}

// DeepCopy returns a copy of m with a label map of its own.
func (m *Meta) DeepCopy() Meta {
	out := *m
	if m.Labels != nil {
		out.Labels = maps.Clone(m.Labels)
	}
	return out
}

var _ metav1.Object = (*Meta)(nil)

// The metav1.Object accessors: those of the fields Meta keeps read and
// write them; the others read as unset and ignore a write.

func (m *Meta) GetNamespace() string                          { return "" }
func (m *Meta) SetNamespace(string)                           {}
func (m *Meta) GetName() string                               { return m.Name }
func (m *Meta) SetName(name string)                           { m.Name = name }
func (m *Meta) GetGenerateName() string                       { return "" }
func (m *Meta) SetGenerateName(string)                        {}
func (m *Meta) GetResourceVersion() string                    { return m.ResourceVersion }
func (m *Meta) SetResourceVersion(v string)                   { m.ResourceVersion = v }
func (m *Meta) GetGeneration() int64                          { return m.Generation }
func (m *Meta) SetGeneration(g int64)                         { m.Generation = g }
func (m *Meta) GetSelfLink() string                           { return "" }
func (m *Meta) SetSelfLink(string)                            {}
func (m *Meta) GetDeletionTimestamp() *metav1.Time            { return nil }
func (m *Meta) SetDeletionTimestamp(*metav1.Time)             {}
func (m *Meta) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (m *Meta) SetDeletionGracePeriodSeconds(*int64)          {}
func (m *Meta) GetLabels() map[string]string                  { return m.Labels }
func (m *Meta) SetLabels(l map[string]string)                 { m.Labels = l }
func (m *Meta) GetAnnotations() map[string]string             { return nil }
func (m *Meta) SetAnnotations(map[string]string)              {}
func (m *Meta) GetFinalizers() []string                       { return nil }
func (m *Meta) SetFinalizers([]string)                        {}
func (m *Meta) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (m *Meta) SetOwnerReferences([]metav1.OwnerReference)    {}
func (m *Meta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (m *Meta) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

// GetUID returns the UID, built from its packed form (a new string).
func (m *Meta) GetUID() types.UID {
	if m.uidText != nil {
		return *m.uidText
	}
	return m.uid.UID()
}

// SetUID keeps u packed when it can be, as it is otherwise.
func (m *Meta) SetUID(u types.UID) {
	if p, ok := uid.Pack(u); ok {
		m.uid, m.uidText = p, nil
		return
	}
	m.uid, m.uidText = uid.Packed{}, &u
}

// GetCreationTimestamp is the creation time, in local time as a decoded
// metav1.Time has it.
func (m *Meta) GetCreationTimestamp() metav1.Time {
	if m.created == 0 {
		return metav1.Time{}
	}
	return metav1.NewTime(time.Unix(m.created-createdOffset, 0))
}

// SetCreationTimestamp sets the creation time, to the second.
func (m *Meta) SetCreationTimestamp(t metav1.Time) {
	if t.IsZero() {
		m.created = 0
		return
	}
	m.created = t.Unix() + createdOffset
}

// Lister reads an informer's indexer whose objects are a compact cached
// type or the API type T itself, as the listers generated for T do: of
// builds a T from a cached object (and returns a T as it is), so every
// object returned is built anew from the cache or is the cache's own, and
// is read-only either way.
type Lister[T any] struct {
	indexer  cache.Indexer
	of       func(any) (T, bool)
	resource schema.GroupResource
}

// NewLister returns the lister of indexer, whose objects of turns into Ts
// and whose not-found errors name resource.
func NewLister[T any](indexer cache.Indexer, of func(any) (T, bool), resource schema.GroupResource) *Lister[T] {
	return &Lister[T]{indexer: indexer, of: of, resource: resource}
}

// Indexer is the indexer l reads.
func (l *Lister[T]) Indexer() cache.Indexer { return l.indexer }

// List returns the cached objects whose labels selector matches.
func (l *Lister[T]) List(selector labels.Selector) (ret []T, err error) {
	err = cache.ListAll(l.indexer, selector, func(obj any) {
		if o, ok := l.of(obj); ok {
			ret = append(ret, o)
		}
	})
	return ret, err
}

// Get returns the cached object of that name.
func (l *Lister[T]) Get(name string) (T, error) {
	obj, exists, err := l.indexer.GetByKey(name)
	if err != nil {
		var zero T
		return zero, err
	}
	o, ok := l.of(obj)
	if !exists || !ok {
		var zero T
		return zero, errors.NewNotFound(l.resource, name)
	}
	return o, nil
}
