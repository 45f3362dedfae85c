package faults

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ovn-kubernetes/libovsdb/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/shard"
	"github.com/shardnet/shardnet/test/harness"
)

const (
	// coordNS holds the replicas' Leases and assignment table.
	coordNS = "shardnet-system"
	// coordName prefixes the coordination objects' names (the default).
	coordName = "shardnet"
	// shardCount is every replica's --shards.
	shardCount = 16
	// leaseDuration is the member Lease duration: a replica that stops
	// renewing loses its shards after about this long.
	leaseDuration = 4 * time.Second
)

// requireFaults skips the test unless the fault suite was asked for.
func requireFaults(t *testing.T) {
	t.Helper()
	if os.Getenv("SHARDNET_FAULTS") != "1" {
		t.Skip("the fault suite starts real servers and runs for many minutes: set SHARDNET_FAULTS=1 (make test-faults) to run it")
	}
}

// subnetDef is one subnet of the suite and the load it gets.
type subnetDef struct {
	name, cidr string
	// ns is the namespace whose pods use the subnet (spec.namespaces).
	ns string
	// excludes are spec.excludeIps; static pods take their addresses from
	// staticFrom..staticTo, inside them, so that no dynamic pick takes them.
	excludes             []string
	staticFrom, staticTo string
	// weight is the subnet's share of created pods.
	weight int
	// maxLive bounds the pods the load keeps alive in the subnet (0: no
	// bound); it keeps a nearly full subnet just short of full.
	maxLive int
}

// subnetDefs: a wide subnet with static pods, a middle one, and a /26
// (61 usable addresses) the load keeps nearly full.
var subnetDefs = []subnetDef{
	{name: "wide", cidr: "10.120.0.0/20", ns: "faults-wide", excludes: []string{"10.120.15.0..10.120.15.255"},
		staticFrom: "10.120.15.10", staticTo: "10.120.15.250", weight: 6},
	{name: "mid", cidr: "10.121.0.0/22", ns: "faults-mid", weight: 3},
	{name: "tight", cidr: "10.122.0.0/26", ns: "faults-tight", weight: 1, maxLive: 56},
}

func subnetOfNS(ns string) string {
	for _, s := range subnetDefs {
		if s.ns == ns {
			return s.name
		}
	}
	return ""
}

// env is one cluster of the suite: its servers, replicas and nodes.
type env struct {
	t    *testing.T
	kube *harness.Kube
	// nb is the standalone Northbound server; nbc, instead of it, the
	// RAFT cluster of a case with envConfig.nbCluster.
	nb  *harness.NB
	nbc *harness.NBCluster
	// view monitors the whole Northbound and reconnects when the server
	// comes back.
	view client.Client
	bin  string
	args []string
	// binDir holds a link to bin per replica identity, named after it:
	// a replica's API client names itself by its program name, so that
	// the field manager of its writes (metadata.managedFields) names the
	// replica.
	binDir string

	// mu guards replicas and started.
	mu sync.Mutex
	// replicas are the running replica processes by identity; started
	// holds every process started, killed ones included.
	replicas map[string]*harness.Replica
	started  []*harness.Replica

	// kwokNodes are managed by kwok; staticNode is not. Pods that the load
	// deletes and re-creates under the same name live on staticNode: kwok
	// deletes a terminating pod by name, without a UID precondition, so
	// its late delete could remove the re-created pod.
	kwokNodes  []string
	staticNode string
	// gate stands between the replica gated and the API server in a case
	// with envConfig.watchGap; the other replicas reach it directly.
	gate  *apiGate
	gated string
	// gateArgs are the gated replica's flags.
	gateArgs []string
	// nbProxy, in a case with envConfig.nbProxies, stands between each
	// replica identity and the Northbound.
	nbProxy map[string]*nbProxy
}

// envConfig is what a case changes in its cluster.
type envConfig struct {
	// nbCluster runs the Northbound as a 3-member RAFT cluster instead of
	// a standalone server.
	nbCluster bool
	// watchGap has kube-apiserver serve pod watches from etcd
	// (--watch-cache-sizes=pods#0) and replica shardnet-0, started first
	// so that it leads, reach it through an apiGate.
	watchGap bool
	// nbProxies puts an nbProxy between each replica and the standalone
	// Northbound.
	nbProxies bool
}

// newEnv starts the servers, the nodes, the namespaces and the subnets.
// No replica runs yet.
func newEnv(t *testing.T, bin string, cfg envConfig) *env {
	t.Helper()
	e := &env{t: t, bin: bin, binDir: t.TempDir(), replicas: map[string]*harness.Replica{}}
	if cfg.watchGap {
		e.kube = harness.StartKubeWith(t, harness.KubeOptions{APIServerArgs: []string{"--watch-cache-sizes=pods#0"}})
		e.gate, e.gated = startGate(t, e.kube), "shardnet-0"
	} else {
		e.kube = harness.StartKube(t)
	}
	e.kube.StartKwok(t)
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval = 50*time.Millisecond, time.Second
	// libovsdb panics when its reconnect backoff gives up.
	bo.MaxElapsedTime = 0
	var endpoints []string
	if cfg.nbCluster {
		e.nbc = harness.StartNBCluster(t, 3)
		endpoints = e.nbc.Endpoints
	} else {
		e.nb = harness.StartNB(t)
		endpoints = []string{e.nb.Endpoint}
	}
	// The view reads the RAFT leader, as the replicas do (their
	// --nb-leader-only), so that it is never behind what they wrote.
	viewOpts := []client.Option{client.WithReconnect(5*time.Second, bo), client.WithLeaderOnly(cfg.nbCluster)}
	for _, ep := range endpoints {
		viewOpts = append(viewOpts, client.WithEndpoint(ep))
	}
	e.view = harness.NBView(t, viewOpts...)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, ns := range []string{coordNS, subnetDefs[0].ns, subnetDefs[1].ns, subnetDefs[2].ns} {
		if _, err := e.kube.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		e.kwokNodes = append(e.kwokNodes, e.kube.CreateNode(t, fmt.Sprintf("kwok-faults-%d", i), "").Name)
	}
	e.staticNode = "static-faults"
	if _, err := e.kube.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: e.staticNode, Labels: map[string]string{"kubernetes.io/hostname": e.staticNode, "kubernetes.io/os": "linux"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range subnetDefs {
		sub := &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: s.name}, Spec: kubeovnv1.SubnetSpec{
			CIDRBlock: s.cidr, Protocol: "IPv4", Namespaces: []string{s.ns}, ExcludeIps: s.excludes,
		}}
		if _, err := e.kube.Shardnet.KubeovnV1().Subnets().Create(ctx, sub, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.args = []string{
		"--kubeconfig=" + e.kube.Kubeconfig,
		"--namespace=" + coordNS,
		"--nb-endpoints=" + strings.Join(endpoints, ","),
		fmt.Sprintf("--shards=%d", shardCount), "--workers-per-shard=4",
		// Short leases, so that a lost replica's shards move within
		// seconds: the renew deadline and retry period of the e2e suites'
		// 4 s lease.
		fmt.Sprintf("--lease-duration=%v", leaseDuration), "--renew-deadline=3s", "--retry-period=500ms",
		"--ip-records=true",
		// A short collector, so that leftovers of a fault are collected
		// within seconds of quiescence (invariant c).
		"--gc-interval=2s", "--gc-grace=4s", "--status-interval=500ms",
		"--memory-limit=none",
		"--v=2",
	}
	if e.gate != nil {
		e.gateArgs = withFlag(e.args, "--kubeconfig", e.gate.kubeconfig)
	}
	if cfg.nbProxies && e.nb != nil {
		e.nbProxy = nbProxies(t, e.nb.Endpoint, "shardnet-0", "shardnet-1", "shardnet-2")
	}
	return e
}

// withFlag returns args with the flag name set to value, in place of the
// one args has.
func withFlag(args []string, name, value string) []string {
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		if !strings.HasPrefix(a, name+"=") {
			out = append(out, a)
		}
	}
	return append(out, name+"="+value)
}

// startReplica starts a replica process; when the test fails, its log is
// kept and its tail printed.
func (e *env) startReplica(id string) *harness.Replica {
	e.t.Helper()
	bin := filepath.Join(e.binDir, id)
	if _, err := os.Lstat(bin); err != nil {
		if err := os.Symlink(e.bin, bin); err != nil {
			e.t.Fatal(err)
		}
	}
	args := e.args
	if id == e.gated {
		args = e.gateArgs
	}
	if px := e.nbProxy[id]; px != nil {
		args = withFlag(args, "--nb-endpoints", px.endpoint())
	}
	r := harness.StartReplica(e.t, bin, id, args...)
	e.mu.Lock()
	e.replicas[id] = r
	e.started = append(e.started, r)
	n := len(e.started) - 1
	e.mu.Unlock()
	e.t.Logf("started replica %s (log %s)", id, r.Log)
	e.t.Cleanup(func() {
		if !e.t.Failed() {
			return
		}
		if dir := e.keepLogs(); dir != "" {
			e.t.Logf("replica %s: log kept in %s", id, filepath.Join(dir, keptName(n, r)))
		}
		e.t.Logf("replica %s: last log lines:\n%s", id, r.LogTail())
	})
	return r
}

// keptName is the name under which keepLogs keeps the log of the n-th
// process started: one identity may have run several processes.
func keptName(n int, r *harness.Replica) string {
	return fmt.Sprintf("%02d-%s", n, filepath.Base(r.Log))
}

// keepLogs copies every replica log of the test to
// $TMPDIR/shardnet-faults-logs/<test>/ and returns the folder.
func (e *env) keepLogs() string {
	dir := filepath.Join(os.TempDir(), "shardnet-faults-logs", strings.ReplaceAll(e.t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	e.mu.Lock()
	started := slices.Clone(e.started)
	e.mu.Unlock()
	for n, r := range started {
		if b, err := os.ReadFile(r.Log); err == nil {
			_ = os.WriteFile(filepath.Join(dir, keptName(n, r)), b, 0o644)
		}
	}
	return dir
}

// leaseLosses lists, from the replicas' logs, every time a replica gave
// up all its shards because it could not renew its member Lease in time.
func (e *env) leaseLosses() []string {
	e.mu.Lock()
	started := slices.Clone(e.started)
	e.mu.Unlock()
	var out []string
	for _, r := range started {
		b, err := os.ReadFile(r.Log)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.Contains(line, "abandoning all shards") {
				ts := ""
				if f := strings.Fields(line); len(f) > 1 {
					ts = f[1]
				}
				out = append(out, r.Identity+" at "+ts)
			}
		}
	}
	return out
}

// forget drops a replica from the running set (it was killed).
func (e *env) forget(id string) {
	e.mu.Lock()
	delete(e.replicas, id)
	e.mu.Unlock()
}

func (e *env) running() map[string]*harness.Replica {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]*harness.Replica, len(e.replicas))
	for id, r := range e.replicas {
		out[id] = r
	}
	return out
}

// assignment reads the shard table from its ConfigMap.
func (e *env) assignment(ctx context.Context) (*shard.Assignment, error) {
	cm, err := e.kube.Client.CoreV1().ConfigMaps(coordNS).Get(ctx, coordName+"-assignment", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return shard.UnmarshalAssignment(cm.Data[shard.AssignmentKey], shardCount)
}

// leader is the holder of the election Lease ("" when none).
func (e *env) leader(ctx context.Context) (string, error) {
	l, err := e.kube.Client.CoordinationV1().Leases(coordNS).Get(ctx, coordName+"-leader", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// member is what a replica's member Lease reports.
type member struct {
	incarnation string
	held        shard.Set
}

func (e *env) member(ctx context.Context, id string) (member, error) {
	l, err := e.kube.Client.CoordinationV1().Leases(coordNS).Get(ctx, coordName+"-member-"+id, metav1.GetOptions{})
	if err != nil {
		return member{}, err
	}
	held, err := shard.ParseSet(l.Annotations[shard.HeldAnnotation], shardCount)
	if err != nil {
		return member{}, err
	}
	return member{incarnation: l.Annotations[shard.IncarnationAnnotation], held: held}, nil
}

// whole reports nil when the cluster is whole again, from the servers'
// state: every shard active in the table and owned by a running replica's
// current process (the entry's incarnation is the one its member Lease
// reports), every running replica ready and reporting exactly the shards
// the table gives it, and the election Lease held by a running replica.
func (e *env) whole(ctx context.Context) error {
	a, err := e.assignment(ctx)
	if err != nil {
		return err
	}
	running := e.running()
	members := map[string]member{}
	for id, r := range running {
		if !r.Running() {
			return fmt.Errorf("replica %s exited:\n%s", id, r.LogTail())
		}
		if !r.Ready() {
			return fmt.Errorf("replica %s is not ready", id)
		}
		m, err := e.member(ctx, id)
		if err != nil {
			return err
		}
		members[id] = m
	}
	for s, en := range a.Shards {
		if !en.Active() {
			return fmt.Errorf("shard %d is not active: %+v", s, en)
		}
		m, ok := members[en.Owner]
		if !ok {
			return fmt.Errorf("shard %d is owned by %q, not a running replica", s, en.Owner)
		}
		if en.Inc != m.incarnation {
			return fmt.Errorf("shard %d is owned by an earlier process of %s (incarnation %s, now %s)", s, en.Owner, en.Inc, m.incarnation)
		}
	}
	for id, m := range members {
		var want []int
		for s := range a.Runnable(id) {
			want = append(want, s)
		}
		sort.Ints(want)
		if got := m.held.Sorted(); !slices.Equal(got, want) {
			return fmt.Errorf("replica %s reports shards %v, the table gives it %v", id, got, want)
		}
	}
	l, err := e.leader(ctx)
	if err != nil {
		return err
	}
	if _, ok := running[l]; !ok {
		return fmt.Errorf("the election Lease is held by %q, not a running replica", l)
	}
	return nil
}

// waitWhole waits until the cluster is whole and returns when it was
// first seen so.
func (e *env) waitWhole(ctx context.Context, what string, timeout time.Duration) time.Time {
	e.t.Helper()
	var at time.Time
	waitFor(e.t, ctx, what, timeout, 100*time.Millisecond, func() error {
		if err := e.whole(ctx); err != nil {
			return err
		}
		at = time.Now()
		return nil
	})
	return at
}

// waitLeader waits until id holds the leader Lease.
func (e *env) waitLeader(ctx context.Context, id string, timeout time.Duration) {
	e.t.Helper()
	waitFor(e.t, ctx, id+" leading", timeout, 100*time.Millisecond, func() error {
		l, err := e.leader(ctx)
		if err != nil {
			return err
		}
		if l != id {
			return fmt.Errorf("the leader is %q", l)
		}
		return nil
	})
}

// ownedBy lists the shards the table gives id.
func ownedBy(a *shard.Assignment, id string) []int {
	var out []int
	for s, en := range a.Shards {
		if en.Owner == id {
			out = append(out, s)
		}
	}
	return out
}

// checkProcesses fails the test for a replica that exited on its own or
// reported a data race, and returns the number of races reported.
func (e *env) checkProcesses() int {
	e.t.Helper()
	for id, r := range e.running() {
		if !r.Running() {
			e.t.Errorf("replica %s exited", id)
		}
	}
	races := 0
	if harness.RaceEnabled() {
		e.mu.Lock()
		started := slices.Clone(e.started)
		e.mu.Unlock()
		for _, r := range started {
			if n := r.RaceReports(); n > 0 {
				races += n
				e.t.Errorf("replica %s: %d data races reported (log %s)", r.Identity, n, r.Log)
			}
		}
	}
	return races
}

// waitFor polls check every interval until it passes, the timeout passes
// (in time, or in polls: timeout/interval of them) or ctx ends; the last
// three fail the test.
func waitFor(t *testing.T, ctx context.Context, what string, timeout, interval time.Duration, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	for range int(timeout/interval) + 1 {
		if err = check(); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		case <-time.After(interval):
		}
	}
	t.Fatalf("%s: not within %v: %v", what, timeout, err)
}

// prefixOf parses a subnet's CIDR.
func prefixOf(name string) netip.Prefix {
	for _, s := range subnetDefs {
		if s.name == name {
			return netip.MustParsePrefix(s.cidr)
		}
	}
	return netip.Prefix{}
}
