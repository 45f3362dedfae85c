package reconcile

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	kubeovnlisters "github.com/shardnet/shardnet/api/client/listers/kubeovn/v1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/queue"
)

// fakeVips is a VipCatalog over a map.
type fakeVips map[string]*kubeovnv1.Vip

func (f fakeVips) Vip(name string) (*kubeovnv1.Vip, bool) { v, ok := f[name]; return v, ok }

// reservedVip is a Vip whose status records v4 and mac, free unless user
// is set.
func reservedVip(name, subnet, v4, mac, user string) *kubeovnv1.Vip {
	v := &kubeovnv1.Vip{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7",
			Labels: map[string]string{LabelSubnetName: subnet, LabelIPReserved: user}},
		Spec:   kubeovnv1.VipSpec{Subnet: subnet, V4ip: v4, MacAddress: mac},
		Status: kubeovnv1.VipStatus{V4ip: v4, Mac: mac},
	}
	return v
}

func vipView() *fakeView {
	v := newFakeView()
	v.subnets["ovn-default"] = subnet("ovn-default", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	v.subnets["vips"] = subnet("vips", "10.70.0.0/24", nil)
	v.subnets["attach"] = subnet("attach", "10.21.0.0/24", func(s *kubeovnv1.SubnetSpec) { s.Provider = "net1.ns.ovn" })
	v.nads["ns/net1"] = `{"cniVersion":"0.3.1","type":"kube-ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock"}`
	return v
}

// TestPlanVip pins every branch of a pod with ovn.kubernetes.io/vip
// (docs/contract.md D14, E20): the served case and each reason to wait,
// with the pod's attachment planned beside it each time.
func TestPlanVip(t *testing.T) {
	deleting := reservedVip("going", "vips", "10.70.0.11", "00:00:00:00:0a:0b", "")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(50, 0)}
	deletingMine := reservedVip("going-mine", "vips", "10.70.0.12", "00:00:00:00:0a:0c", "p.ns")
	deletingMine.DeletionTimestamp = &metav1.Time{Time: time.Unix(50, 0)}
	vips := fakeVips{
		"v1":         reservedVip("v1", "vips", "10.70.0.10", "00:00:00:00:0a:0a", ""),
		"mine":       reservedVip("mine", "vips", "10.70.0.13", "00:00:00:00:0a:0d", "p.ns"),
		"taken":      reservedVip("taken", "vips", "10.70.0.14", "00:00:00:00:0a:0e", "other.ns"),
		"unreserved": {ObjectMeta: metav1.ObjectMeta{Name: "unreserved"}, Spec: kubeovnv1.VipSpec{Subnet: "vips"}},
		"nosubnet":   reservedVip("nosubnet", "gone", "10.70.0.15", "00:00:00:00:0a:0f", ""),
		"outside":    reservedVip("outside", "vips", "10.99.0.1", "00:00:00:00:0a:10", ""),
		"going":      deleting,
		"going-mine": deletingMine,
	}
	for _, tc := range []struct {
		name string
		ann  map[string]string
		// claims of the pod itself on the default network.
		claims []*v1alpha1.AddressClaim
		// want: the default network's source, address and MAC; or the
		// failure's reason and error.
		source     AddressSource
		addr, mac  string
		reason     string
		err        error
		inputError bool
	}{
		{name: "served", ann: map[string]string{DefaultKey(KeyVIP): "v1"}, source: FromVip, addr: "10.70.0.10", mac: "00:00:00:00:0a:0a"},
		{name: "taken by this pod already", ann: map[string]string{DefaultKey(KeyVIP): "mine"}, source: FromVip, addr: "10.70.0.13", mac: "00:00:00:00:0a:0d"},
		{name: "a static address beside it is not followed (D8)", ann: map[string]string{DefaultKey(KeyVIP): "v1",
			DefaultKey(KeyIPAddress): "10.16.0.9", DefaultKey(KeyMACAddress): "00:00:00:00:00:09"}, source: FromVip, addr: "10.70.0.10", mac: "00:00:00:00:0a:0a"},
		{name: "being deleted but this pod's", ann: map[string]string{DefaultKey(KeyVIP): "going-mine"}, source: FromVip, addr: "10.70.0.12", mac: "00:00:00:00:0a:0c"},
		{name: "logical_switch of the Vip's subnet", ann: map[string]string{DefaultKey(KeyVIP): "v1", DefaultKey(KeyLogicalSwitch): "vips"}, source: FromVip, addr: "10.70.0.10", mac: "00:00:00:00:0a:0a"},
		{name: "no such Vip", ann: map[string]string{DefaultKey(KeyVIP): "ghost"}, reason: ReasonAddress, err: ErrUnknownVip},
		{name: "not reserved yet", ann: map[string]string{DefaultKey(KeyVIP): "unreserved"}, reason: ReasonAddress, err: ErrVipNotReserved},
		{name: "taken by another pod", ann: map[string]string{DefaultKey(KeyVIP): "taken"}, reason: ReasonAddress, err: ErrVipInUse},
		{name: "being deleted", ann: map[string]string{DefaultKey(KeyVIP): "going"}, reason: ReasonAddress, err: ErrVipDeleting},
		{name: "subnet unknown", ann: map[string]string{DefaultKey(KeyVIP): "nosubnet"}, reason: ReasonSubnet, err: ErrUnknownSubnet},
		{name: "address outside its subnet", ann: map[string]string{DefaultKey(KeyVIP): "outside"}, reason: ReasonAddress, err: ipam.ErrNotInRange},
		{name: "logical_switch names another subnet", ann: map[string]string{DefaultKey(KeyVIP): "v1", DefaultKey(KeyLogicalSwitch): "ovn-default"},
			reason: ReasonAddress, inputError: true},
		{name: "allocated from another Vip (an edit)", ann: map[string]string{DefaultKey(KeyVIP): "v1", DefaultKey(KeyAllocated): "true",
			DefaultKey(KeyLogicalSwitch): "vips", DefaultKey(KeyIPAddress): "10.70.0.13", DefaultKey(KeyMACAddress): "00:00:00:00:0a:0d"},
			reason: ReasonAddress, err: ErrVipNotApplied},
		{name: "allocated elsewhere, claims not seen yet", ann: map[string]string{DefaultKey(KeyVIP): "v1", DefaultKey(KeyAllocated): "true",
			DefaultKey(KeyLogicalSwitch): "ovn-default", DefaultKey(KeyIPAddress): "10.16.0.5"},
			reason: ReasonAddress, err: ErrVipNotApplied},
		{name: "allocated from this Vip", ann: map[string]string{DefaultKey(KeyVIP): "v1", DefaultKey(KeyAllocated): "true",
			DefaultKey(KeyLogicalSwitch): "vips", DefaultKey(KeyIPAddress): "10.70.0.10", DefaultKey(KeyMACAddress): "00:00:00:00:0a:0a"},
			source: FromVip, addr: "10.70.0.10", mac: "00:00:00:00:0a:0a"},
		{name: "already allocated on claims of its own", ann: map[string]string{DefaultKey(KeyVIP): "v1", DefaultKey(KeyAllocated): "true"},
			claims: []*v1alpha1.AddressClaim{{ObjectMeta: metav1.ObjectMeta{Name: "ovn-default.10.16.0.5"}, Spec: v1alpha1.AddressClaimSpec{
				Subnet: "ovn-default", Address: "10.16.0.5", Provider: DefaultProvider, MAC: "0a:58:0a:10:00:05",
				Owner: v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "ns", Name: "p", UID: "pod-uid"}}}},
			source: FromClaims, addr: "10.16.0.5", mac: "0a:58:0a:10:00:05"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ann := map[string]string{AnnotationNetworks: "net1"}
			for k, v := range tc.ann {
				ann[k] = v
			}
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid", Annotations: ann}}
			pl := &Planner{View: vipView(), ClusterRouter: DefaultClusterRouter, PodNICType: DefaultPodNICType, IPRecords: true, Vips: vips}
			plan, err := pl.Plan(PlanInput{Pod: p, Claims: tc.claims, Now: time.Unix(100, 0)})
			if err != nil {
				t.Fatal(err)
			}
			var def, attach *NetworkPlan
			for _, np := range plan.Networks {
				switch np.Provider {
				case DefaultProvider:
					def = np
				case "net1.ns.ovn":
					attach = np
				}
			}
			if attach == nil {
				t.Fatalf("the attachment is not planned beside the Vip network: %+v", plan)
			}
			if tc.reason != "" {
				if def != nil || len(plan.Failed) != 1 {
					t.Fatalf("default network planned %+v, failures %v; want one failure", def, plan.Failed)
				}
				f := plan.Failed[0]
				var ie *InputError
				if f.Reason != tc.reason || f.Provider != DefaultProvider || (tc.err != nil && !errors.Is(f, tc.err)) || tc.inputError != errors.As(f, &ie) {
					t.Fatalf("failure %q %v; want %q %v (input error %v)", f.Reason, f, tc.reason, tc.err, tc.inputError)
				}
				return
			}
			if def == nil || len(plan.Failed) != 0 {
				t.Fatalf("default network not planned; failures %v", plan.Failed)
			}
			a := def.Address
			if a.Source != tc.source || a.Addresses.String() != tc.addr || a.MAC.String() != tc.mac {
				t.Fatalf("address %s %s %s; want %s %s %s", a.Source, a.Addresses, a.MAC, tc.source, tc.addr, tc.mac)
			}
			if tc.source != FromVip {
				return
			}
			if def.Subnet.Name != "vips" || def.Why != "vip" || def.Port != "p.ns" || def.IPRecord != "p.ns" || a.Vip != tc.ann[DefaultKey(KeyVIP)] {
				t.Fatalf("plan %+v", def)
			}
			// Complete writes the Vip's address and MAC on the pod and its port.
			w := pl.Complete(p, def, ipam.Allocation{Subnet: "vips", Addresses: a.Addresses, MAC: a.MAC})
			if w.Annotations[DefaultKey(KeyIPAddress)] != tc.addr || w.Annotations[DefaultKey(KeyMACAddress)] != tc.mac ||
				w.Annotations[DefaultKey(KeyLogicalSwitch)] != "vips" || w.Port.MAC != tc.mac || strings.Join(w.Port.IPs, ",") != tc.addr {
				t.Fatalf("writes %+v port %+v", w.Annotations, w.Port)
			}
		})
	}
}

// TestVipFailureRetries: every Vip failure is retried, and counts as a
// waiting key (it does not hold back its shard's first pass), except a
// vip annotation on an already allocated network, which is not.
func TestVipFailureRetries(t *testing.T) {
	tm := (&Pods{cfg: PodConfig{}}).NewTerm(0, nil, nil)
	if got := tm.failureError(&NetworkFailure{Provider: DefaultProvider, Reason: ReasonAddress, Err: ErrVipNotApplied}); !queue.IsPermanent(got) {
		t.Errorf("%v is retried; want it permanent, as an ip_address edit", got)
	}
	for _, err := range []error{ErrUnknownVip, ErrVipNotReserved, ErrVipInUse, ErrVipDeleting} {
		got := tm.failureError(&NetworkFailure{Provider: DefaultProvider, Reason: ReasonAddress, Err: err})
		if queue.IsPermanent(got) || !queue.IsWaiting(got) {
			t.Errorf("%v: %v is permanent or not waiting", err, got)
		}
		if vipWaitReason(got) == "" {
			t.Errorf("%v: no metric reason", err)
		}
	}
}

// TestCollectHoldsVip: a Vip's address is held for the Vip's claims, and
// stays so once a pod runs with it: the pod, its record and its port
// stand for the Vip, with no conflict between them. Another pod
// annotated with that address is a conflict as ever.
func TestCollectHoldsVip(t *testing.T) {
	v := reservedVip("v1", "vips", "10.70.0.10", "00:00:00:00:0a:0a", "user.ns")
	free := reservedVip("v2", "vips", "10.70.0.20", "00:00:00:00:0a:14", "")
	user := holdPod("user", 5, kubeOVNAnnotations("ovn", "vips", "10.70.0.10", "00:00:00:00:0a:0a"))
	user.Annotations[DefaultKey(KeyVIP)] = "v1"
	squatter := holdPod("squatter", 1, kubeOVNAnnotations("ovn", "vips", "10.70.0.20", "00:00:00:00:0a:14"))
	// v3's pod is gone; its port and record are not yet.
	left := reservedVip("v3", "vips", "10.70.0.30", "00:00:00:00:0a:1e", "gone.ns")
	in := HoldInputs{
		Subnets: []*kubeovnv1.Subnet{subnet("vips", "10.70.0.0/24", nil)},
		Pods:    []*corev1.Pod{user, squatter},
		Vips:    []*kubeovnv1.Vip{v, free, left},
		IPs: []*kubeovnv1.IP{{ObjectMeta: metav1.ObjectMeta{Name: "user.ns"},
			Spec: kubeovnv1.IPSpec{PodName: "user", Namespace: "ns", Subnet: "vips", IPAddress: "10.70.0.10"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "gone.ns"},
				Spec: kubeovnv1.IPSpec{PodName: "gone", Namespace: "ns", Subnet: "vips", IPAddress: "10.70.0.30"}}},
		Ports: []ovn.PortAddress{{Name: "user.ns", Switch: "vips", Pod: "ns/user", MAC: "00:00:00:00:0a:0a", IPs: []string{"10.70.0.10"}},
			{Name: "gone.ns", Switch: "vips", Pod: "ns/gone", MAC: "00:00:00:00:0a:1e", IPs: []string{"10.70.0.30"}}},
		Now: time.Unix(100, 0),
	}
	holds, conflicts := CollectHolds(in)
	vipOwner := ipam.OwnerKey(VipClaimOwner(v))
	h := holds["vips"][netip.MustParseAddr("10.70.0.10")]
	if h.Owner != vipOwner || h.Source != "pod ns/user" {
		t.Errorf("hold of the used Vip's address %+v, want owner %s", h, vipOwner)
	}
	if !h.Allows(VipClaimOwner(v)) || h.Allows(ClaimOwnerOf(user)) {
		t.Errorf("hold %+v must let the Vip claim, and not the pod", h)
	}
	if h := holds["vips"][netip.MustParseAddr("10.70.0.30")]; h.Owner != ipam.OwnerKey(VipClaimOwner(left)) || h.Source != "Vip v3" {
		t.Errorf("hold of v3's address, its pod gone %+v", h)
	}
	// The squatter, a live pod, outranks the Vip v2 it is not given
	// from: a conflict, reported.
	h2 := holds["vips"][netip.MustParseAddr("10.70.0.20")]
	if h2.Owner != ipam.OwnerKey(ClaimOwnerOf(squatter)) {
		t.Errorf("hold of v2's address %+v", h2)
	}
	if len(conflicts) != 1 || conflicts[0].Addr.String() != "10.70.0.20" || conflicts[0].Others[0] != "Vip v2" {
		t.Errorf("conflicts %+v; want only v2's address, against the squatter", conflicts)
	}
	// A free Vip alone holds for itself.
	holds, _ = CollectHolds(HoldInputs{Subnets: in.Subnets, Vips: []*kubeovnv1.Vip{free}, Now: in.Now})
	if h := holds["vips"][netip.MustParseAddr("10.70.0.20")]; h.Owner != ipam.OwnerKey(VipClaimOwner(free)) || h.Source != "Vip v2" {
		t.Errorf("free Vip's hold %+v", h)
	}
}

// fakeVipWrites records Vip patches and answers with fail when set.
type fakeVipWrites struct {
	patches []string
	fail    error
}

func (f *fakeVipWrites) PatchVip(_ context.Context, name string, patch []byte) (*kubeovnv1.Vip, error) {
	f.patches = append(f.patches, name+" "+string(patch))
	return &kubeovnv1.Vip{}, f.fail
}

func (f *fakeVipWrites) PatchVipStatus(_ context.Context, name string, patch []byte) (*kubeovnv1.Vip, error) {
	f.patches = append(f.patches, name+" status "+string(patch))
	return &kubeovnv1.Vip{}, f.fail
}

// vipTerm is a Term over a Vip indexer, a claim indexer and fake writes.
func vipTerm(t *testing.T, vips []*kubeovnv1.Vip, claims []*v1alpha1.AddressClaim) (*Term, *fakeVipWrites, *record.FakeRecorder) {
	t.Helper()
	vi := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, v := range vips {
		if err := vi.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	ci := cache.NewIndexer(cache.MetaNamespaceKeyFunc, ClaimIndexers())
	for _, c := range claims {
		if err := ci.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	w := &fakeVipWrites{}
	rec := record.NewFakeRecorder(10)
	p := &Pods{cfg: PodConfig{Vips: kubeovnlisters.NewVipLister(vi), VipWrites: w, ClaimIndex: ci, Recorder: rec}}
	return p.NewTerm(0, nil, nil), w, rec
}

func vipClaim(v *kubeovnv1.Vip, subnet, addr string) *v1alpha1.AddressClaim {
	a := netip.MustParseAddr(addr)
	return &v1alpha1.AddressClaim{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClaimName(subnet, a)},
		Spec: v1alpha1.AddressClaimSpec{Subnet: subnet, Address: addr, Owner: VipClaimOwner(v)}}
}

// TestTakeVip pins the shell's side: the Vip's claims must exist, the
// Vip is marked taken by the pod's port with its resourceVersion as a
// precondition, a lost race is retried, and a Vip taken meanwhile by
// another pod is refused.
func TestTakeVip(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid"}}
	free := reservedVip("v1", "vips", "10.70.0.10", "00:00:00:00:0a:0a", "")
	np := &NetworkPlan{Provider: DefaultProvider, Subnet: subnet("vips", "10.70.0.0/24", nil), Port: "p.ns",
		Address: AddressRequest{Source: FromVip, Vip: "v1", Addresses: ipam.Addresses{V4: netip.MustParseAddr("10.70.0.10")}}}
	ctx := context.Background()

	t.Run("claimed and free: taken", func(t *testing.T) {
		tm, w, _ := vipTerm(t, []*kubeovnv1.Vip{free}, []*v1alpha1.AddressClaim{vipClaim(free, "vips", "10.70.0.10")})
		al, err := tm.takeVip(ctx, p, np)
		if err != nil || al.Addresses.String() != "10.70.0.10" {
			t.Fatalf("takeVip = %v, %v", al, err)
		}
		want := `v1 {"metadata":{"labels":{"ovn.kubernetes.io/ip_reserved":"p.ns"},"resourceVersion":"7"}}`
		if len(w.patches) != 1 || w.patches[0] != want {
			t.Fatalf("patches %q; want %q", w.patches, want)
		}
	})
	t.Run("already this pod's: no write", func(t *testing.T) {
		mine := reservedVip("v1", "vips", "10.70.0.10", "00:00:00:00:0a:0a", "p.ns")
		tm, w, _ := vipTerm(t, []*kubeovnv1.Vip{mine}, []*v1alpha1.AddressClaim{vipClaim(mine, "vips", "10.70.0.10")})
		if _, err := tm.takeVip(ctx, p, np); err != nil || len(w.patches) != 0 {
			t.Fatalf("takeVip: %v, patches %q", err, w.patches)
		}
	})
	t.Run("no claim of the Vip: waits", func(t *testing.T) {
		tm, w, _ := vipTerm(t, []*kubeovnv1.Vip{free}, nil)
		if _, err := tm.takeVip(ctx, p, np); !errors.Is(err, ErrVipNotReserved) || len(w.patches) != 0 {
			t.Fatalf("takeVip: %v, patches %q", err, w.patches)
		}
	})
	t.Run("running with the address, no claim yet: waits quietly", func(t *testing.T) {
		running := p.DeepCopy()
		running.Annotations = map[string]string{DefaultKey(KeyAllocated): "true", DefaultKey(KeyLogicalSwitch): "vips",
			DefaultKey(KeyIPAddress): "10.70.0.10", DefaultKey(KeyMACAddress): "00:00:00:00:0a:0a"}
		tm, w, rec := vipTerm(t, []*kubeovnv1.Vip{free}, nil)
		_, err := tm.takeVip(ctx, running, np)
		if errors.Is(err, ErrVipUnavailable) || !queue.IsWaiting(err) || len(w.patches) != 0 {
			t.Fatalf("takeVip: %v, patches %q", err, w.patches)
		}
		if d, retry := queue.RetryDelay(err); !retry || d <= 0 {
			t.Fatalf("takeVip: %v is not a delayed retry", err)
		}
		if got := tm.vipError(running, err); got != err || len(rec.Events) != 0 {
			t.Fatalf("vipError = %v, %d events; want it unchanged and no Event", got, len(rec.Events))
		}
	})
	t.Run("claim of another owner: waits", func(t *testing.T) {
		c := vipClaim(free, "vips", "10.70.0.10")
		c.Spec.Owner = v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "ns", Name: "other", UID: "x"}
		tm, _, _ := vipTerm(t, []*kubeovnv1.Vip{free}, []*v1alpha1.AddressClaim{c})
		if _, err := tm.takeVip(ctx, p, np); !errors.Is(err, ErrVipNotReserved) {
			t.Fatalf("takeVip: %v", err)
		}
	})
	t.Run("taken by another pod since the plan", func(t *testing.T) {
		other := reservedVip("v1", "vips", "10.70.0.10", "00:00:00:00:0a:0a", "other.ns")
		tm, w, rec := vipTerm(t, []*kubeovnv1.Vip{other}, []*v1alpha1.AddressClaim{vipClaim(other, "vips", "10.70.0.10")})
		_, err := tm.takeVip(ctx, p, np)
		if !errors.Is(err, ErrVipInUse) || len(w.patches) != 0 {
			t.Fatalf("takeVip: %v, patches %q", err, w.patches)
		}
		if got := tm.vipError(p, err); !queue.IsWaiting(got) {
			t.Fatalf("vipError = %v, not waiting", got)
		}
		if e := <-rec.Events; !strings.Contains(e, "Warning "+ReasonAddress) || !strings.Contains(e, "v1") {
			t.Fatalf("event %q", e)
		}
	})
	t.Run("lost race: retried", func(t *testing.T) {
		tm, w, _ := vipTerm(t, []*kubeovnv1.Vip{free}, []*v1alpha1.AddressClaim{vipClaim(free, "vips", "10.70.0.10")})
		w.fail = apierrors.NewConflict(schema.GroupResource{Group: "kubeovn.io", Resource: "vips"}, "v1", errors.New("changed"))
		_, err := tm.takeVip(ctx, p, np)
		if d, retry := queue.RetryDelay(err); !retry || d <= 0 {
			t.Fatalf("takeVip after a conflict: %v", err)
		}
	})
	t.Run("gone: waits", func(t *testing.T) {
		tm, _, _ := vipTerm(t, nil, nil)
		if _, err := tm.takeVip(ctx, p, np); !errors.Is(err, ErrUnknownVip) {
			t.Fatalf("takeVip: %v", err)
		}
	})
}

// TestReleaseVipUse: a released key gives back exactly the Vips its
// default port took.
func TestReleaseVipUse(t *testing.T) {
	mine := reservedVip("v1", "vips", "10.70.0.10", "00:00:00:00:0a:0a", "p.ns")
	other := reservedVip("v2", "vips", "10.70.0.11", "00:00:00:00:0a:0b", "q.ns")
	tm, w, _ := vipTerm(t, []*kubeovnv1.Vip{mine, other}, nil)
	if err := tm.releaseVipUse(context.Background(), "ns/p"); err != nil {
		t.Fatal(err)
	}
	want := `v1 {"metadata":{"labels":{"ovn.kubernetes.io/ip_reserved":""},"resourceVersion":"7"}}`
	if len(w.patches) != 1 || w.patches[0] != want {
		t.Fatalf("patches %q; want %q", w.patches, want)
	}
	w.fail = apierrors.NewConflict(schema.GroupResource{Group: "kubeovn.io", Resource: "vips"}, "v1", errors.New("changed"))
	if _, retry := queue.RetryDelay(tm.releaseVipUse(context.Background(), "ns/p")); !retry {
		t.Fatal("a conflict giving back a Vip is not retried")
	}
}

// TestDecideVipRequest pins what a Vip asks to reserve.
func TestDecideVipRequest(t *testing.T) {
	for _, tc := range []struct {
		name      string
		spec      kubeovnv1.VipSpec
		status    kubeovnv1.VipStatus
		addr, mac string
		bad       bool
	}{
		{name: "dynamic", spec: kubeovnv1.VipSpec{Subnet: "vips"}},
		{name: "static with MAC", spec: kubeovnv1.VipSpec{Subnet: "vips", V4ip: "10.70.0.5", MacAddress: "00:00:00:00:0a:05"}, addr: "10.70.0.5", mac: "00:00:00:00:0a:05"},
		{name: "dual static", spec: kubeovnv1.VipSpec{Subnet: "vips", V4ip: "10.70.0.5", V6ip: "fd00::5"}, addr: "10.70.0.5,fd00::5"},
		{name: "status wins", spec: kubeovnv1.VipSpec{Subnet: "vips", V4ip: "10.70.0.5"}, status: kubeovnv1.VipStatus{V4ip: "10.70.0.6", Mac: "00:00:00:00:0a:06"},
			addr: "10.70.0.6", mac: "00:00:00:00:0a:06"},
		{name: "no subnet", spec: kubeovnv1.VipSpec{V4ip: "10.70.0.5"}, bad: true},
		{name: "v6 in v4ip", spec: kubeovnv1.VipSpec{Subnet: "vips", V4ip: "fd00::5"}, bad: true},
		{name: "bad MAC", spec: kubeovnv1.VipSpec{Subnet: "vips", MacAddress: "nope"}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := DecideVipRequest(&kubeovnv1.Vip{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Spec: tc.spec, Status: tc.status})
			var ie *InputError
			if tc.bad != errors.As(err, &ie) {
				t.Fatalf("err = %v, want input error %v", err, tc.bad)
			}
			if tc.bad {
				return
			}
			addr := ""
			if !req.Static.IsZero() {
				addr = req.Static.String()
			}
			mac := ""
			if !req.MAC.IsZero() {
				mac = req.MAC.String()
			}
			if addr != tc.addr || mac != tc.mac || req.Subnet != "vips" {
				t.Fatalf("request %+v: %q %q; want %q %q", req, addr, mac, tc.addr, tc.mac)
			}
		})
	}
}

// TestVipPatch: what the reconciler records on a Vip, and nothing once
// the Vip says it all.
func TestVipPatch(t *testing.T) {
	v := &kubeovnv1.Vip{ObjectMeta: metav1.ObjectMeta{Name: "v", ResourceVersion: "3", Finalizers: []string{deprecatedVipFinalizer, "other"}},
		Spec: kubeovnv1.VipSpec{Subnet: "vips"}}
	al := ipam.Allocation{Subnet: "vips", Addresses: ipam.Addresses{V4: netip.MustParseAddr("10.70.0.9")}, MAC: mustMAC(t, "00:00:00:00:0a:09")}
	patch, status := VipPatch(v, al)
	want := `{"metadata":{"finalizers":["other","kubeovn.io/kube-ovn-controller"],"labels":{"ovn.kubernetes.io/ip_reserved":"","ovn.kubernetes.io/subnet":"vips"},"resourceVersion":"3"},` +
		`"spec":{"macAddress":"00:00:00:00:0a:09","v4ip":"10.70.0.9"},"status":{"mac":"00:00:00:00:0a:09","v4ip":"10.70.0.9"}}`
	if string(patch) != want || status["v4ip"] != "10.70.0.9" {
		t.Fatalf("patch %s\nwant  %s\nstatus %v", patch, want, status)
	}
	done := &kubeovnv1.Vip{ObjectMeta: metav1.ObjectMeta{Name: "v", Finalizers: []string{"other", FinalizerVip},
		Labels: map[string]string{LabelSubnetName: "vips", LabelIPReserved: "p.ns"}},
		Spec:   kubeovnv1.VipSpec{Subnet: "vips", V4ip: "10.70.0.9", MacAddress: "00:00:00:00:0A:09"},
		Status: kubeovnv1.VipStatus{V4ip: "10.70.0.9", Mac: "00:00:00:00:0A:09"}}
	if patch, _ := VipPatch(done, al); patch != nil {
		t.Fatalf("patch of a recorded Vip: %s", patch)
	}
}

// TestVipUsers: the live pods that hold a Vip's address.
func TestVipUsers(t *testing.T) {
	v := reservedVip("v1", "vips", "10.70.0.10", "00:00:00:00:0a:0a", "taker.ns")
	mk := func(name string, ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Annotations: ann}}
	}
	taker := mk("taker", map[string]string{DefaultKey(KeyVIP): "v1"})
	annotated := mk("annotated", map[string]string{DefaultKey(KeyVIP): "v1", DefaultKey(KeyIPAddress): "10.70.0.10"})
	waiting := mk("waiting", map[string]string{DefaultKey(KeyVIP): "v1"})
	elsewhere := mk("taker2", map[string]string{DefaultKey(KeyVIP): "v2"})
	done := mk("done", map[string]string{DefaultKey(KeyVIP): "v1", DefaultKey(KeyIPAddress): "10.70.0.10"})
	done.Status.Phase = corev1.PodSucceeded
	done.Spec.RestartPolicy = corev1.RestartPolicyNever
	got := VipUsers(v, []*corev1.Pod{taker, annotated, waiting, elsewhere, done}, time.Unix(100, 0))
	if len(got) != 2 || got[0] != taker || got[1] != annotated {
		var names []string
		for _, p := range got {
			names = append(names, p.Name)
		}
		t.Fatalf("users %v; want taker, annotated", names)
	}
}
