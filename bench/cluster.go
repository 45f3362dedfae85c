package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/reconcile"
)

// LabelRun labels everything a run against a cluster creates (its
// namespaces, service accounts, pods and kwok nodes); the value is the
// run's id. `kubectl delete namespaces,nodes -l shardnet.io/bench-run=ID`
// removes what a run left.
const LabelRun = "shardnet.io/bench-run"

// InstalledScenario creates the pods on kwok nodes of a cluster and times
// them from create to routed by the shardnet installed there.
const InstalledScenario = "shardnet-installed"

const (
	// kwokNodeAnnotation selects the nodes kwok manages, as kwok's
	// in-cluster deployment is configured
	// (--manage-nodes-with-annotation-selector).
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// kwokGroup is the API group of kwok's CRDs (Stage and others).
	kwokGroup = "kwok.x-k8s.io"
	// benchServiceAccount runs the pods of a run against a cluster, so
	// that they need no default service account in a namespace just made.
	benchServiceAccount = "shardnet-bench"
	// podSecurityEnforce is the Pod Security admission level label: the
	// plain pods use the host network, which only "privileged" allows.
	podSecurityEnforce = "pod-security.kubernetes.io/enforce"
)

// clusterSkip says why a scenario does not run against a cluster.
var clusterSkip = map[string]string{
	"shardnet-1":      "it starts a shardnet replica of its own",
	"shardnet-3":      "it starts 3 shardnet replicas of its own",
	"baseline":        "it starts a one-shard shardnet replica of its own",
	HalfRateScenario:  "it paces 3 shardnet replicas of its own at half their rate",
	NearRateScenario:  "it paces 3 shardnet replicas of its own at 90% of their rate",
	RawHalfScenario:   "it is the baseline of the half-rate scenario, which does not run here",
	RawNearScenario:   "it is the baseline of the 90% scenario, which does not run here",
	PortsScenario:     "it starts 3 shardnet replicas of its own and a port group in the Northbound",
	RawAttachScenario: "it installs the NetworkAttachmentDefinition CRD and a cluster-scoped subnet and writes claims as shardnet does",
	AttachScenario:    "it starts 3 shardnet replicas of its own and installs a cluster-scoped subnet",
}

// clusterRun is one run against the cluster of Config.Kubeconfig.
type clusterRun struct {
	cfg      Config
	client   kubernetes.Interface
	shardnet versioned.Interface
	id       string
	// nodes are the run's kwok nodes, once created.
	nodes []string
	// subnet is the subnet the installed shardnet's pods ask for (the
	// logical_switch annotation), empty for its default.
	subnet string
}

// newRunID draws a run id: 6 lowercase hex digits, part of DNS names.
func newRunID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// runCluster measures the scenarios that run against an existing cluster
// (see Config.Kubeconfig) and deletes what it created. When only the
// deletion fails, it returns the result and the deletion's error.
func runCluster(ctx context.Context, cfg Config) (res *Result, err error) {
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", cfg.Kubeconfig, err)
	}
	// The bench measures the API server's rate: client-side rate limiting
	// must not be what bounds it (the server's priority and fairness
	// still protects it).
	rc.QPS, rc.Burst = 5000, 10000
	c := &clusterRun{cfg: cfg, id: cfg.RunID}
	if c.id == "" {
		c.id = newRunID()
	}
	if c.client, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	if c.shardnet, err = versioned.NewForConfig(rc); err != nil {
		return nil, err
	}

	var specs []spec
	var skipped []string
	for _, name := range ScenarioNames {
		if !cfg.wanted(name) {
			continue
		}
		switch name {
		case "raw":
			specs = append(specs, spec{name: name, plain: true})
		case InstalledScenario:
			specs = append(specs, spec{name: name})
		default:
			skipped = append(skipped, fmt.Sprintf("bench: %s: skipped against a cluster: %s\n", name, clusterSkip[name]))
		}
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("no scenario to run against a cluster: those that run are raw and %s", InstalledScenario)
	}
	if _, err := c.client.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("reaching the cluster of %s: %w", cfg.Kubeconfig, err)
	}
	fmt.Fprintf(cfg.Progress, "bench: against %s, run %s: everything it creates is labelled %s=%s\n", rc.Host, c.id, LabelRun, c.id)
	for _, line := range skipped {
		fmt.Fprint(cfg.Progress, line)
	}
	res = &Result{Started: time.Now(), Pods: cfg.Pods, Cluster: &ClusterRun{Server: rc.Host, RunID: c.id}}
	if slices.ContainsFunc(specs, func(sp spec) bool { return sp.name == InstalledScenario }) {
		if res.Cluster.Subnet, err = c.findSubnet(ctx); err != nil {
			return nil, err
		}
		res.Cluster.SubnetGiven = cfg.Subnet != ""
		c.subnet = cfg.Subnet
	}

	defer func() {
		if cfg.Keep {
			fmt.Fprintf(cfg.Progress, "bench: kept the objects of run %s; `kubectl delete namespaces,nodes -l %s=%s` removes them\n", c.id, LabelRun, c.id)
			return
		}
		if ctx.Err() != nil {
			fmt.Fprintf(cfg.Progress, "bench: interrupted: deleting the objects of run %s ...\n", c.id)
		}
		// The cleanup outlives an interrupt of ctx.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Timeout)
		defer cancel()
		start := time.Now()
		if cerr := cleanupRun(cctx, c.client, c.id); cerr != nil {
			err = errors.Join(err, cerr)
			return
		}
		fmt.Fprintf(cfg.Progress, "bench: deleted the namespaces, pods and nodes of run %s in %.1fs\n", c.id, time.Since(start).Seconds())
	}()

	if err := c.createNodes(ctx); err != nil {
		return nil, err
	}
	for _, sp := range specs {
		announce(cfg, sp)
		sc, err := c.scenario(ctx, sp)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", sp.name, err)
		}
		fmt.Fprintf(cfg.Progress, "bench: %s: %.0f pods/s, p50 %.0fms p95 %.0fms p99 %.0fms\n", sp.name, sc.PodsPerSecond, sc.P50, sc.P95, sc.P99)
		res.Scenarios = append(res.Scenarios, sc)
	}
	return res, nil
}

// findSubnet checks the subnet of Config.Subnet, or else returns the
// cluster's default subnet (the first by name with spec.default, as the
// installed shardnet takes it unless its --default-subnet says another;
// empty when none is marked).
func (c *clusterRun) findSubnet(ctx context.Context) (string, error) {
	if name := c.cfg.Subnet; name != "" {
		if _, err := c.shardnet.KubeovnV1().Subnets().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return "", fmt.Errorf("subnet %q: %w", name, err)
		}
		return name, nil
	}
	list, err := c.shardnet.KubeovnV1().Subnets().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing the cluster's kubeovn.io subnets (is shardnet installed?): %w", err)
	}
	slices.SortFunc(list.Items, func(a, b kubeovnv1.Subnet) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range list.Items {
		if s.Spec.Default && (s.Spec.Provider == "" || s.Spec.Provider == reconcile.DefaultProvider) {
			return s.Name, nil
		}
	}
	return "", nil
}

// kwokCRDs reports whether the cluster serves kwok's API group.
func (c *clusterRun) kwokCRDs() bool {
	groups, err := c.client.Discovery().ServerGroups()
	if err != nil {
		return false
	}
	return slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == kwokGroup })
}

// createNodes creates the run's kwok nodes and waits until kwok has made
// them Ready, which proves kwok runs in the cluster and manages them.
func (c *clusterRun) createNodes(ctx context.Context) error {
	prefix := "shardnet-bench-" + c.id + "-node-"
	for i := range kwokNodes {
		name := fmt.Sprintf("%s%d", prefix, i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Labels: map[string]string{
					LabelRun: c.id, "type": "kwok",
					"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
				},
				Annotations: map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			},
			// Kept off for the cluster's own workloads (DaemonSets, say).
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: kwokNodeAnnotation, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		}
		if _, err := c.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating kwok node %s: %w", name, err)
		}
		c.nodes = append(c.nodes, name)
	}
	deadline := time.Now().Add(c.cfg.KwokTimeout)
	for {
		notReady, err := c.notReady(ctx)
		if err != nil {
			return err
		}
		if len(notReady) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return c.kwokMissing(notReady)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// kwokMissing is the error of nodes kwok did not make Ready in time: what
// is missing, kwok's CRDs or a kwok controller managing the nodes.
func (c *clusterRun) kwokMissing(notReady []string) error {
	sel := kwokNodeAnnotation + "=fake"
	what := fmt.Sprintf("no kwok controller made the node %s (annotated %s) Ready within %s", notReady[0], sel, c.cfg.KwokTimeout)
	if c.kwokCRDs() {
		return fmt.Errorf("kwok: its CRDs (API group %s) are installed, but %s: is the kwok controller running, and does it manage the nodes annotated %s (--manage-nodes-with-annotation-selector=%s)?",
			kwokGroup, what, sel, sel)
	}
	return fmt.Errorf("kwok is not running in the cluster: no kwok CRD is installed (API group %s) and %s; install kwok in the cluster (https://kwok.sigs.k8s.io/docs/user/kwok-in-cluster/), managing the nodes annotated %s",
		kwokGroup, what, sel)
}

// notReady lists the run's nodes that are not Ready.
func (c *clusterRun) notReady(ctx context.Context) ([]string, error) {
	var out []string
	for _, name := range c.nodes {
		n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		ready := false
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			out = append(out, name)
		}
	}
	return out, nil
}

// namespace is the namespace of the run's scenario name.
func (c *clusterRun) namespace(name string) string {
	return "shardnet-bench-" + c.id + "-" + name
}

// scenario measures sp in a namespace of its own: plain pods from create
// to seen, or pods from create to routed by the installed shardnet.
func (c *clusterRun) scenario(ctx context.Context, sp spec) (Scenario, error) {
	sc := Scenario{Name: sp.name}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	labels := map[string]string{LabelRun: c.id}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.namespace(sp.name), Labels: map[string]string{LabelRun: c.id}}}
	if sp.plain {
		ns.Labels[podSecurityEnforce] = "privileged"
	}
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return sc, fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: benchServiceAccount, Namespace: ns.Name, Labels: labels},
		AutomountServiceAccountToken: new(false)}
	if _, err := c.client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return sc, fmt.Errorf("creating service account %s/%s: %w", ns.Name, sa.Name, err)
	}
	tmpl := podTemplate{namespace: ns.Name, nodes: c.nodes, labels: labels, hostNetwork: sp.plain,
		serviceAccount: benchServiceAccount,
		tolerations:    []corev1.Toleration{{Key: kwokNodeAnnotation, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
	if !sp.plain && c.subnet != "" {
		tmpl.annotations = map[string]string{reconcile.DefaultKey(reconcile.KeyLogicalSwitch): c.subnet}
	}

	obs := newScenarioObserver(c.cfg.Pods, sp)
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(ns.Name))
	resumingPods(factory, ns.Name)
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: obs.see, UpdateFunc: func(_, o any) { obs.see(o) },
	}); err != nil {
		return sc, err
	}
	octx, stopObs := context.WithCancel(ctx)
	defer func() { stopObs(); factory.Shutdown() }()
	factory.Start(octx.Done())
	factory.WaitForCacheSync(octx.Done())

	if err := drive(ctx, c.cfg, sp, c.client, tmpl, obs, &sc); err != nil {
		if !sp.plain && obs.nCreated.Load() > 0 && obs.nAllocated.Load() == 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (no pod was allocated: is shardnet running in the cluster and serving namespace %s?)", err, ns.Name)
		}
		return sc, err
	}
	return sc, nil
}

// cleanupRun deletes what run id created, found by its label: the pods
// (at once: kwok's pods have no kubelet to wait for) and service accounts
// of its namespaces, the namespaces and the nodes; it returns once none
// is left (a namespace goes once the cluster's namespace controller has
// finalized it), or with an error naming what is left when ctx ends.
func cleanupRun(ctx context.Context, client kubernetes.Interface, id string) error {
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + id}
	var errs []error
	keep := func(err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	nss, err := client.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		return fmt.Errorf("listing the namespaces of run %s: %w", id, err)
	}
	for _, ns := range nss.Items {
		keep(deletePods(ctx, client, ns.Name, sel))
		keep(client.CoreV1().ServiceAccounts(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, sel))
		keep(client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}))
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, sel)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing the nodes of run %s: %w", id, err))...)
	}
	for _, n := range nodes.Items {
		keep(client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for {
		left, err := leftovers(ctx, client, sel)
		if err == nil && len(left) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("still there: %s", strings.Join(left, ", "))
			}
			return fmt.Errorf("cleaning up run %s (`kubectl delete namespaces,nodes -l %s=%s` finishes it): %w", id, LabelRun, id, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// deletePods deletes the pods sel finds in namespace at once (grace period
// 0), 64 at a time and a page of 1000 after another: a delete collection
// runs as one worker on the API server by default, which takes minutes
// for tens of thousands of pods.
func deletePods(ctx context.Context, client kubernetes.Interface, namespace string, sel metav1.ListOptions) error {
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}
	page := sel
	page.Limit = 1000
	for {
		pods, err := client.CoreV1().Pods(namespace).List(ctx, page)
		if err != nil || len(pods.Items) == 0 {
			return err
		}
		// A pod already being deleted (held by a finalizer) is left to
		// the wait that follows; a page of nothing else ends the deletes.
		pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
		if len(pods.Items) == 0 {
			return nil
		}
		sem := make(chan struct{}, 64)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		for _, p := range pods.Items {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if err := client.CoreV1().Pods(namespace).Delete(ctx, p.Name, now); err != nil && !apierrors.IsNotFound(err) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			return fmt.Errorf("deleting %d pods of namespace %s: %w", len(errs), namespace, errs[0])
		}
	}
}

// leftovers names the namespaces, nodes, pods and service accounts sel
// finds.
func leftovers(ctx context.Context, client kubernetes.Interface, sel metav1.ListOptions) ([]string, error) {
	var out []string
	nss, err := client.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, ns := range nss.Items {
		out = append(out, "namespace "+ns.Name)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		out = append(out, "node "+n.Name)
	}
	pods, err := client.CoreV1().Pods("").List(ctx, sel)
	if err != nil {
		return nil, err
	}
	if n := len(pods.Items); n > 0 {
		out = append(out, fmt.Sprintf("%d pods", n))
	}
	sas, err := client.CoreV1().ServiceAccounts("").List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, sa := range sas.Items {
		out = append(out, "service account "+sa.Namespace+"/"+sa.Name)
	}
	return out, nil
}
