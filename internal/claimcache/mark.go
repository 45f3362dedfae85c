package claimcache

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	listers "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/metawatch"
)

// unmarkedSelector selects the claims whose metadata does not say it
// carries their spec.
var unmarkedSelector = func() labels.Selector {
	r, err := labels.NewRequirement(v1alpha1.LabelSpecInMetadata, selection.NotEquals, []string{v1alpha1.SpecInMetadataV1})
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*r)
}()

// MarkOld writes the spec of at most max cached claims of an older
// version (l's claims whose metadata does not carry their spec) into
// their metadata, as this version writes claims: the label and the
// annotation of v1alpha1.EncodeSpec, by a merge patch that names the
// claim's UID, so a claim deleted and created again under its name in
// between is refused, not marked with another's spec. Once every claim
// is marked, replicas read none in full. It returns how many it marked
// and how many remain unmarked, claims whose spec EncodeSpec refuses
// among them (those stay read in full).
func MarkOld(ctx context.Context, l listers.AddressClaimLister, patch metawatch.Patcher, max int) (marked, left int, err error) {
	marks := metawatch.Marks{Max: max}
	if err := Each(l, unmarkedSelector, func(c *v1alpha1.AddressClaim) {
		v, ok := v1alpha1.EncodeSpec(&c.Spec)
		marks.Add(c.Name, metav1.ObjectMeta{UID: c.UID}, v, ok)
	}); err != nil {
		return 0, 0, err
	}
	return marks.Apply(ctx, patch)
}
