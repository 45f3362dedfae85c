package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	"github.com/shardnet/shardnet/api/client/informers/externalversions"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/controller"
	"github.com/shardnet/shardnet/internal/ipcache"
	"github.com/shardnet/shardnet/internal/metawatch"
	"github.com/shardnet/shardnet/internal/watch"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/reconcile"
	"github.com/shardnet/shardnet/test/harness"
)

// Config is one bench run's configuration.
type Config struct {
	// Pods per scenario (default 5000).
	Pods int
	// IPRecords makes shardnet (and the raw writer) write IP records.
	IPRecords bool
	// Shardnet is the path of the shardnet binary the replicas run.
	Shardnet string
	// Out is the folder the result, report and plots go to.
	Out string
	// Micro runs the micro-benchmarks too; MicroDir is the module root.
	Micro    bool
	MicroDir string
	// Timeout bounds one scenario.
	Timeout time.Duration
	// Scenarios names the scenarios to run (see ScenarioNames); empty runs
	// them all. The ratios of scenarios left out are 0.
	Scenarios []string
	// HalfRate paces the half-rate scenario (pods/s) when the 3-replica
	// scenario does not run to set it; 0 takes half the 3-replica rate.
	// The near-rate scenarios run at 2*NearRateFraction times it.
	HalfRate float64
	// Rounds is how many times the full-speed scenarios (raw, 1 and 3
	// replicas, baseline) run, one after the other in the same order,
	// and the half-rate pair too; their ratios are the medians of each
	// round's (Result.Rounds), and the half rate is half the median
	// 3-replica rate. 0 or 1: once.
	Rounds int
	// Restarts is how many times every replica of the 3-replica scenario
	// is restarted once its pods are routed, each timed back to steady
	// state; 0 skips it.
	Restarts int
	// Profiles writes pprof profiles to Out/pprof: each replica's heap at
	// the end of the 3-replica create phase and after the first restart,
	// the CPU of the replicas and the API server over the first 20 s of
	// the raw and 3-replica create phases, and the CPU of the new
	// replicas and the API server during the first 30 s of the first
	// restart.
	Profiles bool
	// ReplicaMemoryLimit is the replicas' --memory-limit; the command's
	// default is deploy/base's, empty leaves the replicas' own (auto).
	ReplicaMemoryLimit string
	// ReplicaGCPercent is the replicas' --gc-percent; 0 (the command's
	// default, as deploy/base) passes none: GOGC, else Go's 100.
	ReplicaGCPercent int
	// NBCeilingPorts is how many ports the Northbound ceiling inserts at
	// each batch size (measureNBCeiling); 0 takes 2,000, a negative value
	// skips it.
	NBCeilingPorts int
	// ReplicaArgs are more flags for every replica (-v=4, say).
	ReplicaArgs []string
	// Pin runs etcd, kube-apiserver and kwok on the first half of the
	// CPUs the bench may use and everything else (the bench itself, its
	// raw writer and watches, the replicas, ovsdb-server) on the second
	// half in the scenarios at full speed, as a cluster's control plane
	// has cores of its own; the paced scenarios (half and 90% of the
	// rate) share every CPU. With fewer than two CPUs nothing is pinned.
	// It changes the calling process's CPU affinity (placeScenario).
	// Unpinned, the replicas take their CPU from the API server's, and
	// the ratios to the raw ceiling measure that rather than what
	// shardnet costs the API server (decision 0009).
	Pin bool
	// Progress receives one line per step.
	Progress io.Writer
	// ProgressLines receives, during every scenario, one line every
	// ProgressInterval and one at its end: the time elapsed, the pods
	// created, allocated and routed, and the rate now and on average.
	// Nil or an interval of 0 writes none.
	ProgressLines    io.Writer
	ProgressInterval time.Duration

	// Kubeconfig, when set, runs the scenarios against the cluster it
	// names instead of servers of the bench's own: the raw ceiling as
	// plain pod creates and InstalledScenario, the shardnet installed
	// there; the scenarios that start replicas of their own are skipped.
	// Everything the run creates is labelled LabelRun=<run id> and is
	// deleted at its end, on error and on interrupt (within Timeout),
	// unless Keep.
	Kubeconfig string
	// Keep leaves the namespaces, pods and nodes of a run against a
	// cluster in place.
	Keep bool
	// Subnet is the subnet the pods of InstalledScenario ask for (the
	// logical_switch annotation); empty leaves the choice to the
	// installed shardnet, which takes the cluster's default subnet.
	Subnet string
	// RunID names a run against a cluster; empty draws a random one.
	RunID string
	// KwokTimeout bounds the wait for kwok to make the run's nodes Ready
	// in a cluster (default 1 min).
	KwokTimeout time.Duration

	// cpus is the run's CPU layout (Pin); nil: none.
	cpus *CPUs
}

type spec struct {
	name string
	raw  bool
	// plain creates plain pods that shardnet leaves alone (host network)
	// and counts a pod done once the bench's watch sees it: the raw
	// ceiling of a run against a cluster.
	plain    bool
	replicas int
	shards   int
	batching bool
	// rate paces the creates (pods/s); 0 creates at full speed.
	rate float64
	// attach gives every pod one OVN attachment (attachNAD) besides its
	// default network.
	attach bool
	// ports gives every pod the port contract's extras: port security,
	// two VIPs of its own and a security group (portsSG).
	ports bool
}

// networks is how many networks each pod of sp has.
func (sp spec) networks() int {
	if sp.attach {
		return 2
	}
	return 1
}

// HalfRateScenario is the scenario that creates pods at half the rate the
// 3-replica scenario reached, for the latency a cluster sees below its
// ceiling.
const HalfRateScenario = "shardnet-3-half"

// RawHalfScenario is the raw writer paced at the half-rate scenario's
// rate: the latency of the same API writes done by a plain client, the
// baseline of the half-rate p99.
const RawHalfScenario = "raw-half"

// NearRateScenario is the scenario that creates pods at NearRateFraction
// of the rate the 3-replica scenario reached: the latency close to the
// ceiling. The ceiling is shardnet's own rate of the same run, as for the
// half rate: paced at 90% of the raw writer's rate instead, the replicas
// would be past their own rate in every run where shardnet/raw is below
// 0.9, and the p99 would measure the backlog that piles up, not the path.
const NearRateScenario = "shardnet-3-90"

// RawNearScenario is the raw writer paced at NearRateScenario's rate, the
// baseline of its p99.
const RawNearScenario = "raw-90"

// NearRateFraction is NearRateScenario's rate over the 3-replica rate.
const NearRateFraction = 0.9

// RawAttachScenario and AttachScenario are the raw ceiling and the
// 3-replica scenario again with one OVN attachment per pod: two networks
// to allocate, route and annotate in each pod's one patch.
const (
	RawAttachScenario = "raw-attach"
	AttachScenario    = "shardnet-3-attach"
)

// The attachment every pod of the attach scenarios carries: the NAD
// attachNAD in benchNS, of type kube-ovn, so its provider is
// <nad>.<namespace>.ovn (docs/contract.md M7), served by the subnet
// attachSubnet whose spec.provider names it (M10). Its /14 holds the
// addresses of 50,000 pods and more, apart from ovn-default's.
const (
	attachNAD       = "attach"
	attachNADConfig = `{"cniVersion":"0.3.1","type":"kube-ovn"}`
	attachSubnet    = "bench-attach"
	attachCIDR      = "10.4.0.0/14"
	attachGateway   = "10.4.0.1"
	attachProvider  = attachNAD + "." + benchNS + ".ovn"
)

// PortsScenario is the 3-replica scenario again with pods that ask for
// port security, two VIPs each and a security group (docs/contract.md
// N2, N3, N13): the port's extra columns and external ids and its
// security group port group membership. Its figures are reported
// beside shardnet-3's, with the Northbound requests per pod: the pod path
// sends one request per reconcile that writes, for every network, port,
// group and routed-phase row together.
const PortsScenario = "shardnet-3-ports"

// portsSG is the security group of PortsScenario's pods; its port group
// is made in the Northbound before the replicas start, as kube-ovn's
// SecurityGroup controller would.
const portsSG = "bench-sg"

// portVIPs are pod i's two VIPs: a pair of its own in the upper half of
// ovn-default (10.0.0.0/14), far above the addresses pods are given.
func portVIPs(i int) string {
	base := uint32(10)<<24 | uint32(2)<<16 + uint32(2*i)
	ip := func(v uint32) string { return fmt.Sprintf("%d.%d.%d.%d", v>>24, v>>16&0xff, v>>8&0xff, v&0xff) }
	return ip(base) + "," + ip(base+1)
}

// ScenarioNames are the scenarios in the order a run takes them.
// InstalledScenario runs only against a cluster (Config.Kubeconfig), the
// scenarios that start replicas of their own only on the bench's servers.
var ScenarioNames = []string{"raw", InstalledScenario, "shardnet-1", "shardnet-3", "baseline", RawHalfScenario, HalfRateScenario, RawNearScenario, NearRateScenario, RawAttachScenario, AttachScenario, PortsScenario}

// checkScenarios reports a name that is not a scenario.
func checkScenarios(names []string) error {
	for _, n := range names {
		if !slices.Contains(ScenarioNames, n) {
			return fmt.Errorf("unknown scenario %q (have %s)", n, strings.Join(ScenarioNames, ", "))
		}
	}
	return nil
}

// Run measures every scenario and writes the result files.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Pods <= 0 {
		cfg.Pods = 5000
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.KwokTimeout <= 0 {
		cfg.KwokTimeout = time.Minute
	}
	if err := checkScenarios(cfg.Scenarios); err != nil {
		return nil, err
	}
	if cfg.Kubeconfig != "" {
		res, err := runCluster(ctx, cfg)
		if res == nil {
			return nil, err
		}
		// A result whose objects could not all be deleted is still
		// written, and returned with the error.
		if ferr := finish(ctx, cfg, res); ferr != nil {
			return nil, errors.Join(err, ferr)
		}
		return res, err
	}
	if _, err := os.Stat(cfg.Shardnet); err != nil {
		return nil, fmt.Errorf("shardnet binary %q: %w (run `make build`)", cfg.Shardnet, err)
	}
	if cfg.wanted(InstalledScenario) && len(cfg.Scenarios) > 0 {
		fmt.Fprintf(cfg.Progress, "bench: %s: skipped: it measures the shardnet installed in a cluster (--kubeconfig)\n", InstalledScenario)
	}
	wanted := cfg.wanted
	res := &Result{Started: time.Now(), Pods: cfg.Pods, IPRecords: cfg.IPRecords}
	cpus, err := layOutCPUs(cfg.Pin)
	if err != nil {
		return nil, fmt.Errorf("laying the processes out on the CPUs: %w", err)
	}
	res.CPUs, cfg.cpus = cpus, cpus
	if cpus.Pinned() {
		fmt.Fprintf(cfg.Progress, "bench: at full speed, etcd, kube-apiserver and kwok on %s; the bench, the replicas and ovsdb-server on %s\n", cpuList(cpus.Servers), cpuList(cpus.Rest))
	}
	if cfg.NBCeilingPorts >= 0 {
		n := cfg.NBCeilingPorts
		if n == 0 {
			n = 2000
		}
		fmt.Fprintf(cfg.Progress, "bench: Northbound ceiling: %d port inserts at batch sizes %v, %d transactions in flight ...\n", n, NBCeilingBatches, NBCeilingInFlight)
		cs, err := measureNBCeiling(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("the Northbound ceiling: %w", err)
		}
		for _, c := range cs {
			fmt.Fprintf(cfg.Progress, "bench: Northbound ceiling at batch %d: %.0f ports/s in %.0f transactions/s\n", c.Batch, c.PortsPerSecond, c.TransactionsPerSecond)
		}
		res.NBCeiling = cs
	}
	measure := func(sp spec) error {
		announce(cfg, sp)
		sc, err := runScenario(ctx, cfg, sp)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", sp.name, err)
		}
		if sp.rate > 0 {
			fmt.Fprintf(cfg.Progress, "bench: %s: p50 %.0fms p95 %.0fms p99 %.0fms at %.0f pods/s, %.2f API writes/pod %v, %.3f NB txns/pod\n",
				sp.name, sc.P50, sc.P95, sc.P99, sc.CreateRate, sc.APIWritesPerPod, sc.APIWritesPerPodByMethod, sc.NBTransactionsPerPod)
		} else {
			fmt.Fprintf(cfg.Progress, "bench: %s: %.0f pods/s, p50 %.0fms p99 %.0fms, %.2f API writes/pod %v, %.3f NB txns/pod, %.2f NB requests/pod\n",
				sp.name, sc.PodsPerSecond, sc.P50, sc.P99, sc.APIWritesPerPod, sc.APIWritesPerPodByMethod, sc.NBTransactionsPerPod, sc.NBRequestsPerPod)
		}
		if len(sc.Stages) > 0 {
			var parts []string
			for _, st := range sc.Stages {
				parts = append(parts, fmt.Sprintf("%s %.1f/%.1f", st.Stage, st.P50, st.P99))
			}
			fmt.Fprintf(cfg.Progress, "bench: %s: stages p50/p99 ms: %s\n", sp.name, strings.Join(parts, ", "))
		}
		if sc.RawReloadSeconds > 0 {
			fmt.Fprintf(cfg.Progress, "bench: %s: ceiling of a restart, %d plain clients loading pods, and claims and IP records as metadata: %.1fs\n",
				sp.name, sp.replicas, sc.RawReloadSeconds)
		}
		if sc.FullReloadSeconds > 0 {
			fmt.Fprintf(cfg.Progress, "bench: %s: the same with claims and IP records in full: %.1fs\n",
				sp.name, sc.FullReloadSeconds)
		}
		for _, r := range sc.Restarts {
			fmt.Fprintf(cfg.Progress, "bench: %s: restart of every replica: steady in %.1fs (ready %.1fs, %d pods reconciled, %.0f API writes, %.0f NB txns, peak RSS %s MiB)\n",
				sp.name, r.Seconds, r.ReadySeconds, r.Reconciled, r.APIWrites, r.NBTransactions, floats(r.PeakRSSMiB))
		}
		res.Scenarios = append(res.Scenarios, sc)
		return nil
	}
	// measureAll measures the wanted scenarios of specs in order; with
	// rounds, they then run as many rounds as Config.Rounds asks.
	measureAll := func(specs []spec, rounds bool) error {
		for _, sp := range specs {
			if wanted(sp.name) {
				if err := measure(sp); err != nil {
					return err
				}
			}
		}
		if rounds && cfg.Rounds > 1 {
			return moreRounds(ctx, cfg, specs, res)
		}
		return nil
	}
	if err := measureAll([]spec{
		{name: "raw", raw: true},
		{name: "shardnet-1", replicas: 1, shards: 64, batching: true},
		{name: "shardnet-3", replicas: 3, shards: 64, batching: true},
		{name: "baseline", replicas: 1, shards: 1, batching: false},
	}, true); err != nil {
		return nil, err
	}
	halfRate := cfg.HalfRate
	if three, ok := res.Scenario("shardnet-3"); ok && halfRate == 0 {
		halfRate = three.PodsPerSecond / 2
		if r := res.roundRates("shardnet-3"); len(r) > 1 {
			halfRate = median(r) / 2
		}
	}
	// The raw writer and shardnet at half rate run back to back, so that
	// the p99 ratio is of two figures measured side by side, and as many
	// rounds as the full-speed scenarios, since that ratio is guarded;
	// then the same pair near the 3-replica rate, once.
	if halfRate > 0 {
		nearRate := 2 * halfRate * NearRateFraction
		if err := measureAll([]spec{
			{name: RawHalfScenario, raw: true, rate: halfRate},
			{name: HalfRateScenario, replicas: 3, shards: 64, batching: true, rate: halfRate},
		}, true); err != nil {
			return nil, err
		}
		if err := measureAll([]spec{
			{name: RawNearScenario, raw: true, rate: nearRate},
			{name: NearRateScenario, replicas: 3, shards: 64, batching: true, rate: nearRate},
		}, false); err != nil {
			return nil, err
		}
	}
	// The attach pair runs last and back to back, so that its ratio is of
	// two figures measured side by side like the others.
	if err := measureAll([]spec{
		{name: RawAttachScenario, raw: true, attach: true},
		{name: AttachScenario, replicas: 3, shards: 64, batching: true, attach: true},
		{name: PortsScenario, replicas: 3, shards: 64, batching: true, ports: true},
	}, false); err != nil {
		return nil, err
	}
	if err := finish(ctx, cfg, res); err != nil {
		return nil, err
	}
	return res, nil
}

// moreRounds runs the scenarios of specs again, cfg.Rounds-1 times in
// the same order, and records every round's rates and p99 in res.Rounds,
// the first round's from res.Scenarios. The rounds leave out the
// restarts and the profiles, which the first round took.
func moreRounds(ctx context.Context, cfg Config, specs []spec, res *Result) error {
	for _, sp := range specs {
		if sc, ok := res.Scenario(sp.name); ok {
			res.round(0).record(sp.name, sc)
		}
	}
	rcfg := cfg
	rcfg.Restarts, rcfg.Profiles = 0, false
	for n := 2; n <= cfg.Rounds; n++ {
		for _, sp := range specs {
			if !cfg.wanted(sp.name) {
				continue
			}
			fmt.Fprintf(cfg.Progress, "bench: %s, round %d of %d: %d pods ...\n", sp.name, n, cfg.Rounds, cfg.Pods)
			sc, err := runScenario(ctx, rcfg, sp)
			if err != nil {
				return fmt.Errorf("scenario %s, round %d: %w", sp.name, n, err)
			}
			fmt.Fprintf(cfg.Progress, "bench: %s, round %d of %d: %.0f pods/s, p50 %.0fms p99 %.0fms\n", sp.name, n, cfg.Rounds, sc.PodsPerSecond, sc.P50, sc.P99)
			res.round(n-1).record(sp.name, sc)
		}
	}
	return nil
}

// finish computes the ratios of res, runs the micro-benchmarks when
// asked for and writes the result files.
func finish(ctx context.Context, cfg Config, res *Result) error {
	res.computeRatios()
	if cfg.Micro {
		fmt.Fprintln(cfg.Progress, "bench: micro-benchmarks (ipam, ovn) ...")
		m, err := runMicro(ctx, cfg.MicroDir, res.CPUs.all())
		if err != nil {
			return err
		}
		res.Micro = m
	}
	return write(cfg.Out, res)
}

// wanted reports whether the scenario name is to run.
func (cfg Config) wanted(name string) bool {
	return len(cfg.Scenarios) == 0 || slices.Contains(cfg.Scenarios, name)
}

// announce prints the start of a scenario.
func announce(cfg Config, sp spec) {
	if sp.rate > 0 {
		fmt.Fprintf(cfg.Progress, "bench: %s: %d pods at %.0f pods/s ...\n", sp.name, cfg.Pods, sp.rate)
	} else {
		fmt.Fprintf(cfg.Progress, "bench: %s: %d pods ...\n", sp.name, cfg.Pods)
	}
}

func runScenario(ctx context.Context, cfg Config, sp spec) (Scenario, error) {
	servers, err := placeScenario(cfg.cpus, sp)
	if err != nil {
		return Scenario{}, fmt.Errorf("laying the processes out on the CPUs: %w", err)
	}
	p, err := harness.NewProgram()
	if err != nil {
		return Scenario{}, err
	}
	defer p.Close()
	var sc Scenario
	err = p.Run(func() error {
		var err error
		sc, err = scenario(ctx, p, cfg, sp, servers)
		return err
	})
	return sc, err
}

const benchNS = "bench"

// kwokNodes is how many kwok nodes a scenario spreads its pods over.
const kwokNodes = 5

// drive creates the scenario's pods from tmpl, waits until every one is
// done (obs) and fills sc's throughput, latencies and timeline. It
// writes the progress lines meanwhile.
func drive(ctx context.Context, cfg Config, sp spec, client kubernetes.Interface, tmpl podTemplate, obs *observer, sc *Scenario) error {
	start := time.Now()
	obs.start(start)
	stopTimeline := obs.sampleTimeline(250 * time.Millisecond)
	defer stopTimeline()
	stopProgress := startProgress(cfg.ProgressLines, cfg.ProgressInterval, obs.progress(sp.name, start))
	defer stopProgress()
	if err := createPods(ctx, client, tmpl, cfg.Pods, sp.rate, obs); err != nil {
		return err
	}
	if err := obs.wait(ctx); err != nil {
		return err
	}
	stopTimeline()
	stopProgress()
	end := obs.last()
	sc.Seconds = end.Sub(start).Seconds()
	sc.PodsPerSecond = float64(cfg.Pods) / sc.Seconds
	sc.Latencies = obs.latencies()
	sc.P50, sc.P95, sc.P99 = pctl(sc.Latencies, 50), pctl(sc.Latencies, 95), pctl(sc.Latencies, 99)
	sc.Timeline = obs.timelineCopy()
	stall, at := obs.longestStall()
	sc.StallSeconds, sc.StallAtSeconds = stall.Seconds(), at.Sub(start).Seconds()
	sc.StallCreatesPerSecond, sc.CreatesPerSecond = obs.createRates(at, at.Add(stall))
	return nil
}

// apiServerArgs are the bench's flags of kube-apiserver. The watch
// cache's consistency checker (DetectCacheInconsistency, on by default
// since Kubernetes 1.34) lists every object of a resource from etcd
// every 5 to 7.5 minutes and decodes it, for pods, claims and IP records
// apart: at 50,000 pods one such pass took 14 of the API server's 35
// CPU-seconds over a restart's first 30 s. It falls at random into one
// phase or another of a run, the restart, its ceiling, a create phase,
// and so makes their ratios measure where it fell; it is off here, for
// every scenario alike (decision 0009).
var apiServerArgs = []string{"--feature-gates=DetectCacheInconsistency=false"}

func scenario(ctx context.Context, p *harness.Program, cfg Config, sp spec, servers []int) (Scenario, error) {
	sc := Scenario{Name: sp.name, Replicas: sp.replicas, Shards: sp.shards, Batching: sp.batching, CreateRate: sp.rate,
		Attachments: sp.networks() - 1, ServerCPUs: servers}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	kube := harness.StartKubeWith(p, harness.KubeOptions{APIServerArgs: apiServerArgs, CPUs: servers})
	// The API server's, etcd's and kwok's logs go with the replicas': a
	// stall that no replica logged is looked for there (its gctrace
	// lines when the bench runs with GODEBUG=gctrace=1, slow requests,
	// etcd's compactions), and so is a scenario that failed to start.
	// Cleanups run last first: this one before the servers stop and
	// their directory goes, and registered before kwok starts, whose
	// start can fail the scenario.
	p.Cleanup(func() { keepServerLogs(cfg, sp.name, kube) })
	kube.StartKwok(p)
	var nb *harness.NB
	if harness.HaveOVSDBServer() {
		nb = harness.StartNB(p)
	} else {
		nb = harness.StartEmbeddedNB(p)
	}
	var nodes []string
	for i := range kwokNodes {
		nodes = append(nodes, kube.CreateNode(p, fmt.Sprintf("kwok-node-%d", i), "").Name)
	}
	for _, ns := range []string{benchNS, "shardnet-system"} {
		if _, err := kube.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return sc, err
		}
	}
	if _, err := kube.Shardnet.KubeovnV1().Subnets().Create(ctx, &kubeovnv1.Subnet{
		ObjectMeta: metav1.ObjectMeta{Name: "ovn-default"},
		Spec:       kubeovnv1.SubnetSpec{CIDRBlock: "10.0.0.0/14", Default: true},
	}, metav1.CreateOptions{}); err != nil {
		return sc, err
	}
	var podAnnotations map[string]string
	if sp.attach {
		// Before any replica starts, so that each finds the resource
		// served and its NAD cache synced at startup.
		if err := setupAttachment(ctx, p, kube); err != nil {
			return sc, err
		}
		podAnnotations = map[string]string{reconcile.AnnotationNetworks: attachNAD}
	}
	var perPod func(i int, ann map[string]string)
	if sp.ports {
		if err := createSecurityGroupPortGroup(ctx, p, nb, portsSG); err != nil {
			return sc, err
		}
		podAnnotations = map[string]string{
			reconcile.DefaultKey(reconcile.KeyPortSecurity):   "true",
			reconcile.DefaultKey(reconcile.KeySecurityGroups): portsSG,
		}
		perPod = func(i int, ann map[string]string) { ann[reconcile.DefaultKey(reconcile.KeyPortVIPs)] = portVIPs(i) }
	}

	// The observer times every pod from its create to its annotation. It
	// watches over protobuf on a connection of its own: on a cluster the
	// API server encodes every pod event as protobuf for the kubelets
	// anyway, so the replicas' protobuf watches add no encoding there,
	// while here, with the observer and kwok on JSON, they did; and on the
	// creates' connection its watch stream waited behind their frames.
	obs := newScenarioObserver(cfg.Pods, sp)
	obsClient, err := kubernetes.NewForConfig(controller.Protobuf(ownConnection(kube.Config)))
	if err != nil {
		return sc, err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(obsClient, 0, informers.WithNamespace(benchNS))
	// Its watch, like the replicas', outlives an early end by the API
	// server (watch.Resume): client-go's backoff after one would show as
	// a plateau of the timeline that no writer caused.
	resumingPods(factory, benchNS)
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: obs.see, UpdateFunc: func(_, o any) { obs.see(o) },
	}); err != nil {
		return sc, err
	}
	octx, stopObs := context.WithCancel(ctx)
	// Shutdown waits for the informers, which stop only once octx ends.
	defer func() { stopObs(); factory.Shutdown() }()
	factory.Start(octx.Done())
	factory.WaitForCacheSync(octx.Done())

	var procs []*replicaProc
	if sp.raw {
		w := &rawWriter{kube: kube, ipRecords: cfg.IPRecords, attach: sp.attach}
		if err := w.start(octx); err != nil {
			return sc, err
		}
	} else {
		var err error
		if procs, err = startReplicaProcs(p, cfg, sp, kube, nb); err != nil {
			return sc, err
		}
		if err := waitReady(ctx, procs, 60*time.Second); err != nil {
			return sc, err
		}
	}
	before, stagesBefore := scrapeAll(procs), scrapeStages(procs)
	tmpl := podTemplate{namespace: benchNS, nodes: nodes, annotations: podAnnotations, perPod: perPod}
	routing := cfg.routingProfiles(ctx, sp, kube, procs)
	cpu0 := phaseCPU(kube, procs)
	closed0 := closedWatches(ctx, kube.Client)
	if err := drive(ctx, cfg, sp, kube.Client, tmpl, obs, &sc); err != nil {
		return sc, err
	}
	sc.CPUMsPerPod = phaseCPU(kube, procs).perPodSince(cpu0, cfg.Pods)
	sc.ClosedWatches = closedSince(closed0, closedWatches(ctx, kube.Client))
	routing.Wait()
	after := scrapeAll(procs)
	sc.Stages = append(obs.apiStages(), stageLatencies(stagesBefore, scrapeStages(procs))...)
	if sp.raw {
		sc.APIWritesPerPod = rawWritesPerPod(cfg.IPRecords, sp.networks())
	} else {
		sc.APIWritesPerPod = (after.writes - before.writes) / float64(cfg.Pods)
		sc.NBTransactionsPerPod = (after.txns - before.txns) / float64(cfg.Pods)
		sc.NBRequestsPerPod = (after.requests - before.requests) / float64(cfg.Pods)
		sc.APIWritesPerPodByMethod = map[string]float64{}
		for m, v := range after.byMethod {
			sc.APIWritesPerPodByMethod[m] = (v - before.byMethod[m]) / float64(cfg.Pods)
		}
		for _, rp := range procs {
			rss, file, cpu := rp.usage()
			sc.PeakRSSMiB = append(sc.PeakRSSMiB, rss)
			sc.FileRSSMiB = append(sc.FileRSSMiB, file)
			sc.CPUSeconds = append(sc.CPUSeconds, cpu)
			sc.LiveHeapMiB = append(sc.LiveHeapMiB, rp.liveHeapMiB())
		}
	}
	if sp.name == "shardnet-3" && cfg.Profiles {
		for i, rp := range procs {
			cfg.profile(rp.pprofAddr, fmt.Sprintf("heap-routed-shardnet-%d.pb.gz", i), "heap", 0)
		}
	}
	if sp.name == "shardnet-3" && cfg.Restarts > 0 {
		// A restart is timed from a quiet cluster: kwok may still be
		// marking pods Running, and every status it writes is an event
		// each replica handles. kwok gets quietWait to finish (at 1,000
		// pods it has by then), then it is stopped, so that none of its
		// writes lands during the restarts: at 50,000 pods on a loaded
		// API server it marked some 5 pods a second and had not
		// finished when the scenario's bound ran out.
		store := factory.Core().V1().Pods().Informer().GetStore()
		if err := waitQuiet(ctx, store, cfg.Pods, quietWait); err != nil {
			fmt.Fprintf(cfg.Progress, "bench: %s: %v; kwok stopped, its pods left as they are\n", sp.name, err)
		}
		kube.StopKwok()
		// With profiles, a first restart is profiled, reported and left
		// out of the ratios. Each timed restart is followed by a
		// measurement of the ceiling under the same conditions (the new
		// replicas steady, renewing their Leases); the ratio is of the
		// medians.
		profiled := 0
		if cfg.Profiles {
			profiled = 1
		}
		for n := range cfg.Restarts + profiled {
			r, next, err := restartAll(ctx, p, cfg, sp, kube, nb, procs, n < profiled)
			if err != nil {
				return sc, fmt.Errorf("restart %d: %w", n+1, err)
			}
			procs = next
			if !r.Profiled {
				if r.Ceiling, err = measureCeiling(ctx, kube, sp.replicas, cfg.Timeout); err != nil {
					return sc, err
				}
			}
			sc.Restarts = append(sc.Restarts, *r)
		}
		sc.RawReloadSeconds = median(ceilingSeconds(sc.Restarts))
		sc.InProcessReloadSeconds = median(inProcessSeconds(sc.Restarts))
		// And once all in full, as replicas loaded them before the claims and
		// IP records carried their spec in their metadata and the pods
		// were decoded as far as the cache keeps them: what those steps
		// saved, in the same run.
		secs, err := rawReload(ctx, kube, sp.replicas, cfg.Timeout, false)
		if err != nil {
			return sc, fmt.Errorf("raw reload, in full: %w", err)
		}
		sc.FullReloadSeconds = secs
	}
	return sc, nil
}

// setupAttachment makes the bench's API server serve the attachment the
// attach scenarios' pods ask for: multus's NetworkAttachmentDefinition CRD,
// the NAD attachNAD of type kube-ovn in benchNS, and the subnet of its
// provider.
func setupAttachment(ctx context.Context, p *harness.Program, kube *harness.Kube) error {
	kube.InstallNADCRD(p)
	dyn, err := dynamic.NewForConfig(kube.Config)
	if err != nil {
		return err
	}
	nad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"name": attachNAD, "namespace": benchNS},
		"spec":     map[string]any{"config": attachNADConfig},
	}}
	if _, err := dyn.Resource(harness.NADResource).Namespace(benchNS).Create(ctx, nad, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating NAD %s/%s: %w", benchNS, attachNAD, err)
	}
	_, err = kube.Shardnet.KubeovnV1().Subnets().Create(ctx, &kubeovnv1.Subnet{
		ObjectMeta: metav1.ObjectMeta{Name: attachSubnet},
		Spec:       kubeovnv1.SubnetSpec{CIDRBlock: attachCIDR, Provider: attachProvider},
	}, metav1.CreateOptions{})
	return err
}

// doneKeys are the annotations that must all be "true" for a pod of sp to
// count as done: routed on every network for shardnet, allocated for the
// raw writer (which writes both at once), none for a plain pod, done once
// the bench's watch sees it.
func doneKeys(sp spec) []string {
	switch {
	case sp.plain:
		return nil
	case sp.raw:
		return networkKeys(sp, reconcile.KeyAllocated)
	}
	return networkKeys(sp, reconcile.KeyRouted)
}

// networkKeys are the annotation key of every network of sp's pods.
func networkKeys(sp spec, key string) []string {
	keys := []string{reconcile.DefaultKey(key)}
	if sp.attach {
		keys = append(keys, reconcile.Key(attachProvider, key))
	}
	return keys
}

// newScenarioObserver is the observer of sp's n pods, which also counts
// the pods allocated and routed on every network for the progress lines
// (none for plain pods).
func newScenarioObserver(n int, sp spec) *observer {
	o := newObserver(n, doneKeys(sp))
	if !sp.plain {
		o.allocKeys, o.routeKeys = networkKeys(sp, reconcile.KeyAllocated), networkKeys(sp, reconcile.KeyRouted)
	}
	switch {
	case sp.plain:
		o.doneLabel = "seen"
	case sp.raw:
		o.doneLabel = "allocated"
	}
	return o
}

// rawReload is the restart's ceiling in the bench's own process: n
// clients at once (one per replica, each on its own connection,
// uncompressed like the replicas) load caches of the pods, claims and IP
// records, with no transform and no logic (loadCaches). It returns the
// seconds until the last of them has synced. freshReload is the same
// clients each in a process of its own.
func rawReload(ctx context.Context, kube *harness.Kube, n int, timeout time.Duration, asReplicas bool) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	errs := make(chan error, n)
	for range n {
		go func() {
			errs <- loadCaches(ctx, ownConnection(kube.Config), asReplicas, timeout)
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return time.Since(start).Seconds(), first
}

// loadCaches is one client of the restart's ceiling: on rc's connection,
// uncompressed like the replicas, it loads caches of the pods, claims
// and IP records and returns once they have synced; the informers stop
// with it. With asReplicas it decodes them as the replicas do: the pods
// only as far as the replicas' cache keeps them (internal/podwire), the
// claims and IP records as their object metadata (PartialObjectMetadata
// over protobuf, which the API server serves for custom resources too,
// without their managed fields; internal/metawatch). Without it, all in
// full.
func loadCaches(ctx context.Context, rc *rest.Config, asReplicas bool, timeout time.Duration) error {
	rc.DisableCompression = true
	kc, pc, err := controller.KubeClients(rc)
	if err != nil {
		return err
	}
	mc, err := metawatch.NewClient(controller.Protobuf(rc), nil)
	if err != nil {
		return err
	}
	sn, err := versioned.NewForConfig(rc)
	if err != nil {
		return err
	}
	kf := informers.NewSharedInformerFactory(kc, 0)
	mf := metadatainformer.NewSharedInformerFactory(mc, 0)
	sf := externalversions.NewSharedInformerFactory(sn, 0)
	// The informers stop with ctx, which the factories' Shutdown waits
	// for.
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		kf.Shutdown()
		mf.Shutdown()
		sf.Shutdown()
	}()
	if asReplicas {
		pods := pc.Pods(metav1.NamespaceAll)
		kf.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return watch.Informer(c, "pods", &corev1.Pod{}, resync, cache.Indexers{}, pods.List, pods.Watch)
		})
	}
	synced := []cache.InformerSynced{kf.Core().V1().Pods().Informer().HasSynced}
	if asReplicas {
		synced = append(synced,
			mf.ForResource(v1alpha1.SchemeGroupVersion.WithResource("addressclaims")).Informer().HasSynced,
			mf.ForResource(kubeovnv1.SchemeGroupVersion.WithResource("ips")).Informer().HasSynced)
	} else {
		synced = append(synced,
			sf.Shardnet().V1alpha1().AddressClaims().Informer().HasSynced,
			sf.Kubeovn().V1().IPs().Informer().HasSynced)
	}
	kf.Start(ctx.Done())
	mf.Start(ctx.Done())
	sf.Start(ctx.Done())
	// Polled as often as a restart's end is (WaitForCacheSync polls
	// every 100 ms).
	for _, s := range synced {
		for !s() {
			if ctx.Err() != nil {
				return fmt.Errorf("pods, claims and IP records not loaded within %s", timeout)
			}
			time.Sleep(restartPoll)
		}
	}
	return nil
}

// quietWait bounds how long a restart waits for kwok to mark the pods
// Running before it stops kwok.
const quietWait = 2 * time.Minute

// waitQuiet waits until every one of the n pods in store is Running.
func waitQuiet(ctx context.Context, store cache.Store, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		running := 0
		for _, o := range store.List() {
			if p, ok := o.(*corev1.Pod); ok && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running >= n {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%d of %d pods Running after %s", running, n, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cpuUse is the CPU seconds each process of a scenario has used, by the
// names of Scenario.CPUMsPerPod.
type cpuUse map[string]float64

// phaseCPU reads the CPU used so far by the API server, etcd, kwok, the
// replicas together and the bench's own process (its observer, and the
// raw writer in the raw scenarios).
func phaseCPU(kube *harness.Kube, procs []*replicaProc) cpuUse {
	u := cpuUse(kube.CPUSeconds())
	if len(procs) > 0 {
		u["replicas"] = 0
		for _, rp := range procs {
			u["replicas"] += harness.ProcCPUSeconds(rp.cmd.Process.Pid)
		}
	}
	u["bench"] = harness.ProcCPUSeconds(os.Getpid())
	return u
}

// serversCPU is the CPU kube-apiserver and etcd have used so far.
func serversCPU(kube *harness.Kube) float64 {
	u := kube.CPUSeconds()
	return u["kube-apiserver"] + u["etcd"]
}

// perPodSince is the CPU milliseconds per pod each process used since
// before.
func (u cpuUse) perPodSince(before cpuUse, pods int) map[string]float64 {
	out := make(map[string]float64, len(u))
	for k, v := range u {
		if b, ok := before[k]; ok && pods > 0 {
			out[k] = (v - b) * 1000 / float64(pods)
		}
	}
	return out
}

// routingSeconds is how long the CPU profiles of a create phase run:
// the whole phase at 1,000 pods, its first part at larger sizes.
const routingSeconds = 20

// routingProfiles starts, with Profiles, CPU profiles of the API server and
// of every replica over the create phase of the raw and 3-replica
// scenarios, at full and at half rate, so that the replicas' CPU per pod
// and what it takes from the API server on a shared machine can be read
// next to the ceiling's. Wait on the result before the replicas stop.
func (cfg Config) routingProfiles(ctx context.Context, sp spec, kube *harness.Kube, procs []*replicaProc) *sync.WaitGroup {
	var wg sync.WaitGroup
	if !cfg.Profiles || !slices.Contains([]string{"raw", "shardnet-3", "raw-half", "shardnet-3-half"}, sp.name) {
		return &wg
	}
	wg.Go(func() {
		cfg.apiServerProfile(ctx, kube, fmt.Sprintf("cpu-routing-%s-kube-apiserver.pb.gz", sp.name), routingSeconds)
	})
	for i, rp := range procs {
		wg.Go(func() {
			cfg.profile(rp.pprofAddr, fmt.Sprintf("cpu-routing-%s-%d.pb.gz", sp.name, i), "profile", routingSeconds)
		})
	}
	return &wg
}

// profile saves one pprof profile of the process serving addr (or of the
// API server when kube is set) to Out/pprof/name; a failure is reported on
// Progress and does not fail the run.
func (cfg Config) profile(addr, name, kind string, seconds int) {
	url := "http://" + addr + "/debug/pprof/" + kind
	if seconds > 0 {
		url += fmt.Sprintf("?seconds=%d", seconds)
	}
	c := &http.Client{Timeout: time.Duration(seconds+30) * time.Second}
	resp, err := c.Get(url)
	if err == nil && resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err = fmt.Errorf("%s", resp.Status)
	}
	if err != nil {
		fmt.Fprintf(cfg.Progress, "bench: profile %s: %v\n", name, err)
		return
	}
	defer resp.Body.Close()
	cfg.saveProfile(name, resp.Body)
}

func (cfg Config) saveProfile(name string, r io.Reader) {
	dir := filepath.Join(cfg.Out, "pprof")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(cfg.Progress, "bench: profile %s: %v\n", name, err)
		return
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		fmt.Fprintf(cfg.Progress, "bench: profile %s: %v\n", name, err)
		return
	}
	defer f.Close()
	if _, err := io.Copy(f, r); err != nil {
		fmt.Fprintf(cfg.Progress, "bench: profile %s: %v\n", name, err)
	}
}

// apiServerProfile saves a CPU profile of the API server (its
// /debug/pprof, served to the harness's admin client).
func (cfg Config) apiServerProfile(ctx context.Context, kube *harness.Kube, name string, seconds int) {
	b, err := kube.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(seconds)).Timeout(time.Duration(seconds+30) * time.Second).DoRaw(ctx)
	if err != nil {
		fmt.Fprintf(cfg.Progress, "bench: profile %s: %v\n", name, err)
		return
	}
	cfg.saveProfile(name, bytes.NewReader(b))
}

// measureCeiling measures the restarts' ceiling once, each from collected
// heaps, with the CPU it took: the clients in fresh processes
// (freshReload), which a restart's replicas are, then in the bench's own
// process (rawReload as the replicas decode), which is reported beside
// it.
func measureCeiling(ctx context.Context, kube *harness.Kube, clients int, timeout time.Duration) (*Reload, error) {
	collectServers(ctx, kube)
	servers := serversCPU(kube)
	r, err := freshReload(ctx, kube.Kubeconfig, clients, timeout)
	if err != nil {
		return nil, fmt.Errorf("raw reload in fresh processes: %w", err)
	}
	r.ServersCPUSeconds = serversCPU(kube) - servers
	collectServers(ctx, kube)
	servers = serversCPU(kube)
	bench, _ := harness.ProcUsage(os.Getpid())
	secs, err := rawReload(ctx, kube, clients, timeout, true)
	if err != nil {
		return nil, fmt.Errorf("raw reload: %w", err)
	}
	after, _ := harness.ProcUsage(os.Getpid())
	r.InProcess = &Reload{Seconds: secs, CPUSeconds: after.CPUSeconds() - bench.CPUSeconds(),
		ServersCPUSeconds: serversCPU(kube) - servers, MinorFaults: after.MinorFaults - bench.MinorFaults}
	return r, nil
}

// collectServers has the API server and the bench's own process run a
// garbage collection, so that a restart or a measurement of its ceiling
// starts from a collected heap rather than pay for the garbage of what
// came before it: at 1,000 pods each takes a fraction of a second, and
// the API server's collection falling into one doubled it. The API
// server collects at a heap profile asked with gc=1; a failure only
// leaves the heap as it was.
func collectServers(ctx context.Context, kube *harness.Kube) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, _ = kube.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx)
	runtime.GC()
}

// ownConnection is a copy of c whose clients use a connection of their
// own: a Dial of its own keeps client-go from sharing the bench's.
func ownConnection(c *rest.Config) *rest.Config {
	rc := rest.CopyConfig(c)
	rc.Dial = (&net.Dialer{}).DialContext
	return rc
}

// A restart's CPU profiles each cover restartProfileSeconds, one after
// the other until the replicas are steady, at most maxRestartProfiles.
const (
	restartProfileSeconds = 30
	maxRestartProfiles    = 10
)

// restartAll stops every replica at once (SIGTERM to each, as deleting
// the StatefulSet's pods together does), starts them again under the same
// identities, and times the way back to steady state: every shard owned
// and synced (each pod it was seeded with reconciled since the start) and
// no key queued. Stopped one after the other instead, the last replicas
// would take over the shards of the first ones on the way down, a
// scale-down rather than a restart.
func restartAll(ctx context.Context, p *harness.Program, cfg Config, sp spec, kube *harness.Kube, nb *harness.NB, old []*replicaProc, profile bool) (*Restart, []*replicaProc, error) {
	r := &Restart{Profiled: profile}
	t := time.Now()
	var stopping sync.WaitGroup
	for _, rp := range old {
		stopping.Go(rp.stop)
	}
	stopping.Wait()
	r.StopSeconds = time.Since(t).Seconds()
	collectServers(ctx, kube)
	servers, nbCPU := serversCPU(kube), nb.CPUSeconds()
	start := time.Now()
	procs, err := startReplicaProcs(p, cfg, sp, kube, nb)
	if err != nil {
		return nil, nil, err
	}
	var profiles sync.WaitGroup
	defer profiles.Wait()
	// steady is closed once the restart is over, finished when this
	// function returns (deferred after profiles.Wait, so it runs first).
	steady, finished := make(chan struct{}), make(chan struct{})
	defer close(finished)
	if profile {
		profiles.Go(func() { cfg.apiServerProfile(ctx, kube, "cpu-restart-kube-apiserver.pb.gz", restartProfileSeconds) })
		for i, rp := range procs {
			profiles.Go(func() {
				// The endpoint answers a moment after the process starts.
				for range 3000 {
					if resp, err := http.Get("http://" + rp.metricsAddr + "/metrics"); err == nil {
						resp.Body.Close()
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				// One profile after the other until the restart is over
				// (a process serves one CPU profile at a time): at 50,000
				// pods the caches take longer than one, and the adoption
				// pass and the first pass over the pods come after them.
				for n := 1; n <= maxRestartProfiles; n++ {
					name := fmt.Sprintf("cpu-restart-shardnet-%d.pb.gz", i)
					if n > 1 {
						name = fmt.Sprintf("cpu-restart-shardnet-%d.%d.pb.gz", i, n)
					}
					cfg.profile(rp.pprofAddr, name, "profile", restartProfileSeconds)
					select {
					case <-steady:
						return
					case <-finished:
						return
					default:
					}
				}
			})
		}
	}
	// Caches of 50,000 pods and their claims and IP records take a
	// while to load: the restart gets the scenario's whole bound. One
	// loop polls often (restartPoll) and reads the metrics only once
	// every replica is ready, so that the scrapes do not compete with the
	// caches' load; the timing is within a poll of the moment itself.
	deadline := time.Now().Add(cfg.Timeout)
	ready := make([]bool, len(procs))
	for {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, nil, fmt.Errorf("replicas not ready after %s (ready: %v)", cfg.Timeout, ready)
		}
		all := true
		for i, rp := range procs {
			if rp.hasExited() {
				return nil, nil, fmt.Errorf("replica shardnet-%d exited during the restart (see its log in %s)", i, filepath.Join(cfg.Out, "logs"))
			}
			if !ready[i] {
				ready[i] = rp.ready()
				all = all && ready[i]
			}
		}
		if all {
			break
		}
		time.Sleep(restartPoll)
	}
	r.ReadySeconds = time.Since(start).Seconds()
	for {
		var owned, synced, depth, reconciled float64
		for _, rp := range procs {
			// Only the four metrics: a replica's whole page is 200–500
			// KB (the shards' queue histograms), 5–19 ms of its CPU to
			// gather, encode and compress and as much of the bench's to
			// read, three times a poll, on the cores the restart needs.
			m := scrape(rp.metricsAddr, "shardnet_shards_owned", "shardnet_shards_synced", "workqueue_depth", "shardnet_reconciles_total")
			owned += m["shardnet_shards_owned"]
			synced += m["shardnet_shards_synced"]
			depth += m["workqueue_depth"]
			reconciled += m["shardnet_reconciles_total"]
		}
		shards := float64(sp.shards)
		if owned == shards && synced == shards && depth == 0 {
			r.Seconds = time.Since(start).Seconds()
			r.ServersCPUSeconds = serversCPU(kube) - servers
			r.NBCPUSeconds = nb.CPUSeconds() - nbCPU
			for _, rp := range procs {
				u, _ := harness.ProcUsage(rp.cmd.Process.Pid)
				r.CPUSeconds = append(r.CPUSeconds, u.CPUSeconds())
				r.SystemCPUSeconds = append(r.SystemCPUSeconds, u.SystemSeconds)
				r.MinorFaults = append(r.MinorFaults, u.MinorFaults)
			}
			r.Reconciled = int(reconciled)
			close(steady)
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, nil, fmt.Errorf("not steady after %s: %.0f shards owned, %.0f synced, %.0f keys queued",
				cfg.Timeout, owned, synced, depth)
		}
		time.Sleep(restartPoll)
	}
	c := scrapeAll(procs)
	r.APIWrites, r.NBTransactions = c.writes, c.txns
	for i, rp := range procs {
		rss, file, _ := rp.usage()
		r.PeakRSSMiB = append(r.PeakRSSMiB, rss)
		r.FileRSSMiB = append(r.FileRSSMiB, file)
		r.LiveHeapMiB = append(r.LiveHeapMiB, rp.liveHeapMiB())
		if profile {
			cfg.profile(rp.pprofAddr, fmt.Sprintf("heap-restarted-shardnet-%d.pb.gz", i), "heap", 0)
		}
	}
	return r, procs, nil
}

// observer records create and annotation times.
type observer struct {
	want int
	// keys must all be "true" on a pod for it to count as annotated.
	keys []string
	// allocKeys and routeKeys, when set, must all be "true" on a pod for
	// it to count as allocated and as routed in the progress lines.
	allocKeys, routeKeys []string
	// doneLabel names the done count in the progress lines ("routed"
	// when empty).
	doneLabel string
	// mu guards created, annotated, stages, lastAt and timeline.
	mu        sync.Mutex
	created   map[string]time.Time
	annotated map[string]time.Time
	// accepted is when each pod's create returned, seen when the
	// observer's own watch first delivered it: the API server's request
	// and watch delays, which the replicas' informers meet as well.
	accepted, seen map[string]time.Time
	// stages holds the stageAllocated and stageRouted bits a pod was
	// counted for.
	stages   map[string]uint8
	lastAt   time.Time
	done     chan struct{}
	doneOnce sync.Once
	count    atomic.Int64
	// nCreated counts the creates the API server accepted; nAllocated
	// and nRouted the pods seen allocated and routed.
	nCreated, nAllocated, nRouted atomic.Int64
	t0                            time.Time
	timeline                      []int
}

const (
	stageAllocated uint8 = 1 << iota
	stageRouted
)

func newObserver(want int, keys []string) *observer {
	return &observer{want: want, keys: keys, created: map[string]time.Time{}, annotated: map[string]time.Time{},
		accepted: map[string]time.Time{}, seen: map[string]time.Time{},
		stages: map[string]uint8{}, done: make(chan struct{})}
}

func (o *observer) start(t time.Time) { o.t0 = t }

// allTrue reports whether every one of keys is "true" in ann; it is false
// for no keys.
func allTrue(ann map[string]string, keys []string) bool {
	for _, k := range keys {
		if ann[k] != "true" {
			return false
		}
	}
	return len(keys) > 0
}

func (o *observer) see(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	o.mu.Lock()
	if _, ok := o.seen[pod.Name]; !ok {
		o.seen[pod.Name] = time.Now()
	}
	o.mu.Unlock()
	var stages uint8
	if allTrue(pod.Annotations, o.allocKeys) {
		stages |= stageAllocated
	}
	if allTrue(pod.Annotations, o.routeKeys) {
		stages |= stageRouted
	}
	done := len(o.keys) == 0 || allTrue(pod.Annotations, o.keys)
	if stages == 0 && !done {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if fresh := stages &^ o.stages[pod.Name]; fresh != 0 {
		o.stages[pod.Name] |= fresh
		if fresh&stageAllocated != 0 {
			o.nAllocated.Add(1)
		}
		if fresh&stageRouted != 0 {
			o.nRouted.Add(1)
		}
	}
	if !done {
		return
	}
	if _, seen := o.annotated[pod.Name]; seen {
		return
	}
	o.annotated[pod.Name] = now
	o.lastAt = now
	if int(o.count.Add(1)) == o.want {
		o.doneOnce.Do(func() { close(o.done) })
	}
}

func (o *observer) created1(name string, t time.Time) {
	o.mu.Lock()
	o.created[name] = t
	o.mu.Unlock()
}

func (o *observer) accepted1(name string, t time.Time) {
	o.mu.Lock()
	o.accepted[name] = t
	o.mu.Unlock()
}

// Stages the bench measures itself, from its own clients.
const (
	// CreateStage is a pod create request, sent to returned.
	CreateStage = "create (bench)"
	// WatchStage is from a create's return to the bench's watch
	// delivering the pod (its first sight, when the watch came first).
	WatchStage = "watch (bench)"
)

// apiStages are the bench's own request and watch delays, in ms.
func (o *observer) apiStages() []StageLatency {
	o.mu.Lock()
	defer o.mu.Unlock()
	var create, watch []float64
	for name, a := range o.accepted {
		if c, ok := o.created[name]; ok {
			create = append(create, float64(a.Sub(c).Microseconds())/1000)
		}
		if w, ok := o.seen[name]; ok {
			watch = append(watch, max(0, float64(w.Sub(a).Microseconds())/1000))
		}
	}
	var out []StageLatency
	for _, st := range []struct {
		name string
		ms   []float64
	}{{CreateStage, create}, {WatchStage, watch}} {
		if len(st.ms) == 0 {
			continue
		}
		slices.Sort(st.ms)
		out = append(out, StageLatency{Stage: st.name, Count: float64(len(st.ms)), P50: pctl(st.ms, 50), P99: pctl(st.ms, 99)})
	}
	return out
}

// wait returns once every pod is done, or with an error when ctx ends
// first (wrapping ctx's error when it was cancelled).
func (o *observer) wait(ctx context.Context) error {
	select {
	case <-o.done:
		return nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%d of %d pods annotated before the deadline", o.count.Load(), o.want)
		}
		return fmt.Errorf("%d of %d pods annotated: %w", o.count.Load(), o.want, ctx.Err())
	}
}

// progress is the progress line source of the observer's scenario.
func (o *observer) progress(name string, start time.Time) *progress {
	done := o.doneLabel
	if done == "" {
		done = "routed"
	}
	return &progress{name: name, total: o.want, start: start, lastT: start, doneLabel: done, done: o.count.Load,
		counts: func() []count {
			if len(o.allocKeys) == 0 {
				return []count{{"created", o.nCreated.Load()}, {done, o.count.Load()}}
			}
			return []count{{"created", o.nCreated.Load()}, {"allocated", o.nAllocated.Load()}, {"routed", o.nRouted.Load()}}
		}}
}

func (o *observer) last() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lastAt
}

// longestStall is the longest time no pod became done while some created
// pod was waiting, and when it began: the plateaus of the timeline,
// measured from the pods' own times rather than its samples.
func (o *observer) longestStall() (time.Duration, time.Time) {
	o.mu.Lock()
	created := make([]time.Time, 0, len(o.created))
	for _, t := range o.created {
		created = append(created, t)
	}
	done := make([]time.Time, 0, len(o.annotated))
	for _, t := range o.annotated {
		done = append(done, t)
	}
	o.mu.Unlock()
	return longestStall(created, done)
}

// createRates returns how fast the creates returned within [from, to)
// and over all of them (from the start of the creates, o.t0, to the last
// returned), or zeros when [from, to) is not within the creates.
func (o *observer) createRates(from, to time.Time) (during, overall float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	returned := make([]time.Time, 0, len(o.accepted))
	for _, t := range o.accepted {
		returned = append(returned, t)
	}
	return createRates(o.t0, returned, from, to)
}

// createRates is observer.createRates over the start of the creates and
// the times they returned.
func createRates(first time.Time, returned []time.Time, from, to time.Time) (during, overall float64) {
	if len(returned) == 0 || !to.After(from) || from.Before(first) {
		return 0, 0
	}
	last, n := first, 0
	for _, t := range returned {
		if t.After(last) {
			last = t
		}
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	if last.Before(to) || !last.After(first) {
		return 0, 0
	}
	return float64(n) / to.Sub(from).Seconds(), float64(len(returned)) / last.Sub(first).Seconds()
}

// longestStall is the longest time between a pod done and the next one
// (before the first, since the first create) during which more pods had
// been created than were done.
func longestStall(created, done []time.Time) (time.Duration, time.Time) {
	slices.SortFunc(created, func(a, b time.Time) int { return a.Compare(b) })
	slices.SortFunc(done, func(a, b time.Time) int { return a.Compare(b) })
	var best time.Duration
	var at, prev time.Time
	for i, d := range done {
		if i >= len(created) {
			break
		}
		// From the later of the previous done pod and the create that
		// made more pods created than done, some pod waited.
		from := prev
		if created[i].After(from) {
			from = created[i]
		}
		if d.Sub(from) > best {
			best, at = d.Sub(from), from
		}
		prev = d
	}
	return best, at
}

func (o *observer) latencies() []float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]float64, 0, len(o.annotated))
	for name, at := range o.annotated {
		if c, ok := o.created[name]; ok {
			out = append(out, float64(at.Sub(c).Microseconds())/1000)
		}
	}
	slices.Sort(out)
	return out
}

// sampleTimeline appends the done count to the timeline every interval
// until stop, which appends it once more; only stop's first call acts.
func (o *observer) sampleTimeline(every time.Duration) (stop func()) {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				n := int(o.count.Load())
				o.mu.Lock()
				o.timeline = append(o.timeline, n)
				o.mu.Unlock()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
			o.mu.Lock()
			o.timeline = append(o.timeline, int(o.count.Load()))
			o.mu.Unlock()
		})
	}
}

func (o *observer) timelineCopy() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.timeline)
}

func pctl(sorted []float64, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p+99)/100 - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// podTemplate is what createPods makes its pods of.
type podTemplate struct {
	namespace string
	// nodes are the kwok nodes the pods are bound to, in turn.
	nodes []string
	// prefix starts every pod's name ("pod-" when empty).
	prefix              string
	annotations, labels map[string]string
	// perPod, when set, adds pod i's own annotations to a copy of
	// annotations.
	perPod func(i int, ann map[string]string)
	// hostNetwork makes plain pods, which shardnet leaves alone.
	hostNetwork bool
	// serviceAccount is the pods' service account (none mounted).
	serviceAccount string
	tolerations    []corev1.Toleration
}

// pod is the template's i-th pod.
func (t podTemplate) pod(i int) *corev1.Pod {
	prefix := t.prefix
	if prefix == "" {
		prefix = "pod-"
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%06d", prefix, i), Namespace: t.namespace,
			Annotations: t.annotations, Labels: t.labels},
		Spec: corev1.PodSpec{NodeName: t.nodes[i%len(t.nodes)], HostNetwork: t.hostNetwork, Tolerations: t.tolerations,
			Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/bench"}}},
	}
	if t.perPod != nil {
		pod.Annotations = maps.Clone(t.annotations)
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		t.perPod(i, pod.Annotations)
	}
	if t.serviceAccount != "" {
		pod.Spec.ServiceAccountName = t.serviceAccount
		pod.Spec.AutomountServiceAccountToken = new(false)
	}
	return pod
}

// createPods creates n pods of tmpl, recording each create time: at full
// speed (64 at a time) when rate is 0, else pod i is sent at i/rate
// seconds from the start (still at most 64 in flight). It stops at the
// first create that fails and returns its error.
func createPods(ctx context.Context, client kubernetes.Interface, tmpl podTemplate, n int, rate float64, obs *observer) error {
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	var first error
	var once sync.Once
	var failed atomic.Bool
	start := time.Now()
	for i := range n {
		if ctx.Err() != nil || failed.Load() {
			break
		}
		if rate > 0 {
			if d := time.Until(start.Add(sendOffset(i, rate))); d > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(d):
				}
			}
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			pod := tmpl.pod(i)
			obs.created1(pod.Name, time.Now())
			if _, err := client.CoreV1().Pods(tmpl.namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				once.Do(func() { first = fmt.Errorf("creating pod %s/%s: %w", tmpl.namespace, pod.Name, err) })
				failed.Store(true)
				return
			}
			obs.accepted1(pod.Name, time.Now())
			obs.nCreated.Add(1)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("%d of %d pods created: %w", obs.nCreated.Load(), n, ctx.Err())
	}
	return first
}

// sendOffset is when pod i of a paced run is sent, from the first.
func sendOffset(i int, rate float64) time.Duration {
	return time.Duration(float64(i) / rate * float64(time.Second))
}

// rawWriter does shardnet's API writes per pod and nothing else: for each
// network of the pod in turn a claim, then an IP record per network when
// enabled, each with its spec in its metadata as shardnet writes them
// (docs/contract.md N5, N9), and one merge patch of all the annotations. With attach, every
// pod has the default network and the attachment, as shardnet serves a pod
// of the attach scenarios.
type rawWriter struct {
	kube      *harness.Kube
	ipRecords bool
	attach    bool
	next      atomic.Uint32
}

// rawWritesPerPod is the raw writer's API writes per pod of the given
// number of networks.
func rawWritesPerPod(ipRecords bool, networks int) float64 {
	if ipRecords {
		return float64(2*networks + 1)
	}
	return float64(networks + 1)
}

func (w *rawWriter) start(ctx context.Context) error {
	keys := make(chan *corev1.Pod, 100000)
	factory := informers.NewSharedInformerFactoryWithOptions(w.kube.Client, 0, informers.WithNamespace(benchNS))
	// The pods reach it as they reach the replicas: through a watch that
	// outlives an early end by the API server (watch.Resume).
	resumingPods(factory, benchNS)
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				keys <- p
			}
		},
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	// As many writers in flight as shardnet's default 64 shards x 4
	// workers, so that the ceiling is the API server's, not the writer's.
	for range 256 {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case p := <-keys:
					w.write(ctx, p)
				}
			}
		}()
	}
	go func() { <-ctx.Done(); factory.Shutdown() }()
	return nil
}

// rawNetwork is one network the raw writer serves a pod on.
type rawNetwork struct {
	provider, subnet, cidr, gateway, ip string
}

// networks are the pod's networks, with the addresses of the n-th pod
// written (unique in each subnet up to 2^18 pods).
func (w *rawWriter) networks(n uint32) []rawNetwork {
	nets := []rawNetwork{{provider: reconcile.DefaultProvider, subnet: "ovn-default", cidr: "10.0.0.0/14", gateway: "10.0.0.1",
		ip: fmt.Sprintf("10.%d.%d.%d", n>>16&3, n>>8&255, n&255)}}
	if w.attach {
		nets = append(nets, rawNetwork{provider: attachProvider, subnet: attachSubnet, cidr: attachCIDR, gateway: attachGateway,
			ip: fmt.Sprintf("10.%d.%d.%d", 4|n>>16&3, n>>8&255, n&255)})
	}
	return nets
}

func (w *rawWriter) write(ctx context.Context, p *corev1.Pod) {
	nets := w.networks(w.next.Add(1))
	for _, nw := range nets {
		claim := rawClaim(p, nw)
		for {
			if ctx.Err() != nil {
				return
			}
			if _, err := w.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Create(ctx, claim, metav1.CreateOptions{}); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if w.ipRecords {
		for _, nw := range nets {
			_, _ = w.kube.Shardnet.KubeovnV1().IPs().Create(ctx, rawIPRecord(p, nw), metav1.CreateOptions{})
		}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": p.UID, "annotations": rawAnnotations(nets)}})
	for ctx.Err() == nil {
		if _, err := w.kube.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The raw writer writes what a replica writes for a pod of an overlay
// subnet of the cluster router, field for field, so that the ceiling is
// the API server's for the same objects (TestRunAgainstCluster compares
// them with a replica's).
const (
	rawMAC        = "0a:58:0a:00:00:01"
	rawPodNICType = "veth-pair"   // the replicas' --pod-nic-type
	rawRouter     = "ovn-cluster" // the replicas' --cluster-router
)

// rawMACValue is rawMAC parsed.
var rawMACValue = func() ipam.MAC {
	m, err := ipam.ParseMAC(rawMAC)
	if err != nil {
		panic(err)
	}
	return m
}()

// rawClaim is the claim of nw's address for p, as ipam writes one.
func rawClaim(p *corev1.Pod, nw rawNetwork) *v1alpha1.AddressClaim {
	return ipam.NewClaim(nw.subnet, netip.MustParseAddr(nw.ip), ipam.Request{
		Owner:    v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)},
		Provider: nw.provider, NodeName: p.Spec.NodeName,
	}, rawMACValue)
}

// rawIPRecord is the IP record of nw for p, as a replica writes one.
func rawIPRecord(p *corev1.Pod, nw rawNetwork) *kubeovnv1.IP {
	rec := &kubeovnv1.IP{
		ObjectMeta: metav1.ObjectMeta{Name: reconcile.PortName(p.Name, p.Namespace, nw.provider),
			Labels: map[string]string{"ovn.kubernetes.io/subnet": nw.subnet, nw.subnet: "", reconcile.LabelNodeName: p.Spec.NodeName}},
		Spec: kubeovnv1.IPSpec{PodName: p.Name, Namespace: p.Namespace, Subnet: nw.subnet, NodeName: p.Spec.NodeName,
			IPAddress: nw.ip, V4IPAddress: nw.ip, MacAddress: rawMAC, PodType: reconcile.PodType(p)},
	}
	ipcache.SetSpecInMetadata(rec, 1)
	return rec
}

// rawAnnotations are the annotations of nets, as a replica's patch
// writes them.
func rawAnnotations(nets []rawNetwork) map[string]string {
	ann := map[string]string{}
	for _, nw := range nets {
		k := func(key string) string { return reconcile.Key(nw.provider, key) }
		ann[k(reconcile.KeyIPAddress)] = nw.ip
		ann[k(reconcile.KeyMACAddress)] = rawMAC
		ann[k(reconcile.KeyCIDR)] = nw.cidr
		ann[k(reconcile.KeyGateway)] = nw.gateway
		ann[k(reconcile.KeyLogicalSwitch)] = nw.subnet
		ann[k(reconcile.KeyPodNICType)] = rawPodNICType
		ann[k(reconcile.KeyLogicalRouter)] = rawRouter
		ann[k(reconcile.KeyAllocated)] = "true"
		ann[k(reconcile.KeyRouted)] = "true"
	}
	return ann
}

// replicaProc is one `shardnet controller` process.
type replicaProc struct {
	cmd         *exec.Cmd
	metricsAddr string
	healthAddr  string
	// pprofAddr is the loopback listener of the replica's profiles.
	pprofAddr string
	// exited closes once the process has been waited for.
	exited chan struct{}
}

// startReplicaProcs starts every replica of the scenario at once, as a
// StatefulSet with podManagementPolicy Parallel (deploy/base) does, and
// returns once each one's listeners are up. Started one after another,
// each waiting for the last one's listeners, the last replica of a
// restart started seconds after the first at 10,000 pods, and the
// leader's first assignment waited for it.
func startReplicaProcs(p *harness.Program, cfg Config, sp spec, kube *harness.Kube, nb *harness.NB) ([]*replicaProc, error) {
	procs := make([]*replicaProc, sp.replicas)
	errs := make([]error, sp.replicas)
	var wg sync.WaitGroup
	for i := range sp.replicas {
		wg.Go(func() { procs[i], errs[i] = startReplicaProc(p, cfg, sp, kube, nb, i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return procs, nil
}

// startReplicaProc starts replica i and returns once its listeners are
// up. Its loopback ports are picked free, then bound by the process a
// moment later; when another process took one meanwhile, the replica
// exits at once and is started again on new ports.
func startReplicaProc(p *harness.Program, cfg Config, sp spec, kube *harness.Kube, nb *harness.NB, i int) (*replicaProc, error) {
	for attempt := 1; ; attempt++ {
		rp, err := startReplicaOnce(p, cfg, sp, kube, nb, i)
		if err != nil {
			return nil, err
		}
		err = rp.listening(30 * time.Second)
		if err == nil {
			return rp, nil
		}
		if attempt == 3 {
			return nil, fmt.Errorf("replica shardnet-%d: %w (%d attempts; see its log in %s)", i, err, attempt, filepath.Join(cfg.Out, "logs"))
		}
		fmt.Fprintf(cfg.Progress, "bench: %s: replica shardnet-%d %v; starting it again on new ports\n", sp.name, i, err)
	}
}

// listening waits until the replica's health listener answers, or reports
// that the process exited first.
func (rp *replicaProc) listening(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-rp.exited:
			return errors.New("exited at startup")
		default:
		}
		if resp, err := http.Get("http://" + rp.healthAddr + "/healthz"); err == nil {
			resp.Body.Close()
			// A replica's health listener answers 200 or 503; a 404
			// is some other listener on the port.
			if resp.StatusCode != http.StatusNotFound {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("health listener %s not up within %s", rp.healthAddr, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func startReplicaOnce(p *harness.Program, cfg Config, sp spec, kube *harness.Kube, nb *harness.NB, i int) (*replicaProc, error) {
	rp := &replicaProc{
		metricsAddr: fmt.Sprintf("127.0.0.1:%d", replicaPorts.fresh(p)),
		healthAddr:  fmt.Sprintf("127.0.0.1:%d", replicaPorts.fresh(p)),
		pprofAddr:   fmt.Sprintf("127.0.0.1:%d", replicaPorts.fresh(p)),
	}
	args := []string{"controller",
		"--kubeconfig=" + kube.Kubeconfig,
		fmt.Sprintf("--identity=shardnet-%d", i),
		"--namespace=shardnet-system",
		"--nb-endpoints=" + nb.Endpoint,
		fmt.Sprintf("--shards=%d", sp.shards),
		"--workers-per-shard=4",
		"--metrics-addr=" + rp.metricsAddr,
		"--health-addr=" + rp.healthAddr,
		"--enable-pprof", "--pprof-addr=" + rp.pprofAddr,
		fmt.Sprintf("--ip-records=%v", cfg.IPRecords),
		"--lease-duration=6s", "--renew-deadline=4s", "--retry-period=1s",
	}
	if cfg.ReplicaMemoryLimit != "" {
		args = append(args, "--memory-limit="+cfg.ReplicaMemoryLimit)
	}
	if cfg.ReplicaGCPercent > 0 {
		args = append(args, fmt.Sprintf("--gc-percent=%d", cfg.ReplicaGCPercent))
	}
	// Last, so that -replica-args overrides the flags above.
	args = append(args, cfg.ReplicaArgs...)
	if sp.shards == 1 {
		// One shard with as many workers as 64 shards of 4 would be
		// unfair the other way: kube-ovn's pod controller runs a handful.
		args = append(args, "--workers-per-shard=32")
	}
	if !sp.batching {
		args = append(args, "--batch-max-ops=1", "--batch-linger=0s")
	}
	// Logs go to Out/logs, a file per process (a restart adds one).
	logDir := filepath.Join(cfg.Out, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logName := fmt.Sprintf("%s-shardnet-%d.log", sp.name, i)
	for n := 2; ; n++ {
		if _, err := os.Stat(filepath.Join(logDir, logName)); errors.Is(err, os.ErrNotExist) {
			break
		}
		logName = fmt.Sprintf("%s-shardnet-%d.%d.log", sp.name, i, n)
	}
	log, err := os.Create(filepath.Join(logDir, logName))
	if err != nil {
		return nil, err
	}
	rp.cmd = exec.Command(cfg.Shardnet, args...)
	rp.cmd.Stdout, rp.cmd.Stderr = log, log
	if err := rp.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	rp.exited = make(chan struct{})
	go func() { _ = rp.cmd.Wait(); close(rp.exited) }()
	p.Cleanup(func() {
		rp.stop()
		log.Close()
	})
	return rp, nil
}

// stop interrupts the replica and waits for it to exit (killing it after
// 15 s); calling it again is a no-op.
func (rp *replicaProc) stop() {
	if rp.hasExited() {
		return
	}
	_ = rp.cmd.Process.Signal(os.Interrupt)
	select {
	case <-rp.exited:
	case <-time.After(15 * time.Second):
		_ = rp.cmd.Process.Kill()
		<-rp.exited
	}
}

// hasExited reports whether the replica's process has been waited for.
func (rp *replicaProc) hasExited() bool {
	select {
	case <-rp.exited:
		return true
	default:
		return false
	}
}

// replicaPorts are the loopback ports handed to replicas in this process.
// A free port is found by binding port 0 and closing it, so the replicas
// of a scenario, started at once, could each be handed the same one; the
// replica that lost the bind exited, and looked up through the winner's
// listener (a restart waited its whole bound for it).
var replicaPorts = portSet{free: harness.FreePort, given: map[int]bool{}}

type portSet struct {
	free  func(harness.TB) int
	mu    sync.Mutex
	given map[int]bool
}

// fresh returns a free loopback port never handed out before by s.
func (s *portSet) fresh(t harness.TB) int {
	for {
		port := s.free(t)
		s.mu.Lock()
		if !s.given[port] {
			s.given[port] = true
			s.mu.Unlock()
			return port
		}
		s.mu.Unlock()
	}
}

// metricsClient reads the replicas' metrics without asking for
// compression.
var metricsClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// restartPoll is how often a restart's end is looked for.
const restartPoll = 20 * time.Millisecond

// ready reports whether the replica's readiness endpoint answers OK.
func (rp *replicaProc) ready() bool {
	resp, err := http.Get("http://" + rp.healthAddr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitReady waits, at most timeout, until every replica answers ready and
// every shard has an owner.
func waitReady(ctx context.Context, procs []*replicaProc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for i, rp := range procs {
		for !rp.ready() {
			if rp.hasExited() {
				return fmt.Errorf("replica shardnet-%d exited before it was ready", i)
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("replica on %s not ready", rp.healthAddr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// Every shard must be running somewhere before the clock starts.
	for {
		owned := 0
		for _, rp := range procs {
			owned += int(scrape(rp.metricsAddr)["shardnet_shards_owned"])
		}
		if owned > 0 && owned == expectedShards(procs) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("shards not all owned (%d)", owned)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func expectedShards(procs []*replicaProc) int {
	for _, a := range procs[0].cmd.Args {
		if v, ok := strings.CutPrefix(a, "--shards="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

type counters struct {
	// requests are the pod path's Northbound requests (a transaction
	// carries one or more).
	writes, txns, requests float64
	// byMethod splits writes by HTTP method.
	byMethod map[string]float64
}

func scrapeAll(procs []*replicaProc) counters {
	c := counters{byMethod: map[string]float64{}}
	for _, rp := range procs {
		m := scrape(rp.metricsAddr)
		c.writes += m["writes"]
		c.txns += m["shardnet_nb_transactions_total"]
		c.requests += m["shardnet_nb_batch_requests_sum"]
		for k, v := range m {
			if method, ok := strings.CutPrefix(k, "writes:"); ok {
				c.byMethod[method] += v
			}
		}
	}
	return c
}

// scrape reads the few metrics the bench needs from a replica's /metrics:
// summed counters by name, and "writes" (REST requests other than GET).
// With names, the replica answers only those metrics (promhttp's name[]
// filter). The page comes uncompressed: on loopback, compressing it only
// costs the replica CPU.
func scrape(addr string, names ...string) map[string]float64 {
	out := map[string]float64{}
	q := url.Values{}
	for _, n := range names {
		q.Add("name[]", n)
	}
	u := "http://" + addr + "/metrics"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	resp, err := metricsClient.Get(u)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		labels := ""
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name, labels = name[:i], name[i:]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil {
			continue
		}
		out[name] += v
		if name == "rest_client_requests_total" && !strings.Contains(labels, `method="GET"`) {
			out["writes"] += v
			if _, m, ok := strings.Cut(labels, `method="`); ok {
				m, _, _ = strings.Cut(m, `"`)
				out["writes:"+m] += v
			}
		}
	}
	return out
}

// liveHeapMiB is the heap the replica's last collection kept, from its
// go_gc_heap_live_bytes (0 when it cannot be read).
func (rp *replicaProc) liveHeapMiB() float64 {
	return scrape(rp.metricsAddr)["go_gc_heap_live_bytes"] / (1 << 20)
}

// usage is the process's peak RSS (MiB), the part of its RSS that is
// mapped from files (MiB, at the moment of the reading: the binary's code
// and read-only data) and its CPU time (s), from /proc.
func (rp *replicaProc) usage() (rssMiB, fileMiB, cpuSeconds float64) {
	pid := rp.cmd.Process.Pid
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		rssMiB, fileMiB = statusMiB(string(b), "VmHWM:"), statusMiB(string(b), "RssFile:")
	}
	return rssMiB, fileMiB, harness.ProcCPUSeconds(pid)
}

// statusMiB reads the field key of a /proc/PID/status text in MiB (0 when
// it is missing).
func statusMiB(status, key string) float64 {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// resumingPods makes factory's pod informer, before anything asks for
// it, one whose watch outlives an early end by the API server
// (watch.PodInformer), as the replicas' pod informer is.
func resumingPods(factory informers.SharedInformerFactory, namespace string) {
	factory.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return watch.PodInformer(c, namespace, resync, cache.Indexers{})
	})
}

// keepServerLogs copies the scenario's API server, etcd and kwok logs to
// the bench's logs directory as <scenario>-kube-apiserver.log,
// <scenario>-etcd.log and <scenario>-kwok.log, at most maxServerLog bytes
// of each (the last). A log the scenario never got to write is skipped.
func keepServerLogs(cfg Config, scenario string, kube *harness.Kube) {
	dir := filepath.Join(cfg.Out, "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(cfg.Progress, "bench: %s: keeping the servers' logs: %v\n", scenario, err)
		return
	}
	for _, name := range []string{"kube-apiserver.log", "etcd.log", "kwok.log"} {
		src := filepath.Join(kube.Dir, name)
		if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := copyTail(src, filepath.Join(dir, scenario+"-"+name), maxServerLog); err != nil {
			fmt.Fprintf(cfg.Progress, "bench: %s: keeping %s: %v\n", scenario, name, err)
		}
	}
}

// maxServerLog bounds each server log the bench keeps.
const maxServerLog = 64 << 20

// copyTail copies the last max bytes of src to dst.
func copyTail(src, dst string, max int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if st, err := in.Stat(); err == nil && st.Size() > max {
		if _, err := in.Seek(st.Size()-max, io.SeekStart); err != nil {
			return err
		}
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
