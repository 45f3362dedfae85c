package reconcile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/test/harness"
)

func (s *slice) createNAD(ns, name, config string) {
	s.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"config": config},
	}}
	if _, err := s.dyn.Resource(harness.NADResource).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("creating NAD %s/%s: %v", ns, name, err)
	}
}

// routedOn reports whether every OVN provider given is allocated and routed.
func routedOn(providers ...string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		for _, pr := range providers {
			if p.Annotations[Key(pr, KeyAllocated)] != "true" || p.Annotations[Key(pr, KeyRouted)] != "true" {
				return false
			}
		}
		return true
	}
}

// checkNetwork asserts one OVN network of a pod row by row: the port on
// the annotated switch with exactly the annotated MAC and addresses, the
// pod's external id, membership of the node's port group, and the IP
// record named like the port.
func (s *slice) checkNetwork(ctx context.Context, p *corev1.Pod, provider string) {
	s.t.Helper()
	ann := func(k string) string { return p.Annotations[Key(provider, k)] }
	port := PortName(p.Name, p.Namespace, provider)
	view := s.waitPort(port, ann(KeyMACAddress)+" "+strings.ReplaceAll(ann(KeyIPAddress), ",", " "))
	if view.ExternalIDs["pod"] != p.Namespace+"/"+p.Name || view.ExternalIDs["ls"] != ann(KeyLogicalSwitch) {
		s.t.Fatalf("port %s external ids %v, want pod %s/%s on %s", port, view.ExternalIDs, p.Namespace, p.Name, ann(KeyLogicalSwitch))
	}
	lsp, _ := s.nb.Port(port)
	waitView(s.t, ctx, func() error {
		pg := &nbdb.PortGroup{Name: NodePortGroupName(ann(KeyLogicalSwitch), p.Spec.NodeName)}
		if err := s.view.Get(ctx, pg); err != nil {
			return err
		}
		for _, u := range pg.Ports {
			if u == lsp.UUID {
				return nil
			}
		}
		return fmt.Errorf("port %s is not in port group %s", port, pg.Name)
	})
	ip, err := s.kube.Shardnet.KubeovnV1().IPs().Get(ctx, port, metav1.GetOptions{})
	if err != nil {
		s.t.Fatalf("IP record %s: %v", port, err)
	}
	if ip.Spec.IPAddress != ann(KeyIPAddress) || ip.Spec.Subnet != ann(KeyLogicalSwitch) || ip.Spec.MacAddress != ann(KeyMACAddress) {
		s.t.Fatalf("IP record %s: %+v, annotations %v", port, ip.Spec, p.Annotations)
	}
}

// claimsFor lists the pod's claims by provider.
func (s *slice) claimsFor(ctx context.Context, ns, name string) map[string][]string {
	s.t.Helper()
	list, err := s.kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string][]string{}
	for _, c := range list.Items {
		if c.Spec.Owner.Namespace == ns && c.Spec.Owner.Name == name {
			out[claimProvider(&c)] = append(out[claimProvider(&c)], c.Spec.Subnet+"/"+c.Spec.Address)
		}
	}
	return out
}

// TestPodSliceAttachments serves pods with no, one and two attachments
// (one OVN, one IPAM-only) and one whose default network is replaced, on
// real servers, and checks each network row by row through hot-unplug,
// delete and re-create (docs/contract.md §8).
func TestPodSliceAttachments(t *testing.T) {
	s := startSlice(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := s.kube.CreateNode(t, "node-m", "")
	s.createSubnet("main", "10.70.0.0/24", func(sp *kubeovnv1.SubnetSpec) { sp.Default = true })
	s.createSubnet("att", "10.71.0.0/24", func(sp *kubeovnv1.SubnetSpec) { sp.Provider = "net1.multi.ovn" })
	s.createSubnet("store", "10.72.0.0/24", func(sp *kubeovnv1.SubnetSpec) { sp.Provider = "store.multi" })
	s.createNamespace("multi")
	s.createNAD("multi", "net1", `{"cniVersion":"0.3.1","type":"kube-ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock"}`)
	s.createNAD("multi", "store", `{"cniVersion":"0.3.1","type":"macvlan","master":"eth0","ipam":{"type":"kube-ovn"}}`)

	const net1, store = "net1.multi.ovn", "store.multi"
	s.createPods([]*corev1.Pod{
		newPod("multi", "zero", node.Name, nil),
		newPod("multi", "one", node.Name, map[string]string{AnnotationNetworks: "net1"}),
		newPod("multi", "two", node.Name, map[string]string{AnnotationNetworks: `[{"name":"net1"},{"name":"store","namespace":"multi"}]`}),
		newPod("multi", "primary", node.Name, map[string]string{AnnotationDefaultNetwork: "multi/net1"}),
		newPod("multi", "ghost", node.Name, map[string]string{AnnotationNetworks: "nope"}),
	})

	zero := s.waitPod(ctx, "multi", "zero", routedOn(DefaultProvider))
	s.checkNetwork(ctx, zero, DefaultProvider)
	one := s.waitPod(ctx, "multi", "one", routedOn(DefaultProvider, net1))
	s.checkNetwork(ctx, one, DefaultProvider)
	s.checkNetwork(ctx, one, net1)
	if got := one.Annotations[Key(net1, KeyLogicalSwitch)]; got != "att" {
		t.Fatalf("attachment on subnet %q, want att (the subnet of its provider)", got)
	}

	two := s.waitPod(ctx, "multi", "two", func(p *corev1.Pod) bool {
		return routedOn(DefaultProvider, net1)(p) && p.Annotations[Key(store, KeyAllocated)] == "true"
	})
	s.checkNetwork(ctx, two, net1)
	// The IPAM-only network: addresses and four annotations, nothing else.
	if two.Annotations[Key(store, KeyCIDR)] != "10.72.0.0/24" || two.Annotations[Key(store, KeyGateway)] != "10.72.0.1" ||
		!strings.HasPrefix(two.Annotations[Key(store, KeyIPAddress)], "10.72.0.") {
		t.Fatalf("IPAM-only annotations: %v", two.Annotations)
	}
	for _, k := range []string{KeyMACAddress, KeyLogicalSwitch, KeyRouted} {
		if v, ok := two.Annotations[Key(store, k)]; ok {
			t.Fatalf("IPAM-only network has %s=%q", Key(store, k), v)
		}
	}
	if _, ok := s.nb.Port(PortName("two", "multi", store)); ok {
		t.Fatal("an IPAM-only network got a Northbound port")
	}
	if _, err := s.kube.Shardnet.KubeovnV1().IPs().Get(ctx, PortName("two", "multi", store), metav1.GetOptions{}); err != nil {
		t.Fatalf("IPAM-only network has no IP record: %v", err)
	}

	primary := s.waitPod(ctx, "multi", "primary", routedOn(net1))
	s.checkNetwork(ctx, primary, net1)
	if v, ok := primary.Annotations[DefaultKey(KeyAllocated)]; ok {
		t.Fatalf("a pod whose default network is replaced got ovn.kubernetes.io/allocated=%q", v)
	}
	if _, ok := s.nb.Port(PortName("primary", "multi", DefaultProvider)); ok {
		t.Fatal("a pod whose default network is replaced got a default-network port")
	}

	// A missing NAD: a warning naming it, and the default network served.
	s.waitWarning(ctx, "multi", "ghost", ReasonNADNotFound, "multi/nope")
	s.waitPod(ctx, "multi", "ghost", routedOn(DefaultProvider))

	// Hot-unplug of the IPAM-only attachment: its claim, record and
	// annotations go; the other networks keep their addresses.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"net1"}}}`, AnnotationNetworks)
	if _, err := s.kube.Client.CoreV1().Pods("multi").Patch(ctx, "two", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	after := s.waitPod(ctx, "multi", "two", func(p *corev1.Pod) bool { _, ok := p.Annotations[Key(store, KeyAllocated)]; return !ok })
	for _, pr := range []string{DefaultProvider, net1} {
		if after.Annotations[Key(pr, KeyIPAddress)] != two.Annotations[Key(pr, KeyIPAddress)] {
			t.Fatalf("unplugging store changed %s's address: %s -> %s", pr, two.Annotations[Key(pr, KeyIPAddress)], after.Annotations[Key(pr, KeyIPAddress)])
		}
	}
	waitView(t, ctx, func() error {
		if c := s.claimsFor(ctx, "multi", "two"); len(c[store]) != 0 || len(c[net1]) != 1 || len(c[DefaultProvider]) != 1 {
			return fmt.Errorf("claims after unplug: %v", c)
		}
		if _, err := s.kube.Shardnet.KubeovnV1().IPs().Get(ctx, PortName("two", "multi", store), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("IP record of the unplugged network: %v", err)
		}
		return nil
	})

	// Unplug the OVN attachment too: its port goes.
	patch = fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, AnnotationNetworks)
	if _, err := s.kube.Client.CoreV1().Pods("multi").Patch(ctx, "two", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitView(t, ctx, func() error {
		if _, ok := s.nb.Port(PortName("two", "multi", net1)); ok {
			return fmt.Errorf("port of the unplugged OVN attachment is still there")
		}
		if c := s.claimsFor(ctx, "multi", "two"); len(c[net1]) != 0 || len(c[DefaultProvider]) != 1 {
			return fmt.Errorf("claims after the second unplug: %v", c)
		}
		return nil
	})

	// Delete releases every provider; a re-created pod is served afresh.
	s.deletePod(ctx, "multi", "one")
	waitView(t, ctx, func() error {
		if c := s.claimsFor(ctx, "multi", "one"); len(c) != 0 {
			return fmt.Errorf("claims of a deleted pod: %v", c)
		}
		for _, pr := range []string{DefaultProvider, net1} {
			if _, ok := s.nb.Port(PortName("one", "multi", pr)); ok {
				return fmt.Errorf("port %s of a deleted pod", PortName("one", "multi", pr))
			}
			if _, err := s.kube.Shardnet.KubeovnV1().IPs().Get(ctx, PortName("one", "multi", pr), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("IP record %s of a deleted pod: %v", PortName("one", "multi", pr), err)
			}
		}
		return nil
	})
	s.createPods([]*corev1.Pod{newPod("multi", "one", node.Name, map[string]string{AnnotationNetworks: "net1"})})
	again := s.waitPod(ctx, "multi", "one", routedOn(DefaultProvider, net1))
	s.checkNetwork(ctx, again, net1)
}
