package metawatch_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
	"github.com/shardnet/shardnet/internal/metawatch"
	"github.com/shardnet/shardnet/test/harness"
)

// testClaim is the claim of addr in subnet for pod p<owner> of the
// default namespace; marked, it carries its spec in its metadata as
// shardnet writes it.
func testClaim(subnet, addr string, owner int, marked bool) *v1alpha1.AddressClaim {
	c := &v1alpha1.AddressClaim{
		ObjectMeta: metav1.ObjectMeta{Name: subnet + "." + addr, Labels: map[string]string{v1alpha1.LabelSubnet: subnet, v1alpha1.LabelFamily: "IPv4"}},
		Spec: v1alpha1.AddressClaimSpec{Subnet: subnet, Address: addr, Provider: "ovn",
			Owner: v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "default", Name: fmt.Sprint("p", owner)}},
	}
	if marked {
		v, _ := v1alpha1.EncodeSpec(&c.Spec)
		c.Labels[v1alpha1.LabelSpecInMetadata] = v1alpha1.SpecInMetadataV1
		c.Annotations = map[string]string{v1alpha1.AnnotationSpec: v}
	}
	return c
}

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
		return testClaim("pages", fmt.Sprintf("10.20.0.%d", i+1), i, marked)
	}
	for i := range 7 {
		if _, err := claims.Create(ctx, claim(i, i%3 != 0), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mc, err := metawatch.NewClient(kube.Config, nil)
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

// TestClientAsClientGoButManagedFields: on a real API server, Client
// lists and watches the objects' metadata as client-go's metadata client
// does, but for their managed fields, which it leaves out.
func TestClientAsClientGoButManagedFields(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	kube := harness.StartKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	claims := kube.Shardnet.ShardnetV1alpha1().AddressClaims()
	claim := func(i int) *v1alpha1.AddressClaim {
		c := testClaim("wire", fmt.Sprintf("10.30.0.%d", i+1), i, false)
		c.Annotations, c.Finalizers = map[string]string{"note": fmt.Sprint(i)}, []string{"shardnet.io/test"}
		return c
	}
	for i := range 5 {
		if _, err := claims.Create(ctx, claim(i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	upstream, err := metadata.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := metawatch.NewClient(kube.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	gvr := v1alpha1.SchemeGroupVersion.WithResource("addressclaims")
	want, err := upstream.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Items) != 5 || len(want.Items[0].ManagedFields) == 0 {
		t.Fatalf("client-go listed %d claims, the first with %d managed fields", len(want.Items), len(want.Items[0].ManagedFields))
	}
	for i := range want.Items {
		want.Items[i].ManagedFields = nil
	}
	got, err := ours.Resource(gvr).List(ctx, metav1.ListOptions{ResourceVersion: want.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("listed\n%#v\nwant\n%#v", got, want)
	}
	// Both watch from the list's version and see the same change.
	var events [2]apiwatch.Event
	for i, c := range []metadata.Interface{upstream, ours} {
		w, err := c.Resource(gvr).Watch(ctx, metav1.ListOptions{ResourceVersion: want.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := claims.Create(ctx, claim(5), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case events[i] = <-w.ResultChan():
		case <-ctx.Done():
			t.Fatal("no watch event")
		}
		w.Stop()
	}
	up, ok := events[0].Object.(*metav1.PartialObjectMetadata)
	if !ok || len(up.ManagedFields) == 0 {
		t.Fatalf("client-go's watch event %s %#v", events[0].Type, events[0].Object)
	}
	up.ManagedFields = nil
	if !reflect.DeepEqual(events[1], events[0]) {
		t.Fatalf("watch event\n%#v\nwant\n%#v", events[1], events[0])
	}
}
