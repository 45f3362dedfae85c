package claimcache

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/metawatch"
)

// Reading claims as their metadata.
//
// A claim written by this version carries its spec in its metadata too
// (v1alpha1.EncodeSpec), so the claim informer lists claims as their
// metadata only (metawatch). A claim whose metadata does not carry its
// spec (one written before the label existed, or one whose annotation
// was edited so that it no longer describes its claim) is read in full.
// A claim is never updated after its create, so its spec read a moment
// later is the spec it had.

// FullClient reads claims in full: the typed client's AddressClaims().
type FullClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*v1alpha1.AddressClaimList, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.AddressClaim, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// NewListWatch returns the ListerWatcher of the claim informer: claims
// listed as their metadata (meta), read in full with full where their
// metadata does not carry their spec, and watched in full.
func NewListWatch(meta metadata.Interface, full FullClient) *metawatch.ListWatch {
	return metawatch.New(meta.Resource(v1alpha1.SchemeGroupVersion.WithResource("addressclaims")), kind{full})
}

// kind is the metawatch.Kind of claims.
type kind struct{ full FullClient }

func (kind) Resource() string { return "addressclaims" }

// unmarked selects the claims whose metadata does not say it carries
// their spec.
var unmarked = v1alpha1.LabelSpecInMetadata + "!=" + v1alpha1.SpecInMetadataV1

func (kind) Unmarked() string { return unmarked }

func (k kind) ListFull(ctx context.Context, opts metav1.ListOptions) ([]runtime.Object, error) {
	l, err := k.full.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

func (k kind) Get(ctx context.Context, name string) (runtime.Object, error) {
	return k.full.Get(ctx, name, metav1.GetOptions{})
}

func (k kind) WatchFull(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return k.full.Watch(ctx, opts)
}

func (kind) FromMetadata(m *metav1.PartialObjectMetadata) (runtime.Object, bool) {
	c, ok := fromMetadata(m)
	return c, ok
}

// Cached is what the cache keeps of a claim (New).
func (kind) Cached(obj runtime.Object) runtime.Object {
	if c, ok := obj.(*v1alpha1.AddressClaim); ok {
		if cached, ok := New(c).(*Claim); ok {
			return cached
		}
	}
	return obj
}

// fromMetadata returns the claim m stands for when its metadata carries
// its spec. The claim has m's metadata without the spec's annotation.
func fromMetadata(m *metav1.PartialObjectMetadata) (*v1alpha1.AddressClaim, bool) {
	spec, ok, err := v1alpha1.DecodeSpec(m.Name, m.Labels, m.Annotations)
	if !ok || err != nil {
		return nil, false
	}
	c := &v1alpha1.AddressClaim{ObjectMeta: m.ObjectMeta, Spec: spec}
	c.Annotations = v1alpha1.WithoutSpecAnnotation(m.Annotations)
	c.ManagedFields = nil
	// The spec's strings are substrings of the annotation's value: those
	// not shared by the informer's transform (the subnet, provider, node,
	// kind and namespace are) get one backing of their own, so that the
	// cache does not keep the whole value for them.
	sp := &c.Spec
	own := sp.Address + sp.MAC + sp.Owner.Name + sp.Owner.UID
	sp.Address, own = own[:len(sp.Address)], own[len(sp.Address):]
	sp.MAC, own = own[:len(sp.MAC)], own[len(sp.MAC):]
	sp.Owner.Name, sp.Owner.UID = own[:len(sp.Owner.Name)], own[len(sp.Owner.Name):]
	return c, true
}
