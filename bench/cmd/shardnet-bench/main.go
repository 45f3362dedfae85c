// Command shardnet-bench runs shardnet's end-to-end benchmark (package
// bench) or checks a result against the committed thresholds.
//
//	shardnet-bench [-pods N] [-out DIR] [-micro] [-scenarios a,b] [-restarts N] [-profiles]
//	shardnet-bench -kubeconfig PATH [-pods N] [-subnet NAME] [-keep] [-scenarios raw,shardnet-installed]
//	shardnet-bench -check DIR/result.json [-thresholds bench/thresholds.json]
//
// With -kubeconfig it load-tests the cluster it names, with kwok and
// shardnet installed there, instead of starting servers of its own.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/bench"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 && args[0] == bench.ReloadClientCommand {
		// One client of the restarts' ceiling in a fresh process,
		// started by the bench, not by a user.
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
		return bench.ReloadClientMain(args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	fs := flag.NewFlagSet("shardnet-bench", flag.ContinueOnError)
	pods := fs.Int("pods", 5000, "kwok pods per scenario (50000 for the large run)")
	out := fs.String("out", "bench/out", "folder for result.json, report.md and the plots")
	bin := fs.String("shardnet", "bin/shardnet", "shardnet binary the replicas run")
	micro := fs.Bool("micro", true, "run the IPAM and Northbound micro-benchmarks too")
	ipRecords := fs.Bool("ip-records", true, "write kubeovn.io IP records")
	timeout := fs.Duration("timeout", 5*time.Minute, "bound of one scenario")
	scenarios := fs.String("scenarios", "", "comma-separated scenarios to run ("+strings.Join(bench.ScenarioNames, ", ")+"); empty runs all")
	halfRate := fs.Float64("half-rate", 0, "pods/s of the half-rate scenario when shardnet-3 does not run (0: half of shardnet-3's rate); the 90% scenarios run at 1.8 times it")
	rounds := fs.Int("rounds", 1, "times the full-speed scenarios (raw, shardnet-1, shardnet-3, baseline) and the half-rate pair (raw-half, shardnet-3-half) run, in the same order each time; their ratios are the medians of each round's (restarts and profiles in the first round only)")
	restarts := fs.Int("restarts", 3, "times every replica of shardnet-3 is restarted once its pods are routed, each timed back to steady state and followed by a measurement of the restarts' ceiling (the ratio is of the medians); with -profiles, one more restart, profiled, comes first and is left out of the ratios")
	profiles := fs.Bool("profiles", true, "write pprof heap and CPU profiles of the shardnet-3 replicas and the API server to OUT/pprof")
	memLimit := fs.String("replica-memory-limit", "512Mi", "the replicas' --memory-limit, as deploy/base sets it (empty: the replicas' default, auto)")
	gcPercent := fs.Int("replica-gc-percent", 0, "the replicas' --gc-percent (0, as deploy/base: none, so GOGC or Go's 100)")
	pin := fs.Bool("pin", true, "run etcd, kube-apiserver and kwok on half the CPUs and the bench, the replicas and ovsdb-server on the other half, as a cluster's control plane has cores of its own (false: every process shares every CPU, and the replicas take their CPU from the API server's)")
	replicaArgs := fs.String("replica-args", "", "more flags for every replica, space-separated (for example -v=4)")
	kubeconfig := fs.String("kubeconfig", "", "run against the cluster of this kubeconfig (kwok and shardnet installed there) instead of servers of the bench's own: the raw ceiling as plain pod creates and "+bench.InstalledScenario+"; everything created is labelled "+bench.LabelRun+"=<run id> and deleted at the end")
	keep := fs.Bool("keep", false, "with -kubeconfig: leave the run's namespaces, pods and kwok nodes in place")
	subnet := fs.String("subnet", "", "with -kubeconfig: the subnet the pods of "+bench.InstalledScenario+" ask for (empty: the cluster's default subnet)")
	progressEvery := fs.Duration("progress-interval", 2*time.Second, "interval of the progress lines (pods created, allocated, routed, rate, elapsed) written to stderr during every scenario; 0 turns them off")
	nbCeiling := fs.Int("nb-ceiling-ports", 2000, "ports the Northbound ceiling inserts at each batch size (1, 10, 100, 1000) before the scenarios; 0 skips it")
	check := fs.String("check", "", "check this result.json against -thresholds instead of running")
	thresholds := fs.String("thresholds", "bench/thresholds.json", "committed lower bounds of the ratios")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *check != "" {
		return runCheck(*check, *thresholds)
	}
	var only []string
	if *scenarios != "" {
		only = strings.Split(*scenarios, ",")
	}
	if *kubeconfig == "" && (*keep || *subnet != "") {
		fmt.Fprintln(os.Stderr, "shardnet-bench: -keep and -subnet apply to a run against a cluster (-kubeconfig)")
		return 2
	}
	// The micro-benchmarks measure this machine, not a cluster: against
	// one they run only when asked for.
	if *kubeconfig != "" && !flagSet(fs, "micro") {
		*micro = false
	}
	// klog writes to stderr, whatever its output, unless told not to.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
			return
		}
		// A second signal ends the process at once.
		signal.Stop(sigs)
		if *kubeconfig != "" && !*keep {
			fmt.Fprintln(os.Stderr, "shardnet-bench: interrupted; deleting what the run created (interrupt again to quit and leave it)")
		}
		cancel()
	}()
	wd, _ := os.Getwd()
	res, err := bench.Run(ctx, bench.Config{
		Pods: *pods, IPRecords: *ipRecords, Shardnet: *bin, Out: *out,
		Micro: *micro, MicroDir: wd, Timeout: *timeout, Progress: os.Stdout,
		ProgressLines: os.Stderr, ProgressInterval: *progressEvery,
		Scenarios: only, HalfRate: *halfRate, Rounds: *rounds, Restarts: *restarts, Profiles: *profiles, ReplicaMemoryLimit: *memLimit, ReplicaGCPercent: *gcPercent,
		ReplicaArgs: strings.Fields(*replicaArgs), NBCeilingPorts: nbCeilingPorts(*nbCeiling), Pin: *pin && *kubeconfig == "",
		Kubeconfig: *kubeconfig, Keep: *keep, Subnet: *subnet,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "shardnet-bench: %v\n", err)
		return 1
	}
	fmt.Println()
	fmt.Print(bench.Markdown(res))
	fmt.Printf("\nwritten to %s\n", *out)
	return 0
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func runCheck(resultPath, thresholdsPath string) int {
	res, err := bench.Load(resultPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "shardnet-bench: %v\n", err)
		return 1
	}
	b, err := os.ReadFile(thresholdsPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "shardnet-bench: %v\n", err)
		return 1
	}
	var t bench.Thresholds
	if err := json.Unmarshal(b, &t); err != nil {
		fmt.Fprintf(os.Stderr, "shardnet-bench: %s: %v\n", thresholdsPath, err)
		return 1
	}
	fails := bench.Check(res, t)
	fmt.Printf("shardnet/raw %.3f (min %.3f), 1-replica/raw %.3f (min %.3f), batched/baseline %.3f (min %.3f)\n",
		res.Ratios.ShardnetVsRaw, t.ShardnetVsRaw, res.Ratios.OneReplicaVsRaw, t.OneReplicaVsRaw, res.Ratios.BatchedVsBaseline, t.BatchedVsBaseline)
	for _, f := range fails {
		fmt.Println("regression:", f)
	}
	if len(fails) > 0 {
		return 1
	}
	fmt.Println("bench-check: ratios within the committed thresholds")
	return 0
}

// nbCeilingPorts maps the flag (0: skip) to bench.Config's (negative:
// skip).
func nbCeilingPorts(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}
