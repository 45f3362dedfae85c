package reconcile

import (
	"errors"
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
	view := newFakeView()
	for _, s := range []*kubeovnv1.Subnet{
		{ObjectMeta: metav1.ObjectMeta{Name: "main"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.40.0.0/24", Default: true}},
		{ObjectMeta: metav1.ObjectMeta{Name: "net1"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.50.0.0/24,fd00::/120", Provider: "net1.default.ovn"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ipam"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.52.0.0/24", Provider: "net1.default"}},
	} {
		view.subnets[s.Name] = s
	}
	view.namespaces["default"] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pl := &Planner{View: view, ClusterRouter: DefaultClusterRouter, PodNICType: DefaultPodNICType, IPRecords: true}
	f.Fuzz(func(t *testing.T, annotations, nadConfig string) {
		view.nads["default/net1"] = nadConfig
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "u", Annotations: map[string]string{}}}
		pod.Spec.NodeName = "n"
		for _, line := range strings.Split(annotations, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				pod.Annotations[k] = v
			}
		}
		p, err := pl.Plan(PlanInput{Pod: pod, Now: time.Unix(0, 0)})
		if err != nil {
			t.Fatalf("a pod with a valid key must get a plan: %v", err)
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
	})
}
