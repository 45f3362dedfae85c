package controller_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/controller"
	"github.com/shardnet/shardnet/shard"
	"github.com/shardnet/shardnet/test/harness"
)

// Short lease timings so that failover is measured in seconds. They obey
// the same rules as the defaults (renew deadline > 1.2 x retry period).
const (
	testLease = 4 * time.Second
	testRenew = 3 * time.Second
	testRetry = time.Second
)

func report(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf(format, args...)
	fmt.Printf(format+"\n", args...)
}

// interval is one ownership term of a shard on a replica, from OnAcquire
// (before the queue starts) to OnRelease (after the last key finished).
type interval struct {
	replica    string
	shard      int
	epoch      uint64
	start, end time.Time // end is zero while open
}

type handledKey struct {
	replica string
	shard   int
	epoch   uint64
	at      time.Time
}

// recorder collects, across all replicas of a test, which replica held
// which shard when and which replica handled which key.
type recorder struct {
	mu        sync.Mutex // guards the fields below
	intervals []*interval
	handled   map[string][]handledKey
	problems  []string
}

func newRecorder() *recorder { return &recorder{handled: map[string][]handledKey{}} }

func (r *recorder) acquire(replica string, s int, epoch uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.intervals = append(r.intervals, &interval{replica: replica, shard: s, epoch: epoch, start: time.Now()})
}

func (r *recorder) release(replica string, s int, epoch uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, iv := range r.intervals {
		if iv.replica == replica && iv.shard == s && iv.epoch == epoch && iv.end.IsZero() {
			iv.end = time.Now()
			return
		}
	}
	r.problems = append(r.problems, fmt.Sprintf("%s released shard %d epoch %d it never acquired", replica, s, epoch))
}

func (r *recorder) handle(replica string, s int, epoch uint64, key string, shards int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if got := shard.Of(key, shards); got != s {
		r.problems = append(r.problems, fmt.Sprintf("%s: key %s of shard %d handled by the reconciler of shard %d", replica, key, got, s))
	}
	r.handled[key] = append(r.handled[key], handledKey{replica: replica, shard: s, epoch: epoch, at: time.Now()})
}

func (r *recorder) handledCount(keys []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, k := range keys {
		if len(r.handled[k]) > 0 {
			n++
		}
	}
	return n
}

// check fails the test if two replicas ever held one shard at the same
// moment, or a key was handled outside its handler's ownership term.
func (r *recorder) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.problems {
		t.Error(p)
	}
	far := time.Now().Add(time.Hour)
	endOf := func(iv *interval) time.Time {
		if iv.end.IsZero() {
			return far
		}
		return iv.end
	}
	byShard := map[int][]*interval{}
	for _, iv := range r.intervals {
		byShard[iv.shard] = append(byShard[iv.shard], iv)
	}
	overlaps := 0
	for s, ivs := range byShard {
		for i, a := range ivs {
			for _, b := range ivs[i+1:] {
				if a.replica != b.replica && a.start.Before(endOf(b)) && b.start.Before(endOf(a)) {
					overlaps++
					if overlaps <= 10 {
						t.Errorf("shard %d held by %s (epoch %d, %s..%s) and %s (epoch %d, %s..%s) at once",
							s, a.replica, a.epoch, a.start.Format("15:04:05.000"), endOf(a).Format("15:04:05.000"),
							b.replica, b.epoch, b.start.Format("15:04:05.000"), endOf(b).Format("15:04:05.000"))
					}
				}
			}
		}
	}
	outside := 0
	for key, hs := range r.handled {
		for _, h := range hs {
			ok := false
			for _, iv := range byShard[h.shard] {
				if iv.replica == h.replica && iv.epoch == h.epoch && !h.at.Before(iv.start) && !h.at.After(endOf(iv)) {
					ok = true
					break
				}
			}
			if !ok {
				outside++
				if outside <= 10 {
					t.Errorf("key %s handled by %s (shard %d, epoch %d) at %s outside its ownership term", key, h.replica, h.shard, h.epoch, h.at.Format("15:04:05.000"))
				}
			}
		}
	}
	t.Logf("ownership check: %d intervals over %d shards, %d keys, %d overlaps, %d handled outside a term", len(r.intervals), len(byShard), len(r.handled), overlaps, outside)
}

// testReconciler records every call; it sleeps a little per key so that
// shards have work in flight when they move.
type testReconciler struct {
	replica string
	sc      controller.ShardContext
	rec     *recorder
}

var _ controller.ShardHooks = (*testReconciler)(nil)

func (r *testReconciler) Reconcile(ctx context.Context, key string) error {
	r.rec.handle(r.replica, r.sc.Shard, r.sc.Epoch, key, r.sc.Shards)
	select {
	case <-ctx.Done():
	case <-time.After(time.Millisecond):
	}
	return nil
}

func (r *testReconciler) OnAcquire(_ context.Context, s int, epoch uint64) error {
	r.rec.acquire(r.replica, s, epoch)
	return nil
}

func (r *testReconciler) OnRelease(_ context.Context, s int, epoch uint64) error {
	r.rec.release(r.replica, s, epoch)
	return nil
}

// transport counts a replica's coordination writes and can cut it off.
type transport struct {
	rt     http.RoundTripper
	writes *atomic.Int64
	dead   *atomic.Bool
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.dead.Load() {
		return nil, errors.New("replica cut off")
	}
	if req.Method != http.MethodGet && (strings.Contains(req.URL.Path, "/leases") || strings.Contains(req.URL.Path, "/configmaps")) {
		t.writes.Add(1)
	}
	return t.rt.RoundTrip(req)
}

type replica struct {
	name   string
	ctrl   *controller.Controller
	cancel context.CancelFunc
	done   chan error
	writes atomic.Int64
	dead   atomic.Bool
}

type cluster struct {
	t         *testing.T
	kube      *harness.Kube
	namespace string
	shards    int
	timings   [3]time.Duration
	rec       *recorder
	mu        sync.Mutex // guards replicas
	replicas  map[string]*replica
	// early makes start load every cache (StartInformers) and wait for
	// the pods' before Run, as a replica does while it connects to the
	// Northbound.
	early bool
}

func newCluster(t *testing.T, kube *harness.Kube, namespace string, shards int, timings [3]time.Duration) *cluster {
	ctx := context.Background()
	if _, err := kube.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, kube: kube, namespace: namespace, shards: shards, timings: timings, rec: newRecorder(), replicas: map[string]*replica{}}
	t.Cleanup(c.stopAll)
	return c
}

func (c *cluster) start(name string) *replica {
	c.t.Helper()
	r := &replica{name: name, done: make(chan error, 1)}
	rc := rest.CopyConfig(c.kube.Config)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return transport{rt: rt, writes: &r.writes, dead: &r.dead}
	})
	ctrl, err := controller.New(controller.Config{
		RESTConfig:      rc,
		Identity:        name,
		Namespace:       c.namespace,
		Shards:          c.shards,
		WorkersPerShard: 2,
		LeaseDuration:   c.timings[0],
		RenewDeadline:   c.timings[1],
		RetryPeriod:     c.timings[2],
		DrainTimeout:    time.Second,
		BurstGCPercent:  50,
		NewReconciler: func(sc controller.ShardContext) (controller.Reconciler, error) {
			return &testReconciler{replica: name, sc: sc, rec: c.rec}, nil
		},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	r.ctrl = ctrl
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	if c.early {
		ctrl.StartInformers(ctx)
		if !synced(ctrl.Informers().Pods.HasSynced) {
			c.t.Fatalf("%s: pods not loaded ahead of Run", name)
		}
	}
	go func() { r.done <- ctrl.Run(ctx) }()
	c.mu.Lock()
	c.replicas[name] = r
	c.mu.Unlock()
	return r
}

// stop is a graceful shutdown (SIGTERM): it returns when Run returned.
func (c *cluster) stop(r *replica) {
	c.t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			c.t.Errorf("%s: Run: %v", r.name, err)
		}
	case <-time.After(2 * c.lease()):
		c.t.Errorf("%s did not stop within two lease durations", r.name)
	}
	c.mu.Lock()
	delete(c.replicas, r.name)
	c.mu.Unlock()
}

// lease is the member lease duration in force (15s when left to default).
func (c *cluster) lease() time.Duration {
	if c.timings[0] == 0 {
		return 15 * time.Second
	}
	return c.timings[0]
}

func (c *cluster) stopAll() {
	c.mu.Lock()
	rs := slices.Collect(maps.Values(c.replicas))
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() { c.stop(r) })
	}
	wg.Wait()
}

func (c *cluster) live() []*replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*replica
	for _, r := range c.replicas {
		if !r.dead.Load() {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// owners returns shard -> replica over the live replicas, and whether every
// shard runs on exactly one of them with no handoff pending in the table.
func (c *cluster) owners() (map[int]string, bool) {
	out := map[int]string{}
	dup := false
	for _, r := range c.live() {
		for s := range r.ctrl.Owned() {
			if _, taken := out[s]; taken {
				dup = true
			}
			out[s] = r.name
		}
	}
	return out, !dup && len(out) == c.shards
}

// settle waits until every shard runs on one live replica and the owners
// stayed the same for a moment, and returns them and when that began.
// synced waits up to a minute for f.
func synced(f cache.InformerSynced) bool {
	stop := make(chan struct{})
	t := time.AfterFunc(time.Minute, func() { close(stop) })
	defer t.Stop()
	return cache.WaitForCacheSync(stop, f)
}

func (c *cluster) settle(limit time.Duration) (map[int]string, time.Time) {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	var last map[int]string
	var since time.Time
	for time.Now().Before(deadline) {
		own, complete := c.owners()
		switch {
		case !complete:
			last = nil
		case last == nil || !maps.Equal(own, last):
			last, since = own, time.Now()
		case time.Since(since) > 500*time.Millisecond:
			return own, since
		}
		time.Sleep(5 * time.Millisecond)
	}
	own, _ := c.owners()
	c.t.Fatalf("shards did not settle within %s: %d of %d running", limit, len(own), c.shards)
	return nil, time.Time{}
}

// settleOwnedByAll is settle until every live replica owns a shard.
func (c *cluster) settleOwnedByAll(limit time.Duration) map[int]string {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		own, _ := c.settle(time.Until(deadline))
		owners := map[string]bool{}
		for _, o := range own {
			owners[o] = true
		}
		missing := 0
		for _, r := range c.live() {
			if !owners[r.name] {
				missing++
			}
		}
		if missing == 0 {
			return own
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%d live replicas own no shard after %s", missing, limit)
		}
	}
}

func moved(before, after map[int]string) int {
	n := 0
	for s, o := range after {
		if before[s] != o {
			n++
		}
	}
	return n
}

// handoffGaps returns, for the shards whose owner changed between before
// and after, the longest time between the old term's end and the new term's
// start, as recorded by the hooks.
func (c *cluster) handoffGaps(before, after map[int]string, since time.Time) time.Duration {
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	var worst time.Duration
	for s, newOwner := range after {
		if before[s] == newOwner {
			continue
		}
		var oldEnd, newStart time.Time
		for _, iv := range c.rec.intervals {
			if iv.shard != s || iv.start.Before(since.Add(-time.Minute)) && iv.end.IsZero() && iv.replica != newOwner {
				continue
			}
			if iv.replica == before[s] && !iv.end.IsZero() && iv.end.After(oldEnd) {
				oldEnd = iv.end
			}
			if iv.replica == newOwner && iv.end.IsZero() {
				newStart = iv.start
			}
		}
		if !oldEnd.IsZero() && !newStart.IsZero() {
			worst = max(worst, newStart.Sub(oldEnd))
		}
	}
	return worst
}

func waitReady(t *testing.T, r *replica, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if r.ctrl.Ready() {
			return time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s not ready within %s", r.name, limit)
	return time.Time{}
}

// createPods creates n pods in namespace with 16 clients, bounded by limit.
func createPods(t *testing.T, kube *harness.Kube, namespace string, n int, limit time.Duration) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if _, err := kube.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, n)
	next := atomic.Int64{}
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				name := fmt.Sprintf("pod-%05d", i)
				keys[i] = namespace + "/" + name
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
					Spec: corev1.PodSpec{
						NodeName:   fmt.Sprintf("node-%d", i%10),
						Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}},
					},
				}
				if _, err := kube.Client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f > 0 || ctx.Err() != nil {
		t.Fatalf("creating %d pods: %d failed (%v)", n, f, ctx.Err())
	}
	return keys
}

// churn patches random pods at about rate/s until ctx ends, so that shards
// have work in flight while they move.
func churn(ctx context.Context, kube *harness.Kube, keys []string, rate int) {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ns, name, _ := strings.Cut(keys[(i*7919)%len(keys)], "/")
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.shardnet.io/churn":"%d"}}}`, i)
		_, _ = kube.Client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
}

// quietLogs sends the replicas' logs to $SHARDNET_E2E_LOG, or drops them:
// a dozen replicas logging every shard move would bury the figures.
func quietLogs(t *testing.T) {
	var out io.Writer = io.Discard
	if path := os.Getenv("SHARDNET_E2E_LOG"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		out = f
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	_ = fs.Set("v", "2")
	klog.SetOutput(out)
}

func TestE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	quietLogs(t)
	kube := harness.StartKube(t)
	const shards = 64
	fast := [3]time.Duration{testLease, testRenew, testRetry}
	var keys []string

	t.Run("every key handled by its shard's owner", func(t *testing.T) {
		c := newCluster(t, kube, "coord-load", shards, fast)
		for i := range 3 {
			c.start(fmt.Sprintf("shardnet-%d", i))
		}
		c.settle(60 * time.Second)
		start := time.Now()
		keys = createPods(t, kube, "load", 5000, 2*time.Minute)
		created := time.Since(start)
		deadline := time.Now().Add(2 * time.Minute)
		for c.rec.handledCount(keys) < len(keys) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if got := c.rec.handledCount(keys); got < len(keys) {
			t.Fatalf("%d of %d keys handled", got, len(keys))
		}
		report(t, "5000 pods: created in %s, all handled %s after the first create", created.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		c.stopAll()
		c.rec.check(t)
	})
	if len(keys) == 0 {
		t.Fatal("no pods to work on")
	}

	t.Run("scale 1-3-2", func(t *testing.T) {
		c := newCluster(t, kube, "coord-scale", shards, fast)
		ctx, stopChurn := context.WithCancel(context.Background())
		defer stopChurn()
		go churn(ctx, kube, keys, 200)

		r0 := c.start("shardnet-0")
		before, _ := c.settle(60 * time.Second)
		check := func(change string, n int, trigger time.Time, after map[int]string, since time.Time) {
			t.Helper()
			m := moved(before, after)
			bound := (shards+n-1)/n + 2
			took := since.Sub(trigger)
			gap := c.handoffGaps(before, after, trigger)
			// Timings are reported, not asserted: make test is not
			// timing-sensitive (the bench measures handoffs).
			report(t, "%s: moved %d shards (bound %d), all shards running %s after the change, longest handoff gap %s",
				change, m, bound, took.Round(time.Millisecond), gap.Round(time.Millisecond))
			if m > bound {
				t.Errorf("%s moved %d shards, more than ceil(%d/%d)+2", change, m, shards, n)
			}
			before = after
		}
		for i, n := range []int{2, 3} {
			r := c.start(fmt.Sprintf("shardnet-%d", i+1))
			ready := waitReady(t, r, 60*time.Second)
			after, since := c.settle(30 * time.Second)
			check(fmt.Sprintf("join %d->%d", n-1, n), n, ready, after, since)
		}
		victim := c.live()[2]
		if victim == r0 {
			t.Fatal("unexpected replica order")
		}
		trigger := time.Now()
		c.stop(victim)
		after, since := c.settle(30 * time.Second)
		check("leave 3->2 (SIGTERM)", 3, trigger, after, since)
		stopChurn()
		c.stopAll()
		c.rec.check(t)
		// Every first pass a replica started ended, synced or cut short
		// by a handoff: the heap collector's count is back to nothing.
		for name, r := range c.replicas {
			if n := r.ctrl.FirstPassKeys(); n != 0 {
				t.Errorf("%s: %d seeded keys still counted in a first pass after it stopped", name, n)
			}
		}
		// Every burst (a cache load, a first pass) ended: the collector's
		// target is the process's own again.
		if n := controller.BurstsInProgress(); n != 0 {
			t.Errorf("%d bursts still hold the collector's target after every replica stopped", n)
		}
	})

	t.Run("failover when a replica stops renewing", func(t *testing.T) {
		c := newCluster(t, kube, "coord-failover", shards, fast)
		for i := range 3 {
			c.start(fmt.Sprintf("shardnet-%d", i))
		}
		// Settled, and with every replica owning shards: a replica whose
		// Lease came late is given its share by a rebalance that a quiet
		// half second does not wait for.
		before := c.settleOwnedByAll(60 * time.Second)
		var victim *replica
		for _, r := range c.live() {
			if !r.ctrl.IsLeader() {
				victim = r
			}
		}
		lost := 0
		for _, o := range before {
			if o == victim.name {
				lost++
			}
		}
		trigger := time.Now()
		victim.dead.Store(true)
		after, since := c.settle(testLease + 10*time.Second)
		took := since.Sub(trigger)
		report(t, "failover: %s (%d shards) cut off; its shards running elsewhere after %s (lease %s, goal %s; timings are reported, not asserted: make test is not timing-sensitive)",
			victim.name, lost, took.Round(time.Millisecond), testLease, testLease+2*time.Second)
		if m := moved(before, after); m != lost {
			t.Errorf("failover moved %d shards, want exactly the %d of the lost replica", m, lost)
		}

		// The cut heals: the replica renews again, reads the table live and
		// gets a fair share back, without ever overlapping the others.
		before = after
		trigger = time.Now()
		victim.dead.Store(false)
		for limit := time.Now().Add(testLease + 10*time.Second); len(victim.ctrl.Owned()) == 0 && time.Now().Before(limit); {
			time.Sleep(5 * time.Millisecond)
		}
		after, since = c.settle(testLease + 10*time.Second)
		back := 0
		for _, o := range after {
			if o == victim.name {
				back++
			}
		}
		report(t, "rejoin: %s back after the cut healed; %d shards running on it %s later, %d moved",
			victim.name, back, since.Sub(trigger).Round(time.Millisecond), moved(before, after))
		if back == 0 {
			t.Errorf("%s got no shards back after rejoining", victim.name)
		}

		// Now the leader: election and member expiry run in parallel, since
		// every replica watches the member Leases all along.
		before = after
		var leader *replica
		for _, r := range c.live() {
			if r.ctrl.IsLeader() {
				leader = r
			}
		}
		if leader == nil {
			t.Fatal("no leader among the live replicas")
		}
		lost = 0
		for _, o := range before {
			if o == leader.name {
				lost++
			}
		}
		trigger = time.Now()
		leader.dead.Store(true)
		_, since = c.settle(testLease + 10*time.Second)
		took = since.Sub(trigger)
		report(t, "failover of the leader: %s (%d shards) cut off; its shards running elsewhere after %s (lease %s, goal %s; timings are reported, not asserted: make test is not timing-sensitive)",
			leader.name, lost, took.Round(time.Millisecond), testLease, testLease+2*time.Second)
		c.stopAll()
		c.rec.check(t)
	})

	var totalsMu sync.Mutex
	totals := map[int]int64{}
	t.Run("caches loaded ahead of Run", func(t *testing.T) {
		// Started and stopped without Run: StopInformers returns.
		ctrl, err := controller.New(controller.Config{RESTConfig: kube.Config, Identity: "idle", Namespace: "default", Shards: shards,
			NewReconciler: func(controller.ShardContext) (controller.Reconciler, error) { return nil, errors.New("never runs") }})
		if err != nil {
			t.Fatal(err)
		}
		ctrl.StartInformers(context.Background())
		if !synced(ctrl.Informers().Pods.HasSynced) {
			t.Fatal("pods not loaded")
		}
		if n := len(ctrl.Informers().Pods.GetStore().ListKeys()); n < len(keys) {
			t.Errorf("%d pods cached, want at least %d", n, len(keys))
		}
		stopped := make(chan struct{})
		go func() { ctrl.StopInformers(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(60 * time.Second):
			t.Fatal("StopInformers did not return")
		}

		// Replicas whose caches loaded before Run share the shards as
		// others do: every shard owned once, every key handled by its
		// owner.
		c := newCluster(t, kube, "coord-early", shards, fast)
		c.early = true
		for i := range 2 {
			c.start(fmt.Sprintf("shardnet-%d", i))
		}
		owners, _ := c.settle(60 * time.Second)
		if len(owners) != shards {
			t.Errorf("%d shards owned, want %d", len(owners), shards)
		}
		c.stopAll()
		c.rec.check(t)
	})

	t.Run("steady-state coordination writes", func(t *testing.T) {
		const window = 30 * time.Second
		for _, s := range []int{16, 256} {
			t.Run(fmt.Sprint(s), func(t *testing.T) {
				t.Parallel()
				// Production timings: the write rate is what they cost.
				c := newCluster(t, kube, fmt.Sprintf("coord-writes-%d", s), s, [3]time.Duration{})
				var rs []*replica
				for i := range 3 {
					rs = append(rs, c.start(fmt.Sprintf("shardnet-%d", i)))
				}
				// Steady state: every member joined and the moves are over.
				for _, r := range rs {
					waitReady(t, r, 60*time.Second)
				}
				c.settle(60 * time.Second)
				time.Sleep(2 * time.Second)
				start := map[string]int64{}
				for _, r := range c.live() {
					start[r.name] = r.writes.Load()
				}
				time.Sleep(window)
				var total int64
				for _, r := range c.live() {
					w := r.writes.Load() - start[r.name]
					total += w
					rate := float64(w) / window.Seconds()
					report(t, "S=%d %s (leader %v): %d coordination writes in %s = %.2f/s", s, r.name, r.ctrl.IsLeader(), w, window, rate)
				}
				report(t, "S=%d: %d coordination writes by 3 replicas in %s = %.2f/s per replica", s, total, window, float64(total)/window.Seconds()/3)
				totalsMu.Lock()
				totals[s] = total
				totalsMu.Unlock()
				c.stopAll()
				c.rec.check(t)
			})
		}
	})
	// Only when both ran (a -run filter may select neither).
	if a, b := totals[16], totals[256]; len(totals) == 2 && float64(b) > 1.25*float64(a)+3 {
		t.Errorf("coordination writes grow with S: %d at S=16, %d at S=256", a, b)
	}
}
