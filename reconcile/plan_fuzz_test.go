package reconcile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// FuzzPlan feeds arbitrary annotation sets and NAD configs through the
// plan step: it must never panic, and every network it cannot serve must
// come back as a NetworkFailure with an Event reason.
func FuzzPlan(f *testing.F) {
	f.Add("k8s.v1.cni.cncf.io/networks=net1\nnet1.default.ovn.kubernetes.io/ip_address=10.50.0.9", `{"type":"kube-ovn"}`)
	f.Add("v1.multus-cni.io/default-network=net1\novn.kubernetes.io/logical_switch=x", `{"plugins":[{"type":"kube-ovn"}]}`)
	f.Add(`k8s.v1.cni.cncf.io/networks=[{"name":"net1","ips":["10.50.0.7/24"],"mac":"zz"}]`, `{"type":"macvlan","ipam":{"type":"kube-ovn"}}`)
	f.Add("ovn.kubernetes.io/ip_pool=10.40.0.1,bad\novn.kubernetes.io/allocated=true\novn.kubernetes.io/ip_address=::1", `not json`)
	f.Add("ovn.kubernetes.io/eip=1.2.3.4\novn.kubernetes.io/port_vips=a,b\nnet1.default.ovn.kubernetes.io/allocated=true", `{}`)
	view, pl := fuzzView()
	f.Fuzz(func(t *testing.T, annotations, nadConfig string) {
		view.nads["default/net1"] = nadConfig
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "u", Annotations: map[string]string{}}}
		pod.Spec.NodeName = "n"
		for _, line := range strings.Split(annotations, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				pod.Annotations[k] = v
			}
		}
		checkPlan(t, pl, view, pod)
	})
}

// fuzzView is the View FuzzPlan and the generated sets plan against.
func fuzzView() (*fakeView, *Planner) {
	view := newFakeView()
	for _, s := range []*kubeovnv1.Subnet{
		{ObjectMeta: metav1.ObjectMeta{Name: "main"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.40.0.0/24", Default: true}},
		{ObjectMeta: metav1.ObjectMeta{Name: "net1"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.50.0.0/24,fd00::/120", Provider: "net1.default.ovn"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ipam"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.52.0.0/24", Provider: "net1.default"}},
	} {
		view.subnets[s.Name] = s
	}
	view.namespaces["default"] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	return view, &Planner{View: view, ClusterRouter: DefaultClusterRouter, PodNICType: DefaultPodNICType, IPRecords: true}
}

// checkPlan plans pod and checks the outcome: a plan (a pod with a valid
// key always gets one), every failure a NetworkFailure with an Event
// reason, every network completable. It returns the plan.
func checkPlan(t *testing.T, pl *Planner, view *fakeView, pod *corev1.Pod) *Plan {
	t.Helper()
	p, err := pl.Plan(PlanInput{Pod: pod, Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatalf("a pod with a valid key must get a plan: %v (annotations %v)", err, pod.Annotations)
	}
	for _, fl := range p.Failed {
		if fl.Reason == "" || fl.Err == nil {
			t.Fatalf("failure without a reason or cause: %+v", fl)
		}
		var nf *NetworkFailure
		if !errors.As(error(fl), &nf) {
			t.Fatal("failure is not a NetworkFailure")
		}
	}
	for _, np := range p.Networks {
		if np.Subnet == nil || np.Alloc == nil || np.Provider == "" {
			t.Fatalf("network without subnet or provider: %+v", np)
		}
		// Complete must cope with whatever the plan decided.
		al := (&planScenario{view: view}).allocate(np)
		w := pl.Complete(pod, np, al)
		if w.Annotations[Key(np.Provider, KeyAllocated)] != "true" {
			t.Fatalf("network %s completed without its allocated annotation", np.Provider)
		}
	}
	return p
}

// TestPlanGeneratedAnnotationSets runs 100,000 generated annotation sets
// through the plan step: every key of the contract on every provider
// (the default network, an OVN attachment, an IPAM-only one, one with no
// subnet), with valid and broken values, and the multus annotations in
// their forms. Every pod must get a plan whose failures each carry an
// Event reason, and whose networks all complete. The generator is seeded,
// so a failure names a set that can be replayed.
func TestPlanGeneratedAnnotationSets(t *testing.T) {
	sets := 100_000
	if testing.Short() {
		sets = 5_000
	}
	view, pl := fuzzView()
	view.nads["default/net1"] = `{"type":"kube-ovn"}`
	keys := []string{KeyLogicalSwitch, KeyIPAddress, KeyMACAddress, KeyIPPool, KeyCIDR, KeyGateway, KeyAllocated, KeyRouted,
		KeyPodNICType, KeyLogicalRouter, KeyVlanID, KeyProviderNetwork, KeyPortSecurity, KeyPortVIPs, KeySecurityGroups,
		KeyLayer2Forward, KeyVIP, KeyNorthGateway, KeyEIP, KeySNAT, KeyVirtualMachine}
	providers := []string{DefaultProvider, "net1.default.ovn", "net1.default", "other.default.ovn"}
	values := []string{"", "true", "false", "maybe", "main", "net1", "ipam", "nope",
		"10.40.0.9", "10.40.0.1", "10.40.0.0", "10.40.0.300", "10.50.0.7", "fd00::7", "10.50.0.8,fd00::8", "10.99.0.1", "::1",
		"10.40.0.5;10.40.0.6", "10.40.0.5,,10.40.0.6", "00:00:00:AB:CD:EF", "0a:58:0a:28:00:09", "zz:zz", "1.2.3.4", "1.2.3",
		"sg1, sg2", "a,b", "10.40.0.0/24", strings.Repeat("x", 300)}
	networks := []string{"", "net1", "default/net1", "net1@eth1", "net1,net1", "missing", "[", `[{"name":"net1"}]`,
		`[{"name":"net1","ips":["10.50.0.7/24"],"mac":"00:00:00:00:00:07"}]`, `[{"name":"net1","namespace":"default","interface":"eth9"}]`,
		`[{"name":""}]`, `[{"name":"net1","ips":["bad"]}]`}
	rng := rand.New(rand.NewPCG(12, 34))
	reasons := map[string]int{}
	for i := range sets {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("p%d", i), UID: "u", Annotations: map[string]string{}}}
		if rng.IntN(4) > 0 {
			pod.Spec.NodeName = "n"
		}
		for range rng.IntN(8) {
			k := Key(providers[rng.IntN(len(providers))], keys[rng.IntN(len(keys))])
			pod.Annotations[k] = values[rng.IntN(len(values))]
		}
		switch rng.IntN(4) {
		case 0:
			pod.Annotations[AnnotationNetworks] = networks[rng.IntN(len(networks))]
		case 1:
			pod.Annotations[AnnotationDefaultNetwork] = networks[rng.IntN(len(networks))]
		}
		p := checkPlan(t, pl, view, pod)
		for _, fl := range p.Failed {
			reasons[fl.Reason]++
		}
		if t.Failed() {
			t.Fatalf("set %d: %v", i, pod.Annotations)
		}
	}
	// The generator reaches the failure paths, not only the happy one.
	for _, r := range []string{ReasonInvalidAnnotation, ReasonSubnet, ReasonNADNotFound} {
		if reasons[r] == 0 {
			t.Errorf("no generated set failed with %s (reasons seen: %v)", r, reasons)
		}
	}
	t.Logf("%d generated annotation sets planned; failures by reason: %v", sets, reasons)
}
