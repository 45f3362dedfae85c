package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/cmd/shardnet/app"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/reconcile"
	"github.com/shardnet/shardnet/test/harness"
)

// cluster is a kube-apiserver with kwok, a Northbound, and shardnet
// replicas running as goroutines.
type cluster struct {
	t    *testing.T
	kube *harness.Kube
	nb   *harness.NB
	view client.Client

	mu       sync.Mutex
	replicas map[string]*runningReplica
	// bin is the shardnet binary of startProcess, built once.
	bin string
}

type runningReplica struct {
	r      *app.Replica
	cancel context.CancelFunc
	done   chan error
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{t: t, kube: harness.StartKube(t), replicas: map[string]*runningReplica{}}
	c.kube.StartKwok(t)
	c.nb = harness.StartNB(t)
	c.view = harness.NBView(t, client.WithEndpoint(c.nb.Endpoint))
	if _, err := c.kube.Client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shardnet-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stopAll)
	return c
}

// startKubeOVNCluster is startCluster with kube-ovn's own CRDs (pinned
// copies of the published schemas) in place of shardnet's opt-in ones,
// and the namespaces nss.
func startKubeOVNCluster(t *testing.T, nss ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, replicas: map[string]*runningReplica{}}
	c.kube = harness.StartKubeWithCRDs(t, harness.DefaultCRDDirs(t)[0], harness.KubeOVNCRDDir(t))
	c.kube.StartKwok(t)
	c.nb = harness.StartNB(t)
	c.view = harness.NBView(t, client.WithEndpoint(c.nb.Endpoint))
	t.Cleanup(c.stopAll)
	for _, ns := range append([]string{"shardnet-system"}, nss...) {
		c.namespace(ns)
	}
	return c
}

// options are a test replica's flags: short leases so that the suite
// moves shards quickly.
func (c *cluster) options(identity string) app.Options {
	return app.Options{
		Identity: identity, Namespace: "shardnet-system",
		NBEndpoints: c.nb.Endpoint, NBLeaderOnly: true,
		Shards: 16, WorkersPerShard: 4,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
		ClusterRouter: "ovn-cluster", PodNICType: "veth-pair", IPRecords: true,
		BatchLinger: time.Millisecond, BatchMaxOps: 600,
		GCInterval: 2 * time.Second, GCGrace: 4 * time.Second, StatusInterval: 500 * time.Millisecond,
	}
}

// processArgs are options' flags for a `shardnet controller` process.
func (c *cluster) processArgs() []string {
	return []string{
		"--kubeconfig=" + c.kube.Kubeconfig, "--namespace=shardnet-system",
		"--nb-endpoints=" + c.nb.Endpoint, "--nb-leader-only=true",
		"--shards=16", "--workers-per-shard=4",
		"--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms",
		"--cluster-router=ovn-cluster", "--pod-nic-type=veth-pair", "--ip-records=true",
		"--batch-linger=1ms", "--batch-max-ops=600",
		"--gc-interval=2s", "--gc-grace=4s", "--status-interval=500ms",
		"--memory-limit=none", "--v=2",
	}
}

// startProcess runs a replica as a `shardnet controller` process with
// options' settings and extra flags; the test's cleanup stops it, and
// prints its log's tail when the test failed.
func (c *cluster) startProcess(identity string, extra ...string) *harness.Replica {
	c.t.Helper()
	c.mu.Lock()
	if c.bin == "" {
		c.bin = harness.BuildShardnet(c.t)
	}
	bin := c.bin
	c.mu.Unlock()
	r := harness.StartReplica(c.t, bin, identity, append(c.processArgs(), extra...)...)
	c.t.Cleanup(func() {
		if c.t.Failed() {
			c.t.Logf("replica process %s: last log lines:\n%s", identity, r.LogTail())
		}
	})
	return r
}

func (c *cluster) startReplica(identity string) {
	c.t.Helper()
	c.startReplicaWith(c.options(identity), c.kube.Config)
}

// startReplicaWith runs an in-process replica with opts, talking to the
// API server as rc (a ServiceAccount's token, to run under its RBAC).
func (c *cluster) startReplicaWith(opts app.Options, rc *rest.Config) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, err := app.NewReplica(ctx, opts, rc, prometheus.NewRegistry())
	if err != nil {
		cancel()
		c.t.Fatalf("replica %s: %v", opts.Identity, err)
	}
	rr := &runningReplica{r: r, cancel: cancel, done: make(chan error, 1)}
	go func() { rr.done <- r.Run(ctx) }()
	c.mu.Lock()
	c.replicas[opts.Identity] = rr
	c.mu.Unlock()
}

func (c *cluster) stopReplica(identity string) {
	c.mu.Lock()
	rr := c.replicas[identity]
	delete(c.replicas, identity)
	c.mu.Unlock()
	if rr == nil {
		return
	}
	rr.cancel()
	select {
	case err := <-rr.done:
		if err != nil {
			c.t.Errorf("replica %s: %v", identity, err)
		}
	case <-time.After(30 * time.Second):
		c.t.Errorf("replica %s did not stop within 30s", identity)
	}
}

func (c *cluster) stopAll() {
	c.mu.Lock()
	var ids []string
	for id := range c.replicas {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() { defer wg.Done(); c.stopReplica(id) }()
	}
	wg.Wait()
}

func (c *cluster) subnet(name, cidr string, mod func(*kubeovnv1.SubnetSpec)) {
	c.t.Helper()
	s := &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: cidr}}
	if mod != nil {
		mod(&s.Spec)
	}
	if _, err := c.kube.Shardnet.KubeovnV1().Subnets().Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) namespace(name string) {
	c.t.Helper()
	if _, err := c.kube.Client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// createPods creates n pods named prefix-NNNNN in ns on node, 32 at a time.
func (c *cluster) createPods(ns, prefix, node string, n int) {
	c.t.Helper()
	sem := make(chan struct{}, 32)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", prefix, i), Namespace: ns},
				Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
			}
			if _, err := c.kube.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		c.t.Fatalf("creating pod: %v", err)
	}
}

func isRouted(p *corev1.Pod) bool {
	return p.Annotations[reconcile.DefaultKey(reconcile.KeyAllocated)] == "true" && p.Annotations[reconcile.DefaultKey(reconcile.KeyRouted)] == "true"
}

// waitRouted waits until every pod of ns is allocated and routed, printing
// progress, and returns them.
func (c *cluster) waitRouted(ctx context.Context, ns string, want int) []corev1.Pod {
	c.t.Helper()
	last := -1
	for {
		list, err := c.kube.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		done := 0
		for i := range list.Items {
			if isRouted(&list.Items[i]) {
				done++
			}
		}
		if done != last {
			c.t.Logf("%s: %d/%d pods routed", ns, done, want)
			last = done
		}
		if done == want && len(list.Items) == want {
			return list.Items
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("%s: %d of %d pods routed before the deadline", ns, done, want)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// ports returns the pod ports of the Northbound by name.
func (c *cluster) ports(ctx context.Context) map[string]nbdb.LogicalSwitchPort {
	var lsps []nbdb.LogicalSwitchPort
	if err := c.view.List(ctx, &lsps); err != nil {
		c.t.Fatal(err)
	}
	out := map[string]nbdb.LogicalSwitchPort{}
	for _, p := range lsps {
		if p.ExternalIDs["pod"] != "" {
			out[p.Name] = p
		}
	}
	return out
}

// checkPods asserts invariant 2 and 1 on the given pods: each pod's port
// carries exactly its annotated MAC and addresses on its annotated switch,
// and no address of a subnet is annotated on two pods.
func (c *cluster) checkPods(ctx context.Context, pods []corev1.Pod) {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := c.checkPodsOnce(ctx, pods)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *cluster) checkPodsOnce(ctx context.Context, pods []corev1.Pod) error {
	ports := c.ports(ctx)
	claimList, err := c.kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	claims := make(map[string]v1alpha1.ClaimOwner, len(claimList.Items))
	for _, cl := range claimList.Items {
		claims[cl.Name] = cl.Spec.Owner
	}
	owner := map[string]string{}
	for _, p := range pods {
		key := p.Namespace + "/" + p.Name
		ann := p.Annotations
		ls := ann[reconcile.DefaultKey(reconcile.KeyLogicalSwitch)]
		ips := ann[reconcile.DefaultKey(reconcile.KeyIPAddress)]
		mac := ann[reconcile.DefaultKey(reconcile.KeyMACAddress)]
		for _, ip := range strings.Split(ips, ",") {
			if other, dup := owner[ls+"/"+ip]; dup {
				c.t.Fatalf("duplicate address: %s/%s is annotated on %s and %s", ls, ip, other, key)
			}
			owner[ls+"/"+ip] = key
			// Every annotated address is held by a claim of this pod.
			a, err := netip.ParseAddr(ip)
			if err != nil {
				c.t.Fatalf("%s is annotated with %q: %v", key, ip, err)
			}
			if o, ok := claims[v1alpha1.ClaimName(ls, a)]; !ok || o.Namespace != p.Namespace || o.Name != p.Name {
				return fmt.Errorf("address %s/%s of %s is claimed by %+v (claimed: %v)", ls, ip, key, o, ok)
			}
		}
		port, ok := ports[reconcile.PortName(p.Name, p.Namespace, reconcile.DefaultProvider)]
		if !ok {
			return fmt.Errorf("pod %s has no port", key)
		}
		want := strings.Join(append([]string{mac}, strings.Split(ips, ",")...), " ")
		if len(port.Addresses) != 1 || port.Addresses[0] != want {
			return fmt.Errorf("port of %s has addresses %v, annotations say %q", key, port.Addresses, want)
		}
		if port.ExternalIDs["pod"] != key || port.ExternalIDs["ls"] != ls {
			return fmt.Errorf("port of %s has external ids %v", key, port.ExternalIDs)
		}
	}
	return nil
}
