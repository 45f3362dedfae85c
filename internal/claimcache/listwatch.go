package claimcache

import (
	"context"
	"encoding/hex"
	"net/netip"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/metadata"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/metawatch"
)

// Reading claims as their metadata.
//
// A claim written by this version carries its spec in its metadata too
// (v1alpha1.EncodeSpec), so the claim informer watches claims as their
// metadata only (metawatch). A claim whose metadata does not carry its
// spec (one written before the label existed, or one whose annotation
// was edited so that it no longer describes its claim) is read in full.
// A claim is never updated after its create, so its spec read a moment
// later is the spec it had.

// FullClient reads claims in full: the typed client's AddressClaims().
type FullClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*v1alpha1.AddressClaimList, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.AddressClaim, error)
}

// NewListWatch returns the ListerWatcher of the claim informer: claims
// listed and watched as their metadata (meta), and read in full with
// full where their metadata does not carry their spec. Give it the
// informer's store (SetStore).
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
	c.Annotations = withoutSpec(m.Annotations)
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

// withoutSpec is a without its AnnotationSpec entry: nil when that was
// its only one, else a copy.
func withoutSpec(a map[string]string) map[string]string {
	if len(a) == 1 {
		return nil
	}
	out := make(map[string]string, len(a)-1)
	for k, v := range a {
		if k != v1alpha1.AnnotationSpec {
			out[k] = v
		}
	}
	return out
}

// Deleted is the claim a delete event of m stands for when m does not
// carry its spec: the cached claim, with m's metadata, or, when the
// informer has not cached it yet, the subnet and address its name and
// labels tell (v1alpha1.ClaimName), and no more.
func (kind) Deleted(m *metav1.PartialObjectMetadata, cached any) runtime.Object {
	c := &v1alpha1.AddressClaim{ObjectMeta: m.ObjectMeta}
	if spec, _, ok := SpecOf(cached); ok {
		c.Spec = *spec
		return c
	}
	if subnet := m.Labels[v1alpha1.LabelSubnet]; subnet != "" && strings.HasPrefix(m.Name, subnet+".") {
		rest := m.Name[len(subnet)+1:]
		a, err := netip.ParseAddr(rest)
		if b, herr := hex.DecodeString(rest); err != nil && herr == nil && len(b) == 16 {
			a, err = netip.AddrFrom16([16]byte(b)), nil
		}
		if err == nil && v1alpha1.ClaimName(subnet, a) == m.Name {
			c.Spec.Subnet, c.Spec.Address = subnet, a.String()
		}
	}
	return c
}
