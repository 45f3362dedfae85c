// Command shardnet-demo runs the local end-to-end demo: a local API
// server, etcd and kwok, a Northbound (ovsdb-server when installed, else an
// in-process one), shardnet replicas, and a few hundred pods, with a
// progress line and a summary. It is built apart from the shardnet binary
// because it links the test harness that starts those servers.
//
//	shardnet-demo [-pods N] [-replicas R] [-nodes K] [-keep] [-embedded-nb] [-log FILE] [-v LEVEL]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/cmd/shardnet/app"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/reconcile"
	"github.com/shardnet/shardnet/test/harness"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the demo with args and returns the process exit code: 0 on
// success, 1 when the demo failed, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardnet-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pods := fs.Int("pods", 300, "pods to create")
	replicas := fs.Int("replicas", 3, "controller replicas")
	nodes := fs.Int("nodes", 3, "kwok nodes")
	keep := fs.Bool("keep", false, "keep running after the summary until interrupted")
	embedded := fs.Bool("embedded-nb", false, "serve the Northbound in-process even when ovsdb-server is installed")
	logFile := fs.String("log", "", "write the replicas' logs to this file (default: discard)")
	verbosity := fs.String("v", "0", "log verbosity for --log")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *pods < 1 || *pods > 20000 || *replicas < 1 || *replicas > 9 || *nodes < 1 || *nodes > 100 {
		fmt.Fprintln(stderr, "shardnet-demo: want 1..20000 pods, 1..9 replicas, 1..100 nodes")
		return 2
	}
	// The servers' and replicas' own logs would drown the progress line.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("logtostderr", "false")
	_ = klogFlags.Set("stderrthreshold", "FATAL")
	_ = klogFlags.Set("v", *verbosity)
	klog.SetOutput(io.Discard)
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			fmt.Fprintf(stderr, "shardnet-demo: %v\n", err)
			return 1
		}
		defer f.Close()
		klog.SetOutput(f)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	env, err := harness.NewProgram()
	if err != nil {
		fmt.Fprintf(stderr, "shardnet-demo: %v\n", err)
		return 1
	}
	defer env.Close()
	err = env.Run(func() error { return demo(ctx, env, stdout, *pods, *replicas, *nodes, *keep, *embedded) })
	if err != nil {
		fmt.Fprintf(stderr, "shardnet-demo: %v\n", err)
		return 1
	}
	return 0
}

func demo(ctx context.Context, env *harness.Program, out io.Writer, pods, replicas, nodes int, keep, embedded bool) error {
	fmt.Fprintln(out, "shardnet demo: starting etcd, kube-apiserver and kwok ...")
	kube := harness.StartKube(env)
	kube.StartKwok(env)
	var nb *harness.NB
	if harness.HaveOVSDBServer() && !embedded {
		fmt.Fprintln(out, "shardnet demo: starting ovsdb-server (OVN Northbound) ...")
		nb = harness.StartNB(env)
	} else {
		fmt.Fprintln(out, "shardnet demo: serving the Northbound in-process (libovsdb; ovsdb-server not installed or -embedded-nb)")
		nb = harness.StartEmbeddedNB(env)
	}
	for i := range nodes {
		kube.CreateNode(env, fmt.Sprintf("kwok-node-%d", i), "")
	}
	if _, err := kube.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shardnet-system"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := kube.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := kube.Shardnet.KubeovnV1().Subnets().Create(ctx, &kubeovnv1.Subnet{
		ObjectMeta: metav1.ObjectMeta{Name: "ovn-default"},
		Spec:       kubeovnv1.SubnetSpec{CIDRBlock: "10.16.0.0/16", Default: true, ExcludeIps: []string{"10.16.0.2..10.16.0.10"}},
	}, metav1.CreateOptions{}); err != nil {
		return err
	}

	fmt.Fprintf(out, "shardnet demo: starting %d replicas ...\n", replicas)
	var wg sync.WaitGroup
	rctx, stopReplicas := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { stopReplicas(); wg.Wait() }()
	var rs []*app.Replica
	for i := range replicas {
		opts := demoOptions(fmt.Sprintf("shardnet-%d", i), nb.Endpoint)
		r, err := app.NewReplica(rctx, opts, kube.Config, prometheus.NewRegistry())
		if err != nil {
			return err
		}
		rs = append(rs, r)
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Run(rctx) }()
	}
	if err := waitUntil(ctx, 60*time.Second, func() bool {
		owned := 0
		for _, r := range rs {
			owned += len(r.Owned())
		}
		return owned == demoShards
	}); err != nil {
		return fmt.Errorf("replicas did not take all %d shards: %w", demoShards, err)
	}

	// An informer times each pod from create to annotated (it re-watches
	// by itself if the API server ends a watch).
	var mu sync.Mutex
	created := map[string]time.Time{}
	annotated := map[string]time.Time{}
	routedAt := map[string]time.Time{}
	observe := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if _, seen := annotated[p.Name]; !seen && p.Annotations[reconcile.DefaultKey(reconcile.KeyAllocated)] == "true" {
			annotated[p.Name] = now
		}
		if _, seen := routedAt[p.Name]; !seen && p.Annotations[reconcile.DefaultKey(reconcile.KeyRouted)] == "true" {
			routedAt[p.Name] = now
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(kube.Client, 0, informers.WithNamespace("demo"))
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, o any) { observe(o) },
	}); err != nil {
		return err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	// Shutdown waits for the informer, which stops only once watchCtx ends.
	defer func() { stopWatch(); factory.Shutdown() }()
	factory.Start(watchCtx.Done())
	factory.WaitForCacheSync(watchCtx.Done())

	fmt.Fprintf(out, "shardnet demo: creating %d pods on %d kwok nodes\n", pods, nodes)
	start := time.Now()
	sem := make(chan struct{}, 32)
	var cwg sync.WaitGroup
	var createErr error
	var once sync.Once
	for i := range pods {
		cwg.Add(1)
		sem <- struct{}{}
		go func() {
			defer cwg.Done()
			defer func() { <-sem }()
			name := fmt.Sprintf("demo-%05d", i)
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo"},
				Spec: corev1.PodSpec{NodeName: fmt.Sprintf("kwok-node-%d", i%nodes),
					Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/demo"}}},
			}
			t := time.Now()
			if _, err := kube.Client.CoreV1().Pods("demo").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				once.Do(func() { createErr = err })
				return
			}
			mu.Lock()
			created[name] = t
			mu.Unlock()
		}()
	}
	progress := time.NewTicker(500 * time.Millisecond)
	defer progress.Stop()
	deadline := time.After(5 * time.Minute)
	for {
		mu.Lock()
		c, a, r := len(created), len(annotated), len(routedAt)
		mu.Unlock()
		fmt.Fprintf(out, "\r  created %5d/%d   allocated %5d   routed %5d   %5.1fs", c, pods, a, r, time.Since(start).Seconds())
		if r == pods {
			break
		}
		select {
		case <-ctx.Done():
			fmt.Fprintln(out)
			return ctx.Err()
		case <-deadline:
			fmt.Fprintln(out)
			return fmt.Errorf("only %d of %d pods routed after 5 minutes", r, pods)
		case <-progress.C:
		}
		if createErr != nil {
			fmt.Fprintln(out)
			return fmt.Errorf("creating pods: %w", createErr)
		}
	}
	cwg.Wait()
	fmt.Fprintln(out)
	elapsed := time.Since(start)

	mu.Lock()
	var lat []time.Duration
	last := start
	for name, t := range created {
		if at, ok := annotated[name]; ok {
			lat = append(lat, at.Sub(t))
		}
		if rt := routedAt[name]; rt.After(last) {
			last = rt
		}
	}
	mu.Unlock()
	slices.Sort(lat)
	dups, mismatched, err := demoCheck(ctx, env, kube, nb)
	if err != nil {
		return err
	}
	leader := ""
	for i, r := range rs {
		if r.IsLeader() {
			leader = fmt.Sprintf("shardnet-%d", i)
		}
	}
	fmt.Fprintln(out, "shardnet demo: summary")
	fmt.Fprintf(out, "  pods                %d on %d nodes, %d replicas (leader %s), %d shards\n", pods, nodes, replicas, leader, demoShards)
	fmt.Fprintf(out, "  throughput          %.0f pods/s (first create to last routed: %v)\n", float64(pods)/last.Sub(start).Seconds(), last.Sub(start).Round(time.Millisecond))
	fmt.Fprintf(out, "  create->annotated   p50 %v   p99 %v\n", pct(lat, 50), pct(lat, 99))
	fmt.Fprintf(out, "  duplicates found    %d\n", dups)
	fmt.Fprintf(out, "  ports != annotations %d\n", mismatched)
	_ = elapsed
	if dups != 0 || mismatched != 0 {
		return errors.New("the demo found duplicate addresses or ports that disagree with their pods")
	}
	if keep {
		fmt.Fprintf(out, "shardnet demo: running; kubeconfig %s, Northbound %s; interrupt to stop\n", kube.Kubeconfig, nb.Endpoint)
		<-ctx.Done()
	}
	return nil
}

const demoShards = 16

func demoOptions(identity, nb string) app.Options {
	return app.Options{
		Identity: identity, Namespace: "shardnet-system", NBEndpoints: nb, NBLeaderOnly: true,
		Shards: demoShards, WorkersPerShard: 4,
		LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second,
		ClusterRouter: "ovn-cluster", PodNICType: "veth-pair", IPRecords: true,
		BatchLinger: time.Millisecond, BatchMaxOps: 600,
		GCInterval: time.Minute, GCGrace: time.Minute, StatusInterval: time.Second,
	}
}

// demoCheck counts addresses annotated on two pods and pods whose port
// disagrees with their annotations.
func demoCheck(ctx context.Context, env *harness.Program, kube *harness.Kube, nb *harness.NB) (dups, mismatched int, err error) {
	list, err := kube.Client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	view := harness.NBView(env, client.WithEndpoint(nb.Endpoint))
	seen := map[string]bool{}
	for _, p := range list.Items {
		ann := p.Annotations
		ls, ips, mac := ann[reconcile.DefaultKey(reconcile.KeyLogicalSwitch)], ann[reconcile.DefaultKey(reconcile.KeyIPAddress)], ann[reconcile.DefaultKey(reconcile.KeyMACAddress)]
		for _, ip := range strings.Split(ips, ",") {
			if seen[ls+"/"+ip] {
				dups++
			}
			seen[ls+"/"+ip] = true
		}
		want := strings.Join(append([]string{mac}, strings.Split(ips, ",")...), " ")
		port := &nbdb.LogicalSwitchPort{Name: reconcile.PortName(p.Name, p.Namespace, reconcile.DefaultProvider)}
		if err := view.Get(ctx, port); err != nil || len(port.Addresses) != 1 || port.Addresses[0] != want {
			mismatched++
		}
	}
	return dups, mismatched, nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	if i > 0 {
		i--
	}
	return sorted[i].Round(time.Millisecond)
}

func waitUntil(ctx context.Context, d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}
