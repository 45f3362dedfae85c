package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/reconcile"
)

// TestVipPods runs the Vip path on real servers, with kube-ovn's own Vip
// CRD (no status subresource) beside shardnet's AddressClaim
// (docs/contract.md D14, E20, K9):
//
//   - a Vip is reserved: claimed for owner kind Vip, recorded in its
//     status with kube-ovn's labels and finalizer;
//   - a pod naming a Vip that does not exist yet gets a Warning, and is
//     served once the Vip is reserved;
//   - a pod naming a Vip gets its address and MAC on its annotations and
//     its Northbound port, and the Vip records the pod's port;
//   - a second pod naming a Vip already used gets a Warning and no address;
//   - a Vip deleted under its running pod waits for the pod: the pod keeps
//     address, MAC and port, the claim stays; once the pod is gone the Vip
//     and its claim go.
func TestVipPods(t *testing.T) {
	c := startKubeOVNCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	node := c.kube.CreateNode(t, "kwok-node-vip", "")
	c.subnet("ovn-default", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	c.namespace("vips")
	c.startProcess("shardnet-0")
	c.startProcess("shardnet-1")

	vips := c.kube.Shardnet.KubeovnV1().Vips()
	pods := c.kube.Client.CoreV1().Pods("vips")
	createVip := func(name string, spec kubeovnv1.VipSpec) {
		t.Helper()
		if _, err := vips.Create(ctx, &kubeovnv1.Vip{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createPod := func(name, vip string) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vips", Annotations: map[string]string{reconcile.DefaultKey(reconcile.KeyVIP): vip}},
			Spec:       corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// reserved waits until the Vip's status records an address and MAC
	// and the claim of that address is the Vip's.
	reserved := func(name string) *kubeovnv1.Vip {
		t.Helper()
		var v *kubeovnv1.Vip
		waitFor(t, ctx, "Vip "+name+" reserved", func() error {
			var err error
			if v, err = vips.Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
			if v.Status.V4ip == "" || v.Status.Mac == "" {
				return errorf("status %+v", v.Status)
			}
			a, err := ipam.ParseAddresses(v.Status.V4ip)
			if err != nil {
				return err
			}
			cl, err := c.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Get(ctx, v1alpha1.ClaimName("ovn-default", a.V4), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cl.Spec.Owner.Kind != v1alpha1.OwnerVip || cl.Spec.Owner.Name != name || cl.Spec.MAC != v.Status.Mac {
				return errorf("claim %s: %+v", cl.Name, cl.Spec)
			}
			return nil
		})
		return v
	}
	// served waits until the pod is routed with the Vip's address and MAC
	// on its annotations and its port, and the Vip records its port.
	served := func(pod string, v *kubeovnv1.Vip) {
		t.Helper()
		waitFor(t, ctx, "pod "+pod+" served from Vip "+v.Name, func() error {
			p, err := pods.Get(ctx, pod, metav1.GetOptions{})
			if err != nil {
				return err
			}
			ann := p.Annotations
			if !isRouted(p) || ann[reconcile.DefaultKey(reconcile.KeyIPAddress)] != v.Status.V4ip ||
				ann[reconcile.DefaultKey(reconcile.KeyMACAddress)] != v.Status.Mac || ann[reconcile.DefaultKey(reconcile.KeyLogicalSwitch)] != "ovn-default" {
				return errorf("annotations %v", ann)
			}
			port, ok := c.ports(ctx)[pod+".vips"]
			if want := v.Status.Mac + " " + v.Status.V4ip; !ok || !slices.Equal(port.Addresses, []string{want}) {
				return errorf("port %s: %v, want [%s]", pod+".vips", port.Addresses, want)
			}
			got, err := vips.Get(ctx, v.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Labels[reconcile.LabelIPReserved] != pod+".vips" {
				return errorf("Vip %s labels %v", v.Name, got.Labels)
			}
			return nil
		})
	}
	warned := func(pod, contains string) {
		t.Helper()
		waitFor(t, ctx, "Warning on "+pod, func() error {
			evs, err := c.kube.Client.CoreV1().Events("vips").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
			if err != nil {
				return err
			}
			var seen []string
			for _, e := range evs.Items {
				if e.Type == corev1.EventTypeWarning && e.Reason == reconcile.ReasonAddress && strings.Contains(e.Message, contains) {
					return nil
				}
				seen = append(seen, e.Reason+": "+e.Message)
			}
			return errorf("events %q", seen)
		})
	}

	// A static Vip, reserved with kube-ovn's labels and finalizer.
	createVip("vip-a", kubeovnv1.VipSpec{Subnet: "ovn-default", V4ip: "10.16.5.5", MacAddress: "00:00:00:5a:5a:5a"})
	a := reserved("vip-a")
	if a.Status.V4ip != "10.16.5.5" || a.Status.Mac != "00:00:00:5a:5a:5a" || a.Labels[reconcile.LabelSubnetName] != "ovn-default" ||
		!slices.Contains(a.Finalizers, reconcile.FinalizerVip) {
		t.Fatalf("vip-a: %+v", a)
	}

	// E20: the Vip does not exist yet; once it does, the pod is served.
	createPod("early", "vip-b")
	warned("early", "vip-b")
	if p, err := pods.Get(ctx, "early", metav1.GetOptions{}); err != nil || p.Annotations[reconcile.DefaultKey(reconcile.KeyAllocated)] == "true" {
		t.Fatalf("early allocated before its Vip exists: %v %v", err, p.Annotations)
	}
	createVip("vip-b", kubeovnv1.VipSpec{Subnet: "ovn-default"})
	served("early", reserved("vip-b"))

	// D14: the address and MAC the Vip reserved.
	createPod("a1", "vip-a")
	served("a1", a)

	// A second pod asking for the same Vip: a Warning, nothing given.
	createPod("a2", "vip-a")
	warned("a2", "vip-a")
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		p, err := pods.Get(ctx, "a2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Annotations[reconcile.DefaultKey(reconcile.KeyAllocated)] == "true" || p.Annotations[reconcile.DefaultKey(reconcile.KeyIPAddress)] != "" {
			t.Fatalf("a2 was given an address: %v", p.Annotations)
		}
		if _, ok := c.ports(ctx)["a2.vips"]; ok {
			t.Fatal("a2 has a port")
		}
	}

	// The Vip deleted under its running pod: it waits for the pod, which
	// keeps everything.
	if err := vips.Delete(ctx, "vip-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	claimName := fmt.Sprintf("ovn-default.%s", a.Status.V4ip)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		v, err := vips.Get(ctx, "vip-a", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("vip-a went while a1 runs with its address: %v", err)
		}
		if v.DeletionTimestamp == nil {
			t.Fatal("vip-a is not being deleted")
		}
		if _, err := c.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Get(ctx, claimName, metav1.GetOptions{}); err != nil {
			t.Fatalf("vip-a's claim went while a1 runs with its address: %v", err)
		}
	}
	served("a1", a)
	waitFor(t, ctx, "InUse Event on vip-a", func() error {
		evs, err := c.kube.Client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=vip-a"})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == reconcile.ReasonVipInUse && e.InvolvedObject.Kind == "Vip" && strings.Contains(e.Message, "vips/a1") {
				return nil
			}
		}
		return errorf("%d events, none InUse naming vips/a1", len(evs.Items))
	})

	// The pod goes: so do the Vip and its claim.
	if err := pods.Delete(ctx, "a1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "vip-a and its claim gone after a1", func() error {
		if _, err := vips.Get(ctx, "vip-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return errorf("vip-a: %v", err)
		}
		if _, err := c.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Get(ctx, claimName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return errorf("claim %s: %v", claimName, err)
		}
		if _, ok := c.ports(ctx)["a1.vips"]; ok {
			return errorf("port a1.vips is still there")
		}
		return nil
	})
	// a2 still waits, now for a Vip that does not exist, and has nothing.
	if p, err := pods.Get(ctx, "a2", metav1.GetOptions{}); err != nil || p.Annotations[reconcile.DefaultKey(reconcile.KeyAllocated)] == "true" {
		t.Fatalf("a2: %v %v", err, p.Annotations)
	}
}
