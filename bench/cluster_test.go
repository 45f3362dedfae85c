package bench

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/reconcile"
	"github.com/shardnet/shardnet/test/harness"
)

// clusterPods is the pods per scenario of the runs against a cluster.
const clusterPods = 20

// TestRunAgainstCluster runs the bench with Config.Kubeconfig against a
// cluster of the harness's real servers with kwok and one shardnet
// replica installed: a whole run, a run interrupted half way, and a run
// that keeps its objects, on a subnet of its choice. After each, nothing
// labelled with its run id is left.
func TestRunAgainstCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver, kwok, a Northbound and a shardnet replica")
	}
	kube := harness.StartKube(t)
	kube.StartKwok(t)
	var nb *harness.NB
	if harness.HaveOVSDBServer() {
		nb = harness.StartNB(t)
	} else {
		nb = harness.StartEmbeddedNB(t)
	}
	ctx := context.Background()
	// The installed shardnet: its namespace, the default subnet, another
	// one, and a replica.
	if _, err := kube.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shardnet-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []kubeovnv1.Subnet{
		{ObjectMeta: metav1.ObjectMeta{Name: "ovn-default"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/16", Default: true}},
		{ObjectMeta: metav1.ObjectMeta{Name: "bench-other"}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: "10.8.0.0/22"}},
	} {
		if _, err := kube.Shardnet.KubeovnV1().Subnets().Create(ctx, &s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bin := harness.BuildShardnet(t)
	harness.StartReplica(t, bin, "shardnet-0",
		"--kubeconfig="+kube.Kubeconfig, "--namespace=shardnet-system", "--nb-endpoints="+nb.Endpoint,
		"--shards=4", "--workers-per-shard=4", "--memory-limit=none")
	finalizeNamespaces(t, kube.Client)

	config := func(t *testing.T) (Config, *syncBuffer, *syncBuffer) {
		var steps, lines syncBuffer
		return Config{
			Kubeconfig: kube.Kubeconfig, Pods: clusterPods, Out: t.TempDir(), Timeout: 3 * time.Minute,
			Progress: &steps, ProgressLines: &lines, ProgressInterval: time.Second,
		}, &steps, &lines
	}

	t.Run("whole run", func(t *testing.T) {
		cfg, steps, lines := config(t)
		res, err := Run(ctx, cfg)
		if err != nil {
			t.Fatalf("%v\n%s", err, steps)
		}
		id := res.Cluster.RunID
		checkNothingLeft(t, kube.Client, id)
		if res.Cluster.Subnet != "ovn-default" || res.Cluster.Server != kube.URL {
			t.Errorf("cluster %+v, want the default subnet ovn-default and server %s", res.Cluster, kube.URL)
		}
		if len(res.Scenarios) != 2 || res.Scenarios[0].Name != "raw" || res.Scenarios[1].Name != InstalledScenario {
			t.Fatalf("scenarios %+v, want raw and %s", res.Scenarios, InstalledScenario)
		}
		for _, sc := range res.Scenarios {
			if len(sc.Latencies) != clusterPods || sc.PodsPerSecond <= 0 {
				t.Errorf("%s: %d latencies, %v pods/s", sc.Name, len(sc.Latencies), sc.PodsPerSecond)
			}
		}
		if res.Ratios.InstalledVsRaw <= 0 {
			t.Errorf("ratios %+v", res.Ratios)
		}
		out := steps.String()
		for _, want := range []string{
			"bench: shardnet-1: skipped against a cluster: it starts a shardnet replica of its own",
			"bench: shardnet-3: skipped against a cluster: it starts 3 shardnet replicas of its own",
			"bench: " + AttachScenario + ": skipped against a cluster",
			"labelled " + LabelRun + "=" + id,
			"bench: deleted the namespaces, pods and nodes of run " + id,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		progress := lines.String()
		for _, want := range []string{"bench: raw: ", "created 20/20, seen 20;", "bench: shardnet-installed: ", "created 20/20, allocated 20, routed 20;"} {
			if !strings.Contains(progress, want) {
				t.Errorf("progress lines lack %q:\n%s", want, progress)
			}
		}
		for _, f := range []string{"result.json", "report.md", "latency.svg", "throughput.svg"} {
			if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
				t.Error(err)
			}
		}
		if md, _ := os.ReadFile(filepath.Join(cfg.Out, "report.md")); !strings.Contains(string(md), "installed shardnet / plain pod creates") ||
			!strings.Contains(string(md), "pods on the cluster's default subnet, ovn-default") {
			t.Errorf("report:\n%s", md)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		cfg, steps, _ := config(t)
		cfg.RunID = "intr01"
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		// The interrupt comes as the second scenario starts, once the
		// first one's namespace, pods and the nodes exist.
		var before []string
		cfg.Progress = writerFunc(func(p []byte) {
			steps.Write(p)
			if strings.HasPrefix(string(p), "bench: "+InstalledScenario+": ") && before == nil {
				var err error
				if before, err = leftovers(ctx, kube.Client, metav1.ListOptions{LabelSelector: LabelRun + "=intr01"}); err != nil {
					t.Error(err)
				}
				cancel()
			}
		})
		_, err := Run(ctx, cfg)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("an interrupted run returned %v\n%s", err, steps)
		}
		if want := []string{"namespace shardnet-bench-intr01-raw", "node shardnet-bench-intr01-node-0"}; !containsAll(before, want) {
			t.Fatalf("at the interrupt the run had %q, want %q among them", before, want)
		}
		checkNothingLeft(t, kube.Client, "intr01")
		if !strings.Contains(steps.String(), "bench: interrupted: deleting the objects of run intr01") {
			t.Errorf("output:\n%s", steps)
		}
	})

	t.Run("kept, on another subnet", func(t *testing.T) {
		cfg, steps, _ := config(t)
		cfg.Keep, cfg.Subnet, cfg.Scenarios = true, "bench-other", []string{InstalledScenario}
		res, err := Run(ctx, cfg)
		if err != nil {
			t.Fatalf("%v\n%s", err, steps)
		}
		id := res.Cluster.RunID
		if res.Cluster.Subnet != "bench-other" || !res.Cluster.SubnetGiven || len(res.Scenarios) != 1 {
			t.Errorf("cluster %+v, %d scenarios; want subnet bench-other, given, and %s alone", res.Cluster, len(res.Scenarios), InstalledScenario)
		}
		sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + id}
		pods, err := kube.Client.CoreV1().Pods("").List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != clusterPods {
			t.Fatalf("%d pods kept, want %d", len(pods.Items), clusterPods)
		}
		for _, p := range pods.Items {
			if p.Namespace != "shardnet-bench-"+id+"-"+InstalledScenario || p.Annotations[reconcile.DefaultKey(reconcile.KeyLogicalSwitch)] != "bench-other" ||
				!strings.HasPrefix(p.Annotations[reconcile.DefaultKey(reconcile.KeyIPAddress)], "10.8.") {
				t.Fatalf("pod %s/%s annotations %v, want routed on bench-other", p.Namespace, p.Name, p.Annotations)
			}
		}
		nodes, err := kube.Client.CoreV1().Nodes().List(ctx, sel)
		if err != nil || len(nodes.Items) != kwokNodes {
			t.Fatalf("%d nodes kept (%v), want %d", len(nodes.Items), err, kwokNodes)
		}
		if !strings.Contains(steps.String(), "kept the objects of run "+id) {
			t.Errorf("output:\n%s", steps)
		}
		sameWritesAsRaw(t, kube, &pods.Items[0])
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := cleanupRun(cctx, kube.Client, id); err != nil {
			t.Fatal(err)
		}
		checkNothingLeft(t, kube.Client, id)
	})
}

// sameWritesAsRaw checks that the raw writer writes, for pod p that a
// replica routed, a claim, an IP record and annotations of the same shape
// as the replica's: the same labels, annotations and spec fields, so that
// the raw ceiling is the API server's for the same objects.
func sameWritesAsRaw(t *testing.T, kube *harness.Kube, p *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	ann := p.Annotations
	nw := rawNetwork{provider: reconcile.DefaultProvider, subnet: ann[reconcile.DefaultKey(reconcile.KeyLogicalSwitch)],
		cidr: ann[reconcile.DefaultKey(reconcile.KeyCIDR)], gateway: ann[reconcile.DefaultKey(reconcile.KeyGateway)],
		ip: ann[reconcile.DefaultKey(reconcile.KeyIPAddress)]}
	claim, err := kube.Shardnet.ShardnetV1alpha1().AddressClaims().Get(ctx, nw.subnet+"."+nw.ip, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := kube.Shardnet.KubeovnV1().IPs().Get(ctx, reconcile.PortName(p.Name, p.Namespace, nw.provider), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what         string
		replica, raw any
	}{
		{"claim", claim, rawClaim(p, nw)},
		{"IP record", rec, rawIPRecord(p, nw)},
	} {
		got, want := writtenPaths(t, c.replica), writtenPaths(t, c.raw)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the raw writer writes %v, a replica %v", c.what, want, got)
		}
	}
	var replicaKeys []string
	for k := range ann {
		if strings.HasPrefix(k, reconcile.DefaultKey("")) {
			replicaKeys = append(replicaKeys, k)
		}
	}
	rawKeys := slices.Collect(maps.Keys(rawAnnotations([]rawNetwork{nw})))
	slices.Sort(replicaKeys)
	slices.Sort(rawKeys)
	if !slices.Equal(replicaKeys, rawKeys) {
		t.Errorf("annotations: the raw writer writes %v, a replica %v", rawKeys, replicaKeys)
	}
}

// writtenPaths are the paths of obj's labels, annotations and spec
// fields, sorted ("metadata.labels.x", "spec.owner.uid").
func writtenPaths(t *testing.T, obj any) []string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if sub, ok := v.(map[string]any); ok {
			for k, x := range sub {
				walk(prefix+"."+k, x)
			}
			return
		}
		paths = append(paths, prefix)
	}
	meta, _ := m["metadata"].(map[string]any)
	walk("metadata.labels", meta["labels"])
	walk("metadata.annotations", meta["annotations"])
	walk("spec", m["spec"])
	slices.Sort(paths)
	return paths
}

// TestRunAgainstClusterWithoutKwok runs against a cluster where kwok does
// not run: the run fails naming what is missing, and deletes its nodes.
func TestRunAgainstClusterWithoutKwok(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	kube := harness.StartKube(t)
	var steps syncBuffer
	_, err := Run(context.Background(), Config{
		Kubeconfig: kube.Kubeconfig, Pods: clusterPods, Out: t.TempDir(), Timeout: time.Minute,
		Progress: &steps, Scenarios: []string{"raw"}, RunID: "nokwok", KwokTimeout: 2 * time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "kwok is not running in the cluster: no kwok CRD is installed (API group kwok.x-k8s.io)") ||
		!strings.Contains(err.Error(), "kwok.x-k8s.io/node=fake") {
		t.Fatalf("a run without kwok returned %v", err)
	}
	checkNothingLeft(t, kube.Client, "nokwok")
}

// checkNothingLeft fails unless nothing labelled with run id, or named
// after it, is left: no namespace, node, pod or service account.
func checkNothingLeft(t *testing.T, client kubernetes.Interface, id string) {
	t.Helper()
	ctx := context.Background()
	left, err := leftovers(ctx, client, metav1.ListOptions{LabelSelector: LabelRun + "=" + id})
	if err != nil {
		t.Fatal(err)
	}
	nss, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "shardnet-bench-"+id) {
			left = append(left, "unlabelled namespace "+ns.Name)
		}
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, "shardnet-bench-"+id) {
			left = append(left, "unlabelled node "+n.Name)
		}
	}
	if len(left) > 0 {
		t.Fatalf("run %s left %s", id, strings.Join(left, ", "))
	}
}

// finalizeNamespaces stands in for kube-controller-manager's namespace
// controller, which the harness does not run: it finalizes every
// namespace being deleted. It deletes no content (the bench deletes its
// pods and service accounts itself), so what the bench leaves shows.
func finalizeNamespaces(t *testing.T, client kubernetes.Interface) {
	factory := informers.NewSharedInformerFactory(client, 0)
	finalize := func(obj any) {
		ns, ok := obj.(*corev1.Namespace)
		if !ok || ns.DeletionTimestamp == nil || len(ns.Spec.Finalizers) == 0 {
			return
		}
		for range 5 {
			fin := ns.DeepCopy()
			fin.Spec.Finalizers = nil
			_, err := client.CoreV1().Namespaces().Finalize(context.Background(), fin, metav1.UpdateOptions{})
			if !apierrors.IsConflict(err) {
				return
			}
			if ns, err = client.CoreV1().Namespaces().Get(context.Background(), ns.Name, metav1.GetOptions{}); err != nil {
				return
			}
		}
	}
	if _, err := factory.Core().V1().Namespaces().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: finalize, UpdateFunc: func(_, o any) { finalize(o) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	t.Cleanup(func() { close(stop); factory.Shutdown() })
}

// writerFunc is a writer calling f with every write.
type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// Ports handed to replicas are never handed out twice, even when the
// system gives the same free port again.
func TestReplicaPortsFresh(t *testing.T) {
	next := []int{5, 5, 6, 5, 6, 7}
	s := portSet{free: func(harness.TB) int { p := next[0]; next = next[1:]; return p }, given: map[int]bool{}}
	var got []int
	for range 3 {
		got = append(got, s.fresh(t))
	}
	if want := []int{5, 6, 7}; !slices.Equal(got, want) {
		t.Fatalf("ports %v, want %v", got, want)
	}
}
