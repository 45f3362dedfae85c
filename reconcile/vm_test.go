package reconcile

import (
	"errors"
	"net/netip"
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
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/kubevirt"
	"github.com/shardnet/shardnet/queue"
)

// fakeVMs is a VMSource from maps keyed "namespace/name".
type fakeVMs struct {
	vms, vmis map[string]kubevirt.Object
	err       error
}

func (f *fakeVMs) VM(ns, name string) (kubevirt.Object, bool, error) {
	o, ok := f.vms[ns+"/"+name]
	return o, ok, f.err
}

func (f *fakeVMs) VMI(ns, name string) (kubevirt.Object, bool, error) {
	o, ok := f.vmis[ns+"/"+name]
	return o, ok, f.err
}

// launcher is a launcher pod of VMI vm.
func launcher(ns, name, vm, node string, ann map[string]string) *corev1.Pod {
	if ann == nil {
		ann = map[string]string{}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid"), Annotations: ann,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: vm, UID: "vmi-uid"}}},
		Spec: corev1.PodSpec{NodeName: node},
	}
}

func TestPodKey(t *testing.T) {
	l := launcher("ns", "virt-launcher-vm1-abcde", "vm1", "", nil)
	foreign := launcher("ns", "p", "vm1", "", nil)
	foreign.OwnerReferences[0].APIVersion = "example.com/v1"
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	for _, tc := range []struct {
		pod  *corev1.Pod
		keep bool
		want string
	}{
		{l, true, "ns/vm1"},
		{l, false, "ns/virt-launcher-vm1-abcde"},
		{foreign, true, "ns/p"},
		{plain, true, "ns/web"},
	} {
		if got := PodKey(tc.pod, tc.keep); got != tc.want {
			t.Errorf("PodKey(%s, keep=%v) = %s, want %s", tc.pod.Name, tc.keep, got, tc.want)
		}
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, VMPodIndexers())
	for _, p := range []*corev1.Pod{l, plain, launcher("ns", "virt-launcher-vm1-fghij", "vm1", "", nil)} {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if got := launcherPods(idx, "ns/vm1"); len(got) != 2 {
		t.Fatalf("launcher pods of ns/vm1: %d, want 2", len(got))
	}
	if got := launcherPods(idx, "ns/web"); len(got) != 0 {
		t.Fatalf("a plain pod is nobody's launcher: %v", got)
	}
}

// TestVMClaimOwner pins R13's owner and E22's inputs: the VM, an
// ephemeral VMI, and the cases where the VM is not known.
func TestVMClaimOwner(t *testing.T) {
	src := &fakeVMs{
		vms: map[string]kubevirt.Object{"ns/vm1": {Namespace: "ns", Name: "vm1", UID: "vm1-uid"}},
		vmis: map[string]kubevirt.Object{
			"ns/vm1":   {Namespace: "ns", Name: "vm1", UID: "vmi1-uid", VM: "vm1"},
			"ns/eph":   {Namespace: "ns", Name: "eph", UID: "eph-uid"},
			"ns/owned": {Namespace: "ns", Name: "owned", UID: "owned-uid", VM: "owned"},
		},
	}
	for _, tc := range []struct {
		name, wantUID string
		wantErr       error
	}{
		{"vm1", "vm1-uid", nil},
		{"eph", "eph-uid", nil},
		{"owned", "", ErrVMNotFound},
		{"none", "", ErrVMNotFound},
	} {
		o, err := VMClaimOwner(src, "ns", tc.name)
		if !errors.Is(err, tc.wantErr) || (err == nil && o.UID != tc.wantUID) {
			t.Errorf("%s: owner %+v, err %v; want uid %q, err %v", tc.name, o, err, tc.wantUID, tc.wantErr)
		}
		if err == nil && (o.Kind != v1alpha1.OwnerVM || o.Name != tc.name || o.Namespace != "ns") {
			t.Errorf("%s: owner %+v", tc.name, o)
		}
	}
	if _, err := VMClaimOwner(&fakeVMs{err: kubevirt.ErrNotSynced}, "ns", "vm1"); !errors.Is(err, kubevirt.ErrNotSynced) {
		t.Errorf("not synced: %v", err)
	}
	if _, err := VMClaimOwner(nil, "ns", "vm1"); !errors.Is(err, kubevirt.ErrNotServed) {
		t.Errorf("no source: %v", err)
	}
}

func TestLiveLaunchersActiveFirst(t *testing.T) {
	t0 := time.Unix(1000, 0)
	older := launcher("ns", "b-old", "vm", "n1", nil)
	older.CreationTimestamp = metav1.NewTime(t0)
	newer := launcher("ns", "a-new", "vm", "n2", nil)
	newer.CreationTimestamp = metav1.NewTime(t0.Add(time.Second))
	done := launcher("ns", "c-done", "vm", "n1", nil)
	done.Status.Phase = corev1.PodSucceeded
	host := launcher("ns", "d-host", "vm", "n1", nil)
	host.Spec.HostNetwork = true
	got := liveLaunchers([]*corev1.Pod{newer, done, host, older}, func(p *corev1.Pod) bool { return Alive(p, t0) })
	if len(got) != 2 || got[0] != older || got[1] != newer {
		t.Fatalf("live launchers %v, want the older then the newer", names(got))
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// vmPlanner is a planner over one default subnet and one attachment
// subnet of provider "net1.ns.ovn".
func vmPlanner() (*Planner, *fakeView) {
	v := newFakeView()
	v.subnets["main"] = &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: "main"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.50.0.0/24", Default: true}}
	v.subnets["side"] = &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: "side"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.51.0.0/24", Provider: "net1.ns.ovn"}}
	v.namespaces["ns"] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}
	v.nads["ns/net1"] = `{"cniVersion":"0.3.1","type":"kube-ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock"}`
	return &Planner{View: v, ClusterRouter: DefaultClusterRouter, PodNICType: DefaultPodNICType, IPRecords: true}, v
}

var vmOwner = v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerVM, Namespace: "ns", Name: "vm1", UID: "vm1-uid"}

func vmClaim(subnet, addr, provider string) *v1alpha1.AddressClaim {
	a := netip.MustParseAddr(addr)
	return &v1alpha1.AddressClaim{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClaimName(subnet, a)},
		Spec: v1alpha1.AddressClaimSpec{Subnet: subnet, Address: addr, Provider: provider, MAC: "0a:58:0a:32:00:07", Owner: vmOwner}}
}

// TestVMPlanActive pins N1, N2, N5, A9 and R13 for the active launcher
// pod: everything is named and owned by the VM, on every provider.
func TestVMPlanActive(t *testing.T) {
	pl, _ := vmPlanner()
	pod := launcher("ns", "virt-launcher-vm1-abcde", "vm1", "node-a", map[string]string{AnnotationNetworks: "net1"})
	p, err := pl.Plan(PlanInput{Pod: pod, VM: &VMHolder{Name: "vm1", Owner: vmOwner}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Key != "ns/vm1" || p.Owner != vmOwner || len(p.Failed) != 0 || len(p.Networks) != 2 {
		t.Fatalf("plan key %s owner %+v failed %v networks %d", p.Key, p.Owner, p.Failed, len(p.Networks))
	}
	want := map[string]string{DefaultProvider: "vm1.ns", "net1.ns.ovn": "vm1.ns.net1.ns.ovn"}
	for _, np := range p.Networks {
		if np.Port != want[np.Provider] || np.IPRecord != want[np.Provider] {
			t.Errorf("%s: port %q record %q, want %q", np.Provider, np.Port, np.IPRecord, want[np.Provider])
		}
		sub, _ := pl.View.Allocator(np.Subnet.Name)
		a, _ := sub.Allocate(0)
		w := pl.Complete(pod, np, ipam.Allocation{Subnet: np.Subnet.Name, Addresses: a, MAC: sub.DerivedMAC(a)})
		if w.Port == nil || w.Port.Pod != "ns/vm1" {
			t.Errorf("%s: port %+v, want external id pod=ns/vm1", np.Provider, w.Port)
		}
		if w.IPRecord == nil || w.IPRecord.Spec.PodName != "vm1" || w.IPRecord.Spec.PodType != PodTypeVM {
			t.Errorf("%s: record %+v", np.Provider, w.IPRecord)
		}
		if got := w.Annotations[Key(np.Provider, KeyVirtualMachine)]; got != "vm1" {
			t.Errorf("%s: virtualmachine annotation %q", np.Provider, got)
		}
		if w.Route == nil || w.Route.PortGroup == "" || !w.Routed {
			t.Errorf("%s: first route %+v", np.Provider, w.Route)
		}
	}
}

// TestVMPlanShared pins R14 and K12: a second live launcher pod takes the
// VM's claims on a network with allow_live_migration, writes annotations
// only (no port, no routed-phase rows, no record), waits on a network
// without it, and never unplugs or allocates.
func TestVMPlanShared(t *testing.T) {
	pl, v := vmPlanner()
	v.ports["ns/vm1"] = []PortInfo{{Name: "vm1.ns", Switch: "main"}, {Name: "vm1.ns.gone.ns.ovn", Switch: "side"}}
	// Both networks hold claims: only allow_live_migration decides.
	claims := []*v1alpha1.AddressClaim{vmClaim("main", "10.50.0.7", ""), vmClaim("side", "10.51.0.7", "net1.ns.ovn")}
	target := launcher("ns", "virt-launcher-vm1-target", "vm1", "node-b", map[string]string{
		DefaultKey(KeyLiveMigration): "true", AnnotationNetworks: "net1",
	})
	shared := &VMHolder{Name: "vm1", Owner: vmOwner, Shared: true}
	p, err := pl.Plan(PlanInput{Pod: target, Claims: claims, VM: shared})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Unplug) != 0 {
		t.Errorf("a shared launcher pod unplugs %+v", p.Unplug)
	}
	// net1 has no allow_live_migration: it waits.
	if len(p.Waiting) != 1 || p.Waiting[0] != "net1.ns.ovn" {
		t.Errorf("waiting %v, want [net1.ns.ovn]", p.Waiting)
	}
	if len(p.Networks) != 1 {
		t.Fatalf("networks %d, want the default one", len(p.Networks))
	}
	np := p.Networks[0]
	if np.Address.Source != FromClaims || np.Address.Addresses.V4.String() != "10.50.0.7" || len(np.Release) != 0 {
		t.Fatalf("shared address %+v release %v", np.Address, np.Release)
	}
	w := pl.Complete(target, np, ipam.Allocation{Subnet: "main", Addresses: np.Address.Addresses, MAC: np.Address.MAC})
	if w.Port != nil || w.Route != nil || w.Reroute != nil || w.IPRecord != nil {
		t.Errorf("a shared launcher pod writes rows: %+v", w)
	}
	if w.Annotations[DefaultKey(KeyIPAddress)] != "10.50.0.7" || w.Annotations[DefaultKey(KeyRouted)] != "true" ||
		w.Annotations[DefaultKey(KeyVirtualMachine)] != "vm1" {
		t.Errorf("shared annotations %v", w.Annotations)
	}

	// Nothing held yet (the active pod's allocation failed): the shared
	// pod does not allocate on its own.
	p, err = pl.Plan(PlanInput{Pod: target, VM: shared})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Networks) != 0 || len(p.Waiting) != 2 {
		t.Errorf("with nothing held: networks %d waiting %v", len(p.Networks), p.Waiting)
	}

	// Once it is the active pod it places the port on its own node,
	// although its annotations already say routed (R14).
	active := &VMHolder{Name: "vm1", Owner: vmOwner}
	target.Annotations[DefaultKey(KeyIPAddress)] = "10.50.0.7"
	target.Annotations[DefaultKey(KeyLogicalSwitch)] = "main"
	target.Annotations[DefaultKey(KeyRouted)] = "true"
	target.Annotations[DefaultKey(KeyAllocated)] = "true"
	target.Annotations[AnnotationNetworks] = ""
	p, err = pl.Plan(PlanInput{Pod: target, Claims: claims, VM: active})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Networks) != 1 || len(p.Waiting) != 0 {
		t.Fatalf("active: networks %d waiting %v", len(p.Networks), p.Waiting)
	}
	// The active pod unplugs the providers it no longer asks for, named
	// by the VM.
	if len(p.Unplug) != 2 || p.Unplug[0].Provider != "gone.ns.ovn" || p.Unplug[0].IPRecord != "vm1.ns.gone.ns.ovn" ||
		len(p.Unplug[0].Ports) != 1 || p.Unplug[1].Provider != "net1.ns.ovn" || len(p.Unplug[1].Claims) != 1 {
		t.Errorf("active unplug %+v %+v", p.Unplug[0], p.Unplug[1])
	}
	np = p.Networks[0]
	w = pl.Complete(target, np, ipam.Allocation{Subnet: "main", Addresses: np.Address.Addresses, MAC: np.Address.MAC})
	if w.Route != nil || w.Reroute == nil || w.Reroute.PortGroup != NodePortGroupName("main", "node-b") || !w.FollowNode {
		t.Errorf("active after the move: route %+v reroute %+v follow %v", w.Route, w.Reroute, w.FollowNode)
	}
	// An ordinary pod never follows: its routed phase is keyed by its
	// annotations alone.
	plain := target.DeepCopy()
	plain.OwnerReferences = nil
	p, _ = pl.Plan(PlanInput{Pod: plain})
	if w := pl.Complete(plain, p.Networks[0], ipam.Allocation{Subnet: "main", Addresses: np.Address.Addresses, MAC: np.Address.MAC}); w.FollowNode {
		t.Error("an ordinary pod's port follows its node")
	}
}

// vmPods is a Pods over fakes, enough for vmRetention.
func vmPods(t *testing.T, keep bool, src VMSource) *Pods {
	t.Helper()
	alloc, err := ipam.NewClaims(ipam.NewClientStore(fake.NewSimpleClientset()))
	if err != nil {
		t.Fatal(err)
	}
	reg := NewSubnets(alloc, claimlisters.NewAddressClaimLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)), 1)
	for _, s := range []*kubeovnv1.Subnet{
		{ObjectMeta: metav1.ObjectMeta{Name: "main"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.50.0.0/24"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.52.0.0/24"}},
	} {
		if err := reg.Sync(s, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	return &Pods{cfg: PodConfig{KeepVMIP: keep, VMs: src, Subnets: reg}}
}

// TestVMRetention pins R13's end: what a VM key holds stays while the VM
// (or its ephemeral VMI) is there and goes once it is deleted, replaced,
// or moved to another subnet.
func TestVMRetention(t *testing.T) {
	vm := kubevirt.Object{Namespace: "ns", Name: "vm1", UID: "vm1-uid"}
	held := []*v1alpha1.AddressClaim{vmClaim("main", "10.50.0.7", "")}
	deleting := vm
	deleting.Deleting = true
	moved := vm
	moved.Subnet = "other"
	replaced := vm
	replaced.UID = "vm1-new"
	podClaim := vmClaim("main", "10.50.0.8", "")
	podClaim.Spec.Owner = v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "ns", Name: "vm1", UID: "p"}
	outside := vmClaim("main", "10.53.0.9", "")
	for _, tc := range []struct {
		name   string
		keep   bool
		vms    map[string]kubevirt.Object
		vmis   map[string]kubevirt.Object
		claims []*v1alpha1.AddressClaim
		err    error
		want   bool
		werr   bool
	}{
		{name: "VM there", keep: true, vms: map[string]kubevirt.Object{"ns/vm1": vm}, claims: held, want: true},
		{name: "VM there, no claims (a port and record only)", keep: true, vms: map[string]kubevirt.Object{"ns/vm1": vm}, want: true},
		{name: "keep-vm-ip off", keep: false, vms: map[string]kubevirt.Object{"ns/vm1": vm}, claims: held},
		{name: "VM gone", keep: true, claims: held},
		{name: "VM being deleted", keep: true, vms: map[string]kubevirt.Object{"ns/vm1": deleting}, claims: held},
		{name: "VM re-created", keep: true, vms: map[string]kubevirt.Object{"ns/vm1": replaced}, claims: held},
		{name: "VM template names another subnet", keep: true, vms: map[string]kubevirt.Object{"ns/vm1": moved}, claims: held},
		{name: "a pod's claim under the VM's name", keep: true, vms: map[string]kubevirt.Object{"ns/vm1": vm}, claims: []*v1alpha1.AddressClaim{podClaim}},
		{name: "claim outside its subnet", keep: true, vms: map[string]kubevirt.Object{"ns/vm1": vm}, claims: []*v1alpha1.AddressClaim{outside}},
		{name: "ephemeral VMI there", keep: true, vmis: map[string]kubevirt.Object{"ns/vm1": {Name: "vm1", UID: "vm1-uid"}}, claims: held, want: true},
		{name: "VMI of a deleted VM", keep: true, vmis: map[string]kubevirt.Object{"ns/vm1": {Name: "vm1", UID: "vm1-uid", VM: "vm1"}}, claims: held},
		{name: "KubeVirt not served", keep: true, claims: held, err: kubevirt.ErrNotServed},
		{name: "cache not synced", keep: true, claims: held, err: kubevirt.ErrNotSynced, werr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := vmPods(t, tc.keep, &fakeVMs{vms: tc.vms, vmis: tc.vmis, err: tc.err})
			got, err := p.vmRetention("ns/vm1", tc.claims)
			if got != tc.want || (err != nil) != tc.werr {
				t.Fatalf("retained %v, err %v; want %v, error %v", got, err, tc.want, tc.werr)
			}
		})
	}
}

// TestVMPlanMigrationToAnotherSubnet: a live migration target whose
// network asks for another subnet than the one holding the VM's address
// fails that network with a Warning reason of its own and is given
// nothing; it waits without holding its shard's first pass back.
func TestVMPlanMigrationToAnotherSubnet(t *testing.T) {
	pl, v := vmPlanner()
	v.subnets["far"] = &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: "far"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.53.0.0/24"}}
	claims := []*v1alpha1.AddressClaim{vmClaim("main", "10.50.0.7", "")}
	target := launcher("ns", "virt-launcher-vm1-target", "vm1", "node-b", map[string]string{
		DefaultKey(KeyLiveMigration): "true", DefaultKey(KeyLogicalSwitch): "far",
	})
	p, err := pl.Plan(PlanInput{Pod: target, Claims: claims, VM: &VMHolder{Name: "vm1", Owner: vmOwner, Shared: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Networks) != 0 || len(p.Failed) != 1 {
		t.Fatalf("networks %d, failed %v: want the default network failed", len(p.Networks), p.Failed)
	}
	f := p.Failed[0]
	if f.Reason != ReasonMigrationSubnet || !errors.Is(f, ErrMigrationSubnet) ||
		!strings.Contains(f.Error(), "far") || !strings.Contains(f.Error(), "main") || !strings.Contains(f.Error(), "vm1") {
		t.Errorf("failure %q (%s): want %s naming both subnets and the VM", f, f.Reason, ReasonMigrationSubnet)
	}
	if err := (&Term{}).failureError(f); !queue.IsWaiting(err) {
		t.Errorf("failure error %v: want a wait that does not hold the shard's first pass", err)
	}
}
