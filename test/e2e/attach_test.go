package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/reconcile"
	"github.com/shardnet/shardnet/shard"
	"github.com/shardnet/shardnet/test/harness"
)

// The attachment suite's cluster: one namespace with two NADs, an OVN
// one (net1) and an IPAM-only one (store), and a subnet per network.
const (
	attachNS     = "attach"
	attachNet1   = "net1." + attachNS + ".ovn"
	attachStore  = "store." + attachNS
	attachShards = 16
	// attachPerKind pods of each kind: enough names to land in most of
	// the shards.
	attachPerKind = 20
	// coordNS holds the replicas' Leases and assignment table.
	coordNS = "shardnet-system"
)

// attachSubnets are the suite's subnets by name.
var attachSubnets = map[string]string{"main": "10.90.0.0/24", "att": "10.91.0.0/24", "store": "10.92.0.0/24"}

// attachProviders are every provider a pod of the suite may hold.
var attachProviders = []string{reconcile.DefaultProvider, attachNet1, attachStore}

// podKind is which networks a pod asks for.
type podKind string

const (
	// kindZero: the default network only.
	kindZero podKind = "zero"
	// kindOne: the default network and the OVN attachment.
	kindOne podKind = "one"
	// kindTwo: the default network, the OVN and the IPAM-only attachment.
	kindTwo podKind = "two"
	// kindPrimary: v1.multus-cni.io/default-network replaces the default
	// network with the OVN attachment.
	kindPrimary podKind = "prim"
)

var attachKinds = []podKind{kindZero, kindOne, kindTwo, kindPrimary}

// attachNet is one network a pod must hold.
type attachNet struct {
	provider string
	subnet   string
	// ovn is an OVN network (port, routed phase); else IPAM-only.
	ovn bool
}

// attachPod is what the suite expects of one pod.
type attachPod struct {
	name string
	kind podKind
	node string
	// uid is the current incarnation's.
	uid types.UID
	// unplugged: the IPAM-only attachment was removed from the pod.
	unplugged bool
	// recreated: the pod was deleted and created again under its name.
	recreated bool
}

func (p *attachPod) annotations() map[string]string {
	switch {
	case p.kind == kindOne, p.kind == kindTwo && p.unplugged:
		return map[string]string{reconcile.AnnotationNetworks: "net1"}
	case p.kind == kindTwo:
		return map[string]string{reconcile.AnnotationNetworks: `[{"name":"net1","interface":"net1"},{"name":"store","namespace":"` + attachNS + `","interface":"store"}]`}
	case p.kind == kindPrimary:
		return map[string]string{reconcile.AnnotationDefaultNetwork: attachNS + "/net1"}
	}
	return nil
}

// networks are the networks the pod must hold now.
func (p *attachPod) networks() []attachNet {
	main := attachNet{reconcile.DefaultProvider, "main", true}
	net1 := attachNet{attachNet1, "att", true}
	store := attachNet{attachStore, "store", false}
	switch p.kind {
	case kindOne:
		return []attachNet{main, net1}
	case kindTwo:
		if p.unplugged {
			return []attachNet{main, net1}
		}
		return []attachNet{main, net1, store}
	case kindPrimary:
		return []attachNet{net1}
	}
	return []attachNet{main}
}

// heldNet is what one network of a pod holds.
type heldNet struct{ ip, mac string }

// attachEnv is the suite's cluster, its replica processes and the model
// of what every pod must hold.
type attachEnv struct {
	t    *testing.T
	kube *harness.Kube
	view client.Client
	dyn  dynamic.Interface
	// bin and args start a replica.
	bin  string
	args []string

	// kwokNode is managed by kwok. Pods that may be deleted and
	// re-created start on staticNode and come back on movedNode, which
	// kwok does not manage: kwok deletes a terminating pod by name, with
	// no UID precondition, and its late delete of a pod it saw terminate
	// could remove the pod re-created under that name.
	kwokNode, staticNode, movedNode string

	// replicas are the running replica processes by identity; started
	// holds every process started, killed ones included.
	replicas map[string]*harness.Replica
	started  []*harness.Replica
	// pods is the model, changed by the test goroutine only.
	pods map[string]*attachPod
}

// TestAttachmentsAcrossHandoff serves pods with no attachment, an OVN
// attachment, an OVN and an IPAM-only attachment, and a replaced default
// network with two `shardnet controller` processes, checks every network
// row by row, then, while a third replica joins and one of the first two
// is killed (SIGKILL: its shards move only once its Lease expires),
// hot-unplugs the IPAM-only attachment of half the pods that have it and
// deletes and re-creates pods of every kind. Once every shard runs on a
// live replica, every row is checked again: what was unplugged or deleted
// is released, what was re-created is served afresh, and every other
// network keeps the addresses it had (docs/contract.md §8: M11, M13, M16,
// M20, M21).
func TestAttachmentsAcrossHandoff(t *testing.T) {
	e := startAttachEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	e.startReplica("shardnet-0")
	e.startReplica("shardnet-1")
	e.waitShards(ctx, "two replicas")

	// The pods: the first ten of each kind on the kwok node, the others,
	// which the churn may re-create, on a node kwok does not manage.
	var all []*attachPod
	for _, k := range attachKinds {
		for i := range attachPerKind {
			p := &attachPod{name: fmt.Sprintf("%s-%02d", k, i), kind: k, node: e.kwokNode}
			if i >= 10 {
				p.node = e.staticNode
			}
			e.pods[p.name] = p
			all = append(all, p)
		}
	}
	e.createPods(ctx, all)
	e.logSpread(all)
	initial := e.settle(ctx, "initial allocation", 3*time.Minute)

	// The churn, in two waves: half the two-attachment pods lose the
	// IPAM-only attachment, and pods of every kind are deleted and
	// re-created on another node (so that the old incarnation's node
	// port group membership would show if it were left behind).
	//
	// Wave 1 goes out as a third replica joins and the leader moves
	// shards to it with handoffs.
	var unplug1, recreate1 []string
	for i := range 5 {
		unplug1 = append(unplug1, fmt.Sprintf("%s-%02d", kindTwo, i))
	}
	for _, k := range attachKinds {
		recreate1 = append(recreate1, fmt.Sprintf("%s-%02d", k, 15), fmt.Sprintf("%s-%02d", k, 16))
	}
	e.startReplica("shardnet-2")
	e.waitMember(ctx, "shardnet-2")
	e.churn(ctx, unplug1, recreate1)
	e.waitRuns(ctx, "shardnet-2")

	// Kill one of the first two, the leader when it is one of them: no
	// handoff, its shards wait for its Lease to expire.
	victim := "shardnet-0"
	for _, id := range []string{"shardnet-0", "shardnet-1"} {
		if v, err := e.replicas[id].Metric("shardnet_leader"); err == nil && v == 1 {
			victim = id
		}
	}
	before, err := e.assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var orphaned []int
	for s, en := range before.Shards {
		if en.Owner == victim {
			orphaned = append(orphaned, s)
		}
	}
	t.Logf("killing %s (SIGKILL); it runs shards %v; owners %v", victim, orphaned, before.Owners())
	e.replicas[victim].Kill()
	delete(e.replicas, victim)

	// Wave 2 goes out while the killed replica's shards have no running
	// owner: the rest of the unplugs and two re-creates of each kind,
	// taken from pods of those shards first.
	var twos []string
	for i := 5; i < 15; i++ {
		twos = append(twos, fmt.Sprintf("%s-%02d", kindTwo, i))
	}
	unplug2 := inShardsFirst(twos, orphaned, 5)
	var recreate2 []string
	for _, k := range attachKinds {
		var cands []string
		for _, i := range []int{10, 11, 12, 13, 14, 17, 18, 19} {
			if name := fmt.Sprintf("%s-%02d", k, i); !slices.Contains(unplug2, name) {
				cands = append(cands, name)
			}
		}
		recreate2 = append(recreate2, inShardsFirst(cands, orphaned, 2)...)
	}
	e.churn(ctx, unplug2, recreate2)
	var hit []string
	for _, name := range append(slices.Clone(unplug2), recreate2...) {
		if slices.Contains(orphaned, shard.Of(attachNS+"/"+name, attachShards)) {
			hit = append(hit, name)
		}
	}
	t.Logf("wave 2 pods in the killed replica's shards: %v", hit)

	e.waitShards(ctx, "after the join and the kill")
	table, err := e.assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range orphaned {
		if en := table.Shards[s]; en.Owner == victim || en.Epoch <= before.Shards[s].Epoch {
			t.Fatalf("shard %d did not move from %s: was %+v, now %+v", s, victim, before.Shards[s], en)
		}
	}
	t.Logf("owners now %v", table.Owners())

	after := e.settle(ctx, "after the handoff", 3*time.Minute)

	// Every network of a pod that was not re-created kept its addresses
	// and MAC (settle checked that nothing of the unplugged ones is left).
	for _, name := range slices.Sorted(maps.Keys(e.pods)) {
		p := e.pods[name]
		if p.recreated {
			continue
		}
		for _, n := range p.networks() {
			if was, now := initial[name][n.provider], after[name][n.provider]; was != now {
				t.Errorf("%s: network %s changed across the handoff: %+v -> %+v", name, n.provider, was, now)
			}
		}
	}
	// The settled state holds across two garbage-collector passes (every
	// 2 s, after a grace of 4 s): nothing live is collected late.
	e.hold(ctx, "settled state", 10*time.Second)
	e.checkProcesses()
}

func startAttachEnv(t *testing.T) *attachEnv {
	t.Helper()
	e := &attachEnv{t: t, kube: harness.StartKube(t), replicas: map[string]*harness.Replica{}, pods: map[string]*attachPod{}}
	e.kube.StartKwok(t)
	nb := harness.StartNB(t)
	e.view = harness.NBView(t, client.WithEndpoint(nb.Endpoint))
	e.kube.InstallNADCRD(t)
	e.dyn = dynamic.NewForConfigOrDie(e.kube.Config)
	ctx := context.Background()
	for _, ns := range []string{coordNS, attachNS} {
		if _, err := e.kube.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.kwokNode = e.kube.CreateNode(t, "kwok-attach", "").Name
	// Nodes without kwok's annotation: kwok leaves them and their pods
	// alone.
	e.staticNode, e.movedNode = "static-attach", "moved-attach"
	for _, name := range []string{e.staticNode, e.movedNode} {
		if _, err := e.kube.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
		}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	for _, nad := range []struct{ name, config string }{
		{"net1", `{"type":"kube-ovn"}`},
		{"store", `{"type":"macvlan","ipam":{"type":"kube-ovn"}}`},
	} {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
			"metadata": map[string]any{"name": nad.name, "namespace": attachNS},
			"spec":     map[string]any{"config": nad.config},
		}}
		if _, err := e.dyn.Resource(harness.NADResource).Namespace(attachNS).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("NAD %s: %v", nad.name, err)
		}
	}
	for name, provider := range map[string]string{"main": "", "att": attachNet1, "store": attachStore} {
		s := &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeovnv1.SubnetSpec{
			CIDRBlock: attachSubnets[name], Provider: provider, Default: name == "main",
		}}
		if _, err := e.kube.Shardnet.KubeovnV1().Subnets().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	e.bin = harness.BuildShardnet(t)
	// The flags of cluster_test.go's options: short leases, so that a
	// killed replica's shards move within seconds.
	e.args = []string{
		"--kubeconfig=" + e.kube.Kubeconfig,
		"--namespace=" + coordNS,
		"--nb-endpoints=" + nb.Endpoint,
		fmt.Sprintf("--shards=%d", attachShards), "--workers-per-shard=4",
		"--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms",
		"--ip-records=true",
		"--gc-interval=2s", "--gc-grace=4s", "--status-interval=500ms",
		"--memory-limit=none",
		"--v=2",
	}
	return e
}

// startReplica starts a replica process; if the test fails, its log is
// kept and its tail printed.
func (e *attachEnv) startReplica(id string) {
	e.t.Helper()
	r := harness.StartReplica(e.t, e.bin, id, e.args...)
	e.replicas[id] = r
	e.started = append(e.started, r)
	e.t.Logf("started replica %s (metrics %s, log %s)", id, r.MetricsAddr, r.Log)
	e.t.Cleanup(func() {
		if !e.t.Failed() {
			return
		}
		dir := filepath.Join(os.TempDir(), "shardnet-attach-logs")
		if err := os.MkdirAll(dir, 0o755); err == nil {
			if b, err := os.ReadFile(r.Log); err == nil {
				kept := filepath.Join(dir, id+".log")
				if os.WriteFile(kept, b, 0o644) == nil {
					e.t.Logf("replica %s: log kept in %s", id, kept)
				}
			}
		}
		e.t.Logf("replica %s: last log lines:\n%s", id, r.LogTail())
	})
}

// assignment reads the shard table.
func (e *attachEnv) assignment(ctx context.Context) (*shard.Assignment, error) {
	cm, err := e.kube.Client.CoreV1().ConfigMaps(coordNS).Get(ctx, "shardnet-assignment", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return shard.UnmarshalAssignment(cm.Data[shard.AssignmentKey], attachShards)
}

// waitShards waits until every shard runs on a live replica: every entry
// active and owned by a running replica, each running replica ready and
// owning some, and each one's shardnet_shards_owned equal to its share.
func (e *attachEnv) waitShards(ctx context.Context, what string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	start := time.Now()
	waitFor(e.t, ctx, "shards of "+what, func() error {
		a, err := e.assignment(ctx)
		if err != nil {
			return err
		}
		counts := a.Owners()
		for s, en := range a.Shards {
			if !en.Active() {
				return fmt.Errorf("shard %d is not active: %+v", s, en)
			}
			if _, ok := e.replicas[en.Owner]; !ok {
				return fmt.Errorf("shard %d is owned by %q, not a running replica", s, en.Owner)
			}
		}
		for id, r := range e.replicas {
			if !r.Running() {
				return fmt.Errorf("replica %s exited", id)
			}
			if !r.Ready() {
				return fmt.Errorf("replica %s is not ready", id)
			}
			if counts[id] == 0 {
				return fmt.Errorf("replica %s owns no shard (owners %v)", id, counts)
			}
			owned, err := r.Metric("shardnet_shards_owned")
			if err != nil {
				return err
			}
			if int(owned) != counts[id] {
				return fmt.Errorf("replica %s runs %v shards, the table gives it %d", id, owned, counts[id])
			}
		}
		return nil
	})
	e.t.Logf("%s: every shard runs on a live replica after %v", what, time.Since(start).Round(time.Millisecond))
}

// waitRuns waits until the replica runs at least one shard.
func (e *attachEnv) waitRuns(ctx context.Context, id string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	waitFor(e.t, ctx, id+" runs shards", func() error {
		v, err := e.replicas[id].Metric("shardnet_shards_owned")
		if err != nil {
			return err
		}
		if v == 0 {
			return fmt.Errorf("%s runs no shard yet", id)
		}
		return nil
	})
}

// createPods creates the pods of the model, a few at a time, and records
// their UIDs.
func (e *attachEnv) createPods(ctx context.Context, pods []*attachPod) {
	e.t.Helper()
	sem := make(chan struct{}, 16)
	errs := make(chan error, len(pods))
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs <- e.createPod(ctx, p)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *attachEnv) createPod(ctx context.Context, p *attachPod) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: attachNS, Annotations: p.annotations()},
		Spec:       corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
	}
	created, err := e.kube.Client.CoreV1().Pods(attachNS).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating pod %s: %w", p.name, err)
	}
	p.uid = created.UID
	return nil
}

// churn unplugs the IPAM-only attachment of the unplug pods and deletes
// and re-creates the recreate pods.
func (e *attachEnv) churn(ctx context.Context, unplug, recreate []string) {
	e.t.Helper()
	for _, name := range unplug {
		p := e.pods[name]
		p.unplugged = true
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, reconcile.AnnotationNetworks, p.annotations()[reconcile.AnnotationNetworks])
		if _, err := e.kube.Client.CoreV1().Pods(attachNS).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			e.t.Fatalf("unplugging %s: %v", name, err)
		}
	}
	for _, name := range recreate {
		p := e.pods[name]
		if p.node != e.staticNode {
			e.t.Fatalf("%s is on %s: only pods of %s are re-created", name, p.node, e.staticNode)
		}
		zero := int64(0)
		uid := p.uid
		if err := e.kube.Client.CoreV1().Pods(attachNS).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid},
		}); err != nil {
			e.t.Fatalf("deleting %s: %v", name, err)
		}
		gctx, cancel := context.WithTimeout(ctx, time.Minute)
		waitFor(e.t, gctx, name+" gone", func() error {
			_, err := e.kube.Client.CoreV1().Pods(attachNS).Get(gctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("pod %s still there (%v)", name, err)
		})
		cancel()
		p.node, p.recreated = e.movedNode, true
		if err := e.createPod(ctx, p); err != nil {
			e.t.Fatal(err)
		}
		if p.uid == uid {
			e.t.Fatalf("re-created %s has its predecessor's UID", name)
		}
	}
	e.t.Logf("unplugged %s from %v; re-created %v", attachStore, unplug, recreate)
}

// logSpread logs how many shards the pods land in.
func (e *attachEnv) logSpread(pods []*attachPod) {
	byShard := map[int]int{}
	for _, p := range pods {
		byShard[shard.Of(attachNS+"/"+p.name, attachShards)]++
	}
	e.t.Logf("%d pods in %d of %d shards", len(pods), len(byShard), attachShards)
	if len(byShard) < attachShards*3/4 {
		e.t.Fatalf("the pods land in only %d shards", len(byShard))
	}
}

// inShardsFirst returns n of names, those whose key is in one of shards
// first.
func inShardsFirst(names []string, shards []int, n int) []string {
	var in, out []string
	for _, name := range names {
		if slices.Contains(shards, shard.Of(attachNS+"/"+name, attachShards)) {
			in = append(in, name)
		} else {
			out = append(out, name)
		}
	}
	return append(in, out...)[:min(n, len(names))]
}

// waitMember waits until the replica has registered its member Lease
// (the leader is about to move shards to it), watching so that the
// caller acts within moments of it.
func (e *attachEnv) waitMember(ctx context.Context, id string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	leases := e.kube.Client.CoordinationV1().Leases(coordNS)
	sel := metav1.ListOptions{FieldSelector: "metadata.name=shardnet-member-" + id}
	list, err := leases.List(ctx, sel)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(list.Items) > 0 {
		return
	}
	sel.ResourceVersion = list.ResourceVersion
	w, err := leases.Watch(ctx, sel)
	if err != nil {
		e.t.Fatal(err)
	}
	defer w.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				e.t.Fatalf("watching the member Lease of %s ended", id)
			}
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				return
			}
		case <-ctx.Done():
			e.t.Fatalf("%s did not register: %v", id, ctx.Err())
		}
	}
}

// settle waits until check passes and returns what it found.
func (e *attachEnv) settle(ctx context.Context, what string, timeout time.Duration) map[string]map[string]heldNet {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start, lastLog := time.Now(), time.Now()
	var last error
	for {
		held, err := e.check(ctx)
		if err == nil {
			e.t.Logf("%s: every row checked after %v", what, time.Since(start).Round(time.Millisecond))
			return held
		}
		if ctx.Err() == nil {
			last = err
		}
		if time.Since(lastLog) > 15*time.Second {
			e.t.Logf("%s: still waiting: %s", what, firstLines(err, 3))
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("%s: not settled within %v:\n%v", what, timeout, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// hold checks that the state stays right for d.
func (e *attachEnv) hold(ctx context.Context, what string, d time.Duration) {
	e.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if _, err := e.check(ctx); err != nil {
			e.t.Fatalf("%s did not hold: %v", what, err)
		}
		select {
		case <-ctx.Done():
			e.t.Fatal(ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// checkProcesses asserts the running replicas are still up and that the
// race detector, when built in, reported nothing in any replica.
func (e *attachEnv) checkProcesses() {
	for id, r := range e.replicas {
		if !r.Running() {
			e.t.Errorf("replica %s exited", id)
		}
	}
	if harness.RaceEnabled() {
		for _, r := range e.started {
			if n := r.RaceReports(); n > 0 {
				e.t.Errorf("replica %s: %d data races reported (see its log %s)", r.Identity, n, r.Log)
			}
		}
	}
}

func firstLines(err error, n int) string {
	lines := strings.Split(err.Error(), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... (%d more)", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}

// rows is one read of everything the check compares.
type rows struct {
	pods map[string]*corev1.Pod
	// ports are the pod ports by name.
	ports map[string]nbdb.LogicalSwitchPort
	// switchesOf and groupsOf list, by port UUID, the switches and port
	// groups that hold the port.
	switchesOf, groupsOf map[string][]string
	ips                  map[string]kubeovnv1.IP
	// claims are the claims by owner name and provider.
	claims map[string][]v1alpha1.AddressClaim
	// allClaims are every claim by name.
	allClaims map[string]v1alpha1.AddressClaim
}

func (e *attachEnv) read(ctx context.Context) (*rows, error) {
	r := &rows{
		pods: map[string]*corev1.Pod{}, ports: map[string]nbdb.LogicalSwitchPort{},
		switchesOf: map[string][]string{}, groupsOf: map[string][]string{},
		ips: map[string]kubeovnv1.IP{}, claims: map[string][]v1alpha1.AddressClaim{}, allClaims: map[string]v1alpha1.AddressClaim{},
	}
	pods, err := e.kube.Client.CoreV1().Pods(attachNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range pods.Items {
		r.pods[pods.Items[i].Name] = &pods.Items[i]
	}
	var lsps []nbdb.LogicalSwitchPort
	if err := e.view.List(ctx, &lsps); err != nil {
		return nil, err
	}
	for _, p := range lsps {
		if p.ExternalIDs["pod"] != "" {
			r.ports[p.Name] = p
		}
	}
	var switches []nbdb.LogicalSwitch
	if err := e.view.List(ctx, &switches); err != nil {
		return nil, err
	}
	for _, s := range switches {
		for _, u := range s.Ports {
			r.switchesOf[u] = append(r.switchesOf[u], s.Name)
		}
	}
	var groups []nbdb.PortGroup
	if err := e.view.List(ctx, &groups); err != nil {
		return nil, err
	}
	for _, g := range groups {
		for _, u := range g.Ports {
			r.groupsOf[u] = append(r.groupsOf[u], g.Name)
		}
	}
	ips, err := e.kube.Shardnet.KubeovnV1().IPs().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, ip := range ips.Items {
		r.ips[ip.Name] = ip
	}
	claims, err := e.kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, c := range claims.Items {
		r.allClaims[c.Name] = c
		pr := c.Spec.Provider
		if pr == "" {
			pr = reconcile.DefaultProvider
		}
		r.claims[c.Spec.Owner.Namespace+"/"+c.Spec.Owner.Name+"|"+pr] = append(r.claims[c.Spec.Owner.Namespace+"/"+c.Spec.Owner.Name+"|"+pr], c)
	}
	return r, nil
}

// checker collects the mismatches of one check.
type checker struct {
	errs []string
	// used maps subnet/address to the pod network annotated with it.
	used map[string]string
	// ports, ips and claims are the rows live networks account for.
	ports, ips, claims map[string]bool
}

func (c *checker) failf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// check reads every row once and compares it with the model: each live
// network row by row, each network a pod must not hold, and every port,
// IP record and claim accounted for by a live network. It returns what
// each pod's networks hold.
func (e *attachEnv) check(ctx context.Context) (map[string]map[string]heldNet, error) {
	r, err := e.read(ctx)
	if err != nil {
		return nil, err
	}
	c := &checker{used: map[string]string{}, ports: map[string]bool{}, ips: map[string]bool{}, claims: map[string]bool{}}
	held := map[string]map[string]heldNet{}
	for _, name := range slices.Sorted(maps.Keys(e.pods)) {
		m := e.pods[name]
		p, ok := r.pods[name]
		if !ok {
			c.failf("pod %s is missing", name)
			continue
		}
		if p.UID != m.uid {
			c.failf("pod %s has UID %s, want %s", name, p.UID, m.uid)
			continue
		}
		if p.Spec.NodeName != m.node {
			c.failf("pod %s is on node %q, want %q", name, p.Spec.NodeName, m.node)
		}
		held[name] = map[string]heldNet{}
		asked := map[string]bool{}
		for _, n := range m.networks() {
			asked[n.provider] = true
			if h, ok := e.checkNetwork(c, r, p, m, n); ok {
				held[name][n.provider] = h
			}
		}
		for _, pr := range attachProviders {
			if !asked[pr] {
				e.checkAbsent(c, r, p, pr)
			}
		}
	}
	for name := range r.pods {
		if _, ok := e.pods[name]; !ok {
			c.failf("unexpected pod %s", name)
		}
	}
	// Nothing else: every pod port, IP record and claim belongs to a
	// network a live pod holds.
	for _, name := range slices.Sorted(maps.Keys(r.ports)) {
		if !c.ports[name] {
			c.failf("leaked port %s (pod %s, addresses %v)", name, r.ports[name].ExternalIDs["pod"], r.ports[name].Addresses)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.ips)) {
		if !c.ips[name] {
			c.failf("leaked IP record %s: %+v", name, r.ips[name].Spec)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.allClaims)) {
		if !c.claims[name] {
			cl := r.allClaims[name]
			c.failf("leaked claim %s: provider %q owner %+v", name, cl.Spec.Provider, cl.Spec.Owner)
		}
	}
	if len(c.errs) > 0 {
		sort.Strings(c.errs)
		return nil, errors.New(strings.Join(c.errs, "\n"))
	}
	return held, nil
}

// checkNetwork checks one network a pod must hold: its annotations, its
// port (OVN) on the annotated switch with exactly the annotated MAC and
// address, in exactly its node's port group, its IP record and its claim.
func (e *attachEnv) checkNetwork(c *checker, r *rows, p *corev1.Pod, m *attachPod, n attachNet) (heldNet, bool) {
	key := p.Namespace + "/" + p.Name
	ann := func(k string) string { return p.Annotations[reconcile.Key(n.provider, k)] }
	if ann(reconcile.KeyAllocated) != "true" {
		c.failf("%s: network %s is not allocated", key, n.provider)
		return heldNet{}, false
	}
	prefix := netip.MustParsePrefix(attachSubnets[n.subnet])
	ip := ann(reconcile.KeyIPAddress)
	a, err := netip.ParseAddr(ip)
	if err != nil || !prefix.Contains(a) {
		c.failf("%s: network %s has ip_address %q, not an address of %s", key, n.provider, ip, prefix)
		return heldNet{}, false
	}
	if got := ann(reconcile.KeyCIDR); got != prefix.String() {
		c.failf("%s: network %s has cidr %q, want %s", key, n.provider, got, prefix)
	}
	if got, want := ann(reconcile.KeyGateway), prefix.Addr().Next().String(); got != want {
		c.failf("%s: network %s has gateway %q, want %s", key, n.provider, got, want)
	}
	if other, dup := c.used[n.subnet+"/"+ip]; dup {
		c.failf("duplicate address: %s/%s is annotated on %s and on %s network %s", n.subnet, ip, other, key, n.provider)
	}
	c.used[n.subnet+"/"+ip] = key + " network " + n.provider

	mac := ""
	if n.ovn {
		mac = ann(reconcile.KeyMACAddress)
		if _, err := net.ParseMAC(mac); err != nil {
			c.failf("%s: network %s has mac_address %q", key, n.provider, mac)
		}
		for k, want := range map[string]string{
			reconcile.KeyRouted: "true", reconcile.KeyLogicalSwitch: n.subnet,
			reconcile.KeyLogicalRouter: "ovn-cluster", reconcile.KeyPodNICType: "veth-pair",
		} {
			if got := ann(k); got != want {
				c.failf("%s: network %s has %s=%q, want %q", key, n.provider, k, got, want)
			}
		}
		name := reconcile.PortName(p.Name, p.Namespace, n.provider)
		c.ports[name] = true
		port, ok := r.ports[name]
		if !ok {
			c.failf("%s: network %s has no port %s", key, n.provider, name)
		} else {
			if want := []string{mac + " " + ip}; !slices.Equal(port.Addresses, want) {
				c.failf("%s: port %s has addresses %q, annotations say %q", key, name, port.Addresses, want)
			}
			if port.ExternalIDs["pod"] != key || port.ExternalIDs["ls"] != n.subnet {
				c.failf("%s: port %s has external ids %v, want pod=%s ls=%s", key, name, port.ExternalIDs, key, n.subnet)
			}
			if got := r.switchesOf[port.UUID]; !slices.Equal(got, []string{n.subnet}) {
				c.failf("%s: port %s is on switches %v, want [%s]", key, name, got, n.subnet)
			}
			got := slices.Sorted(slices.Values(r.groupsOf[port.UUID]))
			if want := []string{reconcile.NodePortGroupName(n.subnet, m.node)}; !slices.Equal(got, want) {
				c.failf("%s: port %s is in port groups %v, want %v", key, name, got, want)
			}
		}
	} else {
		// IPAM-only: the four keys of A11 and nothing else, no port.
		var keys []string
		for k := range p.Annotations {
			if rest, ok := strings.CutPrefix(k, n.provider+".kubernetes.io/"); ok {
				keys = append(keys, rest)
			}
		}
		sort.Strings(keys)
		if want := []string{reconcile.KeyAllocated, reconcile.KeyCIDR, reconcile.KeyGateway, reconcile.KeyIPAddress}; !slices.Equal(keys, want) {
			c.failf("%s: IPAM-only network %s has keys %v, want %v", key, n.provider, keys, want)
		}
		if name := reconcile.PortName(p.Name, p.Namespace, n.provider); r.ports[name].Name != "" {
			c.failf("%s: IPAM-only network %s has a port %s", key, n.provider, name)
		}
	}

	rec := reconcile.PortName(p.Name, p.Namespace, n.provider)
	c.ips[rec] = true
	if ipr, ok := r.ips[rec]; !ok {
		c.failf("%s: network %s has no IP record %s", key, n.provider, rec)
	} else {
		want := kubeovnv1.IPSpec{
			PodName: p.Name, Namespace: p.Namespace, Subnet: n.subnet, NodeName: m.node,
			IPAddress: ip, V4IPAddress: ip, MacAddress: mac,
		}
		if got := ipr.Spec; got.PodName != want.PodName || got.Namespace != want.Namespace || got.Subnet != want.Subnet ||
			got.NodeName != want.NodeName || got.IPAddress != want.IPAddress || got.V4IPAddress != want.V4IPAddress ||
			got.V6IPAddress != "" || got.MacAddress != want.MacAddress {
			c.failf("%s: IP record %s is %+v, want %+v", key, rec, got, want)
		}
	}

	claims := r.claims[key+"|"+n.provider]
	var names []string
	for _, cl := range claims {
		names = append(names, cl.Name)
		c.claims[cl.Name] = true
	}
	if want := v1alpha1.ClaimName(n.subnet, a); !slices.Equal(names, []string{want}) {
		c.failf("%s: network %s has claims %v, want [%s]", key, n.provider, names, want)
	} else {
		cl := claims[0].Spec
		if cl.Subnet != n.subnet || cl.Address != ip || cl.NodeName != m.node ||
			cl.Owner != (v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}) {
			c.failf("%s: claim %s of network %s is %+v (pod UID %s, node %s)", key, names[0], n.provider, cl, p.UID, m.node)
		}
		if n.ovn && cl.MAC != mac {
			c.failf("%s: claim %s records MAC %q, annotations say %q", key, names[0], cl.MAC, mac)
		}
	}
	return heldNet{ip: ip, mac: mac}, true
}

// checkAbsent checks that a pod holds nothing on a provider it does not
// ask for: no annotation under the provider's prefix, no port, no IP
// record, no claim.
func (e *attachEnv) checkAbsent(c *checker, r *rows, p *corev1.Pod, provider string) {
	key := p.Namespace + "/" + p.Name
	for k, v := range p.Annotations {
		if strings.HasPrefix(k, provider+".kubernetes.io/") {
			c.failf("%s: holds no network %s but has %s=%q", key, provider, k, v)
		}
	}
	name := reconcile.PortName(p.Name, p.Namespace, provider)
	if port, ok := r.ports[name]; ok {
		c.failf("%s: holds no network %s but has port %s (%v)", key, provider, name, port.Addresses)
	}
	if ipr, ok := r.ips[name]; ok {
		c.failf("%s: holds no network %s but has IP record %s (%+v)", key, provider, name, ipr.Spec)
	}
	for _, cl := range r.claims[key+"|"+provider] {
		c.failf("%s: holds no network %s but has claim %s (owner %+v)", key, provider, cl.Name, cl.Spec.Owner)
	}
}
