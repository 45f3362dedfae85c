package reconcile

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/shardnet/shardnet/api/client/clientset/versioned/fake"
	kubeovnlisters "github.com/shardnet/shardnet/api/client/listers/kubeovn/v1"
	claimlisters "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/queue"
)

// vipFixture is a Vip reconciler over a fake clientset, with informer
// indexers the test keeps in step with it (sync).
type vipFixture struct {
	cs                 *fake.Clientset
	vips, pods, claims cache.Indexer
	rec                *record.FakeRecorder
	r                  *VipReconciler
}

func newVipFixture(t *testing.T, vips ...*kubeovnv1.Vip) *vipFixture {
	t.Helper()
	f := &vipFixture{
		cs:     fake.NewSimpleClientset(),
		vips:   cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		pods:   cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		claims: cache.NewIndexer(cache.MetaNamespaceKeyFunc, ClaimIndexers()),
		rec:    record.NewFakeRecorder(100),
	}
	for _, v := range vips {
		if _, err := f.cs.KubeovnV1().Vips().Create(context.Background(), v, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	alloc, err := ipam.NewClaims(ipam.NewClientStore(f.cs))
	if err != nil {
		t.Fatal(err)
	}
	claimLister := claimlisters.NewAddressClaimLister(f.claims)
	registry := NewSubnets(alloc, claimLister, 1)
	cat := testCatalog()
	s := subnet("vips", "10.70.0.0/24", nil)
	cat.subnets[s.Name] = s
	if err := registry.Sync(s, nil, nil); err != nil {
		t.Fatal(err)
	}
	f.r, err = NewVipReconciler(VipConfig{
		Writes: ClientWrites{Shardnet: f.cs}, Vips: kubeovnlisters.NewVipLister(f.vips), Pods: corelisters.NewPodLister(f.pods),
		ClaimLister: claimLister, Claims: alloc, Registry: registry, Catalog: cat, Recorder: f.rec,
		Now: func() time.Time { return time.Unix(100, 0) },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.sync(t)
	return f
}

// sync makes the indexers what the fake API server holds, as informers
// would.
func (f *vipFixture) sync(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	vl, err := f.cs.KubeovnV1().Vips().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var vs []any
	for i := range vl.Items {
		vs = append(vs, &vl.Items[i])
	}
	if err := f.vips.Replace(vs, ""); err != nil {
		t.Fatal(err)
	}
	cl, err := f.cs.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cs []any
	for i := range cl.Items {
		cs = append(cs, &cl.Items[i])
	}
	if err := f.claims.Replace(cs, ""); err != nil {
		t.Fatal(err)
	}
}

func (f *vipFixture) vip(t *testing.T, name string) *kubeovnv1.Vip {
	t.Helper()
	v, err := f.cs.KubeovnV1().Vips().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// claimsOf are the claims on the server held by owner.
func (f *vipFixture) claimsOf(t *testing.T, owner v1alpha1.ClaimOwner) []v1alpha1.AddressClaim {
	t.Helper()
	cl, err := f.cs.ShardnetV1alpha1().AddressClaims().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []v1alpha1.AddressClaim
	for _, c := range cl.Items {
		if c.Spec.Owner == owner {
			out = append(out, c)
		}
	}
	return out
}

func (f *vipFixture) patches() int {
	n := 0
	for _, a := range f.cs.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "vips" {
			n++
		}
	}
	return n
}

func vipObj(name string, spec kubeovnv1.VipSpec) *kubeovnv1.Vip {
	return &kubeovnv1.Vip{ObjectMeta: metav1.ObjectMeta{Name: name, UID: ktypes.UID("uid-" + name)}, Spec: spec}
}

// TestVipReconciler walks a Vip through reservation, a second look that
// changes nothing, a static Vip, a static address already taken, a bad
// spec, a deletion that waits for the pod using the address, and the
// release of a Vip gone without its finalizer.
func TestVipReconciler(t *testing.T) {
	ctx := context.Background()
	dyn := vipObj("dyn", kubeovnv1.VipSpec{Subnet: "vips"})
	st := vipObj("st", kubeovnv1.VipSpec{Subnet: "vips", V4ip: "10.70.0.50", MacAddress: "00:00:00:00:0a:32"})
	bad := vipObj("bad", kubeovnv1.VipSpec{V4ip: "10.70.0.51"})
	f := newVipFixture(t, dyn, st, bad)

	// Reserve: a claim of owner kind Vip, recorded on the Vip.
	if err := f.r.Reconcile(ctx, "dyn"); err != nil {
		t.Fatal(err)
	}
	claims := f.claimsOf(t, VipClaimOwner(dyn))
	if len(claims) != 1 || claims[0].Spec.Owner.Kind != v1alpha1.OwnerVip || claims[0].Spec.MAC == "" {
		t.Fatalf("claims of dyn: %+v", claims)
	}
	got := f.vip(t, "dyn")
	if got.Status.V4ip != claims[0].Spec.Address || got.Status.Mac != claims[0].Spec.MAC || got.Spec.V4ip != got.Status.V4ip ||
		got.Spec.MacAddress != got.Status.Mac || !slices.Contains(got.Finalizers, FinalizerVip) ||
		got.Labels[LabelSubnetName] != "vips" || got.Labels[LabelIPReserved] != "" {
		t.Fatalf("dyn after reserve: %+v", got)
	}
	if _, ok := got.Labels[LabelIPReserved]; !ok {
		t.Fatalf("dyn has no %s label", LabelIPReserved)
	}

	// Again, with the caches caught up: nothing new.
	f.sync(t)
	before := f.patches()
	if err := f.r.Reconcile(ctx, "dyn"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.claimsOf(t, VipClaimOwner(dyn))); n != 1 || f.patches() != before {
		t.Fatalf("second reconcile: %d claims, %d new patches", n, f.patches()-before)
	}

	// Static: exactly the address and MAC asked for.
	if err := f.r.Reconcile(ctx, "st"); err != nil {
		t.Fatal(err)
	}
	sc := f.claimsOf(t, VipClaimOwner(st))
	if len(sc) != 1 || sc[0].Spec.Address != "10.70.0.50" || sc[0].Spec.MAC != "00:00:00:00:0a:32" || f.vip(t, "st").Status.V4ip != "10.70.0.50" {
		t.Fatalf("st: claims %+v, vip %+v", sc, f.vip(t, "st"))
	}

	// A static address another Vip holds: a Warning and a retry.
	clash := vipObj("clash", kubeovnv1.VipSpec{Subnet: "vips", V4ip: "10.70.0.50"})
	if _, err := f.cs.KubeovnV1().Vips().Create(ctx, clash, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync(t)
	err := f.r.Reconcile(ctx, "clash")
	if _, retry := queue.RetryDelay(err); err == nil || queue.IsPermanent(err) || !retry {
		t.Fatalf("clash: %v; want a delayed retry", err)
	}
	if e := <-f.rec.Events; !strings.Contains(e, "Warning "+ReasonVipReserveFailed) {
		t.Fatalf("clash event %q", e)
	}
	if n := len(f.claimsOf(t, VipClaimOwner(clash))); n != 0 || f.vip(t, "clash").Status.V4ip != "" {
		t.Fatalf("clash got %d claims, status %+v", n, f.vip(t, "clash").Status)
	}

	// No subnet: a Warning, not retried.
	if err := f.r.Reconcile(ctx, "bad"); !queue.IsPermanent(err) {
		t.Fatalf("bad: %v", err)
	}
	if e := <-f.rec.Events; !strings.Contains(e, "Warning "+ReasonVipInvalid) {
		t.Fatalf("bad event %q", e)
	}

	// Deleted while a pod runs with its address: the claim and the
	// finalizer stay until the pod is gone.
	f.sync(t)
	addr := claims[0].Spec.Address
	user := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: "ns", Annotations: map[string]string{
		DefaultKey(KeyVIP): "dyn", DefaultKey(KeyIPAddress): addr, DefaultKey(KeyAllocated): "true"}}}
	if err := f.pods.Add(user); err != nil {
		t.Fatal(err)
	}
	deleting := f.vip(t, "dyn").DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(90, 0)}
	if err := f.vips.Update(deleting); err != nil {
		t.Fatal(err)
	}
	err = f.r.Reconcile(ctx, "dyn")
	if _, retry := queue.RetryDelay(err); !retry {
		t.Fatalf("deleting dyn under its pod: %v; want a delayed retry", err)
	}
	if n := len(f.claimsOf(t, VipClaimOwner(dyn))); n != 1 || !slices.Contains(f.vip(t, "dyn").Finalizers, FinalizerVip) {
		t.Fatalf("dyn released under its pod: %d claims, finalizers %v", n, f.vip(t, "dyn").Finalizers)
	}
	if e := <-f.rec.Events; !strings.Contains(e, ReasonVipInUse) || !strings.Contains(e, "ns/user") {
		t.Fatalf("in-use event %q", e)
	}
	// The pod goes: released, finalizer off.
	if err := f.pods.Delete(user); err != nil {
		t.Fatal(err)
	}
	if err := f.r.Reconcile(ctx, "dyn"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.claimsOf(t, VipClaimOwner(dyn))); n != 0 || slices.Contains(f.vip(t, "dyn").Finalizers, FinalizerVip) {
		t.Fatalf("dyn after its pod: %d claims, finalizers %v", n, f.vip(t, "dyn").Finalizers)
	}

	// A Vip gone without its finalizer: its claims go too, unless a live
	// pod names it.
	if err := f.vips.Delete(f.vip(t, "st")); err != nil {
		t.Fatal(err)
	}
	waiting := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", Annotations: map[string]string{DefaultKey(KeyVIP): "st"}}}
	if err := f.pods.Add(waiting); err != nil {
		t.Fatal(err)
	}
	if _, retry := queue.RetryDelay(f.r.Reconcile(ctx, "st")); !retry || len(f.claimsOf(t, VipClaimOwner(st))) != 1 {
		t.Fatal("an orphaned Vip's claims went while a pod names it")
	}
	if err := f.pods.Delete(waiting); err != nil {
		t.Fatal(err)
	}
	if err := f.r.Reconcile(ctx, "st"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.claimsOf(t, VipClaimOwner(st))); n != 0 {
		t.Fatalf("orphaned st keeps %d claims", n)
	}
}
