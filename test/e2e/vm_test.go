package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/kubevirt"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/reconcile"
)

func kubevirtCRDs() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "crds", "kubevirt")
}

// TestVMKeepsAddressAcrossLauncherPods (docs/contract.md R13, R14, A9,
// N1, K12): a VM keeps its address, MAC and port across three launcher
// pods — a graceful delete, a forced delete, and a replica process SIGKILLed in
// between — a live migration keeps one port and one address and moves the
// port to the target's node, and deleting the VM then its pod leaves no
// port, IP record or claim.
func TestVMKeepsAddressAcrossLauncherPods(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c.kube.InstallCRDs(t, kubevirtCRDs())
	n1 := c.kube.CreateNode(t, "vm-node-a", "")
	n2 := c.kube.CreateNode(t, "vm-node-b", "")
	c.subnet("vmnet", "10.77.0.0/24", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	c.namespace("vmns")
	// Replica processes, so that one can be SIGKILLed between launcher
	// pods.
	r0 := c.startProcess("r0", "--keep-vm-ip=true")
	c.startProcess("r1", "--keep-vm-ip=true")
	dyn := dynamic.NewForConfigOrDie(c.kube.Config)
	vm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"name": "vm1", "namespace": "vmns"},
		"spec":     map[string]any{"running": true},
	}}
	vmObj, err := dyn.Resource(kubevirt.VirtualMachines).Namespace("vmns").Create(ctx, vm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vmi := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
		"metadata": map[string]any{"name": "vm1", "namespace": "vmns"},
	}}
	vmi.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm1", UID: vmObj.GetUID()}})
	vmiObj, err := dyn.Resource(kubevirt.VirtualMachineInstances).Namespace("vmns").Create(ctx, vmi, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	launch := func(name, node string) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vmns",
				Annotations:     map[string]string{reconcile.DefaultKey(reconcile.KeyLiveMigration): "true"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance", Name: "vm1", UID: vmiObj.GetUID()}}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
		}
		if _, err := c.kube.Client.CoreV1().Pods("vmns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	routed := func(name string) *corev1.Pod {
		t.Helper()
		var got *corev1.Pod
		waitFor(t, ctx, "launcher pod "+name+" routed", func() error {
			p, err := c.kube.Client.CoreV1().Pods("vmns").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !isRouted(p) {
				return fmt.Errorf("not routed: %v", p.Annotations)
			}
			got = p
			return nil
		})
		return got
	}
	gone := func(name string, grace int64) {
		t.Helper()
		if err := c.kube.Client.CoreV1().Pods("vmns").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "launcher pod "+name+" gone", func() error {
			_, err := c.kube.Client.CoreV1().Pods("vmns").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there: %v", err)
		})
	}
	// vmPorts are the Northbound ports of the VM.
	vmPorts := func() []nbdb.LogicalSwitchPort {
		var out []nbdb.LogicalSwitchPort
		for _, p := range c.ports(ctx) {
			if p.ExternalIDs["pod"] == "vmns/vm1" {
				out = append(out, p)
			}
		}
		return out
	}
	ipKey, macKey, vmKey := reconcile.DefaultKey(reconcile.KeyIPAddress), reconcile.DefaultKey(reconcile.KeyMACAddress), reconcile.DefaultKey(reconcile.KeyVirtualMachine)

	launch("virt-launcher-vm1-aaaaa", n1.Name)
	first := routed("virt-launcher-vm1-aaaaa")
	addr, mac := first.Annotations[ipKey], first.Annotations[macKey]
	if first.Annotations[vmKey] != "vm1" {
		t.Fatalf("annotation %s=%q, want vm1", vmKey, first.Annotations[vmKey])
	}
	var portUUID string
	waitFor(t, ctx, "the VM's port, record and claim", func() error {
		ports := vmPorts()
		if len(ports) != 1 || ports[0].Name != "vm1.vmns" {
			return fmt.Errorf("VM ports %v", ports)
		}
		portUUID = ports[0].UUID
		ip, err := c.kube.Shardnet.KubeovnV1().IPs().Get(ctx, "vm1.vmns", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ip.Spec.PodName != "vm1" || ip.Spec.PodType != "VirtualMachine" || ip.Spec.IPAddress != addr {
			return fmt.Errorf("IP record %+v", ip.Spec)
		}
		cl, err := c.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Get(ctx, "vmnet."+addr, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cl.Spec.Owner.Kind != v1alpha1.OwnerVM || cl.Spec.Owner.Name != "vm1" || cl.Spec.Owner.UID != string(vmObj.GetUID()) {
			return fmt.Errorf("claim owner %+v", cl.Spec.Owner)
		}
		return nil
	})
	same := func(p *corev1.Pod, what string) {
		t.Helper()
		if p.Annotations[ipKey] != addr || p.Annotations[macKey] != mac {
			t.Fatalf("%s: %s %s, want %s %s", what, p.Annotations[ipKey], p.Annotations[macKey], addr, mac)
		}
		waitFor(t, ctx, what+": one port, the same", func() error {
			if ports := vmPorts(); len(ports) != 1 || ports[0].UUID != portUUID {
				return fmt.Errorf("VM ports %v, want the one %s", ports, portUUID)
			}
			return nil
		})
	}

	// A graceful delete, then a new launcher pod.
	gone("virt-launcher-vm1-aaaaa", 1)
	same(routed(launchAndName(launch, "virt-launcher-vm1-bbbbb", n2.Name)), "after a graceful delete")
	// A forced delete, a replica SIGKILLed, then a new launcher pod, which
	// whichever replica owns the VM's shard now serves.
	gone("virt-launcher-vm1-bbbbb", 0)
	r0.Kill()
	same(routed(launchAndName(launch, "virt-launcher-vm1-ccccc", n2.Name)), "after a forced delete and a replica SIGKILLed")

	// A live migration from node b to node a: both pods hold the address,
	// the port stays one and on the source's node until the source goes.
	launch("virt-launcher-vm1-ddddd", n1.Name)
	same(routed("virt-launcher-vm1-ddddd"), "migration target")
	inGroup := func(node string) bool {
		var pgs []nbdb.PortGroup
		if err := c.view.List(ctx, &pgs); err != nil {
			t.Fatal(err)
		}
		for _, g := range pgs {
			if g.Name == reconcile.NodePortGroupName("vmnet", node) {
				return slices.Contains(g.Ports, portUUID)
			}
		}
		return false
	}
	if inGroup(n1.Name) || !inGroup(n2.Name) {
		t.Fatalf("during the migration the port is in node a's group %v, node b's %v; want b's only", inGroup(n1.Name), inGroup(n2.Name))
	}
	gone("virt-launcher-vm1-ccccc", 0)
	waitFor(t, ctx, "the port follows the target to node a", func() error {
		if !inGroup(n1.Name) || inGroup(n2.Name) {
			return fmt.Errorf("in node a's group %v, node b's %v", inGroup(n1.Name), inGroup(n2.Name))
		}
		return nil
	})

	// Deleting the VM, then its pod, leaves nothing behind.
	for _, r := range []struct {
		res  dynamicResource
		name string
	}{{dyn.Resource(kubevirt.VirtualMachineInstances).Namespace("vmns"), "vm1"}, {dyn.Resource(kubevirt.VirtualMachines).Namespace("vmns"), "vm1"}} {
		if err := r.res.Delete(ctx, r.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gone("virt-launcher-vm1-ddddd", 0)
	waitFor(t, ctx, "the VM's port, record and claims released", func() error {
		if ports := vmPorts(); len(ports) != 0 {
			return fmt.Errorf("ports %v", ports)
		}
		if _, err := c.kube.Shardnet.KubeovnV1().IPs().Get(ctx, "vm1.vmns", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("IP record: %v", err)
		}
		cls, err := c.kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, cl := range cls.Items {
			if cl.Spec.Owner.Kind == v1alpha1.OwnerVM {
				return fmt.Errorf("claim %s of %+v", cl.Name, cl.Spec.Owner)
			}
		}
		return nil
	})
}

type dynamicResource interface {
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions, subresources ...string) error
}

// launchAndName creates a launcher pod and returns its name.
func launchAndName(launch func(name, node string), name, node string) string {
	launch(name, node)
	return name
}
