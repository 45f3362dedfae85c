package controller

import (
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
	"github.com/shardnet/shardnet/internal/ipcache"
	"github.com/shardnet/shardnet/internal/podcache"
	"github.com/shardnet/shardnet/internal/shareset"
)

// decodedUID is the UID of the i-th object of a kind, as the API server
// makes one (a random UUID's text) and a decoder hands it over (a string
// of its own).
func decodedUID(kind, i int) types.UID {
	return types.UID(fmt.Sprintf("0b6f6c1e-6d2a-4c55-%04x-%012x", kind, i))
}

// decodedPod is a pod as a decoder hands it to the informer: every string
// its own allocation, as protobuf and JSON decoding make them.
func decodedPod(i int) *corev1.Pod {
	c := strings.Clone
	ann := map[string]string{}
	// What shardnet writes on a pod of the default subnet.
	for k, v := range map[string]string{
		"allocated": "true", "routed": "true", "ip_address": fmt.Sprintf("10.16.%d.%d", i/250, i%250+1),
		"mac_address": fmt.Sprintf("00:00:00:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff),
		"cidr":        "10.16.0.0/16", "gateway": "10.16.0.1", "logical_switch": "ovn-default", "pod_nic_type": "veth-pair",
		"logical_router": "ovn-cluster",
	} {
		ann[c("ovn.kubernetes.io/"+k)] = c(v)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("pod-%d", i), Namespace: c("bench"), UID: decodedUID(0, i), ResourceVersion: "1",
			// What the API server sets on a ReplicaSet's pod; a decoded
			// time is whole seconds, in local time.
			GenerateName: fmt.Sprintf("web-%d-7d9c8b5f4-", i/50), Generation: 1,
			CreationTimestamp: metav1.NewTime(time.Unix(1700000000+int64(i), 0)),
			Labels:            map[string]string{c("app"): c("bench"), c("shardnet.io/bench-run"): c("r1")}, Annotations: ann,
			// The pods of one ReplicaSet, fifty pods each.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: c("apps/v1"), Kind: c("ReplicaSet"),
				Name: fmt.Sprintf("web-%d-7d9c8b5f4", i/50), UID: types.UID(fmt.Sprintf("0b6f6c1e-6d2a-4c55-9d3e-%012d", i/50)),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{NodeName: c(fmt.Sprintf("node-%d", i%100)), RestartPolicy: corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To(int64(30))},
		// A running pod: its address, and its node's.
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			PodIP: fmt.Sprintf("10.16.%d.%d", i/250, i%250+1), PodIPs: []corev1.PodIP{{IP: fmt.Sprintf("10.16.%d.%d", i/250, i%250+1)}},
			HostIP: c(fmt.Sprintf("172.18.0.%d", i%100+2)), HostIPs: []corev1.HostIP{{IP: c(fmt.Sprintf("172.18.0.%d", i%100+2))}}},
	}
}

// trimUnshared is TrimPod without the shared keys: the baseline.
func trimUnshared(p *corev1.Pod) *corev1.Pod {
	meta := p.ObjectMeta
	meta.ManagedFields = nil
	return &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{NodeName: p.Spec.NodeName}, Status: p.Status}
}

// retainedPerItem is the heap kept per item by 20,000 items kept alive
// together, each of objects objects that fill stores into its slot (a
// pod, or a claim and its IP record).
func retainedPerItem(objects int, fill func(i int, slot []any)) float64 {
	const n = 20000
	kept := make([]any, n*objects)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		fill(i, kept[i*objects:(i+1)*objects])
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(after.HeapAlloc-before.HeapAlloc) / n
}

// BenchmarkTrimPodRetained reports the heap a cached pod keeps after
// TrimPod, beside the same pods trimmed into a *corev1.Pod (with the
// shared keys; what a lister builds from the cache) and trimmed without
// shared keys, in one run:
// go test -run '^$' -bench TrimPodRetained ./controller/
func BenchmarkTrimPodRetained(b *testing.B) {
	retained := func(trim func(*corev1.Pod) any) float64 {
		return retainedPerItem(1, func(i int, slot []any) { slot[0] = trim(decodedPod(i)) })
	}
	var cached, full, unshared float64
	for range b.N {
		cached = retained(func(p *corev1.Pod) any { o, _ := TrimPod(p); return o })
		full = retained(func(p *corev1.Pod) any { o, _ := TrimPod(p); return o.(*podcache.Pod).Pod() })
		unshared = retained(func(p *corev1.Pod) any { return trimUnshared(p) })
	}
	b.ReportMetric(cached, "B/pod")
	b.ReportMetric(full, "corev1-B/pod")
	b.ReportMetric(unshared, "unshared-B/pod")
	b.ReportMetric(cached/full, "ratio")
}

// decodedClaimAndIP are a pod's AddressClaim and IP record as the JSON
// decoder hands them over: every string and map their own.
func decodedClaimAndIP(i int) (*v1alpha1.AddressClaim, *kubeovnv1.IP) {
	c := strings.Clone
	addr := fmt.Sprintf("10.16.%d.%d", i/250, i%250+1)
	claim := &v1alpha1.AddressClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "ovn-default." + addr, UID: decodedUID(1, i), ResourceVersion: "123456", Generation: 1,
			Labels: map[string]string{c(v1alpha1.LabelSubnet): c("ovn-default"), c(v1alpha1.LabelFamily): c("IPv4")}},
		Spec: v1alpha1.AddressClaimSpec{Subnet: c("ovn-default"), Address: addr, MAC: fmt.Sprintf("00:00:00:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff),
			NodeName: c(fmt.Sprintf("node-%d", i%100)), Owner: v1alpha1.ClaimOwner{Kind: c(v1alpha1.OwnerPod), Namespace: c("bench"), Name: fmt.Sprintf("pod-%d", i), UID: string(decodedUID(0, i))}},
	}
	ip := &kubeovnv1.IP{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d.bench", i), UID: decodedUID(2, i), ResourceVersion: "123457", Generation: 1,
			Labels: map[string]string{c("ovn.kubernetes.io/subnet"): c("ovn-default"), c("ovn-default"): c("")}},
		Spec: kubeovnv1.IPSpec{PodName: fmt.Sprintf("pod-%d", i), Namespace: c("bench"), Subnet: c("ovn-default"), NodeName: c(fmt.Sprintf("node-%d", i%100)),
			IPAddress: addr, V4IPAddress: c(addr), MacAddress: claim.Spec.MAC, PodType: c("")},
	}
	return claim, ip
}

// BenchmarkTrimCRDRetained reports the heap a cached claim and IP record
// pair keeps after trimCRD, beside the same pair with only managedFields
// dropped, in one run:
// go test -run '^$' -bench TrimCRDRetained ./controller/
func BenchmarkTrimCRDRetained(b *testing.B) {
	retained := func(trim func(any) any) float64 {
		return retainedPerItem(2, func(i int, slot []any) {
			claim, ip := decodedClaimAndIP(i)
			slot[0], slot[1] = trim(claim), trim(ip)
		})
	}
	var shared, unshared float64
	for range b.N {
		shared = retained(func(o any) any { t, _ := trimCRD(o); return t })
		unshared = retained(func(o any) any { t, _ := dropManagedFields(o); return t })
	}
	b.ReportMetric(shared, "B/pair")
	b.ReportMetric(unshared, "unshared-B/pair")
	b.ReportMetric(shared/unshared, "ratio")
}

// Two trimmed pods share their annotation keys, namespace and node, and
// the values of annotations most pods share, but not their own addresses.
func TestTrimPodSharesKeys(t *testing.T) {
	a, _ := TrimPod(decodedPod(1))
	b, _ := TrimPod(decodedPod(101)) // same node (i%100)
	pa, pb := a.(*podcache.Pod).Pod(), b.(*podcache.Pod).Pod()
	same := func(x, y string) bool { return len(x) > 0 && unsafe.StringData(x) == unsafe.StringData(y) }
	keyOf := func(m map[string]string, k string) string {
		for mk := range m {
			if mk == k {
				return mk
			}
		}
		return ""
	}
	for _, k := range []string{"ovn.kubernetes.io/ip_address", "ovn.kubernetes.io/logical_switch"} {
		if !same(keyOf(pa.Annotations, k), keyOf(pb.Annotations, k)) {
			t.Errorf("annotation key %s not shared", k)
		}
	}
	if !same(pa.Annotations["ovn.kubernetes.io/logical_switch"], pb.Annotations["ovn.kubernetes.io/logical_switch"]) {
		t.Error("the logical switch value is not shared")
	}
	if same(pa.Annotations["ovn.kubernetes.io/ip_address"], pb.Annotations["ovn.kubernetes.io/ip_address"]) {
		t.Error("two pods' own addresses share memory")
	}
	if !same(pa.Namespace, pb.Namespace) || !same(pa.Spec.NodeName, pb.Spec.NodeName) || !same(keyOf(pa.Labels, "app"), keyOf(pb.Labels, "app")) {
		t.Error("namespace, node name or label key not shared")
	}
	// Pods 1 and 101 run on one node.
	if len(pa.Status.HostIPs) != 1 || &pa.Status.HostIPs[0] != &pb.Status.HostIPs[0] || !same(pa.Status.HostIP, pb.Status.HostIP) {
		t.Error("two pods of one node keep its addresses apart")
	}
	if pa.Status.PodIP != "10.16.0.2" || !same(pa.Status.PodIP, pa.Status.PodIPs[0].IP) || same(pa.Status.PodIP, pb.Status.PodIP) {
		t.Errorf("pod address %q kept apart from its list %v, or shared with another pod's", pa.Status.PodIP, pa.Status.PodIPs)
	}
	d := decodedPod(3) // a node no pod above runs on
	orig := d.Status.HostIPs[0].IP
	if _, err := TrimPod(d); err != nil || !same(d.Status.HostIPs[0].IP, orig) {
		t.Errorf("TrimPod changed its input (%v)", err)
	}
	// Pods 1 and 2 have one ReplicaSet, pod 101 another.
	c, _ := TrimPod(decodedPod(2))
	pc := c.(*podcache.Pod).Pod()
	if len(pa.OwnerReferences) != 1 || &pa.OwnerReferences[0] != &pc.OwnerReferences[0] {
		t.Error("two pods of one ReplicaSet keep an owner reference list each")
	}
	if &pa.OwnerReferences[0] == &pb.OwnerReferences[0] || pb.OwnerReferences[0].Name != decodedPod(101).OwnerReferences[0].Name {
		t.Errorf("pods of two ReplicaSets share an owner: %v", pb.OwnerReferences)
	}
}

// Owner reference lists are shared only when every field is equal, a nil
// *bool apart from a false one, and the interner starts over when full.
func TestOwnersInterner(t *testing.T) {
	in := ownersInterner{shareset.New[[]metav1.OwnerReference](2)}
	ref := func(name string, controller *bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: "u", Controller: controller}}
	}
	a := in.share(ref("a", ptr.To(true)))
	if b := in.share(ref("a", ptr.To(true))); &b[0] != &a[0] {
		t.Error("equal lists kept apart")
	}
	for _, other := range [][]metav1.OwnerReference{ref("a", ptr.To(false)), ref("a", nil), ref("b", ptr.To(true))} {
		if got := in.share(other); &got[0] == &a[0] || !ownersEqual(got, other) {
			t.Errorf("%+v shared with %+v", other[0], a[0])
		}
	}
	if n := in.Len(); n > 2 {
		t.Errorf("%d lists kept, bound 2", n)
	}
	// Past the bound, new lists are still shared.
	c1 := in.share(ref("c", nil))
	if c2 := in.share(ref("c", nil)); &c2[0] != &c1[0] {
		t.Error("past the bound, equal lists kept apart")
	}
	if got := in.share(nil); got != nil {
		t.Errorf("no owners became %v", got)
	}
}

// IP records and AddressClaims share their labels and common spec values
// the same way, and keep everything else.
func TestTrimCRDSharesLabelsAndKeepsTheRest(t *testing.T) {
	c := strings.Clone
	same := func(x, y string) bool { return len(x) > 0 && unsafe.StringData(x) == unsafe.StringData(y) }
	ip := func(i int) *kubeovnv1.IP {
		return &kubeovnv1.IP{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d.ns", i), Labels: map[string]string{c("ovn.kubernetes.io/subnet"): c("ovn-default")},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
			Spec: kubeovnv1.IPSpec{PodName: fmt.Sprintf("p%d", i), Namespace: c("ns"), Subnet: c("ovn-default"), IPAddress: fmt.Sprintf("10.0.0.%d", i),
				AttachIPs: []string{"192.0.2.1"}, ContainerID: "c1"},
		}
	}
	a, _ := trimCRD(ip(1))
	b, _ := trimCRD(ip(2))
	ia, ib := a.(*kubeovnv1.IP), b.(*kubeovnv1.IP)
	if !same(ia.Spec.Subnet, ib.Spec.Subnet) || !same(ia.Spec.Namespace, ib.Spec.Namespace) ||
		!same(ia.Labels["ovn.kubernetes.io/subnet"], ib.Labels["ovn.kubernetes.io/subnet"]) {
		t.Error("IP records do not share their subnet, namespace or label")
	}
	if ia.ManagedFields != nil || ia.Spec.ContainerID != "c1" || len(ia.Spec.AttachIPs) != 1 || ia.Spec.IPAddress != "10.0.0.1" || ia.Spec.PodName != "p1" {
		t.Errorf("IP record trimmed wrongly: %+v", ia)
	}
	// A record's own strings: the family's address is the address, the
	// pod's name is the start of the record's.
	_, dec := decodedClaimAndIP(7)
	got, _ := trimCRD(dec)
	r, _ := ipcache.Of(got)
	if r.Spec.V4IPAddress != r.Spec.IPAddress || !same(r.Spec.V4IPAddress, r.Spec.IPAddress) {
		t.Errorf("the IPv4 address %q is kept apart from the address %q", r.Spec.V4IPAddress, r.Spec.IPAddress)
	}
	if r.Spec.PodName != "pod-7" || !same(r.Spec.PodName, r.Name) {
		t.Errorf("the pod name %q is kept apart from the record's name %q", r.Spec.PodName, r.Name)
	}
	for _, name := range []string{"pod-70.bench", "pod-7x.bench", "pod-7"} {
		_, dec := decodedClaimAndIP(7)
		dec.Name = strings.Clone(name)
		got, _ := trimCRD(dec)
		if r, _ := ipcache.Of(got); r.Spec.PodName != "pod-7" || r.Name != name {
			t.Errorf("record %q: pod name %q", r.Name, r.Spec.PodName)
		}
	}
	claim := func(i int) *v1alpha1.AddressClaim {
		return &v1alpha1.AddressClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s.10.0.0.%d", i), Labels: map[string]string{c(v1alpha1.LabelSubnet): c("s")}},
			Spec: v1alpha1.AddressClaimSpec{Subnet: c("s"), Address: fmt.Sprintf("10.0.0.%d", i),
				Owner: v1alpha1.ClaimOwner{Kind: c(v1alpha1.OwnerPod), Namespace: c("ns"), Name: fmt.Sprintf("p%d", i), UID: "u"}},
		}
	}
	x, _ := trimCRD(claim(1))
	y, _ := trimCRD(claim(2))
	kx, okx := x.(*claimcache.Claim)
	ky, oky := y.(*claimcache.Claim)
	if !okx || !oky {
		t.Fatalf("claims of the common shape cached as %T and %T, want *claimcache.Claim", x, y)
	}
	cx, cy := kx.Claim(), ky.Claim()
	if !same(cx.Spec.Subnet, cy.Spec.Subnet) || !same(cx.Spec.Owner.Kind, cy.Spec.Owner.Kind) || !same(cx.Labels[v1alpha1.LabelSubnet], cy.Labels[v1alpha1.LabelSubnet]) {
		t.Error("claims do not share their subnet, owner kind or label")
	}
	if cx.Spec.Address != "10.0.0.1" || cx.Spec.Owner.Name != "p1" || cx.Spec.Owner.UID != "u" {
		t.Errorf("claim trimmed wrongly: %+v", cx.Spec)
	}
	if !sameMap(cx.Labels, cy.Labels) || !sameMap(ia.Labels, ib.Labels) {
		t.Error("claims or IP records with the same labels keep a map each")
	}
	other := claim(3)
	other.Labels[c(v1alpha1.LabelFamily)] = c("IPv4")
	z, _ := trimCRD(other)
	if cz, _ := claimcache.Of(z); cz == nil || sameMap(cz.Labels, cx.Labels) || len(cz.Labels) != 2 || cz.Labels[v1alpha1.LabelFamily] != "IPv4" {
		t.Errorf("a claim with labels of its own got another's: %v", cz.Labels)
	}
}

func sameMap(a, b map[string]string) bool {
	return a != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// The label maps kept are bounded, unchanged by what is shared, and
// never the caller's own map.
func TestMapInternerBoundAndCopies(t *testing.T) {
	in := mapInterner{shareset.New[map[string]string](2)}
	clone := func(m map[string]string) map[string]string { return maps.Clone(m) }
	a := map[string]string{"app": "a"}
	sa := in.share(a, clone)
	if sameMap(sa, a) || !maps.Equal(sa, a) {
		t.Fatalf("the kept map is the caller's, or differs: %v", sa)
	}
	a["app"] = "changed"
	if got := in.share(map[string]string{"app": "a"}, clone); !sameMap(got, sa) || got["app"] != "a" {
		t.Errorf("an equal map is not the shared one, or the caller's change reached it: %v", got)
	}
	in.share(map[string]string{"app": "b"}, clone)
	// Full: the next map starts it over, and is shared.
	c1 := in.share(map[string]string{"app": "c"}, clone)
	c2 := in.share(map[string]string{"app": "c"}, clone)
	if !sameMap(c1, c2) || in.Len() > 2 {
		t.Errorf("past the bound, equal maps kept apart or more than 2 kept (%d)", in.Len())
	}
	if !maps.Equal(sa, map[string]string{"app": "a"}) {
		t.Errorf("a map shared before the start over changed: %v", sa)
	}
	if got := in.share(nil, clone); got != nil {
		t.Errorf("nil labels became %v", got)
	}
	// Hashes are order-independent: the same pairs in another map share.
	x := in.share(map[string]string{"app": "b"}, clone)
	if y := in.share(map[string]string{"app": "b"}, clone); !sameMap(x, y) {
		t.Error("two equal maps kept apart")
	}
}

// The shared strings are bounded, and past the bound new ones are still
// shared.
func TestInternerStartsOverWhenFull(t *testing.T) {
	in := interner{max: 2}
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	src := strings.Clone("a")
	a := in.intern(src)
	if same(a, src) {
		t.Error("the kept string is the caller's")
	}
	if b := in.intern(strings.Clone("a")); !same(a, b) {
		t.Error("equal strings kept apart")
	}
	in.intern(strings.Clone("b"))
	c1 := in.intern(strings.Clone("c"))
	if c2 := in.intern(strings.Clone("c")); !same(c1, c2) {
		t.Error("past the bound, equal strings kept apart")
	}
	if n := in.n.Load(); n > 2 {
		t.Errorf("%d strings kept, bound 2", n)
	}
	if a != "a" {
		t.Errorf("a string shared before the start over changed: %q", a)
	}
}
