// Package claimcache is the form an AddressClaim takes in the claim
// informer's cache. A *v1alpha1.AddressClaim is 408 bytes (a 416-byte
// allocation) whatever it holds: the object metadata has fifteen fields,
// and a claim uses the name, UID, version, generation, creation time and
// labels of them. Claim keeps those and the spec in 216 bytes (a 224-byte
// allocation). Every replica caches every claim, one per pod address: at
// 50,000 pods that is about 10 MB less heap per replica, and the
// informer's key function, which every claim passes several times while
// a replica's caches load, builds nothing.
//
// Nothing a reader uses is dropped. A claim with anything else set
// (annotations, finalizers, owner references, a deletion timestamp, a
// creation time finer than a second) is cached as it came, a
// *v1alpha1.AddressClaim (New). Only the kind and API version go, which
// the items of a list response carry and a watch event's object does not.
//
// Claim is a metav1.Object itself (cachemeta.Meta), so the key function
// reads its name without building metadata.
//
// Readers of one claim keep their *v1alpha1.AddressClaim: Lister is a
// listers.AddressClaimLister over the informer's indexer that builds one
// per read. Readers of many use SpecOf, Each and Exists, which build
// none. A built claim shares the cached one's label map and strings, so,
// as with any informer's objects, readers must not change it.
package claimcache

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	listers "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/cachemeta"
)

// Claim is a cached claim of the common shape: what Claim.Claim restores.
type Claim struct {
	cachemeta.Meta
	Spec v1alpha1.AddressClaimSpec
}

// claimKind is the kind and API version a claim may carry.
var claimKind = metav1.TypeMeta{Kind: "AddressClaim", APIVersion: v1alpha1.SchemeGroupVersion.String()}

// New returns what the cache keeps of c: a *Claim when c has nothing but
// what Claim keeps (its kind aside), else c itself. The *Claim shares c's
// label map and strings. The annotation that copies the spec into the
// metadata is dropped from c first when it matches the spec.
func New(c *v1alpha1.AddressClaim) any {
	// The spec's copy in the metadata (v1alpha1.EncodeSpec) goes when it
	// says what the spec says: the cache has the spec.
	if spec, ok, err := v1alpha1.DecodeSpec(c.Name, c.Labels, c.Annotations); ok && err == nil && spec == c.Spec {
		c.Annotations = v1alpha1.WithoutSpecAnnotation(c.Annotations)
	}
	if (c.TypeMeta != metav1.TypeMeta{} && c.TypeMeta != claimKind) || !cachemeta.Keeps(&c.ObjectMeta) {
		return c
	}
	return &Claim{Meta: cachemeta.From(&c.ObjectMeta), Spec: c.Spec}
}

// Claim returns a new *v1alpha1.AddressClaim with c's fields. It shares
// c's label map and strings: it is read-only, as the cache is.
func (c *Claim) Claim() *v1alpha1.AddressClaim {
	out := new(v1alpha1.AddressClaim)
	c.Into(out)
	return out
}

// Into sets every field of out to c's, sharing c's label map and
// strings.
func (c *Claim) Into(out *v1alpha1.AddressClaim) {
	*out = v1alpha1.AddressClaim{ObjectMeta: c.ObjectMeta(), Spec: c.Spec}
}

// GetObjectKind makes Claim a runtime.Object, for the parts of client-go
// that look for one. A cached claim carries no kind.
func (c *Claim) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns a deep copy of c.
func (c *Claim) DeepCopyObject() runtime.Object {
	return &Claim{Meta: c.Meta.DeepCopy(), Spec: c.Spec}
}

var _ metav1.Object = (*Claim)(nil)

// Of returns the claim an informer object stands for: a
// *v1alpha1.AddressClaim as it is, a cached Claim built into one. ok is
// false for anything else, tombstones included.
func Of(obj any) (*v1alpha1.AddressClaim, bool) {
	switch o := obj.(type) {
	case *Claim:
		return o.Claim(), true
	case *v1alpha1.AddressClaim:
		return o, true
	}
	return nil, false
}

// SpecOf returns the spec and name of the claim an informer object
// stands for, without building a claim. The spec is the cache's: read
// it, never change it. ok is false for anything else, tombstones
// included.
func SpecOf(obj any) (spec *v1alpha1.AddressClaimSpec, name string, ok bool) {
	switch o := obj.(type) {
	case *Claim:
		return &o.Spec, o.Name, true
	case *v1alpha1.AddressClaim:
		return &o.Spec, o.Name, true
	}
	return nil, "", false
}

// Lister is a listers.AddressClaimLister over a claim informer's indexer.
// Every claim it returns is built anew from the cache (Of).
type Lister = cachemeta.Lister[*v1alpha1.AddressClaim]

// NewLister returns the lister of indexer.
func NewLister(indexer cache.Indexer) *Lister {
	return cachemeta.NewLister(indexer, Of, v1alpha1.Resource("addressclaim"))
}

var _ listers.AddressClaimLister = (*Lister)(nil)

// Each calls f with every claim of l whose labels selector matches. Over
// a Lister, a cached Claim is built into one *v1alpha1.AddressClaim that
// the next call fills again, so f must not keep the claim it is given
// (its strings and label map it may); over another lister, f gets what
// its List returns.
func Each(l listers.AddressClaimLister, selector labels.Selector, f func(*v1alpha1.AddressClaim)) error {
	cl, ok := l.(*Lister)
	if !ok {
		all, err := l.List(selector)
		for _, c := range all {
			f(c)
		}
		return err
	}
	var scratch v1alpha1.AddressClaim
	return cache.ListAll(cl.Indexer(), selector, func(obj any) {
		switch c := obj.(type) {
		case *Claim:
			c.Into(&scratch)
			f(&scratch)
		case *v1alpha1.AddressClaim:
			f(c)
		}
	})
}

// Exists reports whether l has a claim of that name, and its UID, without
// building the claim over a Lister.
func Exists(l listers.AddressClaimLister, name string) (types.UID, bool) {
	cl, ok := l.(*Lister)
	if !ok {
		c, err := l.Get(name)
		if err != nil {
			return "", false
		}
		return c.GetUID(), true
	}
	obj, exists, err := cl.Indexer().GetByKey(name)
	if err != nil || !exists {
		return "", false
	}
	if m, ok := obj.(metav1.Object); ok {
		return m.GetUID(), true
	}
	return "", false
}
