package claimcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	listers "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// Patcher patches one claim: the typed client's AddressClaims().Patch,
// with a JSON merge patch.
type Patcher func(ctx context.Context, name string, patch []byte) error

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
// is marked, replicas read none in full (ListWatch). It returns how many
// it marked and how many remain unmarked, claims whose spec EncodeSpec
// refuses among them (those stay read in full). A claim gone in between
// counts as neither.
func MarkOld(ctx context.Context, l listers.AddressClaimLister, patch Patcher, max int) (marked, left int, err error) {
	type target struct {
		name string
		body []byte
	}
	var todo []target
	refused := 0
	if err := Each(l, unmarkedSelector, func(c *v1alpha1.AddressClaim) {
		v, ok := v1alpha1.EncodeSpec(&c.Spec)
		if !ok {
			refused++
			return
		}
		if len(todo) == max {
			left++
			return
		}
		body, merr := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid":         c.UID,
			"labels":      map[string]string{v1alpha1.LabelSpecInMetadata: v1alpha1.SpecInMetadataV1},
			"annotations": map[string]string{v1alpha1.AnnotationSpec: v},
		}})
		if merr != nil {
			refused++
			return
		}
		todo = append(todo, target{c.Name, body})
	}); err != nil {
		return 0, 0, err
	}
	var errs []error
	for _, t := range todo {
		switch err := patch(ctx, t.name, t.body); {
		case err == nil:
			marked++
		case apierrors.IsNotFound(err), apierrors.IsInvalid(err), apierrors.IsConflict(err):
			// Gone, or another claim of the name now (its UID differs).
		default:
			left++
			errs = append(errs, fmt.Errorf("claim %s: %w", t.name, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return marked, left + refused, errors.Join(errs...)
}
