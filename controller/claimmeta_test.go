package controller

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
	"github.com/shardnet/shardnet/internal/metawatch"
)

// TestClaimInformerReadsClaimsAsMetadata: on a real API server, the claim
// informer of a replica (claimInformer) lists and watches claims as
// their metadata, and caches every claim with the spec the API server
// holds: claims whose metadata carries their spec (as ipam writes them)
// compactly; claims of an older version (no label) and claims whose
// annotation was edited so that it no longer describes them read in
// full, at the list and in the watch; a deleted claim of an older
// version reaches the delete handlers with its spec (from the cache); a
// claim labelled later (claimcache.MarkOld) is cached compactly.
func TestClaimInformerReadsClaimsAsMetadata(t *testing.T) {
	kube, fast, ctx := startWithCRDClient(t)
	const subnet = "claimmeta-test"
	claim := func(i int, marked bool) *v1alpha1.AddressClaim {
		addr := fmt.Sprintf("10.17.0.%d", i+1)
		c := &v1alpha1.AddressClaim{
			ObjectMeta: metav1.ObjectMeta{Name: subnet + "." + addr,
				Labels: map[string]string{v1alpha1.LabelSubnet: subnet, v1alpha1.LabelFamily: "IPv4"}},
			Spec: v1alpha1.AddressClaimSpec{Subnet: subnet, Address: addr, Provider: "ovn", NodeName: "n1",
				Owner: v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "default", Name: fmt.Sprintf("pod-%d", i), UID: fmt.Sprint("u", i)}},
		}
		if i%2 == 0 {
			c.Spec.MAC = fmt.Sprintf("00:00:00:00:00:%02x", i)
		}
		if marked {
			v, ok := v1alpha1.EncodeSpec(&c.Spec)
			if !ok {
				t.Fatalf("EncodeSpec(%+v) refused", c.Spec)
			}
			c.Labels[v1alpha1.LabelSpecInMetadata] = v1alpha1.SpecInMetadataV1
			c.Annotations = map[string]string{v1alpha1.AnnotationSpec: v}
		}
		return c
	}
	claims := kube.Shardnet.ShardnetV1alpha1().AddressClaims()
	var created []string
	create := func(c *v1alpha1.AddressClaim) {
		t.Helper()
		if _, err := claims.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		created = append(created, c.Name)
	}
	t.Cleanup(func() {
		for _, name := range created {
			_ = claims.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	create(claim(0, true))
	create(claim(1, true))
	create(claim(2, false))
	edited := claim(3, true)
	// Edited by hand: the annotation names another address.
	edited.Annotations[v1alpha1.AnnotationSpec] = strings.Replace(edited.Annotations[v1alpha1.AnnotationSpec], "10.17.0.4", "10.17.0.99", 1)
	create(edited)

	meta, err := metawatch.NewClient(Protobuf(kube.Config), nil)
	if err != nil {
		t.Fatal(err)
	}
	listed, got := testutil.ToFloat64(metawatch.FullReads.WithLabelValues("addressclaims", "list")), testutil.ToFloat64(metawatch.FullReads.WithLabelValues("addressclaims", "get"))
	inf := claimInformer(fast, meta, 0)
	inf.SetTransform(trimCRD)
	events := recordEvents(t, ctx, inf, func(obj any) (v1alpha1.AddressClaimSpec, bool) {
		s, _, ok := claimcache.SpecOf(obj)
		if !ok || s.Subnet != subnet {
			return v1alpha1.AddressClaimSpec{}, false
		}
		return *s, true
	})
	stop := make(chan struct{})
	defer close(stop)
	go inf.Run(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the claim informer did not sync")
	}
	if d := testutil.ToFloat64(metawatch.FullReads.WithLabelValues("addressclaims", "list")) - listed; d != 1 {
		t.Errorf("claims read in full by the list: %v, want 1 (the unlabelled one)", d)
	}
	if d := testutil.ToFloat64(metawatch.FullReads.WithLabelValues("addressclaims", "get")) - got; d != 1 {
		t.Errorf("claims read in full by a get: %v, want 1 (the edited one)", d)
	}
	lister := claimcache.NewLister(inf.GetIndexer())
	// check compares the cached claim with the API server's, and how it
	// is cached.
	check := func(name string, compact bool) {
		t.Helper()
		obj, exists, err := inf.GetIndexer().GetByKey(name)
		if err != nil || !exists {
			t.Fatalf("claim %s not cached (%v)", name, err)
		}
		if _, isCompact := obj.(*claimcache.Claim); isCompact != compact {
			t.Errorf("claim %s cached as %T, want compact %v", name, obj, compact)
		}
		c, err := lister.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := claims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Spec != want.Spec || c.UID != want.UID || !maps.Equal(c.Labels, want.Labels) {
			t.Errorf("claim %s cached as %+v (labels %v), the API server has %+v (labels %v)", name, c.Spec, c.Labels, want.Spec, want.Labels)
		}
		if _, ok := c.Annotations[v1alpha1.AnnotationSpec]; ok && compact {
			t.Errorf("claim %s cached with its spec annotation", name)
		}
	}
	check(claim(0, true).Name, true)
	check(claim(1, true).Name, true)
	check(claim(2, false).Name, true)
	check(edited.Name, false)

	wait := events.next
	for range 4 {
		if e := wait(); e.kind != "add" {
			t.Fatalf("event %+v before the watch, want the list's adds", e)
		}
	}
	create(claim(4, true))
	if e := wait(); e.kind != "add" || e.obj != claim(4, true).Spec {
		t.Errorf("event %+v, want the add of %+v", e, claim(4, true).Spec)
	}
	check(claim(4, true).Name, true)
	create(claim(5, false))
	if e := wait(); e.kind != "add" || e.obj != claim(5, false).Spec {
		t.Errorf("event %+v, want the add of %+v (read in full)", e, claim(5, false).Spec)
	}
	check(claim(5, false).Name, true)
	if d := testutil.ToFloat64(metawatch.FullReads.WithLabelValues("addressclaims", "get")) - got; d != 2 {
		t.Errorf("claims read in full by a get: %v, want 2 (the edited one at the list, the unlabelled one in the watch)", d)
	}

	// A deleted claim of an older version reaches the handlers with its
	// spec, which its metadata does not carry.
	gone := claim(5, false)
	if err := claims.Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := wait(); e.kind != "delete" || e.obj != gone.Spec {
		t.Errorf("event %+v, want the delete of %+v", e, gone.Spec)
	}
	if _, exists, _ := inf.GetIndexer().GetByKey(gone.Name); exists {
		t.Errorf("claim %s still cached after its delete", gone.Name)
	}
	// Marked by a leader of this version (claimcache.MarkOld): the spec
	// comes from the metadata from then on. Claims of other tests may be
	// marked too.
	old := claim(2, false)
	patcher := func(ctx context.Context, name string, patch []byte) error {
		_, err := claims.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	marked, left, err := claimcache.MarkOld(ctx, lister, patcher, 1000)
	if err != nil || marked < 1 || left != 0 {
		t.Fatalf("MarkOld: %d marked, %d left, %v; want at least 1 marked, none left", marked, left, err)
	}
	if e := wait(); e.kind != "update" || e.obj != old.Spec {
		t.Errorf("event %+v, want the update of %+v", e, old.Spec)
	}
	// The patch names the claim's UID: another claim of the name is left
	// as it is.
	v, _ := v1alpha1.EncodeSpec(&claim(1, true).Spec)
	wrong := fmt.Sprintf(`{"metadata":{"uid":"not-the-claims","annotations":{%q:%q}}}`, v1alpha1.AnnotationSpec, v)
	if err := patcher(ctx, claim(0, true).Name, []byte(wrong)); !apierrors.IsConflict(err) && !apierrors.IsInvalid(err) {
		t.Errorf("a patch naming another UID: %v, want a conflict or an invalid", err)
	}
	check(old.Name, true)

}
