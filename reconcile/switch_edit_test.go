package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ovn/nbdb"
)

// TestAllocatedPodKeepsSubnetOnSwitchEdit edits the logical_switch
// annotation of an allocated pod. As in kube-ovn, the edit is ignored: the
// pod keeps the subnet its port is on, with its address, MAC, port and
// claim, and the annotation is written back. Moving the claim while the
// old port keeps the old address would let a second pod be given an
// address that is still in use.
func TestAllocatedPodKeepsSubnetOnSwitchEdit(t *testing.T) {
	s := startSlice(t)
	const (
		ns      = "switch-edit"
		subnetA = "edit-a"
		subnetB = "edit-b"
		first   = "first"
		second  = "second"
	)
	// Every wait below has a deadline of its own, so that a stuck step
	// fails where it is stuck rather than at the test's timeout.
	bounded := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		t.Cleanup(cancel)
		return ctx
	}

	node := s.kube.CreateNode(t, "node-edit", "")
	s.kube.WaitNodeReady(t, node.Name, time.Minute)
	s.createSubnet(subnetA, "10.50.0.0/24", func(sp *kubeovnv1.SubnetSpec) { sp.Default = true })
	s.createSubnet(subnetB, "10.51.0.0/24", nil)
	s.createNamespace(ns)

	// portOf reads a pod's port and the switches that hold it from the
	// full-column view of the Northbound, not the reconciler's cache.
	portOf := func(ctx context.Context, pod string) (*nbdb.LogicalSwitchPort, []string, error) {
		name := PortName(pod, ns, DefaultProvider)
		var lsps []nbdb.LogicalSwitchPort
		if err := s.view.List(ctx, &lsps); err != nil {
			return nil, nil, err
		}
		i := slices.IndexFunc(lsps, func(p nbdb.LogicalSwitchPort) bool { return p.Name == name })
		if i < 0 {
			return nil, nil, fmt.Errorf("no port %s", name)
		}
		var switches []nbdb.LogicalSwitch
		if err := s.view.List(ctx, &switches); err != nil {
			return nil, nil, err
		}
		var on []string
		for _, ls := range switches {
			if slices.Contains(ls.Ports, lsps[i].UUID) {
				on = append(on, ls.Name)
			}
		}
		return &lsps[i], on, nil
	}
	// claimsOfPod lists the claims whose owner is the named pod.
	claimsOfPod := func(ctx context.Context, pod string) []v1alpha1.AddressClaim {
		list, err := s.kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []v1alpha1.AddressClaim
		for _, c := range list.Items {
			if c.Spec.Owner.Namespace == ns && c.Spec.Owner.Name == pod {
				out = append(out, c)
			}
		}
		return out
	}
	hasWarning := func(ctx context.Context, pod, reason string) bool {
		for _, w := range s.warnings(ctx, ns, pod) {
			if r, _, _ := strings.Cut(w, ": "); r == reason {
				return true
			}
		}
		return false
	}
	// state describes the first pod's network as the servers hold it, for
	// failure messages.
	state := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var b strings.Builder
		if p, err := s.kube.Client.CoreV1().Pods(ns).Get(ctx, first, metav1.GetOptions{}); err == nil {
			fmt.Fprintf(&b, "pod annotations: logical_switch=%s ip_address=%s mac_address=%s allocated=%s",
				p.Annotations[DefaultKey(KeyLogicalSwitch)], p.Annotations[DefaultKey(KeyIPAddress)],
				p.Annotations[DefaultKey(KeyMACAddress)], p.Annotations[DefaultKey(KeyAllocated)])
		} else {
			fmt.Fprintf(&b, "pod: %v", err)
		}
		var claims []string
		for _, c := range claimsOfPod(ctx, first) {
			claims = append(claims, c.Name)
		}
		fmt.Fprintf(&b, "; claims held: %v", claims)
		if lsp, on, err := portOf(ctx, first); err == nil {
			fmt.Fprintf(&b, "; port on switches %v with addresses %v, external_ids %v", on, lsp.Addresses, lsp.ExternalIDs)
		} else {
			fmt.Fprintf(&b, "; port: %v", err)
		}
		fmt.Fprintf(&b, "; warnings: %v", s.warnings(ctx, ns, first))
		return b.String()
	}

	// 1. A pod on subnet A, routed on the node.
	s.createPods([]*corev1.Pod{newPod(ns, first, node.Name, nil)})
	before := s.waitPod(bounded(), ns, first, routed)
	if sw := before.Annotations[DefaultKey(KeyLogicalSwitch)]; sw != subnetA {
		t.Fatalf("pod on subnet %s, want the default %s", sw, subnetA)
	}
	ip := before.Annotations[DefaultKey(KeyIPAddress)]
	mac := before.Annotations[DefaultKey(KeyMACAddress)]
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		t.Fatalf("pod address %q: %v", ip, err)
	}
	wantAddresses := mac + " " + ip
	owner := v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: ns, Name: first, UID: string(before.UID)}
	claimA := v1alpha1.ClaimName(subnetA, addr)
	if c, err := s.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Get(bounded(), claimA, metav1.GetOptions{}); err != nil || c.Spec.Owner != owner {
		t.Fatalf("claim %s of the routed pod: %+v, %v; want owner %+v", claimA, c, err, owner)
	}
	waitView(t, bounded(), func() error {
		lsp, on, err := portOf(context.Background(), first)
		if err != nil {
			return err
		}
		if !slices.Equal(on, []string{subnetA}) || !slices.Equal(lsp.Addresses, []string{wantAddresses}) {
			return fmt.Errorf("port of the routed pod on %v with %v, want on [%s] with %q", on, lsp.Addresses, subnetA, wantAddresses)
		}
		return nil
	})

	// 2. The user points the allocated pod at subnet B.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{DefaultKey(KeyLogicalSwitch): subnetB}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.kube.Client.CoreV1().Pods(ns).Patch(bounded(), first, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	// 3. The edit is refused with a warning and the annotation written
	// back. The claim of the address on A leaving its owner is the other
	// outcome, and it is final: the address is then free for another pod.
	ctx := bounded()
	for {
		p, err := s.kube.Client.CoreV1().Pods(ns).Get(ctx, first, metav1.GetOptions{})
		if err == nil && p.Annotations[DefaultKey(KeyLogicalSwitch)] == subnetA && hasWarning(ctx, first, "SubnetChangeIgnored") {
			break
		}
		c, cerr := s.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Get(ctx, claimA, metav1.GetOptions{})
		if apierrors.IsNotFound(cerr) || (cerr == nil && c.Spec.Owner != owner) {
			t.Errorf("the edit of logical_switch to %s was acted on: claim %s no longer held by the pod (%v); %s", subnetB, claimA, cerr, state())
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no SubnetChangeIgnored warning with logical_switch back to %s before the deadline; %s", subnetA, state())
		case <-time.After(100 * time.Millisecond):
		}
	}

	// 4. Nothing of the pod's network moved.
	ctx = bounded()
	after := s.getPod(ctx, ns, first)
	if got := after.Annotations[DefaultKey(KeyLogicalSwitch)]; got != subnetA {
		t.Errorf("logical_switch is %s, want it written back to %s", got, subnetA)
	}
	if got := after.Annotations[DefaultKey(KeyIPAddress)]; got != ip {
		t.Errorf("ip_address changed from %s to %s", ip, got)
	}
	if got := after.Annotations[DefaultKey(KeyMACAddress)]; got != mac {
		t.Errorf("mac_address changed from %s to %s", mac, got)
	}
	if lsp, on, err := portOf(ctx, first); err != nil {
		t.Errorf("the pod's port: %v", err)
	} else if !slices.Equal(on, []string{subnetA}) || !slices.Equal(lsp.Addresses, []string{wantAddresses}) {
		t.Errorf("port on %v with %v, want on [%s] with %q", on, lsp.Addresses, subnetA, wantAddresses)
	}
	switch c, err := s.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Get(ctx, claimA, metav1.GetOptions{}); {
	case err != nil:
		t.Errorf("claim %s of the pod's address: %v", claimA, err)
	case c.Spec.Owner != owner:
		t.Errorf("claim %s is held by %+v, want %+v", claimA, c.Spec.Owner, owner)
	}
	for _, c := range claimsOfPod(ctx, first) {
		if c.Spec.Subnet == subnetB {
			t.Errorf("the pod holds claim %s in %s", c.Name, subnetB)
		}
	}

	// 5. The address is still in use: a pod asking for it on A is refused.
	s.createPods([]*corev1.Pod{newPod(ns, second, node.Name, map[string]string{
		DefaultKey(KeyLogicalSwitch): subnetA, DefaultKey(KeyIPAddress): ip,
	})})
	ctx = bounded()
	for {
		warned := hasWarning(ctx, second, ReasonAddress)
		p, err := s.kube.Client.CoreV1().Pods(ns).Get(ctx, second, metav1.GetOptions{})
		allocated := err == nil && p.Annotations[DefaultKey(KeyAllocated)] == "true"
		if warned || allocated {
			if !warned {
				t.Errorf("no %s warning on the second pod", ReasonAddress)
			}
			if allocated {
				var carriers []string
				var lsps []nbdb.LogicalSwitchPort
				if err := s.view.List(ctx, &lsps); err == nil {
					for _, l := range lsps {
						for _, a := range l.Addresses {
							if slices.Contains(strings.Fields(a), ip) {
								carriers = append(carriers, l.Name)
							}
						}
					}
				}
				t.Errorf("the second pod was given %s on %s (ip_address %s) while %s still carries it; ports carrying %s: %v",
					ip, p.Annotations[DefaultKey(KeyLogicalSwitch)], p.Annotations[DefaultKey(KeyIPAddress)],
					PortName(first, ns, DefaultProvider), ip, carriers)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the second pod was neither refused nor allocated before the deadline; warnings: %v", s.warnings(context.Background(), ns, second))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
