package bench

import (
	"math"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardnet/shardnet/test/harness"
)

func TestSendOffsetPaces(t *testing.T) {
	if got := sendOffset(0, 50); got != 0 {
		t.Fatalf("first pod sent at %v, want 0", got)
	}
	if got := sendOffset(100, 50); got != 2*time.Second {
		t.Fatalf("pod 100 at 50 pods/s sent at %v, want 2s", got)
	}
}

func TestPercentile(t *testing.T) {
	sorted := make([]float64, 100)
	for i := range sorted {
		sorted[i] = float64(i + 1)
	}
	for p, want := range map[int]float64{50: 50, 95: 95, 99: 99, 100: 100} {
		if got := pctl(sorted, p); got != want {
			t.Errorf("p%d = %v, want %v", p, got, want)
		}
	}
	if pctl(nil, 99) != 0 || pctl([]float64{7}, 50) != 7 {
		t.Error("percentile of an empty or one-element list")
	}
}

func TestRatiosReportAndCheck(t *testing.T) {
	r := &Result{Pods: 1000, Scenarios: []Scenario{
		{Name: "raw", PodsPerSecond: 200},
		{Name: "shardnet-1", PodsPerSecond: 150},
		{Name: "shardnet-3", PodsPerSecond: 180},
		{Name: "baseline", PodsPerSecond: 120},
	}}
	r.computeRatios()
	if r.Ratios.ShardnetVsRaw != 0.9 || r.Ratios.OneReplicaVsRaw != 0.75 || r.Ratios.BatchedVsBaseline != 1.5 || r.Ratios.VsKubeOVN != 9 {
		t.Fatalf("ratios %+v", r.Ratios)
	}
	if r.Ratios.HalfRateP99Ms != 0 || strings.Contains(Markdown(r), "half the 3-replica rate") {
		t.Fatal("a half-rate figure without the half-rate scenario")
	}
	r.Scenarios = append(r.Scenarios, Scenario{Name: HalfRateScenario, CreateRate: 90, P99: 400})
	r.computeRatios()
	if r.Ratios.HalfRateP99Ms != 400 {
		t.Fatalf("half-rate p99 %v, want 400", r.Ratios.HalfRateP99Ms)
	}
	md := Markdown(r)
	for _, want := range []string{"| shardnet-3 |", "**0.90** (goal >= 0.90)", "(90 pods/s): **400 ms** (goal <= 250 ms, missed by 150 ms)"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}

	if got := Check(r, Thresholds{ShardnetVsRaw: 0.5, OneReplicaVsRaw: 0.4, BatchedVsBaseline: 0.7}); len(got) != 0 {
		t.Fatalf("Check within bounds = %q", got)
	}
	got := Check(r, Thresholds{ShardnetVsRaw: 0.95, OneReplicaVsRaw: 0.4, BatchedVsBaseline: 2})
	if len(got) != 2 || !strings.Contains(got[0], "3 replicas") || !strings.Contains(got[1], "batched / baseline") {
		t.Fatalf("Check below bounds = %q", got)
	}
}

// TestRoundsRatiosAreMedians: over rounds, a ratio is the median of the
// rounds' own, so one slow scenario in one round does not move it.
func TestRoundsRatiosAreMedians(t *testing.T) {
	r := &Result{Pods: 1000, Scenarios: []Scenario{
		{Name: "raw", PodsPerSecond: 100},
		{Name: "shardnet-1", PodsPerSecond: 95},
		{Name: "shardnet-3", PodsPerSecond: 60},
		{Name: "baseline", PodsPerSecond: 100},
	}, Rounds: []Round{
		{PodsPerSecond: map[string]float64{"raw": 100, "shardnet-1": 95, "shardnet-3": 60, "baseline": 100}, P99: map[string]float64{RawHalfScenario: 50, HalfRateScenario: 400}},
		{PodsPerSecond: map[string]float64{"raw": 120, "shardnet-1": 108, "shardnet-3": 108, "baseline": 90}, P99: map[string]float64{RawHalfScenario: 100, HalfRateScenario: 200}},
		{PodsPerSecond: map[string]float64{"raw": 80, "shardnet-1": 76, "shardnet-3": 72, "baseline": 60}, P99: map[string]float64{RawHalfScenario: 60, HalfRateScenario: 150}},
	}}
	r.Scenarios = append(r.Scenarios, Scenario{Name: RawHalfScenario, CreateRate: 36, P99: 50}, Scenario{Name: HalfRateScenario, CreateRate: 36, P99: 400})
	r.computeRatios()
	if got := r.Ratios; got.ShardnetVsRaw != 0.9 || got.OneReplicaVsRaw != 0.95 || got.BatchedVsBaseline != 1.2 || got.VsKubeOVN != 72.0/20 {
		t.Fatalf("ratios %+v, want the medians 0.9, 0.95, 1.2 and 72/20", got)
	}
	if got := r.Ratios; got.HalfRateP99Ms != 200 || got.HalfRateP99VsRaw != 2.5 {
		t.Fatalf("half-rate p99 %v and ratio %v, want the medians 200 and 2.5 (of 8, 2 and 2.5)", got.HalfRateP99Ms, got.HalfRateP99VsRaw)
	}
	if r.Rounds[0].ShardnetVsRaw != 0.6 || r.Rounds[1].BatchedVsBaseline != 1.2 {
		t.Fatalf("rounds' own ratios %+v", r.Rounds)
	}
	if got := Check(r, Thresholds{ShardnetVsRaw: 0.7, OneReplicaVsRaw: 0.7, BatchedVsBaseline: 0.7, HalfRateP99VsRawMax: 6}); len(got) != 0 {
		t.Fatalf("Check of the medians = %q", got)
	}
	md := Markdown(r)
	for _, want := range []string{"## Rounds", "| 1 | 100 | 95 | 60 | 100 | 0.60 | 0.95 | 0.60 | 400 | 50 | 8.00 |", "| 3 | 80 | 76 | 72 | 60 | 0.90 | 0.95 | 1.20 | 150 | 60 | 2.50 |", "**200 ms**, the median of 3 rounds"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestLatencyAndRestartBoundsChecked(t *testing.T) {
	r := &Result{Pods: 1000, Scenarios: []Scenario{
		{Name: "raw", PodsPerSecond: 200, StallSeconds: 0.5},
		{Name: "shardnet-1", PodsPerSecond: 190},
		{Name: "shardnet-3", Replicas: 3, PodsPerSecond: 190, StallSeconds: 1.25, StallAtSeconds: 2, PeakRSSMiB: []float64{90},
			StallCreatesPerSecond: 12, CreatesPerSecond: 240,
			ClosedWatches: map[string]int{"pods": 1, "addressclaims": 2},
			Restarts:      []Restart{{Seconds: 3, PeakRSSMiB: []float64{90}}}, RawReloadSeconds: 1},
		{Name: "baseline", PodsPerSecond: 120},
		{Name: RawHalfScenario, CreateRate: 95, P99: 100, PodsPerSecond: 100, CPUMsPerPod: map[string]float64{"kube-apiserver": 12, "etcd": 3}},
		{Name: HalfRateScenario, CreateRate: 95, P99: 250, PodsPerSecond: 100, CPUMsPerPod: map[string]float64{"kube-apiserver": 13, "etcd": 3, "replicas": 3}},
		{Name: RawNearScenario, CreateRate: 171, P99: 200},
		{Name: NearRateScenario, CreateRate: 171, P99: 700},
	}}
	r.computeRatios()
	if r.Ratios.NearRateP99Ms != 700 || r.Ratios.NearRateP99VsRaw != 3.5 {
		t.Fatalf("near-rate ratios %+v, want p99 700 and 700/200", r.Ratios)
	}
	if r.Ratios.HalfRateP99VsRaw != 2.5 || r.Ratios.StallSeconds != 1.25 || r.Ratios.RawStallSeconds != 0.5 {
		t.Fatalf("ratios %+v, want p99 250/100 and the stalls of shardnet-3 and raw", r.Ratios)
	}
	md := Markdown(r)
	for _, want := range []string{
		"the raw writer's p99 at the same rate: 100 ms, shardnet's is **2.50x** that; every process together kept 1.50 cores busy over the raw writer's phase and 1.90 over shardnet's\n",
		"at 90% of the 3-replica rate (171 pods/s): **700 ms** (reported, no goal); the raw writer's p99 at the same rate: 200 ms, shardnet's is **3.50x** that",
		"longest stall of shardnet (3 replicas): **1.25 s**, 2.00 s after the first create (goal <= 1 s); the bench's own creates returned at 12/s during it, against 240/s over the creates; the API server closed 3 watches (addressclaims 2, pods 1) meanwhile as too slow to read (their events, the bench's own included, arrived late and at once); the raw ceiling's in the same run: 0.50 s",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	base := Thresholds{ShardnetVsRaw: 0.5, OneReplicaVsRaw: 0.4, BatchedVsBaseline: 0.7}
	within := base
	within.HalfRateP99VsRawMax, within.RestartVsRawReloadMax = 3, 4
	if got := Check(r, within); len(got) != 0 {
		t.Fatalf("Check within bounds = %q", got)
	}
	above := base
	above.HalfRateP99VsRawMax, above.RestartVsRawReloadMax = 2, 2
	if got := Check(r, above); len(got) != 2 || !strings.Contains(got[0], "half rate") || !strings.Contains(got[1], "restart") {
		t.Fatalf("Check above the upper bounds = %q", got)
	}
	r.Scenarios = r.Scenarios[:4]
	r.computeRatios()
	if got := Check(r, within); len(got) != 1 || !strings.Contains(got[0], "not measured") {
		t.Fatalf("Check of a bounded ratio that did not run = %q", got)
	}
}

func TestLongestStall(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	for _, c := range []struct {
		name          string
		created, done []time.Time
		want, wantAt  time.Duration
	}{
		{"none", nil, nil, 0, 0},
		{"the first pod's wait", at(0, 10), at(300, 320), 300 * time.Millisecond, 0},
		{"a plateau in the middle", at(0, 10, 20, 30), at(50, 60, 1560, 1570), 1500 * time.Millisecond, 60 * time.Millisecond},
		// Nothing waited between 60 and 1000: no pod had been created.
		{"an idle gap is no stall", at(0, 10, 1000, 1010), at(50, 60, 1100, 1120), 100 * time.Millisecond, 1000 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, gotAt := longestStall(c.created, c.done)
			if got != c.want || (got > 0 && gotAt.Sub(t0) != c.wantAt) {
				t.Fatalf("longestStall = %v at %v, want %v at %v", got, gotAt.Sub(t0), c.want, c.wantAt)
			}
		})
	}
}

func TestCreateRates(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Millisecond) }
	// Ten creates returned a tenth of a second apart from 100 ms on, the
	// last at 1,000 ms; none between 300 and 700.
	var returned []time.Time
	for _, m := range []int{100, 200, 300, 700, 750, 800, 850, 900, 950, 1000} {
		returned = append(returned, ms(m))
	}
	for _, c := range []struct {
		name           string
		from, to       time.Time
		during, overal float64
	}{
		{"a stall while the creates stood still", ms(310), ms(690), 0, 10},
		{"a stall while they went on", ms(700), ms(900), 20, 10},
		{"a stall after the last create", ms(900), ms(1100), 0, 0},
		{"before the first create", ms(-100), ms(200), 0, 0},
		{"no stall", ms(500), ms(500), 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			during, overall := createRates(t0, returned, c.from, c.to)
			if math.Abs(during-c.during) > 1e-9 || math.Abs(overall-c.overal) > 1e-9 {
				t.Fatalf("createRates = %v, %v; want %v, %v", during, overall, c.during, c.overal)
			}
		})
	}
}

func TestRestartAndMemoryReport(t *testing.T) {
	r := &Result{Pods: 50000, Scenarios: []Scenario{{
		Name: "shardnet-3", Replicas: 3, PodsPerSecond: 100, PeakRSSMiB: []float64{540, 560, 550}, LiveHeapMiB: []float64{240, 262.4, 251},
		FileRSSMiB: []float64{55, 58.4, 56},
		Restarts: []Restart{
			{Seconds: 60, ReadySeconds: 58, PeakRSSMiB: []float64{500, 610, 520}, LiveHeapMiB: []float64{230, 270, 250}, FileRSSMiB: []float64{52, 51, 53}, Profiled: true},
			{Seconds: 30, ReadySeconds: 28, PeakRSSMiB: []float64{500, 600, 520}, Ceiling: &Reload{Seconds: 30}},
			{Seconds: 45, ReadySeconds: 44, PeakRSSMiB: []float64{500, 520, 530}, CPUSeconds: []float64{20.5, 21, 19.25}, ServersCPUSeconds: 30, NBCPUSeconds: 4,
				SystemCPUSeconds: []float64{3.5, 4, 3.25}, MinorFaults: []int64{90210, 91000, 89999},
				Ceiling: &Reload{Seconds: 25, CPUSeconds: 12, ServersCPUSeconds: 24.5, MinorFaults: 91234,
					InProcess: &Reload{Seconds: 21, CPUSeconds: 10.5, ServersCPUSeconds: 23, MinorFaults: 1234}}},
			{Seconds: 35, ReadySeconds: 34, PeakRSSMiB: []float64{480}, Ceiling: &Reload{Seconds: 20}},
		},
		RawReloadSeconds: 25, InProcessReloadSeconds: 20, FullReloadSeconds: 40,
	}}}
	r.computeRatios()
	if r.Ratios.RestartSeconds != 45 || r.Ratios.RestartMedianSeconds != 35 || r.Ratios.RestartVsRawReload != 1.4 {
		t.Fatalf("restart ratios %+v, want the slowest timed restart (45 s, not the profiled one), the median (35 s) and 35/25", r.Ratios)
	}
	md := Markdown(r)
	if strings.Contains(md, "raw API ceiling") || strings.Contains(md, "batched / baseline") {
		t.Errorf("ratios of scenarios that did not run are reported:\n%s", md)
	}
	for _, want := range []string{
		"**560 MiB** routing them, 610 / 600 / 530 / 480 MiB after a restart (goal <= 400 MiB at 50,000 pods, missed by 210 MiB)",
		"restart 1 of every replica to steady state (50000 pods): **60.0 s** (goal <= 20 s at 50,000 pods, missed by 40.0 s)",
		"; profiled, and left out of the ratios\n",
		"restart 3 of every replica to steady state (50000 pods): **45.0 s** (goal <= 20 s at 50,000 pods, missed by 25.0 s)",
		"; CPU to get there: the replicas 20.50/21.00/19.25 s (3.50/4.00/3.25 s of it in the kernel; 90210/91000/89999 page faults, each new process's first touch of its memory), kube-apiserver and etcd 30.00 s, ovsdb-server 4.00 s; the ceiling measured right after it: 25.0 s (CPU: the clients' processes 12.00 s with 91234 page faults, kube-apiserver and etcd 24.50 s), in the bench's own process 21.0 s (CPU: the clients 10.50 s with 1234 page faults, kube-apiserver and etcd 23.00 s)\n",
		"3 plain clients, each a process of its own started for it as a restarted replica is, loading the pods, claims and IP records at once, decoded as the replicas decode them (the pods as far as their cache keeps them, the claims and IP records as their metadata): **25.0 s**, the median of 3 measurements, one after each timed restart; the median restart (35.0 s) took **1.40x** that, the slowest (45.0 s) 1.80x; the same clients in the bench's own process, whose start is paid and whose memory is grown already: 20.0 s, the median restart 1.75x that\n",
		"decoding them all in full (as replicas did before the claims and IP records carried their spec in their metadata and the pods were decoded as far as the cache keeps them): **40.0 s**; as the replicas decode them they took 0.50x that\n",
		"`go_gc_heap_live_bytes`; --memory-limit is sized from it): **262 MiB** once the pods were routed, 270 MiB after restart 1\n",
		"pages the kernel can drop and read again): 58 MiB routing, 53 MiB after restart 1\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestMedian: the middle value, or the mean of the two middle ones.
func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{0.4, 0.2, 0.3}, 0.3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestStatusMiB reads /proc/PID/status fields in MiB.
func TestStatusMiB(t *testing.T) {
	status := "Name:\tshardnet\nVmHWM:\t  563200 kB\nVmRSS:\t  512000 kB\nRssAnon:\t  455680 kB\nRssFile:\t   56320 kB\n"
	for key, want := range map[string]float64{"VmHWM:": 550, "RssFile:": 55, "RssShmem:": 0} {
		if got := statusMiB(status, key); got != want {
			t.Errorf("statusMiB(%q) = %v, want %v", key, got, want)
		}
	}
}

// TestCPUPerPodReport: the CPU each process used over a create phase is
// reported per pod, and the replicas' share of the machine next to the
// API server's CPU with and without them.
func TestCPUPerPodReport(t *testing.T) {
	before := cpuUse{"kube-apiserver": 10, "etcd": 2, "replicas": 1, "bench": 3}
	after := cpuUse{"kube-apiserver": 27, "etcd": 3, "replicas": 6, "bench": 4, "kwok": 9}
	got := after.perPodSince(before, 1000)
	want := map[string]float64{"kube-apiserver": 17, "etcd": 1, "replicas": 5, "bench": 1}
	if len(got) != len(want) {
		t.Fatalf("perPodSince = %v, want %v (a process not read before is left out)", got, want)
	}
	for k, v := range want {
		if d := got[k] - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: %.3f ms per pod, want %.3f", k, got[k], v)
		}
	}
	r := &Result{Pods: 1000, Scenarios: []Scenario{
		{Name: "raw", PodsPerSecond: 150, Stages: []StageLatency{{Stage: "create (bench)", Count: 1000}},
			CPUMsPerPod: map[string]float64{"kube-apiserver": 12.5, "etcd": 1, "bench": 2}},
		{Name: "shardnet-3", Replicas: 3, PodsPerSecond: 100, Stages: []StageLatency{{Stage: "queue", Count: 1000}},
			CPUMsPerPod: got},
	}}
	r.computeRatios()
	md := Markdown(r)
	for _, w := range []string{
		"CPU per pod over the create phase: kube-apiserver 12.5 ms, etcd 1.0 ms, bench 2.0 ms.",
		"CPU per pod over the create phase: kube-apiserver 17.0 ms, etcd 1.0 ms, replicas 5.0 ms, bench 1.0 ms.",
		"the API server used 12.5 ms with the raw writer and 17.0 ms with 3 replicas (1.36x); the replicas together 5.0 ms, 21% of the busy CPU of that phase. Every process together: 15.5 ms per pod raw (2.33 cores busy at its rate), 24.0 ms with 3 replicas (2.40 cores): where the cores are the limit, shardnet/raw is about 0.65",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("report lacks %q:\n%s", w, md)
		}
	}
	if strings.Contains(md, "(`-pin`)") || strings.Contains(md, "`-pin=false`") {
		t.Errorf("a result without a CPU layout reports one:\n%s", md)
	}

	// With the servers on CPUs of their own, the estimate is theirs: etcd,
	// kube-apiserver and kwok together, 13.5 ms raw and 18.0 ms with
	// the replicas.
	r.Scenarios[1].CPUMsPerPod["kwok"] = 0
	r.CPUs = &CPUs{Servers: []int{0}, Rest: []int{1}}
	md = Markdown(r)
	if strings.Contains(md, "The servers (kube-apiserver, etcd, kwok) on their") {
		t.Errorf("scenarios that ran on every CPU estimated from the servers' CPU:\n%s", md)
	}
	r.Scenarios[0].ServerCPUs, r.Scenarios[1].ServerCPUs = []int{0}, []int{0}
	md = Markdown(r)
	for _, w := range []string{
		"In the scenarios at full speed, etcd, kube-apiserver and kwok ran on CPU 0, and the bench (its raw writer and its watches), the replicas and ovsdb-server on CPU 1 (`-pin`)",
		"The paced scenarios (half and 90% of the rate) shared CPUs 0, 1",
		"The servers (kube-apiserver, etcd, kwok) on their CPU 0: 13.5 ms per pod raw (2.02 cores busy at its rate), 18.0 ms with 3 replicas (1.80 cores): where the servers' CPU is the limit, shardnet/raw is about 0.75",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("pinned report lacks %q:\n%s", w, md)
		}
	}
	r.CPUs = &CPUs{Rest: []int{0, 1, 2}}
	if md = Markdown(r); !strings.Contains(md, "Every process shared CPUs 0, 1, 2 (`-pin=false`, or a single CPU)") {
		t.Errorf("unpinned report lacks its layout:\n%s", md)
	}
}

// TestPlaceScenario: with a pinned layout, a scenario at full speed puts
// the servers on theirs and the bench on the rest, and a paced one puts
// both on every CPU; without one, nothing moves.
func TestPlaceScenario(t *testing.T) {
	all, err := harness.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := harness.PinProcess(all); err != nil {
			t.Error(err)
		}
	})
	c := &CPUs{Servers: all[:1], Rest: all[len(all)-1:]}
	if got, err := placeScenario(c, spec{name: "raw", raw: true}); err != nil || !slices.Equal(got, c.Servers) {
		t.Fatalf("at full speed: servers on %v (%v), want %v", got, err, c.Servers)
	}
	if now, _ := harness.AllowedCPUs(); !slices.Equal(now, c.Rest) {
		t.Fatalf("at full speed the bench runs on %v, want %v", now, c.Rest)
	}
	if got, err := placeScenario(c, spec{name: HalfRateScenario, rate: 50}); err != nil || got != nil {
		t.Fatalf("paced: servers on %v (%v), want any", got, err)
	}
	if now, _ := harness.AllowedCPUs(); !slices.Equal(now, c.all()) {
		t.Fatalf("paced, the bench runs on %v, want %v", now, c.all())
	}
	if got, err := placeScenario(&CPUs{Rest: all}, spec{name: "raw", raw: true}); err != nil || got != nil {
		t.Fatalf("unpinned: servers on %v (%v), want any", got, err)
	}
}

func TestLayOutCPUsUnpinned(t *testing.T) {
	c, err := layOutCPUs(false)
	if err != nil {
		t.Fatal(err)
	}
	all, err := harness.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if c.Pinned() || !slices.Equal(c.Rest, all) {
		t.Fatalf("unpinned layout %+v, want every CPU (%v) as the rest", c, all)
	}
}

func TestCheckScenarios(t *testing.T) {
	if err := checkScenarios([]string{"raw", HalfRateScenario}); err != nil {
		t.Fatal(err)
	}
	if err := checkScenarios([]string{"shardnet-9"}); err == nil || !strings.Contains(err.Error(), "unknown scenario") {
		t.Fatalf("an unknown scenario: %v", err)
	}
}

func TestAttachRatioReported(t *testing.T) {
	r := &Result{Pods: 1000, Scenarios: []Scenario{
		{Name: "raw", PodsPerSecond: 200},
		{Name: "shardnet-3", PodsPerSecond: 180},
		{Name: RawAttachScenario, PodsPerSecond: 120, Attachments: 1},
	}}
	r.computeRatios()
	if r.Ratios.AttachVsRawAttach != 0 || strings.Contains(Markdown(r), "attachment per pod") {
		t.Fatal("an attach ratio without the attach scenario")
	}
	r.Scenarios = append(r.Scenarios, Scenario{Name: AttachScenario, Replicas: 3, PodsPerSecond: 96, Attachments: 1})
	r.computeRatios()
	if r.Ratios.AttachVsRawAttach != 0.8 || r.Ratios.ShardnetVsRaw != 0.9 {
		t.Fatalf("ratios %+v, want attach 96/120 and the 3-replica ratio untouched", r.Ratios)
	}
	if md := Markdown(r); !strings.Contains(md, "one OVN attachment per pod / raw API ceiling of the same writes: **0.80**") {
		t.Errorf("report lacks the attach ratio:\n%s", md)
	}
	// The ratio has no threshold: a low one fails nothing.
	r.Ratios.AttachVsRawAttach = 0.1
	if got := Check(r, Thresholds{ShardnetVsRaw: 0.5}); len(got) != 0 {
		t.Fatalf("Check = %q", got)
	}
}

func TestAttachScenarioWrites(t *testing.T) {
	if err := checkScenarios([]string{RawAttachScenario, AttachScenario}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ipRecords bool
		networks  int
		want      float64
	}{{true, 1, 3}, {false, 1, 2}, {true, 2, 5}, {false, 2, 3}} {
		if got := rawWritesPerPod(c.ipRecords, c.networks); got != c.want {
			t.Errorf("rawWritesPerPod(%v, %d) = %v, want %v", c.ipRecords, c.networks, got, c.want)
		}
	}
	if attachProvider != "attach.bench.ovn" {
		t.Fatalf("provider %q, want <nad>.<namespace>.ovn", attachProvider)
	}
	w := &rawWriter{attach: true}
	nets := w.networks(1<<18 - 1)
	if len(nets) != 2 || nets[0].ip != "10.3.255.255" || nets[1].ip != "10.7.255.255" ||
		nets[1].provider != attachProvider || nets[1].subnet != attachSubnet {
		t.Fatalf("networks of the last pod: %+v", nets)
	}
	if nets := (&rawWriter{}).networks(1); len(nets) != 1 || nets[0].ip != "10.0.0.1" || nets[0].subnet != "ovn-default" {
		t.Fatalf("networks without attachment: %+v", nets)
	}
}

func TestObserverWaitsForEveryNetwork(t *testing.T) {
	sp := spec{name: AttachScenario, replicas: 3, attach: true}
	keys := doneKeys(sp)
	if len(keys) != 2 || keys[0] != "ovn.kubernetes.io/routed" || keys[1] != "attach.bench.ovn.kubernetes.io/routed" {
		t.Fatalf("done keys %q", keys)
	}
	if raw := doneKeys(spec{raw: true}); len(raw) != 1 || raw[0] != "ovn.kubernetes.io/allocated" {
		t.Fatalf("raw done keys %q", raw)
	}
	o := newObserver(1, keys)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{keys[0]: "true"}}}
	o.see(pod)
	if o.count.Load() != 0 {
		t.Fatal("a pod routed on its default network only counted as done")
	}
	pod.Annotations[keys[1]] = "true"
	o.see(pod)
	select {
	case <-o.done:
	default:
		t.Fatal("a pod routed on both networks not counted")
	}
}

func TestClusterReport(t *testing.T) {
	r := &Result{Pods: 100, Cluster: &ClusterRun{Server: "https://10.1.2.3:6443", RunID: "abc123", Subnet: "ovn-default"},
		Scenarios: []Scenario{{Name: "raw", PodsPerSecond: 400, P50: 30}, {Name: InstalledScenario, PodsPerSecond: 300, P50: 35, P99: 2100}}}
	r.computeRatios()
	if r.Ratios.InstalledVsRaw != 0.75 {
		t.Fatalf("ratios %+v", r.Ratios)
	}
	md := Markdown(r)
	for _, want := range []string{
		"against the cluster at https://10.1.2.3:6443 (run abc123, objects labelled `shardnet.io/bench-run=abc123`)",
		"on the cluster's default subnet, ovn-default",
		"| shardnet-installed | 300 | 35 | 0 | 2100 |",
		"installed shardnet / plain pod creates: **0.75**",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "raw API ceiling") || strings.Contains(md, "kube-ovn's 20 pods/s") {
		t.Errorf("a cluster report with the local run's ratios:\n%s", md)
	}
	if got := Check(r, Thresholds{ShardnetVsRaw: 0.5}); len(got) != 1 || !strings.Contains(got[0], "run against a cluster") {
		t.Fatalf("Check of a cluster result = %q", got)
	}
}

// A replica that exits before its listeners are up (a port taken
// meanwhile) is told from one still starting.
func TestListeningSeesAnExitAtStartup(t *testing.T) {
	rp := &replicaProc{healthAddr: "127.0.0.1:1", exited: make(chan struct{})}
	rp.cmd = exec.Command("false")
	if err := rp.cmd.Start(); err != nil {
		t.Fatalf("starting false(1): %v", err)
	}
	go func() { _ = rp.cmd.Wait(); close(rp.exited) }()
	if err := rp.listening(time.Minute); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("listening = %v, want the exit", err)
	}
}

// Every scenario that does not run against a cluster says why.
func TestEveryClusterSkipHasAReason(t *testing.T) {
	for _, name := range ScenarioNames {
		if name == "raw" || name == InstalledScenario {
			continue
		}
		if clusterSkip[name] == "" {
			t.Errorf("scenario %s is skipped against a cluster without a reason", name)
		}
	}
}
