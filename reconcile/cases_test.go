package reconcile

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// TestPodSliceCases covers static addresses, IP pools, StatefulSet
// ordinals and retention, malformed annotations and an exhausted subnet.
func TestPodSliceCases(t *testing.T) {
	s := startSlice(t)
	ctx := s.ctx()
	node := s.kube.CreateNode(t, "node-c", "")

	s.createSubnet("main", "10.40.0.0/24", func(sp *kubeovnv1.SubnetSpec) {
		sp.Default = true
		sp.ExcludeIps = []string{"10.40.0.200..10.40.0.254"}
	})
	// A /29 has 5 usable addresses besides the gateway.
	s.createSubnet("tiny", "10.41.0.0/29", func(sp *kubeovnv1.SubnetSpec) { sp.Namespaces = []string{"tiny"} })
	if _, err := s.kube.Shardnet.KubeovnV1().IPPools().Create(ctx, &kubeovnv1.IPPool{
		ObjectMeta: metav1.ObjectMeta{Name: "pool-a"},
		Spec:       kubeovnv1.IPPoolSpec{Subnet: "main", IPs: []string{"10.40.0.100..10.40.0.102"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"cases", "tiny"} {
		s.createNamespace(ns)
	}

	t.Run("static address in an excluded range, and a conflicting one", func(t *testing.T) {
		s.createPods([]*corev1.Pod{newPod("cases", "static-1", node.Name, map[string]string{
			DefaultKey(KeyIPAddress): "10.40.0.210", DefaultKey(KeyMACAddress): "00:00:00:aa:bb:01",
		})})
		p := s.waitPod(ctx, "cases", "static-1", routed)
		if p.Annotations[DefaultKey(KeyIPAddress)] != "10.40.0.210" || p.Annotations[DefaultKey(KeyMACAddress)] != "00:00:00:aa:bb:01" {
			t.Fatalf("static pod got %v", p.Annotations)
		}
		s.waitPort(PortName("static-1", "cases", DefaultProvider), "00:00:00:aa:bb:01 10.40.0.210")

		s.createPods([]*corev1.Pod{newPod("cases", "static-2", node.Name, map[string]string{DefaultKey(KeyIPAddress): "10.40.0.210"})})
		s.waitWarning(ctx, "cases", "static-2", ReasonAddress, "10.40.0.210")
		if p := s.getPod(ctx, "cases", "static-2"); p.Annotations[DefaultKey(KeyAllocated)] == "true" {
			t.Fatal("a second pod took a held static address")
		}
	})

	t.Run("a reconcile from a cache older than its own patch writes nothing", func(t *testing.T) {
		created, err := s.kube.Client.CoreV1().Pods("cases").Create(ctx, newPod("cases", "stale-1", node.Name, nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.waitPod(ctx, "cases", "stale-1", routed)
		const key = "cases/stale-1"
		if _, ok := s.term.patched.Load(key); !ok {
			t.Fatal("no patched version recorded for a pod this replica annotated")
		}
		// The pod as created: what a reconcile sees when a status update
		// from before the patch is delivered after it.
		phase, err := s.term.ensure(ctx, key, created, nil)
		if err != nil || phase != "noop" {
			t.Fatalf("reconcile of the pre-patch version: phase %q, err %v; want noop (nothing redone)", phase, err)
		}
		// Without the record the same stale pod redoes the routed phase
		// and the patch: the check above is what kept them out.
		s.term.patched.Delete(key)
		phase, err = s.term.ensure(ctx, key, created, nil)
		if err != nil || phase != "route" {
			t.Fatalf("control: reconcile of the pre-patch version without the record: phase %q, err %v; want route", phase, err)
		}
	})

	t.Run("IP pool and address list", func(t *testing.T) {
		var pods []*corev1.Pod
		for i := range 3 {
			pods = append(pods, newPod("cases", fmt.Sprintf("pooled-%d", i), node.Name, map[string]string{DefaultKey(KeyIPPool): "pool-a"}))
		}
		pods = append(pods, newPod("cases", "listed", node.Name, map[string]string{DefaultKey(KeyIPPool): "10.40.0.150,10.40.0.151"}))
		s.createPods(pods)
		got := map[string]bool{}
		for i := range 3 {
			p := s.waitPod(ctx, "cases", fmt.Sprintf("pooled-%d", i), routed)
			got[p.Annotations[DefaultKey(KeyIPAddress)]] = true
		}
		for _, want := range []string{"10.40.0.100", "10.40.0.101", "10.40.0.102"} {
			if !got[want] {
				t.Fatalf("pool addresses given: %v, want each of 10.40.0.100-102", got)
			}
		}
		if p := s.waitPod(ctx, "cases", "listed", routed); p.Annotations[DefaultKey(KeyIPAddress)] != "10.40.0.150" {
			t.Fatalf("listed pod got %s, want the first free entry 10.40.0.150", p.Annotations[DefaultKey(KeyIPAddress)])
		}
		// The pool is exhausted: a fourth pod waits with a warning.
		s.createPods([]*corev1.Pod{newPod("cases", "pooled-3", node.Name, map[string]string{DefaultKey(KeyIPPool): "pool-a"})})
		s.waitWarning(ctx, "cases", "pooled-3", ReasonAddress, "")
	})

	t.Run("StatefulSet ordinals keep their addresses", func(t *testing.T) {
		replicas := int32(3)
		sts, err := s.kube.Client.AppsV1().StatefulSets("cases").Create(ctx, &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: appsv1.StatefulSetSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// No StatefulSet controller runs: create its pods as it would.
		stsPod := func(i int) *corev1.Pod {
			p := newPod("cases", fmt.Sprintf("db-%d", i), node.Name, map[string]string{DefaultKey(KeyIPPool): "10.40.0.160;10.40.0.161;10.40.0.162"})
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: sts.UID, Controller: new(bool)}}
			return p
		}
		s.createPods([]*corev1.Pod{stsPod(0), stsPod(1), stsPod(2)})
		for i := range 3 {
			p := s.waitPod(ctx, "cases", fmt.Sprintf("db-%d", i), routed)
			if want := fmt.Sprintf("10.40.0.16%d", i); p.Annotations[DefaultKey(KeyIPAddress)] != want {
				t.Fatalf("db-%d got %s, want its ordinal's entry %s", i, p.Annotations[DefaultKey(KeyIPAddress)], want)
			}
		}
		// Delete and re-create db-1: same address, port kept meanwhile.
		before := s.getPod(ctx, "cases", "db-1")
		s.deletePod(ctx, "cases", "db-1")
		// Once the cache has the delete, a reconcile of the key is the
		// release the delete event brings: the port must survive it.
		s.waitUncached(ctx, "cases/db-1")
		if err := s.term.Reconcile(ctx, "cases/db-1"); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.nb.Port(PortName("db-1", "cases", DefaultProvider)); !ok {
			t.Fatal("the port of a retained StatefulSet pod was deleted")
		}
		s.createPods([]*corev1.Pod{stsPod(1)})
		after := s.waitPod(ctx, "cases", "db-1", routed)
		if after.UID == before.UID || after.Annotations[DefaultKey(KeyIPAddress)] != before.Annotations[DefaultKey(KeyIPAddress)] ||
			after.Annotations[DefaultKey(KeyMACAddress)] != before.Annotations[DefaultKey(KeyMACAddress)] {
			t.Fatalf("re-created db-1 has %s/%s, want %s/%s", after.Annotations[DefaultKey(KeyIPAddress)], after.Annotations[DefaultKey(KeyMACAddress)],
				before.Annotations[DefaultKey(KeyIPAddress)], before.Annotations[DefaultKey(KeyMACAddress)])
		}
		// Scale down to 2, then delete db-2: its address is released.
		patch := []byte(`{"spec":{"replicas":2}}`)
		if _, err := s.kube.Client.AppsV1().StatefulSets("cases").Patch(ctx, "db", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitView(t, ctx, func() error { // the StatefulSet informer sees the scale-down
			sts, err := s.caches.StatefulSets.StatefulSets("cases").Get("db")
			if err != nil {
				return err
			}
			if *sts.Spec.Replicas != 2 {
				return fmt.Errorf("cached replicas %d", *sts.Spec.Replicas)
			}
			return nil
		})
		s.deletePod(ctx, "cases", "db-2")
		s.waitGone(ctx, "main", "10.40.0.162")
		if _, ok := s.nb.Port(PortName("db-0", "cases", DefaultProvider)); !ok {
			t.Fatal("db-0 lost its port")
		}
	})

	t.Run("malformed annotations warn and leave other pods alone", func(t *testing.T) {
		bad := []map[string]string{
			{DefaultKey(KeyIPAddress): "10.40.0.300"},
			{DefaultKey(KeyIPAddress): "not-an-ip"},
			{DefaultKey(KeyIPAddress): "10.40.0.5,10.40.0.6"},
			{DefaultKey(KeyIPAddress): "10.99.0.5"},             // outside the subnet
			{DefaultKey(KeyIPAddress): "10.40.0.1"},             // the gateway
			{DefaultKey(KeyIPAddress): "10.40.0.0"},             // the network address
			{DefaultKey(KeyMACAddress): "zz:zz:zz:zz:zz:zz"},    // bad MAC
			{DefaultKey(KeyMACAddress): "00:00:00:aa:bb:01"},    // static-1's MAC
			{DefaultKey(KeyLogicalSwitch): "no-such-subnet"},    // unknown subnet
			{DefaultKey(KeyIPPool): "no-such-pool"},             // unknown pool
			{DefaultKey(KeyIPPool): "10.40.0.170,,10.40.0.171"}, // malformed list
			{DefaultKey(KeyIPPool): "10.40.0.300;10.40.0.171"},
			{DefaultKey(KeyIPPool): "pool-a", DefaultKey(KeyLogicalSwitch): "tiny"}, // pool of another subnet
			{DefaultKey(KeyIPAddress): "10.40.0.210"},                               // held by static-1
		}
		var pods []*corev1.Pod
		for i, ann := range bad {
			pods = append(pods, newPod("cases", fmt.Sprintf("bad-%02d", i), node.Name, ann))
		}
		pods = append(pods, newPod("cases", "good-neighbour", node.Name, nil))
		s.createPods(pods)
		s.waitPod(ctx, "cases", "good-neighbour", routed)
		for i := range bad {
			name := fmt.Sprintf("bad-%02d", i)
			s.waitWarning(ctx, "cases", name, "", "")
			if p := s.getPod(ctx, "cases", name); p.Annotations[DefaultKey(KeyAllocated)] == "true" {
				t.Fatalf("%s with %v was allocated", name, bad[i])
			}
		}
	})

	t.Run("values that are not followed warn and the pod is served", func(t *testing.T) {
		// docs/contract.md E2-E4: the network is allocated; a malformed
		// routed-phase value holds back only the routed phase.
		lenient := []struct {
			ann    map[string]string
			key    string
			routed bool
		}{
			{map[string]string{DefaultKey(KeyPortSecurity): "maybe"}, DefaultKey(KeyPortSecurity), true},
			{map[string]string{DefaultKey(KeyLayer2Forward): "1"}, DefaultKey(KeyLayer2Forward), true},
			{map[string]string{DefaultKey(KeyPortVIPs): "10.40.0.50,vip"}, DefaultKey(KeyPortVIPs), true},
			{map[string]string{DefaultKey(KeyPortVIPs): "10.99.0.50"}, DefaultKey(KeyPortVIPs), true},
			{map[string]string{DefaultKey(KeyNorthGateway): "gateway"}, DefaultKey(KeyNorthGateway), false},
			{map[string]string{DefaultKey(KeyEIP): "1.2.3"}, DefaultKey(KeyEIP), false},
			{map[string]string{DefaultKey(KeySNAT): "::zz"}, DefaultKey(KeySNAT), false},
		}
		var pods []*corev1.Pod
		for i, l := range lenient {
			pods = append(pods, newPod("cases", fmt.Sprintf("lenient-%02d", i), node.Name, l.ann))
		}
		s.createPods(pods)
		for i, l := range lenient {
			name := fmt.Sprintf("lenient-%02d", i)
			s.waitWarning(ctx, "cases", name, ReasonInvalidAnnotation, l.key)
			p := s.waitPod(ctx, "cases", name, func(p *corev1.Pod) bool { return p.Annotations[DefaultKey(KeyAllocated)] == "true" })
			if got := p.Annotations[DefaultKey(KeyRouted)] == "true"; got != l.routed {
				t.Fatalf("%s with %v: routed=%v, want %v", name, l.ann, got, l.routed)
			}
			port, ok := s.nb.Port(PortName(name, "cases", DefaultProvider))
			if !ok || len(port.PortSecurity) != 0 || len(port.Addresses) != 1 || port.ExternalIDs["vips"] != "" {
				t.Fatalf("%s with %v: port %+v, want no port security, no unknown address, no VIPs", name, l.ann, port)
			}
		}
	})

	t.Run("the collector finds what a crash left behind", func(t *testing.T) {
		// A claim and an IP record of a pod that no longer exists, as a
		// crash between writes leaves them, beside a live pod's.
		s.createPods([]*corev1.Pod{newPod("cases", "alive", node.Name, nil)})
		s.waitPod(ctx, "cases", "alive", routed)
		owner := v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "cases", Name: "ghost", UID: "ghost-uid"}
		addr := netip.MustParseAddr("10.40.0.199")
		if _, err := s.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Create(ctx, &v1alpha1.AddressClaim{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClaimName("main", addr), Labels: map[string]string{v1alpha1.LabelSubnet: "main"}},
			Spec:       v1alpha1.AddressClaimSpec{Subnet: "main", Address: addr.String(), Owner: owner},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.kube.Shardnet.KubeovnV1().IPs().Create(ctx, &kubeovnv1.IP{
			ObjectMeta: metav1.ObjectMeta{Name: PortName("ghost", "cases", DefaultProvider)},
			Spec:       kubeovnv1.IPSpec{PodName: "ghost", Namespace: "cases", Subnet: "main", IPAddress: addr.String()},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		gc := NewGC(s.caches, nil, time.Minute)
		all := func(string) bool { return true }
		now := time.Now()
		waitView(t, ctx, func() error {
			if due := gc.Pass(now, all); len(due) != 0 {
				return fmt.Errorf("first pass reported %v; a key is due only after the grace period", due)
			}
			if _, ok, _ := s.caches.ClaimIndex().GetByKey(v1alpha1.ClaimName("main", addr)); !ok {
				return fmt.Errorf("claim not in the cache yet")
			}
			if _, err := s.caches.IPs.Get(PortName("ghost", "cases", DefaultProvider)); err != nil {
				return fmt.Errorf("IP record not in the cache yet: %v", err)
			}
			return nil
		})
		due := gc.Pass(now.Add(2*time.Minute), all)
		if len(due) != 1 || due[0] != "cases/ghost" {
			t.Fatalf("second pass reported %v, want only cases/ghost", due)
		}
		if err := s.term.Reconcile(ctx, due[0]); err != nil {
			t.Fatal(err)
		}
		s.waitGone(ctx, "main", addr.String())
		if _, err := s.kube.Shardnet.KubeovnV1().IPs().Get(ctx, PortName("ghost", "cases", DefaultProvider), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the orphaned IP record is still there: %v", err)
		}
		if _, err := s.kube.Shardnet.KubeovnV1().IPs().Get(ctx, PortName("alive", "cases", DefaultProvider), metav1.GetOptions{}); err != nil {
			t.Fatalf("the live pod's IP record went: %v", err)
		}
	})

	t.Run("an exhausted subnet recovers when addresses are freed", func(t *testing.T) {
		var pods []*corev1.Pod
		for i := range 6 {
			pods = append(pods, newPod("tiny", fmt.Sprintf("t-%d", i), node.Name, nil))
		}
		s.createPods(pods)
		var allocated, waiting []string
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			allocated, waiting = nil, nil
			list, err := s.kube.Client.CoreV1().Pods("tiny").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range list.Items {
				if routed(&p) {
					allocated = append(allocated, p.Name)
				} else {
					waiting = append(waiting, p.Name)
				}
			}
			if len(allocated) == 5 && len(waiting) == 1 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if len(allocated) != 5 || len(waiting) != 1 {
			t.Fatalf("a /29 with 5 usable addresses allocated %v, left %v", allocated, waiting)
		}
		s.waitWarning(ctx, "tiny", waiting[0], ReasonAddress, "")
		s.deletePod(ctx, "tiny", allocated[0])
		s.waitPod(ctx, "tiny", waiting[0], routed)
	})
}

func (s *slice) getPod(ctx context.Context, ns, name string) *corev1.Pod {
	s.t.Helper()
	p, err := s.kube.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return p
}

func (s *slice) waitPod(ctx context.Context, ns, name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	s.t.Helper()
	for {
		p, err := s.kube.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && cond(p) {
			return p
		}
		select {
		case <-ctx.Done():
			s.t.Fatalf("pod %s/%s never met the condition (err %v); warnings: %v", ns, name, err, s.warnings(context.Background(), ns, name))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *slice) deletePod(ctx context.Context, ns, name string) {
	s.t.Helper()
	if err := s.kube.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil && !apierrors.IsNotFound(err) {
		s.t.Fatal(err)
	}
	for {
		_, err := s.kube.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
			s.t.Fatalf("pod %s/%s not gone", ns, name)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitWarning waits for a Warning Event on the pod whose reason (if given)
// and message (if given, as a substring) match.
func (s *slice) waitWarning(ctx context.Context, ns, pod, reason, contains string) {
	s.t.Helper()
	for {
		for _, w := range s.warnings(ctx, ns, pod) {
			r, msg, _ := strings.Cut(w, ": ")
			if (reason == "" || r == reason) && strings.Contains(msg, contains) {
				return
			}
		}
		select {
		case <-ctx.Done():
			s.t.Fatalf("no warning %q containing %q on %s/%s; have %v", reason, contains, ns, pod, s.warnings(context.Background(), ns, pod))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitGone waits until the claim of addr in subnet is deleted.
func (s *slice) waitGone(ctx context.Context, subnet, addr string) {
	s.t.Helper()
	name := subnet + "." + addr
	for {
		_, err := s.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
			s.t.Fatalf("claim %s still exists (err %v)", name, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
