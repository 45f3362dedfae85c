package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// write stores result.json, report.md and the SVG plots in dir.
func write(dir string, r *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "throughput.svg"), []byte(throughputSVG(r)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "latency.svg"), []byte(latencySVG(r)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(Markdown(r)), 0o644)
}

// roundsMarkdown writes the figures of every round, when the scenarios
// ran more than once.
func roundsMarkdown(b *strings.Builder, r *Result) {
	if len(r.Rounds) < 2 {
		return
	}
	fmt.Fprintf(b, "\n## Rounds\n\nThe full-speed scenarios ran %d times, one after the other in the same order, and so did the half-rate pair, back to back; the tables above have the first round, and the ratios below are the medians of the rounds' own.\n\n", len(r.Rounds))
	b.WriteString("| round | raw pods/s | 1 replica | 3 replicas | baseline | 3 replicas / raw | 1 replica / raw | batched / baseline | half-rate p99 ms | raw writer's | half-rate p99 / raw's |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, rd := range r.Rounds {
		p := rd.PodsPerSecond
		fmt.Fprintf(b, "| %d | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %.0f | %.0f | %.2f |\n", i+1,
			p["raw"], p["shardnet-1"], p["shardnet-3"], p["baseline"], rd.ShardnetVsRaw, rd.OneReplicaVsRaw, rd.BatchedVsBaseline,
			rd.P99[HalfRateScenario], rd.P99[RawHalfScenario], rd.HalfRateP99VsRaw)
	}
}

// Markdown is the short report of a result.
func Markdown(r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# shardnet bench, %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	if r.Cluster != nil {
		clusterMarkdown(&b, r)
		return b.String()
	}
	fmt.Fprintf(&b, "%d kwok pods per scenario, IP records %v; every figure below was measured in this one run.\n\n", r.Pods, r.IPRecords)
	b.WriteString(cpusLine(r.CPUs))
	b.WriteString("| scenario | replicas | shards | batching | pods/s | p50 ms | p95 ms | p99 ms | longest stall s | API writes/pod | NB txns/pod | peak RSS MiB | CPU s |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range r.Scenarios {
		fmt.Fprintf(&b, "| %s | %d | %d | %v | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | %.3f | %s | %s |\n",
			s.Name, s.Replicas, s.Shards, s.Batching, s.PodsPerSecond, s.P50, s.P95, s.P99, s.StallSeconds,
			s.APIWritesPerPod, s.NBTransactionsPerPod, floats(s.PeakRSSMiB), floats(s.CPUSeconds))
	}
	if len(r.Scenarios) > 0 {
		b.WriteString("\nThe longest stall is the longest time no pod became done while created pods waited (a plateau of the timeline), the first pod's wait included.\n")
	}
	for _, sc := range r.Scenarios {
		if len(sc.Stages) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## Where a pod's time goes: %s\n\nCreate to annotated: p50 %.0f ms, p99 %.0f ms. The bench's own create requests and its watch's delay after them (every pod, exact), then the stages of the replicas' reconciles over the scenario (from 0.25 ms x 1.5 histogram buckets; estimates within a bucket). What they leave of the latency is the replicas' informer delay (about the bench's watch delay), retries, and the watch delay of the patch. The queue counts every time a key was taken from a queue: a key queued again while its reconcile runs (kwok's status update, the patch's own event) waits for that reconcile to end, off the pod's way to routed, so the queue's p99 can be more than what a pod's first reconcile waits; the idle-key row counts only keys queued while neither waiting nor in flight:\n\n", sc.Name, sc.P50, sc.P99)
		b.WriteString("| stage | count | p50 ms | p99 ms |\n|---|---|---|---|\n")
		for _, st := range sc.Stages {
			fmt.Fprintf(&b, "| %s | %.0f | %.1f | %.1f |\n", st.Stage, st.Count, st.P50, st.P99)
		}
		if line := cpuLine(sc.CPUMsPerPod); line != "" {
			fmt.Fprintf(&b, "\nCPU per pod over the create phase: %s.\n", line)
		}
	}
	if len(r.NBCeiling) > 0 {
		fmt.Fprintf(&b, "\n## Northbound ceiling\n\nPort inserts into a Northbound of its own, %d transactions in flight, measured in this run.\n\n", NBCeilingInFlight)
		b.WriteString("| ports per transaction | ports | seconds | ports/s | transactions/s |\n|---|---|---|---|---|\n")
		for _, c := range r.NBCeiling {
			fmt.Fprintf(&b, "| %d | %d | %.2f | %.0f | %.0f |\n", c.Batch, c.Ports, c.Seconds, c.PortsPerSecond, c.TransactionsPerSecond)
		}
	}
	roundsMarkdown(&b, r)
	b.WriteString("\n## Ratios\n\n")
	// A ratio is reported only when both its scenarios ran.
	ran := func(names ...string) bool {
		for _, n := range names {
			if _, ok := r.Scenario(n); !ok {
				return false
			}
		}
		return true
	}
	if ran("shardnet-3", "raw") {
		fmt.Fprintf(&b, "- shardnet (3 replicas) / raw API ceiling: **%.2f** (goal >= %.2f)\n", r.Ratios.ShardnetVsRaw, CeilingGoal)
	}
	if ran("shardnet-1", "raw") {
		fmt.Fprintf(&b, "- shardnet (1 replica) / raw API ceiling: **%.2f** (goal >= %.2f)\n", r.Ratios.OneReplicaVsRaw, CeilingGoal)
	}
	if raw, ok := r.Scenario("raw"); ok {
		if three, ok := r.Scenario("shardnet-3"); ok {
			if line := cpuShareLine(raw, three); line != "" {
				b.WriteString(line)
			}
		}
	}
	if three, ok := r.Scenario("shardnet-3"); ok {
		fmt.Fprintf(&b, "- longest stall of shardnet (3 replicas): **%.2f s**, %.2f s after the first create (goal <= 1 s)", three.StallSeconds, three.StallAtSeconds)
		if three.CreatesPerSecond > 0 {
			fmt.Fprintf(&b, "; the bench's own creates returned at %.0f/s during it, against %.0f/s over the creates", three.StallCreatesPerSecond, three.CreatesPerSecond)
		}
		if len(three.ClosedWatches) > 0 {
			fmt.Fprintf(&b, "; the API server closed %s meanwhile as too slow to read (their events, the bench's own included, arrived late and at once)", closedWatchesText(three.ClosedWatches))
		}
		if raw, ok := r.Scenario("raw"); ok {
			fmt.Fprintf(&b, "; the raw ceiling's in the same run: %.2f s, %.2f s after its first create", raw.StallSeconds, raw.StallAtSeconds)
			if len(raw.ClosedWatches) > 0 {
				fmt.Fprintf(&b, ", with %s closed", closedWatchesText(raw.ClosedWatches))
			}
		}
		b.WriteString("\n")
	}
	if ran("shardnet-3", "baseline") {
		fmt.Fprintf(&b, "- batched / baseline (one shard, one NB transaction per pod): **%.2f**\n", r.Ratios.BatchedVsBaseline)
	}
	if ran(AttachScenario, RawAttachScenario) {
		fmt.Fprintf(&b, "- shardnet (3 replicas), one OVN attachment per pod / raw API ceiling of the same writes: **%.2f** (no threshold)\n", r.Ratios.AttachVsRawAttach)
	}
	if ports, ok := r.Scenario(PortsScenario); ok {
		fmt.Fprintf(&b, "- pods with port security, two VIPs and a security group (3 replicas): %.0f pods/s, **%.2f** of plain pods' (no threshold); %.2f API writes, %.3f NB transactions and **%.2f NB requests** per pod (a reconcile that writes sends one request with every row of the pod)\n",
			ports.PodsPerSecond, r.Ratios.PortsVsPlain, ports.APIWritesPerPod, ports.NBTransactionsPerPod, ports.NBRequestsPerPod)
	}
	if ran("shardnet-3") {
		fmt.Fprintf(&b, "- shardnet (3 replicas) / kube-ovn's 20 pods/s: **%.1fx** (goal >= 15x)\n", r.Ratios.VsKubeOVN)
	}
	if three, ok := r.Scenario("shardnet-3"); ok && len(r.NBCeiling) > 0 {
		best := bestNBCeiling(r.NBCeiling)
		ports := three.PodsPerSecond * float64(1+three.Attachments)
		fmt.Fprintf(&b, "- shardnet (3 replicas) Northbound ports / the Northbound's own ceiling: **%.3f** (%.0f ports/s in %.0f transactions/s; ceiling %.0f ports/s at batch %d)\n",
			r.Ratios.NBPortsVsCeiling, ports, three.PodsPerSecond*three.NBTransactionsPerPod, best.PortsPerSecond, best.Batch)
	}
	if half, ok := r.Scenario(HalfRateScenario); ok {
		p99, rounds := r.Ratios.HalfRateP99Ms, len(r.Rounds) > 1
		fmt.Fprintf(&b, "- p99 create-to-routed at half the 3-replica rate (%.0f pods/s): **%.0f ms**", half.CreateRate, p99)
		if rounds {
			fmt.Fprintf(&b, ", the median of %d rounds", len(r.Rounds))
		}
		fmt.Fprintf(&b, " (goal <= %d ms", HalfRateP99GoalMs)
		if p99 > HalfRateP99GoalMs {
			fmt.Fprintf(&b, ", missed by %.0f ms", p99-HalfRateP99GoalMs)
		}
		b.WriteString(")")
		if raw, ok := r.Scenario(RawHalfScenario); ok {
			if rounds {
				fmt.Fprintf(&b, "; over the raw writer's p99 at the same rate in the same round, shardnet's is **%.2fx** (the median of the rounds')", r.Ratios.HalfRateP99VsRaw)
			} else {
				fmt.Fprintf(&b, "; the raw writer's p99 at the same rate: %.0f ms, shardnet's is **%.2fx** that", raw.P99, r.Ratios.HalfRateP99VsRaw)
			}
			if c0, c3 := coresBusy(raw), coresBusy(half); c0 > 0 && c3 > 0 {
				fmt.Fprintf(&b, "; every process together kept %.2f cores busy over the raw writer's phase and %.2f over shardnet's", c0, c3)
			}
		}
		b.WriteString("\n")
	}
	if near, ok := r.Scenario(NearRateScenario); ok {
		fmt.Fprintf(&b, "- p99 create-to-routed at %.0f%% of the 3-replica rate (%.0f pods/s): **%.0f ms** (reported, no goal)",
			NearRateFraction*100, near.CreateRate, near.P99)
		if raw, ok := r.Scenario(RawNearScenario); ok {
			fmt.Fprintf(&b, "; the raw writer's p99 at the same rate: %.0f ms, shardnet's is **%.2fx** that", raw.P99, r.Ratios.NearRateP99VsRaw)
		}
		b.WriteString("\n")
	}
	if three, ok := r.Scenario("shardnet-3"); ok && len(three.PeakRSSMiB) > 0 {
		peak := slices.Max(three.PeakRSSMiB)
		fmt.Fprintf(&b, "- peak RSS of a replica (3 replicas, %d pods): **%.0f MiB** routing them%s (goal <= %d MiB at 50,000 pods",
			r.Pods, peak, restartPeaks(three.Restarts), PeakRSSGoalMiB)
		for _, rs := range three.Restarts {
			peak = max(peak, slices.Max(rs.PeakRSSMiB))
		}
		if peak > PeakRSSGoalMiB {
			fmt.Fprintf(&b, ", missed by %.0f MiB", peak-PeakRSSGoalMiB)
		}
		b.WriteString(")\n")
		if file := fileRSS(three.FileRSSMiB, three.Restarts); file != "" {
			fmt.Fprintf(&b, "- of it, mapped from the binary (its code and read-only data, `RssFile`, read at the same moment; pages the kernel can drop and read again): %s\n", file)
		}
		if live := liveHeaps(three.LiveHeapMiB, three.Restarts); live != "" {
			fmt.Fprintf(&b, "- live heap of a replica (what its last collection kept, `go_gc_heap_live_bytes`; --memory-limit is sized from it): %s\n", live)
		}
		for i, rs := range three.Restarts {
			fmt.Fprintf(&b, "- restart %d of every replica to steady state (%d pods): **%s s** (goal <= %d s at 50,000 pods", i+1, r.Pods, secs(rs.Seconds), RestartGoalSeconds)
			if rs.Seconds > RestartGoalSeconds {
				fmt.Fprintf(&b, ", missed by %.1f s", rs.Seconds-RestartGoalSeconds)
			}
			fmt.Fprintf(&b, "): ready after %s s, %d pod reconciles, %.0f API writes and %.0f NB transactions on the way; the old replicas took %.1f s to exit",
				secs(rs.ReadySeconds), rs.Reconciled, rs.APIWrites, rs.NBTransactions, rs.StopSeconds)
			if len(rs.CPUSeconds) > 0 {
				fmt.Fprintf(&b, "; CPU to get there: the replicas %s s", floatsPrec(rs.CPUSeconds, 2))
				if len(rs.MinorFaults) > 0 {
					fmt.Fprintf(&b, " (%s s of it in the kernel; %s page faults, each new process's first touch of its memory)", floatsPrec(rs.SystemCPUSeconds, 2), counts(rs.MinorFaults))
				}
				fmt.Fprintf(&b, ", kube-apiserver and etcd %.2f s, ovsdb-server %.2f s", rs.ServersCPUSeconds, rs.NBCPUSeconds)
			}
			if c := rs.Ceiling; c != nil {
				fmt.Fprintf(&b, "; the ceiling measured right after it: %s s (CPU: the clients' processes %.2f s with %d page faults, kube-apiserver and etcd %.2f s)",
					secs(c.Seconds), c.CPUSeconds, c.MinorFaults, c.ServersCPUSeconds)
				if in := c.InProcess; in != nil {
					fmt.Fprintf(&b, ", in the bench's own process %s s (CPU: the clients %.2f s with %d page faults, kube-apiserver and etcd %.2f s)",
						secs(in.Seconds), in.CPUSeconds, in.MinorFaults, in.ServersCPUSeconds)
				}
			}
			if rs.Profiled && len(three.Restarts) > 1 {
				b.WriteString("; profiled, and left out of the ratios")
			}
			b.WriteString("\n")
		}
		if three.RawReloadSeconds > 0 {
			fmt.Fprintf(&b, "- the restarts' ceiling, %d plain clients, each a process of its own started for it as a restarted replica is, loading the pods, claims and IP records at once, decoded as the replicas decode them (the pods as far as their cache keeps them, the claims and IP records as their metadata): **%s s**",
				three.Replicas, secs(three.RawReloadSeconds))
			if n := len(ceilingSeconds(three.Restarts)); n > 1 {
				fmt.Fprintf(&b, ", the median of %d measurements, one after each timed restart", n)
			}
			fmt.Fprintf(&b, "; the median restart (%s s) took **%.2fx** that", secs(r.Ratios.RestartMedianSeconds), r.Ratios.RestartVsRawReload)
			if len(timedRestarts(three.Restarts)) > 1 {
				fmt.Fprintf(&b, ", the slowest (%s s) %.2fx", secs(r.Ratios.RestartSeconds), r.Ratios.RestartSeconds/three.RawReloadSeconds)
			}
			if three.InProcessReloadSeconds > 0 {
				fmt.Fprintf(&b, "; the same clients in the bench's own process, whose start is paid and whose memory is grown already: %s s, the median restart %.2fx that",
					secs(three.InProcessReloadSeconds), r.Ratios.RestartMedianSeconds/three.InProcessReloadSeconds)
			}
			b.WriteString("\n")
		}
		if in := three.InProcessReloadSeconds; three.FullReloadSeconds > 0 && in > 0 {
			fmt.Fprintf(&b, "- the same clients in the bench's process decoding them all in full (as replicas did before the claims and IP records carried their spec in their metadata and the pods were decoded as far as the cache keeps them): **%.1f s**; as the replicas decode them they took %.2fx that\n",
				three.FullReloadSeconds, in/three.FullReloadSeconds)
		}
	}
	if ran("shardnet-3", "raw") && r.Ratios.ShardnetVsRaw < CeilingGoal {
		fmt.Fprintf(&b, "\nThe %.2f goal is missed by %.0f%%: see the stages above, the CPU column and a pprof of a replica (run it with `--enable-pprof`, then `go tool pprof http://127.0.0.1:6060/debug/pprof/profile`) for where the time goes.\n",
			CeilingGoal, (CeilingGoal-r.Ratios.ShardnetVsRaw)/CeilingGoal*100)
	}
	if len(r.Micro) > 0 {
		b.WriteString("\n## Micro-benchmarks\n\n| benchmark | value | unit |\n|---|---|---|\n")
		for _, m := range r.Micro {
			fmt.Fprintf(&b, "| %s | %.3g | %s |\n", m.Name, m.Value, m.Unit)
		}
	}
	b.WriteString("\nProfiles (when taken): `pprof/`, heap of each replica once the pods were routed and after the first restart; CPU of the API server and the replicas over the first 20 s of the raw and 3-replica create phases, at full and at half rate (`cpu-routing-*`), over that restart in 30 s pieces until the replicas were steady (`cpu-restart-*`: the first 30 s; `cpu-restart-*.2` the next, and so on; the API server's over the first 30 s only) (`go tool pprof -top FILE`). Replica logs: `logs/`.\n")
	b.WriteString("\nPlots: `throughput.svg` (pods annotated over time), `latency.svg` (create-to-annotated distribution, log time axis).\n")
	return b.String()
}

// clusterMarkdown is the report of a run against an existing cluster.
func clusterMarkdown(b *strings.Builder, r *Result) {
	c := r.Cluster
	subnet := "the subnet the installed shardnet picks (none is marked default)"
	switch {
	case c.SubnetGiven:
		subnet = "subnet " + c.Subnet
	case c.Subnet != "":
		subnet = "the cluster's default subnet, " + c.Subnet
	}
	fmt.Fprintf(b, "%d kwok pods per scenario against the cluster at %s (run %s, objects labelled `%s=%s`); every figure below was measured in this one run. ",
		r.Pods, c.Server, c.RunID, LabelRun, c.RunID)
	fmt.Fprintf(b, "raw: plain pods (host network, which shardnet leaves alone), timed from create to seen by the bench's watch; %s: pods on %s, timed from create to routed by the shardnet installed there.\n\n",
		InstalledScenario, subnet)
	b.WriteString("| scenario | pods/s | p50 ms | p95 ms | p99 ms | seconds |\n|---|---|---|---|---|---|\n")
	for _, s := range r.Scenarios {
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %.0f | %.0f | %.1f |\n", s.Name, s.PodsPerSecond, s.P50, s.P95, s.P99, s.Seconds)
	}
	if _, ok := r.Scenario("raw"); ok {
		if _, ok := r.Scenario(InstalledScenario); ok {
			fmt.Fprintf(b, "\n## Ratios\n\n- installed shardnet / plain pod creates: **%.2f**\n", r.Ratios.InstalledVsRaw)
		}
	}
	if len(r.Micro) > 0 {
		b.WriteString("\n## Micro-benchmarks (this machine)\n\n| benchmark | value | unit |\n|---|---|---|\n")
		for _, m := range r.Micro {
			fmt.Fprintf(b, "| %s | %.3g | %s |\n", m.Name, m.Value, m.Unit)
		}
	}
	b.WriteString("\nPlots: `throughput.svg` (pods done over time), `latency.svg` (create-to-done distribution, log time axis).\n")
}

func restartPeaks(rs []Restart) string {
	if len(rs) == 0 {
		return ""
	}
	var parts []string
	for _, r := range rs {
		if len(r.PeakRSSMiB) > 0 {
			parts = append(parts, fmt.Sprintf("%.0f", slices.Max(r.PeakRSSMiB)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, " / ") + " MiB after a restart"
}

// liveHeaps says the largest live heap of the replicas once routed and
// after each restart, "" when none was read.
func liveHeaps(routed []float64, rs []Restart) string {
	return largestPerPhase(routed, rs, func(r Restart) []float64 { return r.LiveHeapMiB }, "**%.0f MiB** once the pods were routed")
}

// fileRSS is the largest file-mapped RSS of the replicas once routed and
// after each restart ("" when none was read).
func fileRSS(routed []float64, rs []Restart) string {
	return largestPerPhase(routed, rs, func(r Restart) []float64 { return r.FileRSSMiB }, "%.0f MiB routing")
}

// largestPerPhase lists the largest of the replicas' readings once routed
// (formatted by routedFormat) and after each restart (of restart's), the
// phases with no reading (all zero) left out.
func largestPerPhase(routed []float64, rs []Restart, restart func(Restart) []float64, routedFormat string) string {
	var parts []string
	if len(routed) > 0 && slices.Max(routed) > 0 {
		parts = append(parts, fmt.Sprintf(routedFormat, slices.Max(routed)))
	}
	for i, r := range rs {
		if v := restart(r); len(v) > 0 && slices.Max(v) > 0 {
			parts = append(parts, fmt.Sprintf("%.0f MiB after restart %d", slices.Max(v), i+1))
		}
	}
	return strings.Join(parts, ", ")
}

// secs formats seconds with two decimals under 10 s, one above.
func secs(s float64) string {
	if s < 10 {
		return strconv.FormatFloat(s, 'f', 2, 64)
	}
	return strconv.FormatFloat(s, 'f', 1, 64)
}

func floats(v []float64) string { return floatsPrec(v, 0) }

// floatsPrec is floats with prec digits after the point.
func floatsPrec(v []float64, prec int) string {
	if len(v) == 0 {
		return "-"
	}
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'f', prec, 64)
	}
	return strings.Join(parts, "/")
}

// counts formats whole numbers, as floats does.
func counts(v []int64) string {
	if len(v) == 0 {
		return "-"
	}
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(parts, "/")
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"}

// throughputSVG plots annotated pods over time, one line per scenario.
func throughputSVG(r *Result) string {
	var series []svgSeries
	maxX := 1.0
	for _, s := range r.Scenarios {
		var pts [][2]float64
		for i, n := range s.Timeline {
			pts = append(pts, [2]float64{float64(i) * 0.25, float64(n)})
			maxX = max(maxX, float64(i)*0.25)
		}
		series = append(series, svgSeries{s.Name, pts})
	}
	return plot("Pods annotated over time", "seconds since first create", "pods", series, linearAxis(maxX))
}

// latencySVG plots the create-to-annotated CDF of each scenario, on a log
// time axis so that a p50 of tens of milliseconds and a tail of seconds
// both read.
func latencySVG(r *Result) string {
	var series []svgSeries
	lo, hi := math.Inf(1), 0.0
	for _, s := range r.Scenarios {
		var pts [][2]float64
		n := len(s.Latencies)
		step := max(1, n/400)
		for i := 0; i < n; i += step {
			pts = append(pts, [2]float64{s.Latencies[i], float64(i+1) / float64(n) * 100})
		}
		if n > 0 {
			pts = append(pts, [2]float64{s.Latencies[n-1], 100})
			lo, hi = min(lo, s.Latencies[0]), max(hi, s.Latencies[n-1])
		}
		series = append(series, svgSeries{s.Name, pts})
	}
	if hi == 0 {
		lo, hi = 1, 1000
	}
	return plot("Create to annotated (CDF)", "create to annotated (log scale)", "% of pods", series, logAxis(lo, hi))
}

type svgSeries struct {
	name string
	pts  [][2]float64
}

// axis maps the values of a plot's x axis to [0, 1] and has its ticks.
type axis struct {
	lo, hi float64
	log    bool
	ticks  []float64
	// labelled reports whether tick i gets a label (every one when nil).
	labelled func(i int) bool
	label    func(v float64) string
}

// frac is where v lies on the axis, 0 at lo and 1 at hi.
func (a axis) frac(v float64) float64 {
	if a.log {
		v = max(v, a.lo)
		return (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	}
	return (v - a.lo) / (a.hi - a.lo)
}

// linearAxis runs from 0 to hi with a tick at every quarter.
func linearAxis(hi float64) axis {
	a := axis{hi: max(hi, 1e-9), label: func(v float64) string { return fmt.Sprintf("%.4g", v) }}
	for i := range 5 {
		a.ticks = append(a.ticks, a.hi*float64(i)/4)
	}
	return a
}

// maxLabelledDecades is the widest log axis whose round values are all
// labelled: on the plots' 500 px, 1 and 2 stay 37 px apart.
const maxLabelledDecades = 4

// logAxis is a log axis of milliseconds from the round value (see
// logTicks) at or below lo to the one at or above hi, with a tick at every
// round value. On an axis wider than maxLabelledDecades only the powers
// of ten are labelled, the others are grid lines.
func logAxis(lo, hi float64) axis {
	lo = max(lo, 1e-3) // 1 µs: the latencies' resolution
	hi = max(hi, lo)
	a := axis{lo: roundBelow(lo), hi: roundAbove(hi), log: true, label: msLabel}
	if a.hi <= a.lo {
		a.hi = roundAbove(a.lo * 1.5)
	}
	a.ticks = logTicks(a.lo, a.hi)
	if math.Log10(a.hi/a.lo) > maxLabelledDecades+1e-9 {
		a.labelled = func(i int) bool { return mantissa(a.ticks[i]) == 1 }
	}
	return a
}

// roundSteps are the mantissas of the round values of a log axis.
var roundSteps = []float64{1, 2, 5}

// roundValue is m times 10^e, rounded as the decimal it stands for.
func roundValue(m float64, e int) float64 {
	if e < 0 {
		return m / math.Pow(10, float64(-e))
	}
	return m * math.Pow(10, float64(e))
}

// logTicks are the round values (1, 2 and 5 times a power of ten) from lo
// to hi, both included: 20, 50, 100, 200, 500, 1000 and 2000 for 20 and
// 3000.
func logTicks(lo, hi float64) []float64 {
	if lo <= 0 || hi < lo {
		return nil
	}
	const tol = 1e-9
	var out []float64
	for e := int(math.Floor(math.Log10(lo))) - 1; ; e++ {
		for _, m := range roundSteps {
			v := roundValue(m, e)
			if v > hi*(1+tol) {
				return out
			}
			if v >= lo*(1-tol) {
				out = append(out, v)
			}
		}
	}
}

// roundBelow is the largest round value at or below v > 0.
func roundBelow(v float64) float64 {
	e := int(math.Floor(math.Log10(v)))
	best := roundValue(1, e-1)
	for _, ee := range []int{e - 1, e, e + 1} {
		for _, m := range roundSteps {
			if r := roundValue(m, ee); r <= v*(1+1e-9) {
				best = max(best, r)
			}
		}
	}
	return best
}

// roundAbove is the smallest round value at or above v > 0.
func roundAbove(v float64) float64 {
	e := int(math.Floor(math.Log10(v)))
	best := roundValue(1, e+2)
	for _, ee := range []int{e - 1, e, e + 1} {
		for _, m := range roundSteps {
			if r := roundValue(m, ee); r >= v*(1-1e-9) {
				best = min(best, r)
			}
		}
	}
	return best
}

// mantissa is v's leading digit's value (1 for 100, 5 for 0.5).
func mantissa(v float64) float64 {
	return math.Round(v / math.Pow(10, math.Floor(math.Log10(v))+1e-12))
}

// msLabel names a duration of ms milliseconds: 500µs, 35ms, 2s.
func msLabel(ms float64) string {
	num := func(v float64) string { return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64) }
	switch {
	case ms >= 1000:
		return num(ms/1000) + "s"
	case ms >= 1:
		return num(ms) + "ms"
	}
	return num(ms*1000) + "µs"
}

func plot(title, xlabel, ylabel string, series []svgSeries, xa axis) string {
	const w, h, left, right, top, bottom = 720.0, 420.0, 70.0, 150.0, 40.0, 50.0
	maxY := 1.0
	for _, s := range series {
		for _, p := range s.pts {
			maxY = max(maxY, p[1])
		}
	}
	px := func(x float64) float64 { return left + xa.frac(x)*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - y/maxY*(h-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="22" font-size="15">%s</text>`+"\n", left, title)
	if xa.log {
		for _, x := range xa.ticks {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#e0e0e0"/>`+"\n", px(x), top, px(x), h-bottom)
		}
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/><line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n",
		left, h-bottom, w-right, h-bottom, left, top, left, h-bottom)
	for i, x := range xa.ticks {
		if xa.labelled != nil && !xa.labelled(i) {
			continue
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", px(x), h-bottom+16, xa.label(x))
	}
	for i := 0; i <= 4; i++ {
		y := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%.4g</text>`+"\n", left-6, py(y)+4, y)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`, (left+w-right)/2, h-12, xlabel)
	fmt.Fprintf(&b, `<text x="16" y="%.0f" transform="rotate(-90 16 %.0f)" text-anchor="middle">%s</text>`+"\n", (top+h-bottom)/2, (top+h-bottom)/2, ylabel)
	for i, s := range series {
		color := palette[i%len(palette)]
		var pts []string
		for _, p := range s.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="12" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			w-right+12, top+float64(i)*20, color, w-right+30, top+float64(i)*20+11, s.name)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// cpuOrder is the order processes are named in the CPU lines.
var cpuOrder = []string{"kube-apiserver", "etcd", "kwok", "replicas", "bench"}

// cpuLine names the CPU milliseconds per pod of each process, "" when
// none was measured.
func cpuLine(ms map[string]float64) string {
	var parts []string
	for _, k := range cpuOrder {
		if v, ok := ms[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.1f ms", k, v))
		}
	}
	return strings.Join(parts, ", ")
}

// coresBusy is how many cores every process together kept busy over the
// scenario's create phase: its CPU per pod times its pods per second; 0
// when the CPU was not measured. Near the machine's cores, a pod's
// latency includes waiting for one.
func coresBusy(sc Scenario) float64 {
	return busyMsPerPod(sc.CPUMsPerPod) * sc.PodsPerSecond / 1000
}

// busyMsPerPod is the CPU milliseconds per pod of every process together.
func busyMsPerPod(ms map[string]float64) float64 {
	t := 0.0
	for _, v := range ms {
		t += v
	}
	return t
}

// cpuShareLine compares the CPU per pod of the raw and 3-replica create
// phases. On a machine the replicas share with the API server, what they
// use is taken from it: when both phases keep the cores busy, the pods/s
// of each is about the cores over its CPU per pod, so shardnet/raw is
// about the raw phase's CPU per pod over the 3-replica phase's, whatever
// the replicas' own path. With the servers on CPUs of their own in both
// (Scenario.ServerCPUs), the same holds of the servers' CPU alone: where it is the
// limit, shardnet/raw is about what a pod costs the servers with the raw
// writer over what it costs them with the replicas.
func cpuShareLine(raw, three Scenario) string {
	api0, ok0 := raw.CPUMsPerPod["kube-apiserver"]
	api3, ok3 := three.CPUMsPerPod["kube-apiserver"]
	reps, okr := three.CPUMsPerPod["replicas"]
	if !ok0 || !ok3 || !okr || api0 <= 0 {
		return ""
	}
	busy0, busy3 := busyMsPerPod(raw.CPUMsPerPod), busyMsPerPod(three.CPUMsPerPod)
	if busy0 <= 0 || busy3 <= 0 {
		return ""
	}
	line := fmt.Sprintf("- CPU per pod over the create phase (no threshold): the API server used %.1f ms with the raw writer and %.1f ms with 3 replicas (%.2fx); the replicas together %.1f ms, %.0f%% of the busy CPU of that phase. ",
		api0, api3, api3/api0, reps, 100*reps/busy3)
	if len(raw.ServerCPUs) > 0 && slices.Equal(raw.ServerCPUs, three.ServerCPUs) {
		srv0, srv3 := serversMsPerPod(raw.CPUMsPerPod), serversMsPerPod(three.CPUMsPerPod)
		return line + fmt.Sprintf("The servers (kube-apiserver, etcd, kwok) on their %s: %.1f ms per pod raw (%.2f cores busy at its rate), %.1f ms with 3 replicas (%.2f cores): where the servers' CPU is the limit, shardnet/raw is about %.2f\n",
			cpuList(three.ServerCPUs), srv0, srv0*raw.PodsPerSecond/1000, srv3, srv3*three.PodsPerSecond/1000, srv0/srv3)
	}
	return line + fmt.Sprintf("Every process together: %.1f ms per pod raw (%.2f cores busy at its rate), %.1f ms with 3 replicas (%.2f cores): where the cores are the limit, shardnet/raw is about %.2f\n",
		busy0, coresBusy(raw), busy3, coresBusy(three), busy0/busy3)
}

// serversMsPerPod is the CPU milliseconds per pod of etcd,
// kube-apiserver and kwok together.
func serversMsPerPod(ms map[string]float64) float64 {
	return ms["kube-apiserver"] + ms["etcd"] + ms["kwok"]
}
