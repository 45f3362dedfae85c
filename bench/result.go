package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"
)

// Result is one bench run, as written to result.json.
type Result struct {
	Started   time.Time  `json:"started"`
	Pods      int        `json:"pods"`
	IPRecords bool       `json:"ipRecords"`
	Scenarios []Scenario `json:"scenarios"`
	Ratios    Ratios     `json:"ratios"`
	Micro     []Micro    `json:"micro,omitempty"`
	// NBCeiling is the Northbound's own port insert rate by batch size,
	// measured in the same run (measureNBCeiling).
	NBCeiling []NBCeiling `json:"nbCeiling,omitempty"`
	// Cluster is set when the run measured an existing cluster
	// (Config.Kubeconfig) rather than servers of its own.
	Cluster *ClusterRun `json:"cluster,omitempty"`
	// CPUs is how the processes of a run on servers of its own were laid
	// out on the CPUs (Config.Pin).
	CPUs *CPUs `json:"cpus,omitempty"`
	// Rounds are the figures of every round of the full-speed scenarios
	// and of the half-rate pair when they ran more than once
	// (Config.Rounds), the first round's being those of Scenarios.
	Rounds []Round `json:"rounds,omitempty"`
}

// Round is one pass of the full-speed scenarios and of the half-rate
// pair.
type Round struct {
	// PodsPerSecond and P99 are each scenario's rate and p99
	// create-to-annotated (ms), by name.
	PodsPerSecond map[string]float64 `json:"podsPerSecond"`
	P99           map[string]float64 `json:"p99,omitempty"`
	// Ratios are the round's own ratios (computeRatios).
	ShardnetVsRaw     float64 `json:"shardnetVsRaw"`
	OneReplicaVsRaw   float64 `json:"oneReplicaVsRaw"`
	BatchedVsBaseline float64 `json:"batchedVsBaseline"`
	HalfRateP99VsRaw  float64 `json:"halfRateP99VsRaw,omitempty"`
}

// round returns res.Rounds[i], growing Rounds to hold it.
func (r *Result) round(i int) *Round {
	for len(r.Rounds) <= i {
		r.Rounds = append(r.Rounds, Round{PodsPerSecond: map[string]float64{}, P99: map[string]float64{}})
	}
	return &r.Rounds[i]
}

// record keeps sc's figures in the round (one of Result.round): the
// rate of a full-speed scenario, the p99 of every one.
func (rd *Round) record(name string, sc Scenario) {
	if sc.CreateRate == 0 {
		rd.PodsPerSecond[name] = sc.PodsPerSecond
	}
	rd.P99[name] = sc.P99
}

// roundRates is the named scenario's rate in every round, or nil when
// the scenarios ran once.
func (r *Result) roundRates(name string) []float64 {
	var out []float64
	for _, rd := range r.Rounds {
		if v, ok := rd.PodsPerSecond[name]; ok {
			out = append(out, v)
		}
	}
	return out
}

// ClusterRun is what a run against an existing cluster measured.
type ClusterRun struct {
	// Server is the API server's address.
	Server string `json:"server"`
	// RunID is the value of LabelRun on everything the run created.
	RunID string `json:"runID"`
	// Subnet is the subnet of the installed shardnet's pods: the one
	// given (SubnetGiven), or the cluster's default; empty when none is
	// marked default.
	Subnet      string `json:"subnet,omitempty"`
	SubnetGiven bool   `json:"subnetGiven,omitempty"`
}

// Scenario is one measured configuration.
type Scenario struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
	Shards   int    `json:"shards"`
	Batching bool   `json:"batching"`
	// CreateRate is the paced create rate (pods/s); 0 means full speed.
	CreateRate float64 `json:"createRate,omitempty"`
	// ServerCPUs are the CPUs etcd, kube-apiserver and kwok ran on; empty
	// when every process shared every CPU (Config.Pin).
	ServerCPUs []int `json:"serverCPUs,omitempty"`
	// Attachments is the OVN attachments each pod carries besides its
	// default network; a pod counts as annotated once every network is.
	Attachments int `json:"attachments,omitempty"`
	// PodsPerSecond is N over the time from the first create to the last
	// pod annotated (routed, for shardnet).
	PodsPerSecond float64 `json:"podsPerSecond"`
	Seconds       float64 `json:"seconds"`
	// Latency percentiles from create to annotated, in milliseconds.
	P50 float64 `json:"p50ms"`
	P95 float64 `json:"p95ms"`
	P99 float64 `json:"p99ms"`
	// APIWritesPerPod counts the replicas' non-GET API requests.
	APIWritesPerPod float64 `json:"apiWritesPerPod"`
	// APIWritesPerPodByMethod splits APIWritesPerPod by HTTP method.
	APIWritesPerPodByMethod map[string]float64 `json:"apiWritesPerPodByMethod,omitempty"`
	// NBTransactionsPerPod counts the batchers' transactions.
	NBTransactionsPerPod float64 `json:"nbTransactionsPerPod"`
	// NBRequestsPerPod counts the requests the transactions carried: a
	// reconcile that writes sends one, however many rows it holds.
	NBRequestsPerPod float64 `json:"nbRequestsPerPod,omitempty"`
	// PeakRSSMiB and CPUSeconds are per replica process.
	PeakRSSMiB []float64 `json:"peakRSSMiB,omitempty"`
	CPUSeconds []float64 `json:"cpuSeconds,omitempty"`
	// FileRSSMiB is per replica process, read with PeakRSSMiB: the part of
	// its RSS mapped from files (RssFile), which is the binary's code and
	// read-only data, pages the kernel can drop and read again.
	FileRSSMiB []float64 `json:"fileRSSMiB,omitempty"`
	// LiveHeapMiB is per replica process once the pods were annotated:
	// the heap its last collection kept (go_gc_heap_live_bytes), what
	// --memory-limit is sized from.
	LiveHeapMiB []float64 `json:"liveHeapMiB,omitempty"`
	// CPUMsPerPod is the CPU each process used over the create phase
	// (first create to last pod annotated), in milliseconds per pod:
	// kube-apiserver, etcd, kwok, the replicas together and the bench's
	// own process (its observer; the raw writer in the raw scenarios).
	// On a machine they share, what the replicas use is taken from the
	// API server.
	CPUMsPerPod map[string]float64 `json:"cpuMsPerPod,omitempty"`
	// Timeline is the count of annotated pods every 250ms from the first
	// create.
	Timeline []int `json:"timeline"`
	// Stages break the replicas' part of create-to-annotated into its
	// stages (queue wait, resolve, ipam, nb, ip record, patch), from their
	// histograms over the scenario; what the stages leave of the latency
	// is the informer and watch delays and the retries.
	Stages []StageLatency `json:"stages,omitempty"`
	// StallSeconds is the longest time no pod became done while created
	// pods waited (a plateau of the timeline), and StallAtSeconds when it
	// began, from the first create.
	StallSeconds   float64 `json:"stallSeconds"`
	StallAtSeconds float64 `json:"stallAtSeconds"`
	// StallCreatesPerSecond is how fast the bench's own create requests
	// returned during the longest stall, and CreatesPerSecond over the
	// creates (their start to the last returned); both are 0 when the stall
	// did not lie within the creates. Creates that slowed with the pods'
	// progress point to the API server, which answers every client.
	StallCreatesPerSecond float64 `json:"stallCreatesPerSecond,omitempty"`
	CreatesPerSecond      float64 `json:"createsPerSecond,omitempty"`
	// ClosedWatches are the watches the API server closed during the
	// create phase because their client read too slowly, by resource
	// (apiserver_terminated_watchers_total): the events of a closed watch
	// arrive late and at once when its client watches again, the bench's
	// own pod watch's as a plateau of the timeline, a replica's as a
	// cache that lags. Empty when none was closed; absent when the API
	// server's metrics could not be read.
	ClosedWatches map[string]int `json:"closedWatches,omitempty"`
	// Latencies are every pod's create-to-annotated time, sorted, in ms.
	Latencies []float64 `json:"latenciesMs"`
	// Restarts are the restarts of every replica after the pods were
	// routed, in order.
	Restarts []Restart `json:"restarts,omitempty"`
	// RawReloadSeconds is the restarts' ceiling: as many plain clients as
	// replicas, each a process of its own started for it, loading caches
	// of the pods, claims and IP records at once, decoded as the replicas
	// decode them (the pods as far as their cache keeps them, the claims
	// and IP records as their object metadata). It is the median of the
	// measurements taken right after each timed restart
	// (Restart.Ceiling).
	RawReloadSeconds float64 `json:"rawReloadSeconds,omitempty"`
	// InProcessReloadSeconds is the median of the same clients' loads in
	// the bench's own process (Reload.InProcess), whose start is paid and
	// whose memory is grown already.
	InProcessReloadSeconds float64 `json:"inProcessReloadSeconds,omitempty"`
	// FullReloadSeconds is the same load decoded in full, as replicas
	// loaded them before the claims and IP records carried their spec in
	// their metadata and the pods were decoded as far as the cache keeps
	// them.
	FullReloadSeconds float64 `json:"fullReloadSeconds,omitempty"`
}

// Restart is the way back to steady state after every replica restarted.
type Restart struct {
	// StopSeconds is how long the old replicas took to exit on SIGTERM.
	StopSeconds float64 `json:"stopSeconds"`
	// ReadySeconds is from the new processes' start to all ready (caches
	// synced, member Leases held).
	ReadySeconds float64 `json:"readySeconds"`
	// Seconds is from the new processes' start to steady state: every
	// shard owned and synced, no key queued.
	Seconds float64 `json:"seconds"`
	// Reconciled counts pod reconciles the new replicas ran to get there.
	Reconciled int `json:"reconciled"`
	// APIWrites and NBTransactions are what the new replicas wrote to get
	// there (lease renewals included).
	APIWrites      float64 `json:"apiWrites"`
	NBTransactions float64 `json:"nbTransactions"`
	// PeakRSSMiB is per new replica process.
	PeakRSSMiB []float64 `json:"peakRSSMiB,omitempty"`
	// FileRSSMiB is per new replica process, as Scenario.FileRSSMiB.
	FileRSSMiB []float64 `json:"fileRSSMiB,omitempty"`
	// LiveHeapMiB is per new replica process once steady, as
	// Scenario.LiveHeapMiB.
	LiveHeapMiB []float64 `json:"liveHeapMiB,omitempty"`
	// CPUSeconds is the CPU each new replica process used from its start
	// to steady state, read at that moment.
	CPUSeconds []float64 `json:"cpuSeconds,omitempty"`
	// SystemCPUSeconds is the part of CPUSeconds spent in the kernel,
	// and MinorFaults the page faults each new process took
	// (harness.Usage): a fresh process faults in every page of memory it
	// grows into, as the ceiling's clients in processes of their own do
	// (Reload.MinorFaults), where the same clients in the bench's process
	// reuse pages it has grown into already (Reload.InProcess).
	SystemCPUSeconds []float64 `json:"systemCPUSeconds,omitempty"`
	MinorFaults      []int64   `json:"minorFaults,omitempty"`
	// ServersCPUSeconds is what kube-apiserver and etcd used over the
	// same time.
	ServersCPUSeconds float64 `json:"serversCPUSeconds,omitempty"`
	// NBCPUSeconds is what ovsdb-server used over the same time, sending
	// each replica the Northbound's rows.
	NBCPUSeconds float64 `json:"nbCPUSeconds,omitempty"`
	// Profiled is set on the restart the profiles were taken over: the
	// first, timed and reported, but left out of the ratios (profiling
	// took a quarter more of the replicas' CPU at 1,000 pods).
	Profiled bool `json:"profiled,omitempty"`
	// Ceiling is the restarts' ceiling measured right after this restart
	// (none after the profiled one).
	Ceiling *Reload `json:"ceiling,omitempty"`
}

// Reload is one measurement of the restarts' ceiling: the clients each in
// a fresh process (freshReload), and, right after it, InProcess.
type Reload struct {
	Seconds float64 `json:"seconds"`
	// CPUSeconds is what the clients used over it (as Restart.CPUSeconds
	// is the replicas'), ServersCPUSeconds what kube-apiserver and etcd
	// used.
	CPUSeconds        float64 `json:"cpuSeconds"`
	ServersCPUSeconds float64 `json:"serversCPUSeconds"`
	// MinorFaults is the page faults the clients took over it.
	MinorFaults int64 `json:"minorFaults,omitempty"`
	// InProcess is the same load by clients in the bench's own process
	// (rawReload), whose start is paid and whose memory is grown already:
	// its CPU and faults are the bench's process's over it.
	InProcess *Reload `json:"inProcess,omitempty"`
}

// RestartGoalSeconds is the goal for the way back to steady state after a
// restart of every replica at 50,000 pods.
const RestartGoalSeconds = 20

// PeakRSSGoalMiB is the goal for memory per replica at 50,000 pods.
const PeakRSSGoalMiB = 400

// Ratios are the figures the guard compares.
type Ratios struct {
	// ShardnetVsRaw is the 3-replica throughput over the raw ceiling's.
	ShardnetVsRaw float64 `json:"shardnetVsRaw"`
	// OneReplicaVsRaw is the 1-replica throughput over the raw ceiling's.
	OneReplicaVsRaw float64 `json:"oneReplicaVsRaw"`
	// BatchedVsBaseline is the 3-replica throughput over the baseline's.
	BatchedVsBaseline float64 `json:"batchedVsBaseline"`
	// VsKubeOVN is the 3-replica throughput over 20 pods/s, the rate
	// kube-ovn reaches under kwok.
	VsKubeOVN float64 `json:"vsKubeOVN"`
	// NBPortsVsCeiling is the 3-replica scenario's Northbound port rate
	// (pods/s times networks per pod) over the best port rate of
	// NBCeiling; 0 when either is missing.
	NBPortsVsCeiling float64 `json:"nbPortsVsCeiling,omitempty"`
	// HalfRateP99Ms is the p99 create-to-routed latency (ms) of the
	// scenario paced at half the 3-replica rate; 0 when it did not run.
	// Over several rounds (Config.Rounds), both are the medians of the
	// rounds'.
	HalfRateP99Ms float64 `json:"halfRateP99ms,omitempty"`
	// HalfRateP99VsRaw is HalfRateP99Ms over the p99 of the raw writer
	// paced at the same rate (RawHalfScenario), in the same round: 1
	// would be a pod path as quick as the plain client's same writes; 0
	// when either did not run.
	HalfRateP99VsRaw float64 `json:"halfRateP99VsRaw,omitempty"`
	// NearRateP99Ms and NearRateP99VsRaw are the same figures for the
	// scenario paced at NearRateFraction of the 3-replica rate
	// (NearRateScenario, RawNearScenario); reported, not bounded.
	NearRateP99Ms    float64 `json:"nearRateP99ms,omitempty"`
	NearRateP99VsRaw float64 `json:"nearRateP99VsRaw,omitempty"`
	// StallSeconds is the 3-replica scenario's longest plateau
	// (Scenario.StallSeconds), RawStallSeconds the raw ceiling's in the
	// same run: a stall of the API server shows in both.
	StallSeconds    float64 `json:"stallSeconds,omitempty"`
	RawStallSeconds float64 `json:"rawStallSeconds,omitempty"`
	// RestartSeconds is the slowest way back to steady state after a
	// restart of every replica of the 3-replica scenario, of the timed
	// restarts (a profiled one is left out unless it is the only one); 0
	// when none ran.
	RestartSeconds float64 `json:"restartSeconds,omitempty"`
	// RestartVsRawReload is the median restart's seconds over the
	// restarts' ceiling (Scenario.RawReloadSeconds, the median of as many
	// measurements, each right after a restart): 1 would be a restart as
	// fast as the API server can hand the caches over. Medians, because
	// at 1,000 pods both take a fraction of a second, and a collection of
	// the API server falling into one doubles it.
	RestartVsRawReload float64 `json:"restartVsRawReload,omitempty"`
	// RestartMedianSeconds is the median restart's seconds.
	RestartMedianSeconds float64 `json:"restartMedianSeconds,omitempty"`
	// AttachVsRawAttach is the 3-replica throughput with one OVN attachment
	// per pod over the raw ceiling of the same writes; 0 when either did
	// not run. It is reported, not checked against a threshold.
	AttachVsRawAttach float64 `json:"attachVsRawAttach,omitempty"`
	// PortsVsPlain is the 3-replica throughput of pods with port
	// security, two VIPs and a security group (PortsScenario) over that of
	// plain pods; 0 when either did not run. Reported, not checked.
	PortsVsPlain float64 `json:"portsVsPlain,omitempty"`
	// InstalledVsRaw is, in a run against a cluster, the throughput of the
	// installed shardnet over the plain pod creates'; 0 when either did
	// not run.
	InstalledVsRaw float64 `json:"installedVsRaw,omitempty"`
}

// Micro is one micro-benchmark ratio.
type Micro struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// CeilingGoal is the goal for shardnet's throughput (1 and 3 replicas)
// over the raw ceiling's.
const CeilingGoal = 0.9

// KubeOVNPodsPerSecond is what kube-ovn's controller reaches under kwok.
const KubeOVNPodsPerSecond = 20

// HalfRateP99GoalMs is the goal for the p99 create-to-routed latency at
// half the maximum rate.
const HalfRateP99GoalMs = 250

// Scenario returns the named scenario.
func (r *Result) Scenario(name string) (Scenario, bool) {
	for _, s := range r.Scenarios {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

func (r *Result) computeRatios() {
	raw, _ := r.Scenario("raw")
	one, _ := r.Scenario("shardnet-1")
	three, _ := r.Scenario("shardnet-3")
	base, _ := r.Scenario("baseline")
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	r.Ratios = Ratios{
		ShardnetVsRaw:     div(three.PodsPerSecond, raw.PodsPerSecond),
		OneReplicaVsRaw:   div(one.PodsPerSecond, raw.PodsPerSecond),
		BatchedVsBaseline: div(three.PodsPerSecond, base.PodsPerSecond),
		VsKubeOVN:         three.PodsPerSecond / KubeOVNPodsPerSecond,
	}
	// Over several rounds the throughput ratios are the medians of each
	// round's, each of figures measured minutes apart at most: one
	// scenario slowed by the machine moves one round's ratio, not the
	// result.
	var s3, s1, sb, halfRatios, halfP99 []float64
	for i := range r.Rounds {
		rd := &r.Rounds[i]
		pps := rd.PodsPerSecond
		rd.ShardnetVsRaw = div(pps["shardnet-3"], pps["raw"])
		rd.OneReplicaVsRaw = div(pps["shardnet-1"], pps["raw"])
		rd.BatchedVsBaseline = div(pps["shardnet-3"], pps["baseline"])
		s3, s1, sb = append(s3, rd.ShardnetVsRaw), append(s1, rd.OneReplicaVsRaw), append(sb, rd.BatchedVsBaseline)
		if p99, ok := rd.P99[HalfRateScenario]; ok {
			rd.HalfRateP99VsRaw = div(p99, rd.P99[RawHalfScenario])
			halfRatios, halfP99 = append(halfRatios, rd.HalfRateP99VsRaw), append(halfP99, p99)
		}
	}
	if len(r.roundRates("shardnet-3")) > 1 {
		r.Ratios.ShardnetVsRaw, r.Ratios.OneReplicaVsRaw, r.Ratios.BatchedVsBaseline = median(s3), median(s1), median(sb)
		r.Ratios.VsKubeOVN = median(r.roundRates("shardnet-3")) / KubeOVNPodsPerSecond
	}
	rawAttach, _ := r.Scenario(RawAttachScenario)
	attach, _ := r.Scenario(AttachScenario)
	r.Ratios.AttachVsRawAttach = div(attach.PodsPerSecond, rawAttach.PodsPerSecond)
	ports, _ := r.Scenario(PortsScenario)
	r.Ratios.PortsVsPlain = div(ports.PodsPerSecond, three.PodsPerSecond)
	installed, _ := r.Scenario(InstalledScenario)
	r.Ratios.InstalledVsRaw = div(installed.PodsPerSecond, raw.PodsPerSecond)
	if half, ok := r.Scenario(HalfRateScenario); ok {
		r.Ratios.HalfRateP99Ms = half.P99
		rawHalf, _ := r.Scenario(RawHalfScenario)
		r.Ratios.HalfRateP99VsRaw = div(half.P99, rawHalf.P99)
		if len(halfRatios) > 1 {
			r.Ratios.HalfRateP99Ms, r.Ratios.HalfRateP99VsRaw = median(halfP99), median(halfRatios)
		}
	}
	if near, ok := r.Scenario(NearRateScenario); ok {
		r.Ratios.NearRateP99Ms = near.P99
		rawNear, _ := r.Scenario(RawNearScenario)
		r.Ratios.NearRateP99VsRaw = div(near.P99, rawNear.P99)
	}
	r.Ratios.StallSeconds, r.Ratios.RawStallSeconds = three.StallSeconds, raw.StallSeconds
	r.Ratios.NBPortsVsCeiling = div(three.PodsPerSecond*float64(1+three.Attachments), bestNBCeiling(r.NBCeiling).PortsPerSecond)
	if timed := restartSeconds(timedRestarts(three.Restarts)); len(timed) > 0 {
		r.Ratios.RestartSeconds = slices.Max(timed)
		r.Ratios.RestartMedianSeconds = median(timed)
		r.Ratios.RestartVsRawReload = div(r.Ratios.RestartMedianSeconds, three.RawReloadSeconds)
	}
}

// median is the middle of v, or the mean of its two middle values; 0
// for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// timedRestarts are the restarts the ratios are of: all but a profiled
// one, unless it is the only one.
func timedRestarts(rs []Restart) []Restart {
	var out []Restart
	for _, r := range rs {
		if !r.Profiled {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return rs
	}
	return out
}

// ceilingSeconds are the ceilings measured after the restarts of rs.
func ceilingSeconds(rs []Restart) []float64 {
	var out []float64
	for _, r := range rs {
		if r.Ceiling != nil {
			out = append(out, r.Ceiling.Seconds)
		}
	}
	return out
}

// inProcessSeconds is ceilingSeconds of the loads in the bench's own
// process.
func inProcessSeconds(rs []Restart) []float64 {
	var out []float64
	for _, r := range rs {
		if r.Ceiling != nil && r.Ceiling.InProcess != nil {
			out = append(out, r.Ceiling.InProcess.Seconds)
		}
	}
	return out
}

func restartSeconds(rs []Restart) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.Seconds
	}
	return out
}

// Load reads a result.json.
func Load(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Thresholds are the committed bounds of the ratios: lower bounds of the
// throughput ratios, upper bounds of the latency and restart ratios (a
// zero upper bound is not checked).
type Thresholds struct {
	ShardnetVsRaw     float64 `json:"shardnetVsRaw"`
	OneReplicaVsRaw   float64 `json:"oneReplicaVsRaw"`
	BatchedVsBaseline float64 `json:"batchedVsBaseline"`
	// HalfRateP99VsRawMax bounds Ratios.HalfRateP99VsRaw.
	HalfRateP99VsRawMax float64 `json:"halfRateP99VsRawMax,omitempty"`
	// RestartVsRawReloadMax bounds Ratios.RestartVsRawReload.
	RestartVsRawReloadMax float64 `json:"restartVsRawReloadMax,omitempty"`
}

// Check compares r's ratios with t and returns one line per ratio below
// its bound.
func Check(r *Result, t Thresholds) []string {
	if r.Cluster != nil {
		return []string{"the result is of a run against a cluster (" + r.Cluster.Server + "): the thresholds bound runs on the bench's own servers"}
	}
	var out []string
	for _, c := range []struct {
		name     string
		got, min float64
	}{
		{"shardnet (3 replicas) / raw ceiling", r.Ratios.ShardnetVsRaw, t.ShardnetVsRaw},
		{"shardnet (1 replica) / raw ceiling", r.Ratios.OneReplicaVsRaw, t.OneReplicaVsRaw},
		{"batched / baseline", r.Ratios.BatchedVsBaseline, t.BatchedVsBaseline},
	} {
		if c.got < c.min {
			out = append(out, fmt.Sprintf("%s = %.3f, below the committed %.3f", c.name, c.got, c.min))
		}
	}
	for _, c := range []struct {
		name     string
		got, max float64
	}{
		{"p99 at half rate / raw writer's p99 at that rate", r.Ratios.HalfRateP99VsRaw, t.HalfRateP99VsRawMax},
		{"restart / restarts' ceiling", r.Ratios.RestartVsRawReload, t.RestartVsRawReloadMax},
	} {
		switch {
		case c.max == 0:
		case c.got == 0:
			out = append(out, fmt.Sprintf("%s was not measured (bounded by the committed %.3f)", c.name, c.max))
		case c.got > c.max:
			out = append(out, fmt.Sprintf("%s = %.3f, above the committed %.3f", c.name, c.got, c.max))
		}
	}
	return out
}
