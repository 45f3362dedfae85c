package reconcile

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/api/client/clientset/versioned/fake"
	claimlisters "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/ipcache"
	"github.com/shardnet/shardnet/internal/podcache"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
)

func holdPod(name string, created int, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(time.Unix(int64(created), 0)), Annotations: ann},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func kubeOVNAnnotations(provider, subnet, ip, mac string) map[string]string {
	return map[string]string{
		Key(provider, KeyAllocated): "true", Key(provider, KeyIPAddress): ip,
		Key(provider, KeyMACAddress): mac, Key(provider, KeyLogicalSwitch): subnet,
	}
}

// TestCollectHolds pins where adoption finds addresses in use and who
// keeps an address several holders name (docs/contract.md §15).
func TestCollectHolds(t *testing.T) {
	subnets := []*kubeovnv1.Subnet{
		{ObjectMeta: metav1.ObjectMeta{Name: "ovn-default"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.16.0.0/16", Provider: "ovn"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "attach"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "172.17.0.0/24", Provider: "net1.ns.ovn"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "join"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "100.64.0.0/16"}},
	}
	running := holdPod("running", 10, kubeOVNAnnotations("ovn", "ovn-default", "10.16.0.5", "00:00:00:AB:CD:EF"))
	for k, v := range kubeOVNAnnotations("net1.ns.ovn", "", "172.17.0.9", "00:00:00:00:00:09") {
		running.Annotations[k] = v
	}
	delete(running.Annotations, Key("net1.ns.ovn", KeyLogicalSwitch)) // IPAM-only: found by CIDR
	// Two pods annotated with one address: the one whose port carries it
	// keeps it, though it is younger.
	older := holdPod("older", 1, kubeOVNAnnotations("ovn", "ovn-default", "10.16.0.7", "00:00:00:00:00:07"))
	withPort := holdPod("with-port", 5, kubeOVNAnnotations("ovn", "ovn-default", "10.16.0.7", "00:00:00:00:00:17"))
	// Without a port either way: the older keeps it.
	a := holdPod("a", 3, kubeOVNAnnotations("ovn", "ovn-default", "10.16.0.8", ""))
	b := holdPod("b", 2, kubeOVNAnnotations("ovn", "ovn-default", "10.16.0.8", ""))
	done := holdPod("done", 1, kubeOVNAnnotations("ovn", "ovn-default", "10.16.0.30", ""))
	done.Status.Phase = corev1.PodSucceeded
	done.Spec.RestartPolicy = corev1.RestartPolicyNever
	stsGone := holdPod("web-0", 1, kubeOVNAnnotations("ovn", "ovn-default", "10.16.0.31", ""))
	stsGone.Status.Phase = corev1.PodFailed
	stsGone.Spec.RestartPolicy = corev1.RestartPolicyNever
	stsGone.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "sts-uid"}}
	host := holdPod("host", 1, kubeOVNAnnotations("ovn", "ovn-default", "10.16.0.32", ""))
	host.Spec.HostNetwork = true

	in := HoldInputs{
		Subnets: subnets,
		Pods:    []*corev1.Pod{running, older, withPort, a, b, done, stsGone, host},
		IPs: []*kubeovnv1.IP{
			{ObjectMeta: metav1.ObjectMeta{Name: "running.ns"}, Spec: kubeovnv1.IPSpec{PodName: "running", Namespace: "ns", Subnet: "ovn-default", IPAddress: "10.16.0.5", V4IPAddress: "10.16.0.5"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "gone.ns"}, Spec: kubeovnv1.IPSpec{PodName: "gone", Namespace: "ns", Subnet: "ovn-default", IPAddress: "10.16.0.20", MacAddress: "00:00:00:00:00:20"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "node-n1"}, Spec: kubeovnv1.IPSpec{PodName: "n1", Subnet: "join", V4IPAddress: "100.64.0.2"}},
		},
		Vips: []*kubeovnv1.Vip{{ObjectMeta: metav1.ObjectMeta{Name: "vip1"}, Spec: kubeovnv1.VipSpec{Subnet: "ovn-default"}, Status: kubeovnv1.VipStatus{V4ip: "10.16.0.40"}}},
		Ports: []ovn.PortAddress{
			{Name: "with-port.ns", Switch: "ovn-default", Pod: "ns/with-port", MAC: "00:00:00:00:00:17", IPs: []string{"10.16.0.7"}},
			{Name: "orphan.ns", Switch: "ovn-default", Pod: "ns/orphan", MAC: "00:00:00:00:00:21", IPs: []string{"10.16.0.21"}},
			{Name: "node-n2", Switch: "join", MAC: "00:00:00:00:00:03", IPs: []string{"100.64.0.3"}},
			{Name: "ovn-default-ovn-cluster", Switch: "ovn-default"},
			{Name: "stray", Switch: "ovn-default", MAC: "00:00:00:00:00:99", IPs: []string{"192.168.9.9"}}, // outside: ignored
		},
		Now: time.Unix(100, 0),
	}
	holds, conflicts := CollectHolds(in)
	owner := func(p *corev1.Pod) string { return ipam.OwnerKey(ClaimOwnerOf(p)) }
	want := map[string]map[string]ipam.Hold{
		"ovn-default": {
			"10.16.0.5":  {Owner: owner(running), Source: "pod ns/running", MAC: mustMAC(t, "00:00:00:AB:CD:EF")},
			"10.16.0.7":  {Owner: owner(withPort), Source: "pod ns/with-port", MAC: mustMAC(t, "00:00:00:00:00:17")},
			"10.16.0.8":  {Owner: owner(b), Source: "pod ns/b"},
			"10.16.0.31": {Owner: owner(stsGone), Source: "pod ns/web-0"},
			"10.16.0.20": {Name: "ns/gone", Source: "IP record gone.ns", MAC: mustMAC(t, "00:00:00:00:00:20")},
			"10.16.0.21": {Name: "ns/orphan", Source: "port orphan.ns", MAC: mustMAC(t, "00:00:00:00:00:21")},
			"10.16.0.40": {Owner: ipam.OwnerKey(VipClaimOwner(in.Vips[0])), Source: "Vip vip1"}, // only the Vip may claim it (D14)
		},
		"attach": {
			"172.17.0.9": {Owner: owner(running), Source: "pod ns/running", MAC: mustMAC(t, "00:00:00:00:00:09")},
		},
		"join": {
			"100.64.0.2": {Source: "IP record node-n1"},
			"100.64.0.3": {Source: "port node-n2", MAC: mustMAC(t, "00:00:00:00:00:03")},
		},
	}
	for subnet, addrs := range want {
		if len(holds[subnet]) != len(addrs) {
			t.Errorf("subnet %s: %d holds, want %d: %v", subnet, len(holds[subnet]), len(addrs), holds[subnet])
		}
		for s, h := range addrs {
			if got := holds[subnet][netip.MustParseAddr(s)]; got != h {
				t.Errorf("%s %s: hold %+v, want %+v", subnet, s, got, h)
			}
		}
	}
	if len(holds) != len(want) {
		t.Errorf("holds in %d subnets, want %d", len(holds), len(want))
	}
	if len(conflicts) != 2 || conflicts[0].Addr.String() != "10.16.0.7" || conflicts[0].Kept != "pod ns/with-port" ||
		conflicts[1].Addr.String() != "10.16.0.8" || conflicts[1].Kept != "pod ns/b" || conflicts[1].Others[0] != "pod ns/a" {
		t.Errorf("conflicts = %+v", conflicts)
	}
}

// TestCollectHoldsAnyOrder: the holds and conflicts do not depend on the
// order the caches list pods, IP records, Vips and ports in (each replica
// lists its own caches), three holders disputing one address and two pods
// naming one included.
func TestCollectHoldsAnyOrder(t *testing.T) {
	in := holdBenchInputs(200)
	// Two more IP records and a port naming p00001's address, and a
	// younger pod naming p00002's.
	a1, a2 := in.Ports[1].IPs[0], in.Ports[2].IPs[0]
	in.IPs = append(in.IPs,
		&kubeovnv1.IP{ObjectMeta: metav1.ObjectMeta{Name: "zz.ns"}, Spec: kubeovnv1.IPSpec{PodName: "zz", Namespace: "ns", Subnet: "s", IPAddress: a1}},
		&kubeovnv1.IP{ObjectMeta: metav1.ObjectMeta{Name: "yy.ns"}, Spec: kubeovnv1.IPSpec{PodName: "yy", Namespace: "ns", Subnet: "s", IPAddress: a1}})
	// Three IP records and no pod name 10.0.9.9, two of them for one pod:
	// both lose to the first by name, whatever order they come in.
	for _, r := range [][2]string{{"c.ns", "r"}, {"b.ns", "r"}, {"a.ns", "q"}} {
		in.IPs = append(in.IPs, &kubeovnv1.IP{ObjectMeta: metav1.ObjectMeta{Name: r[0]}, Spec: kubeovnv1.IPSpec{PodName: r[1], Namespace: "ns", Subnet: "s", IPAddress: "10.0.9.9"}})
	}
	in.Ports = append(in.Ports, ovn.PortAddress{Name: "xx.ns", Switch: "s", Pod: "ns/xx", IPs: []string{a1}})
	in.Pods = append(in.Pods, holdPod("young", 1000, kubeOVNAnnotations("ovn", "s", a2, "")))
	// A pod without a creation time is the older of two naming 10.0.9.7.
	undated := holdPod("undated", 0, kubeOVNAnnotations("ovn", "s", "10.0.9.7", ""))
	undated.CreationTimestamp = metav1.Time{}
	in.Pods = append(in.Pods, undated, holdPod("dated", 5, kubeOVNAnnotations("ovn", "s", "10.0.9.7", "")))
	in.Vips = []*kubeovnv1.Vip{
		{ObjectMeta: metav1.ObjectMeta{Name: "v1"}, Spec: kubeovnv1.VipSpec{Subnet: "s"}, Status: kubeovnv1.VipStatus{V4ip: "10.0.9.1"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "v2"}, Spec: kubeovnv1.VipSpec{Subnet: "s"}, Status: kubeovnv1.VipStatus{V4ip: "10.0.9.1"}},
	}
	holds, conflicts := CollectHolds(in)
	if h := holds["s"][netip.MustParseAddr(a1)]; h.Source != "pod ns/p00001" {
		t.Fatalf("%s kept by %q, want the pod", a1, h.Source)
	}
	if h := holds["s"][netip.MustParseAddr(a2)]; h.Source != "pod ns/p00002" {
		t.Fatalf("%s kept by %q, want the older pod", a2, h.Source)
	}
	if h := holds["s"][netip.MustParseAddr("10.0.9.7")]; h.Source != "pod ns/undated" {
		t.Fatalf("10.0.9.7 kept by %q, want the pod without a creation time", h.Source)
	}
	if len(conflicts) != 5 || len(conflicts[0].Others) != 3 || conflicts[4].Kept != "IP record a.ns" ||
		!slices.Equal(conflicts[4].Others, []string{"IP record b.ns", "IP record c.ns"}) {
		t.Fatalf("conflicts = %+v, want five: %s with three others, 10.0.9.9 kept by a.ns with b.ns and c.ns", conflicts, a1)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	all, allIPs := in.Pods, in.IPs
	for round := range 20 {
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		rng.Shuffle(len(allIPs), func(i, j int) { allIPs[i], allIPs[j] = allIPs[j], allIPs[i] })
		rng.Shuffle(len(in.Ports), func(i, j int) { in.Ports[i], in.Ports[j] = in.Ports[j], in.Ports[i] })
		rng.Shuffle(len(in.Vips), func(i, j int) { in.Vips[i], in.Vips[j] = in.Vips[j], in.Vips[i] })
		// Some of the pods as the informer caches them, read through
		// one reused *corev1.Pod: every pod in the first round.
		k := rng.IntN(len(all) + 1)
		if round == 0 {
			k = 0
		}
		in.Pods, in.Cached = all[:k], nil
		for _, p := range all[k:] {
			in.Cached = append(in.Cached, podcache.New(p, p.ObjectMeta))
		}
		// And some of the IP records as the informer caches them, read
		// through one reused *kubeovnv1.IP: every one in the first round.
		k2 := rng.IntN(len(allIPs) + 1)
		if round == 0 {
			k2 = 0
		}
		in.IPs, in.CachedIPs = allIPs[:k2], nil
		for _, r := range allIPs[k2:] {
			c, ok := ipcache.New(r).(*ipcache.IP)
			if !ok {
				t.Fatalf("IP record %s is not cached as an ipcache.IP", r.Name)
			}
			in.CachedIPs = append(in.CachedIPs, c)
		}
		h, c := CollectHolds(in)
		if !reflect.DeepEqual(h, holds) || !reflect.DeepEqual(c, conflicts) {
			t.Fatalf("another order, or %d of %d pods and %d of %d IP records cached, gave other holds or conflicts:\n%+v\nwant\n%+v", len(all)-k, len(all), len(allIPs)-k2, len(allIPs), c, conflicts)
		}
	}
}

func mustMAC(t *testing.T, s string) ipam.MAC {
	t.Helper()
	m, err := ipam.ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// holdBenchInputs are n pods of one /16 subnet, each with its IP record
// and port, as a replica's caches hold them once the pods are routed.
func holdBenchInputs(n int) HoldInputs {
	in := HoldInputs{
		Subnets: []*kubeovnv1.Subnet{{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/16", Protocol: "IPv4"}}},
		Now:     time.Unix(100, 0),
	}
	for i := range n {
		ip := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}).String()
		mac := fmt.Sprintf("00:00:00:%02X:%02X:%02X", byte(i>>16), byte(i>>8), byte(i))
		name := fmt.Sprintf("p%05d", i)
		in.Pods = append(in.Pods, holdPod(name, i, kubeOVNAnnotations("ovn", "s", ip, mac)))
		in.IPs = append(in.IPs, &kubeovnv1.IP{ObjectMeta: metav1.ObjectMeta{Name: name + ".ns"}, Spec: kubeovnv1.IPSpec{PodName: name, Namespace: "ns", Subnet: "s", IPAddress: ip, V4IPAddress: ip, MacAddress: mac}})
		in.Ports = append(in.Ports, ovn.PortAddress{Name: name + ".ns", Switch: "s", Pod: "ns/" + name, MAC: mac, IPs: []string{ip}})
	}
	return in
}

// shuffled is in with its pods, IP records and ports in the order a
// lister hands them over, which is none: a benchmark of sorted inputs
// measures sorts that have nothing to do.
func shuffled(in HoldInputs) HoldInputs {
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(in.Pods), func(i, j int) { in.Pods[i], in.Pods[j] = in.Pods[j], in.Pods[i] })
	r.Shuffle(len(in.IPs), func(i, j int) { in.IPs[i], in.IPs[j] = in.IPs[j], in.IPs[i] })
	r.Shuffle(len(in.Ports), func(i, j int) { in.Ports[i], in.Ports[j] = in.Ports[j], in.Ports[i] })
	return in
}

// asCached is in with its pods as the informer caches them, as
// HoldSource passes them.
func asCached(in HoldInputs) HoldInputs {
	for _, p := range in.Pods {
		in.Cached = append(in.Cached, podcache.New(p, p.ObjectMeta))
	}
	in.Pods = nil
	return in
}

// BenchmarkByKey measures the order an adoption pass visits 50,000 IP
// records in (byKey) against a stable sort of the same names, which it
// replaced, in one run.
//
//	go test -run '^$' -bench ByKey ./reconcile/
func BenchmarkByKey(b *testing.B) {
	const n = 50000
	in := shuffled(holdBenchInputs(n))
	name := func(i int) string { return in.IPs[i].Name }
	stable := func() []int32 {
		idx := make([]int32, n)
		for i := range idx {
			idx[i] = int32(i)
		}
		slices.SortStableFunc(idx, func(x, y int32) int { return strings.Compare(name(int(x)), name(int(y))) })
		return idx
	}
	var stableTime, byKeyTime time.Duration
	for b.Loop() {
		start := time.Now()
		want := stable()
		stableTime += time.Since(start)
		start = time.Now()
		got := byKey(n, name)
		byKeyTime += time.Since(start)
		if !slices.Equal(got, want) {
			b.Fatal("byKey's order is not the stable sort's")
		}
	}
	b.ReportMetric(float64(stableTime.Nanoseconds())/float64(b.N), "stable-ns/sort")
	b.ReportMetric(float64(byKeyTime.Nanoseconds())/float64(b.N), "byKey-ns/sort")
	b.ReportMetric(float64(byKeyTime)/float64(stableTime), "byKey/stable")
}

// BenchmarkCollectHolds measures one adoption pass over 10,000 pods, each
// with an IP record and a port: the work every replica repeats each
// --status-interval. B/op is the figure that matters at scale: at 50,000
// pods the pass runs while the caches fill the heap to the soft limit,
// where every byte it allocates is paid in collector time.
func BenchmarkCollectHolds(b *testing.B) {
	const n = 10000
	in := asCached(shuffled(holdBenchInputs(n)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		holds, _ := CollectHolds(in)
		if len(holds["s"]) != n {
			b.Fatalf("%d holds", len(holds["s"]))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/pod")
}

// BenchmarkAdopt measures the whole pass the registry runs before a
// replica joins and then every few status intervals: collect the holds of
// 10,000 routed pods (each with its IP record, port and claim), apply
// them to the subnet and count those still to claim.
//
//	go test -run '^$' -bench 'CollectHolds|Adopt' -benchmem ./reconcile/
func BenchmarkAdopt(b *testing.B) {
	const n = 10000
	in := asCached(shuffled(holdBenchInputs(n)))
	claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, pt := range in.Ports {
		a := netip.MustParseAddr(pt.IPs[0])
		if err := claims.Add(&v1alpha1.AddressClaim{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClaimName("s", a)},
			Spec:       v1alpha1.AddressClaimSpec{Subnet: "s", Address: pt.IPs[0]},
		}); err != nil {
			b.Fatal(err)
		}
	}
	alloc, err := ipam.NewClaims(ipam.NewClientStore(fake.NewSimpleClientset()))
	if err != nil {
		b.Fatal(err)
	}
	reg := NewSubnets(alloc, claimlisters.NewAddressClaimLister(claims), 1)
	if err := reg.Sync(in.Subnets[0], nil, nil); err != nil {
		b.Fatal(err)
	}
	reg.SetHoldSource(func() (HoldInputs, error) { return in, nil })
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st, err := reg.Adopt()
		if err != nil || st.Held["s"] != n || st.Pending["s"] != 0 {
			b.Fatalf("held %d, pending %d (%v), want %d and 0", st.Held["s"], st.Pending["s"], err, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/pod")
}

// TestCollectHoldsVM: with addresses kept by VM, a launcher pod's
// annotated address, the VM-named IP record and port hold for the VM (so
// the VM's shard may claim them when taking over), and the source and
// target launcher pods of a live migration, both annotated with it, are
// one holder, not a conflict. Without the VM's owner resolved, they are
// the pods' as before.
func TestCollectHoldsVM(t *testing.T) {
	subnets := []*kubeovnv1.Subnet{{ObjectMeta: metav1.ObjectMeta{Name: "ovn-default"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.16.0.0/16", Provider: "ovn"}}}
	launcher := func(name string, created int) *corev1.Pod {
		p := holdPod(name, created, kubeOVNAnnotations("ovn", "ovn-default", "10.16.0.50", "00:00:00:00:00:50"))
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "vm1", UID: "vmi-uid"}}
		return p
	}
	source, target := launcher("virt-launcher-vm1-aaaaa", 1), launcher("virt-launcher-vm1-bbbbb", 2)
	vmOwner := v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerVM, Namespace: "ns", Name: "vm1", UID: "vm-uid"}
	in := HoldInputs{
		Subnets: subnets,
		Pods:    []*corev1.Pod{source, target},
		IPs: []*kubeovnv1.IP{{ObjectMeta: metav1.ObjectMeta{Name: "vm1.ns"}, Spec: kubeovnv1.IPSpec{
			PodName: "vm1", Namespace: "ns", Subnet: "ovn-default", V4IPAddress: "10.16.0.50", PodType: "VirtualMachine"}}},
		Ports: []ovn.PortAddress{{Name: "vm1.ns", Switch: "ovn-default", Pod: "ns/vm1", MAC: "00:00:00:00:00:50", IPs: []string{"10.16.0.50"}}},
		Now:   time.Unix(100, 0),
		VMOwner: func(p *corev1.Pod) (v1alpha1.ClaimOwner, bool) {
			if vm, ok := VMOwner(p); ok && vm == "vm1" {
				return vmOwner, true
			}
			return v1alpha1.ClaimOwner{}, false
		},
	}
	holds, conflicts := CollectHolds(in)
	got := holds["ovn-default"][netip.MustParseAddr("10.16.0.50")]
	if got.Owner != ipam.OwnerKey(vmOwner) || len(conflicts) != 0 {
		t.Fatalf("hold %+v, conflicts %+v: want the VM's owner and no conflict", got, conflicts)
	}
	in.VMOwner = nil
	holds, conflicts = CollectHolds(in)
	if got := holds["ovn-default"][netip.MustParseAddr("10.16.0.50")]; got.Owner != ipam.OwnerKey(ClaimOwnerOf(source)) || len(conflicts) != 1 {
		t.Errorf("without the VM: hold %+v, conflicts %+v; want the older pod's, and the other as a conflict", got, conflicts)
	}
}
