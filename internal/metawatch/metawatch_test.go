package metawatch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
	"github.com/shardnet/shardnet/internal/metawatch"
	"github.com/shardnet/shardnet/test/harness"
)

// TestListPagesAndWatchesFromItsVersion: on a real API server, a list
// of more objects than a page holds comes whole, every object once, at
// one resource version (the first page's), whatever version the
// reflector asked for; and a watch from that version delivers what was
// written after it.
func TestListPagesAndWatchesFromItsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	defer func(n int64) { *metawatch.PageSize = n }(*metawatch.PageSize)
	*metawatch.PageSize = 2
	kube := harness.StartKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	claims := kube.Shardnet.ShardnetV1alpha1().AddressClaims()
	claim := func(i int, marked bool) *v1alpha1.AddressClaim {
		addr := fmt.Sprintf("10.20.0.%d", i+1)
		c := &v1alpha1.AddressClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "pages." + addr, Labels: map[string]string{v1alpha1.LabelSubnet: "pages", v1alpha1.LabelFamily: "IPv4"}},
			Spec: v1alpha1.AddressClaimSpec{Subnet: "pages", Address: addr, Provider: "ovn",
				Owner: v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "default", Name: fmt.Sprint("p", i)}},
		}
		if marked {
			v, _ := v1alpha1.EncodeSpec(&c.Spec)
			c.Labels[v1alpha1.LabelSpecInMetadata] = v1alpha1.SpecInMetadataV1
			c.Annotations = map[string]string{v1alpha1.AnnotationSpec: v}
		}
		return c
	}
	for i := range 7 {
		if _, err := claims.Create(ctx, claim(i, i%3 != 0), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mc, err := metadata.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	lw := claimcache.NewListWatch(mc, claims)
	for _, rv := range []string{"0", ""} {
		list, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: rv, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, o := range items {
			spec, name, ok := claimcache.SpecOf(o)
			if !ok || seen[name] || spec.Subnet != "pages" {
				t.Errorf("list from %q: item %T %s (seen before %v)", rv, o, name, seen[name])
			}
			seen[name] = true
		}
		if len(seen) != 7 {
			t.Errorf("list from %q: %d claims, want 7", rv, len(seen))
		}
		lm, err := meta.ListAccessor(list)
		if err != nil || lm.GetResourceVersion() == "" || lm.GetContinue() != "" {
			t.Fatalf("list from %q: version %q, continue %q, %v", rv, lm.GetResourceVersion(), lm.GetContinue(), err)
		}
		if rv != "" {
			continue
		}
		w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: lm.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := claims.Create(ctx, claim(7, true), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			c, ok := ev.Object.(*v1alpha1.AddressClaim)
			if !ok || c.Spec != claim(7, true).Spec {
				t.Errorf("watch event %s %T %+v, want the add of %+v", ev.Type, ev.Object, ev.Object, claim(7, true).Spec)
			}
		case <-ctx.Done():
			t.Fatal("no watch event")
		}
		w.Stop()
	}
}
