package faults

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/shard"
)

// loadConfig bounds the load in count and time.
type loadConfig struct {
	// pods is how many pods are created at most, evenly over duration.
	pods     int
	duration time.Duration
	// A pod is deleted minLife..maxLife after it was created, unless the
	// load ends first; the pods alive then stay.
	minLife, maxLife time.Duration
	// staticPct of the pods of a subnet with a static range ask for a
	// static address; recreatePct of all pods are deleted and created
	// again under the same name (once) at the end of their life.
	staticPct, recreatePct int
	// workers send the API calls.
	workers int
	seed    uint64
}

// defaultLoad is 1,500 pods over 60 s; SHARDNET_FAULTS_PODS and
// SHARDNET_FAULTS_SECONDS change both bounds.
func defaultLoad(t *testing.T) loadConfig {
	cfg := loadConfig{
		pods: 1500, duration: 60 * time.Second,
		minLife: 8 * time.Second, maxLife: 25 * time.Second,
		staticPct: 15, recreatePct: 5, workers: 16,
		seed: uint64(time.Now().UnixNano()),
	}
	if v, err := strconv.Atoi(os.Getenv("SHARDNET_FAULTS_PODS")); err == nil && v > 0 {
		cfg.pods = v
	}
	if v, err := strconv.Atoi(os.Getenv("SHARDNET_FAULTS_SECONDS")); err == nil && v > 0 {
		cfg.duration = time.Duration(v) * time.Second
	}
	if v, err := strconv.ParseUint(os.Getenv("SHARDNET_FAULTS_SEED"), 10, 64); err == nil {
		cfg.seed = v
	}
	t.Logf("load: %d pods over %v, lives %v..%v, %d%% static where a subnet has a static range, %d%% re-created under their name, seed %d (SHARDNET_FAULTS_SEED)",
		cfg.pods, cfg.duration, cfg.minLife, cfg.maxLife, cfg.staticPct, cfg.recreatePct, cfg.seed)
	return cfg
}

// podRec is one pod incarnation the suite created.
type podRec struct {
	ns, name, subnet, node string
	uid                    types.UID
	shard                  int
	// static is the address the pod asks for ("" for a dynamic pod).
	static string
	// gen counts the incarnations of the name before this one.
	gen int
	// recreate: at the end of its life the pod is deleted and created
	// again under its name.
	recreate bool
	life     time.Duration
	// created is when the create was sent; allocated when the pod was
	// first seen with allocated=true; deleted when the delete was sent.
	created, allocated, deleted time.Time
}

func (p *podRec) key() string { return p.ns + "/" + p.name }

// recorder watches pods and notes when each incarnation is first seen
// allocated.
type recorder struct {
	// mu guards everything below.
	mu    sync.Mutex
	pods  []*podRec
	byUID map[types.UID]*podRec
	// seen is when each UID was first seen allocated, for pods whose
	// create has not returned yet.
	seen map[types.UID]time.Time
}

// startRecorder starts a pod informer; it stops at cleanup.
func startRecorder(t *testing.T, e *env) *recorder {
	t.Helper()
	r := &recorder{byUID: map[types.UID]*podRec{}, seen: map[types.UID]time.Time{}}
	f := informers.NewSharedInformerFactory(e.kube.Client, 0)
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.observe,
		UpdateFunc: func(_, obj any) { r.observe(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	f.Start(stop)
	t.Cleanup(func() { close(stop); f.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the pod recorder's informer did not sync")
	}
	return r
}

func (r *recorder) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Annotations[annAllocated] != "true" {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.seen[p.UID]; ok {
		return
	}
	r.seen[p.UID] = now
	if rec := r.byUID[p.UID]; rec != nil && rec.allocated.IsZero() {
		rec.allocated = now
	}
}

// add records a created pod.
func (r *recorder) add(p *podRec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pods = append(r.pods, p)
	r.byUID[p.uid] = p
	if at, ok := r.seen[p.uid]; ok && p.allocated.IsZero() {
		p.allocated = at
	}
}

// markDeleted records when the delete of an incarnation was sent (the
// first time only).
func (r *recorder) markDeleted(p *podRec, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.deleted.IsZero() {
		p.deleted = at
	}
}

// snapshot copies every record.
func (r *recorder) snapshot() []podRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]podRec, len(r.pods))
	for i, p := range r.pods {
		out[i] = *p
	}
	return out
}

// load creates and deletes pods at a steady rate.
type load struct {
	e   *env
	cfg loadConfig
	rec *recorder
	rng *rand.Rand

	// The scheduler's own state.
	live         map[string]*podRec
	liveBySubnet map[string]int
	staticFree   map[string][]netip.Addr
	seq          int
	node         int

	jobs chan func()
	// born brings created incarnations (uid empty: the create failed)
	// back to the scheduler.
	born    chan *podRec
	workers sync.WaitGroup

	creates, deletes, failures atomic.Int64
	// errMu guards errs.
	errMu sync.Mutex
	errs  []string
}

func newLoad(e *env, cfg loadConfig, rec *recorder) *load {
	l := &load{
		e: e, cfg: cfg, rec: rec, rng: rand.New(rand.NewPCG(cfg.seed, 0x5eed)),
		live: map[string]*podRec{}, liveBySubnet: map[string]int{}, staticFree: map[string][]netip.Addr{},
		jobs: make(chan func(), 256), born: make(chan *podRec, 2*cfg.pods+64),
	}
	for _, s := range subnetDefs {
		if s.staticFrom == "" {
			continue
		}
		to := netip.MustParseAddr(s.staticTo)
		for a := netip.MustParseAddr(s.staticFrom); a.Compare(to) <= 0; a = a.Next() {
			l.staticFree[s.name] = append(l.staticFree[s.name], a)
		}
	}
	return l
}

func (l *load) failf(format string, args ...any) {
	l.failures.Add(1)
	l.errMu.Lock()
	defer l.errMu.Unlock()
	if len(l.errs) < 10 {
		l.errs = append(l.errs, fmt.Sprintf(format, args...))
	}
}

// run drives the load until it has created cfg.pods pods or cfg.duration
// has passed, then waits for the calls in flight.
func (l *load) run(ctx context.Context) {
	for range l.cfg.workers {
		l.workers.Add(1)
		go func() {
			defer l.workers.Done()
			for job := range l.jobs {
				job()
			}
		}()
	}
	start := time.Now()
	end := start.Add(l.cfg.duration)
	tick := time.NewTicker(l.cfg.duration / time.Duration(l.cfg.pods))
	defer tick.Stop()
	scheduled := 0
	for scheduled < l.cfg.pods && time.Now().Before(end) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		l.drainBorn()
		l.expire(ctx, time.Now())
		if l.schedule(ctx) {
			scheduled++
		}
	}
	close(l.jobs)
	l.workers.Wait()
	l.drainBorn()
}

func (l *load) drainBorn() {
	for range cap(l.born) {
		select {
		case p := <-l.born:
			if p.uid == "" {
				l.liveBySubnet[p.subnet]--
				continue
			}
			l.live[p.key()] = p
		default:
			return
		}
	}
}

// expire deletes (or deletes and re-creates) the pods whose life is over.
func (l *load) expire(ctx context.Context, now time.Time) {
	for _, k := range sortedKeys(l.live) {
		p := l.live[k]
		if now.Before(p.created.Add(p.life)) {
			continue
		}
		delete(l.live, k)
		if p.recreate {
			l.jobs <- func() { l.recreate(ctx, p) }
			continue
		}
		l.liveBySubnet[p.subnet]--
		if p.static != "" {
			l.staticFree[p.subnet] = append(l.staticFree[p.subnet], netip.MustParseAddr(p.static))
		}
		l.jobs <- func() { l.deletePod(ctx, p) }
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// schedule sends the create of one new pod; false when every subnet is
// at its bound.
func (l *load) schedule(ctx context.Context) bool {
	var choices []subnetDef
	weight := 0
	for _, s := range subnetDefs {
		if s.maxLive > 0 && l.liveBySubnet[s.name] >= s.maxLive {
			continue
		}
		choices = append(choices, s)
		weight += s.weight
	}
	if weight == 0 {
		return false
	}
	pick := l.rng.IntN(weight)
	var s subnetDef
	for _, c := range choices {
		if pick < c.weight {
			s = c
			break
		}
		pick -= c.weight
	}
	l.seq++
	p := &podRec{ns: s.ns, name: fmt.Sprintf("p-%05d", l.seq), subnet: s.name,
		life: l.cfg.minLife + time.Duration(l.rng.Int64N(int64(l.cfg.maxLife-l.cfg.minLife)))}
	p.shard = shard.Of(p.key(), shardCount)
	if free := l.staticFree[s.name]; len(free) > 0 && l.rng.IntN(100) < l.cfg.staticPct {
		p.static = free[0].String()
		l.staticFree[s.name] = free[1:]
	}
	if l.rng.IntN(100) < l.cfg.recreatePct {
		p.recreate, p.node = true, l.e.staticNode
	} else {
		p.node = l.e.kwokNodes[l.node%len(l.e.kwokNodes)]
		l.node++
	}
	l.liveBySubnet[s.name]++
	l.jobs <- func() {
		if err := l.createPod(ctx, p); err != nil {
			l.failf("%v", err)
			p.uid = ""
		}
		l.born <- p
	}
	return true
}

// createPod creates the pod and records it.
func (l *load) createPod(ctx context.Context, p *podRec) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.ns},
		Spec:       corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
	}
	if p.static != "" {
		pod.Annotations = map[string]string{annIP: p.static}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p.created = time.Now()
	out, err := l.e.kube.Client.CoreV1().Pods(p.ns).Create(cctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating %s: %w", p.key(), err)
	}
	p.uid = out.UID
	l.creates.Add(1)
	l.rec.add(p)
	return nil
}

// deletePod deletes the incarnation at once (no grace), and only it.
func (l *load) deletePod(ctx context.Context, p *podRec) {
	if err := deleteIncarnation(ctx, l.e, p, l.rec); err != nil {
		l.failf("%v", err)
		return
	}
	l.deletes.Add(1)
}

func deleteIncarnation(ctx context.Context, e *env, p *podRec, rec *recorder) error {
	// A delete that fails while the API server is away is tried again,
	// as a user or a controller would: the load counts the pod gone, and
	// one left alive would fill the nearly full subnet behind its back.
	cctx, cancel := context.WithTimeout(ctx, deleteRetryFor)
	defer cancel()
	zero := int64(0)
	uid := p.uid
	rec.markDeleted(p, time.Now())
	for {
		err := e.kube.Client.CoreV1().Pods(p.ns).Delete(cctx, p.name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid},
		})
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		select {
		case <-cctx.Done():
			return fmt.Errorf("deleting %s: %w", p.key(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// deleteRetryFor bounds the retries of one delete: longer than any
// outage a case makes.
const deleteRetryFor = 90 * time.Second

// recreate deletes the pod, waits until it is gone and creates it again
// under its name, with the same static address if it had one.
func (l *load) recreate(ctx context.Context, p *podRec) {
	next := &podRec{ns: p.ns, name: p.name, subnet: p.subnet, node: p.node, shard: p.shard, static: p.static,
		gen: p.gen + 1, life: p.life}
	defer func() { l.born <- next }()
	if err := deleteIncarnation(ctx, l.e, p, l.rec); err != nil {
		l.failf("%v", err)
		return
	}
	l.deletes.Add(1)
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		_, err := l.e.kube.Client.CoreV1().Pods(p.ns).Get(ctx, p.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if i >= 300 || time.Now().After(deadline) || ctx.Err() != nil {
			l.failf("re-creating %s: the old pod is still there after 30s (%v)", p.key(), err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := l.createPod(ctx, next); err != nil {
		l.failf("%v", err)
		next.uid = ""
	}
}

// burst creates n pods whose keys fall into shards, in the wide subnet,
// outside the scheduler: they stay until the end. It returns them.
func burst(ctx context.Context, t *testing.T, l *load, prefix string, shards []int, n int) []*podRec {
	t.Helper()
	var pods []*podRec
	for i := 0; len(pods) < n && i < 100*n; i++ {
		p := &podRec{ns: subnetDefs[0].ns, subnet: subnetDefs[0].name, name: fmt.Sprintf("%s-%04d", prefix, i), node: l.e.kwokNodes[i%len(l.e.kwokNodes)]}
		p.shard = shard.Of(p.key(), shardCount)
		if slices.Contains(shards, p.shard) {
			pods = append(pods, p)
		}
	}
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.createPod(ctx, p); err != nil {
				l.failf("%v", err)
			}
		}()
	}
	wg.Wait()
	return pods
}

// deleteAllocated deletes up to n allocated, dynamic, first-incarnation
// pods of the load whose keys fall into shards, and returns them.
func deleteAllocated(ctx context.Context, l *load, shards []int, n int) []podRec {
	var victims []podRec
	l.rec.mu.Lock()
	var picked []*podRec
	for _, p := range l.rec.pods {
		if len(picked) == n {
			break
		}
		if !p.allocated.IsZero() && p.deleted.IsZero() && p.static == "" && !p.recreate && p.gen == 0 && slices.Contains(shards, p.shard) {
			picked = append(picked, p)
			victims = append(victims, *p)
		}
	}
	l.rec.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range picked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := deleteIncarnation(ctx, l.e, p, l.rec); err != nil {
				l.failf("%v", err)
			}
		}()
	}
	wg.Wait()
	return victims
}

// sampler checks invariant (a) every interval while the load runs.
type sampler struct {
	// mu guards everything below.
	mu       sync.Mutex
	samples  int
	failed   int
	maxCount int
	examples map[string]time.Time
}

func (s *sampler) run(ctx context.Context, e *env, interval time.Duration) {
	s.examples = map[string]time.Time{}
	// At most an hour of samples; the load's end cancels ctx long before.
	for i := 0; i < int(time.Hour/interval) && ctx.Err() == nil; i++ {
		snap, err := readSnapshot(ctx, e.kube, e.view, true)
		s.mu.Lock()
		if err != nil {
			s.failed++
		} else {
			v := checkA(snap)
			s.samples++
			s.maxCount = max(s.maxCount, v.count)
			for _, ex := range v.examples {
				if _, ok := s.examples[ex]; !ok {
					s.examples[ex] = snap.at
				}
			}
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
	}
}

func (s *sampler) result() (samples, failed, maxCount int, examples []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ex, at := range s.examples {
		examples = append(examples, at.Format("15:04:05.000")+" "+ex)
	}
	sort.Strings(examples)
	return s.samples, s.failed, s.maxCount, examples
}

// delayStats are the allocation delays of the pods created in [from, to]:
// median and maximum over the pods that were allocated, how many were
// deleted before they were, and how many never were.
type delayStats struct {
	n, deletedFirst, never int
	p50, max               time.Duration
	// slowest is the pod allocated last, relative to its creation.
	slowest podRec
}

func delays(recs []podRec, from, to time.Time) delayStats {
	var st delayStats
	var ds []time.Duration
	for _, p := range recs {
		if p.created.Before(from) || p.created.After(to) {
			continue
		}
		switch {
		case !p.allocated.IsZero() && (p.deleted.IsZero() || !p.allocated.After(p.deleted)):
			d := p.allocated.Sub(p.created)
			if len(ds) == 0 || d > st.slowest.allocated.Sub(st.slowest.created) {
				st.slowest = p
			}
			ds = append(ds, d)
		case !p.deleted.IsZero():
			st.deletedFirst++
		default:
			st.never++
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	st.n = len(ds)
	if len(ds) > 0 {
		st.p50, st.max = ds[len(ds)/2], ds[len(ds)-1]
	}
	return st
}

// catchUp is how the work pending when a fault was healed got done: the
// pods created before the heal and neither allocated nor deleted by then,
// and how long after the heal they were allocated (the first, which shows
// how soon work resumed, p50, and the last, which also counts the
// backlog; a pod deleted before it was allocated is left out).
type catchUp struct {
	pending          int
	first, p50, last time.Duration
	// lastPod is the pod allocated last.
	lastPod podRec
	// byShard counts the pending pods per shard, for the log.
	byShard map[int]int
}

func catchUpAfter(recs []podRec, healed time.Time) catchUp {
	c := catchUp{byShard: map[int]int{}}
	var ds []time.Duration
	for _, p := range recs {
		if p.created.After(healed) || (!p.allocated.IsZero() && !p.allocated.After(healed)) ||
			(!p.deleted.IsZero() && !p.deleted.After(healed)) {
			continue
		}
		if p.allocated.IsZero() || (!p.deleted.IsZero() && p.allocated.After(p.deleted)) {
			continue
		}
		c.pending++
		c.byShard[p.shard]++
		d := p.allocated.Sub(healed)
		if d > c.last || c.lastPod.name == "" {
			c.last, c.lastPod = d, p
		}
		ds = append(ds, d)
	}
	if len(ds) > 0 {
		slices.Sort(ds)
		c.first, c.p50 = ds[0], ds[len(ds)/2]
	}
	return c
}

// longestStall is the longest time within [from, to] that some shard had a
// pod waiting for its addresses without allocating any pod: for each
// shard, a stall starts when a pod starts waiting while none was, or at an
// allocation after which pods still wait, and ends at the next allocation
// or when no pod waits any more (a waiting pod was deleted). It returns
// the stall and its shard.
func longestStall(recs []podRec, from, to time.Time) stall {
	type event struct {
		at   time.Time
		kind int // 0: created, 1: allocated, 2: deleted before allocated
		pod  int
	}
	byShard := map[int][]event{}
	for i, p := range recs {
		if p.created.After(to) {
			continue
		}
		byShard[p.shard] = append(byShard[p.shard], event{p.created, 0, i})
		switch {
		case !p.allocated.IsZero() && (p.deleted.IsZero() || !p.allocated.After(p.deleted)):
			byShard[p.shard] = append(byShard[p.shard], event{p.allocated, 1, i})
		case !p.deleted.IsZero():
			byShard[p.shard] = append(byShard[p.shard], event{p.deleted, 2, i})
		}
	}
	worst := stall{shard: -1}
	for s, evs := range byShard {
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
		waiting := map[int]bool{}
		var since time.Time
		note := func(end time.Time) {
			start := since
			if start.Before(from) {
				start = from
			}
			if end.After(to) {
				end = to
			}
			if d := end.Sub(start); d > worst.length {
				worst = stall{length: d, shard: s, start: start}
				for _, i := range slices.Sorted(maps.Keys(waiting)) {
					worst.waiting = append(worst.waiting, recs[i])
				}
			}
		}
		for _, ev := range evs {
			if ev.at.After(to) {
				break
			}
			switch ev.kind {
			case 0:
				if len(waiting) == 0 {
					since = ev.at
				}
				waiting[ev.pod] = true
			case 1:
				note(ev.at)
				delete(waiting, ev.pod)
				since = ev.at
			case 2:
				if len(waiting) == 1 {
					note(ev.at)
				}
				delete(waiting, ev.pod)
			}
		}
		if len(waiting) > 0 {
			note(to)
		}
	}
	return worst
}

// stall is the longest stall of a shard, and the pods waiting in it.
type stall struct {
	length  time.Duration
	shard   int
	start   time.Time
	waiting []podRec
}

// describePod names a pod incarnation and what it asked for.
func describePod(p podRec) string {
	out := fmt.Sprintf("%s (subnet %s, node %s, shard %d", p.key(), p.subnet, p.node, p.shard)
	if p.static != "" {
		out += ", static " + p.static
	}
	if p.gen > 0 {
		out += fmt.Sprintf(", incarnation %d", p.gen+1)
	}
	return out + ")"
}
