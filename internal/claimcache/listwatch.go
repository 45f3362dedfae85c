package claimcache

import (
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
// (v1alpha1.EncodeSpec), so the claim informer lists and watches claims
// as their metadata only (metawatch). A claim whose metadata does not
// carry its spec (one written before the label existed, or one whose
// annotation was edited so that it no longer describes its claim) is
// read in full.
// A claim is never updated after its create, so its spec read a moment
// later is the spec it had.

// NewListWatch returns the ListerWatcher of the claim informer: claims
// listed and watched as their metadata (meta), and read in full with
// full where their metadata does not carry their spec. Give it the
// informer's store (SetStore).
func NewListWatch(meta metadata.Interface, full metawatch.FullClient[*v1alpha1.AddressClaim, *v1alpha1.AddressClaimList]) *metawatch.ListWatch {
	return metawatch.New(meta.Resource(v1alpha1.SchemeGroupVersion.WithResource("addressclaims")), kind{metawatch.Full[*v1alpha1.AddressClaim, *v1alpha1.AddressClaimList]{Client: full}})
}

// kind is the metawatch.Kind of claims.
type kind struct {
	metawatch.Full[*v1alpha1.AddressClaim, *v1alpha1.AddressClaimList]
}

func (kind) Resource() string { return "addressclaims" }

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
