package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/internal/metawatch"
	"github.com/shardnet/shardnet/internal/watch"
	"github.com/shardnet/shardnet/queue"
	"github.com/shardnet/shardnet/shard"
)

// Controller is one replica of the sharded runtime.
type Controller struct {
	cfg       Config
	informers *Informers
	coord     *shard.Coordinator
	queueMet  *queue.Metrics
	met       *metrics

	// mu guards runs: the shards whose queue takes keys right now. Event
	// handlers read it for every pod event, so it is a RWMutex.
	mu   sync.RWMutex
	runs map[int]*shardRun

	// synced is set once the informers have synced; running while Run runs.
	synced  atomic.Bool
	running atomic.Bool
	// started makes Run single-use.
	started atomic.Bool

	// passes collects the heap after a burst of first passes.
	passes passCollector
	// loading is set while the caches' load counts as a burst
	// (processBursts), from StartInformers to just before joining.
	loading atomic.Bool

	// infOnce starts the informers once, from StartInformers or Run;
	// stopInformers ends the context they run with.
	infOnce       sync.Once
	stopInformers context.CancelFunc
}

// shardRun is one running shard term.
type shardRun struct {
	epoch uint64
	q     *queue.Queue
	rec   Reconciler
	// sync tracks the first pass over the seeded keys, seeded of them.
	sync   *seedSync
	seeded int
	// cancel ends the context the reconcilers of this term get.
	cancel context.CancelFunc
}

var _ shard.Holder = (*holder)(nil)

// holder adapts Controller to shard.Holder without exporting the methods.
type holder Controller

// New validates cfg, fills in its defaults and builds the clients and
// informers; nothing talks to the API server before Run.
func New(cfg Config) (*Controller, error) {
	rc, err := cfg.complete()
	if err != nil {
		return nil, fmt.Errorf("controller config: %w", err)
	}
	// The pod informer decodes through the pod client (podwire), on the
	// typed client's connection.
	kube, podClient, err := KubeClients(rc)
	if err != nil {
		return nil, fmt.Errorf("building the Kubernetes clients: %w", err)
	}
	pods := podClient.Pods(metav1.NamespaceAll)
	crds, err := CRDClient(rc)
	if err != nil {
		return nil, fmt.Errorf("building the CRD client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	// The claims' and IP records' metadata decode without their managed
	// fields, which the informers' transforms drop (metawatch.Client).
	meta, err := metawatch.NewClient(Protobuf(rc), nil)
	if err != nil {
		return nil, fmt.Errorf("building the metadata client: %w", err)
	}
	c := &Controller{cfg: cfg, runs: map[int]*shardRun{}}
	logger := klog.Background().WithValues("identity", cfg.Identity)
	c.passes.collect = func(why string) { _ = collectHeap(logger, why) }
	c.passes.target, c.passes.percent = processBursts, cfg.BurstGCPercent
	if c.informers, err = newInformers(kube, &pods, crds, meta, kube.Discovery(), dyn, cfg.Shards, cfg.ResyncPeriod, logger); err != nil {
		return nil, err
	}
	c.informers.keyOf = cfg.PodKey
	if cfg.Registerer != nil {
		if c.queueMet, err = queue.NewMetrics(cfg.Registerer); err != nil {
			return nil, err
		}
	}
	if c.met, err = newMetrics(cfg.Registerer); err != nil {
		return nil, err
	}
	handler := watch.Changes(c.enqueueObj)
	// A pod that appears (created, or re-created under the name of one
	// that kept failing) starts with a fresh retry delay.
	handler.AddFunc = c.enqueueFresh
	if _, err := c.informers.Pods.AddEventHandler(handler); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	if cfg.Setup != nil {
		if err := cfg.Setup(c.informers); err != nil {
			return nil, fmt.Errorf("informer setup: %w", err)
		}
	}
	c.coord, err = shard.NewCoordinator(shard.Config{
		Client:          kube,
		Namespace:       cfg.Namespace,
		Identity:        cfg.Identity,
		Name:            cfg.LeaseName,
		Shards:          cfg.Shards,
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		RenewInterval:   cfg.RenewInterval,
		ShutdownTimeout: cfg.ShutdownTimeout,
		Holder:          (*holder)(c),
		OnLeading:       cfg.OnLeading,
		// The member Lease written again after failed writes: the API
		// server answers again.
		OnRenewedAgain: func() {
			if n := c.RetryWaiting(); n > 0 {
				logger.Info("API server answers again: retrying the keys that failed meanwhile", "keys", n)
			}
		},
		ExitOnLoss: cfg.ExitOnLoss,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// logLoads logs, for the caches with an object per pod (pods, IP
// records, claims), how long each took to load from start, the
// informers' start, once each: a restart's time is the slowest of them.
func (c *Controller) logLoads(ctx context.Context, start time.Time) {
	logger := klog.FromContext(ctx).WithValues("identity", c.cfg.Identity)
	for _, inf := range []struct {
		name     string
		informer cache.SharedIndexInformer
	}{
		{"pods", c.informers.Pods},
		{"ips", c.informers.CRDs.Kubeovn().V1().IPs().Informer()},
		{"addressclaims", c.informers.CRDs.Shardnet().V1alpha1().AddressClaims().Informer()},
	} {
		go func() {
			if cache.WaitFor(ctx, "", inf.informer.HasSyncedChecker()) {
				logger.Info("Cache loaded", "resource", inf.name, "took", time.Since(start))
			}
		}()
	}
}

// Informers returns the shared caches.
func (c *Controller) Informers() *Informers { return c.informers }

// Run starts the informers, waits for them, joins the shard membership and
// runs until ctx ends; then it hands its shards over (see
// shard.Coordinator.Run) and returns nil. With Config.ExitOnLoss it returns
// shard.ErrMembershipLost after losing its membership. Run may be called
// once.
func (c *Controller) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("controller: Run called twice")
	}
	c.running.Store(true)
	defer c.running.Store(false)
	logger := klog.FromContext(ctx).WithValues("identity", c.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	c.StartInformers(ctx)
	defer c.StopInformers()
	for typ, ok := range c.informers.Kube.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("waiting for the %v cache: %w", typ, context.Cause(ctx))
		}
	}
	for typ, ok := range c.informers.CRDs.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("waiting for the %v cache: %w", typ, context.Cause(ctx))
		}
	}
	// The pod path resolves attachments from this cache as it resolves
	// subnets from theirs, so it is waited for the same way; on a cluster
	// without multus it is synced at once.
	if !cache.WaitForCacheSync(ctx.Done(), c.informers.NADs.HasSynced) {
		return fmt.Errorf("waiting for the NetworkAttachmentDefinition cache: %w", context.Cause(ctx))
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.informers.VMs.HasSynced) {
		return fmt.Errorf("waiting for the KubeVirt cache: %w", context.Cause(ctx))
	}
	if c.cfg.BeforeJoin != nil {
		logger.Info("Caches synced; preparing before joining the shard membership")
		if err := c.cfg.BeforeJoin(ctx); err != nil {
			return fmt.Errorf("before joining the shard membership: %w", err)
		}
	}
	// The caches' load is over: the collector's target is put back and
	// the first pass's heap goal is set from what is live (collect.go).
	c.endLoad()
	collectAfterLoad(liveHeap(), BurstHeapFloor, func() { _ = collectHeap(logger, "loading the caches") })
	c.synced.Store(true)
	logger.Info("Caches synced; joining the shard membership")
	return c.coord.Run(ctx)
}

// StartInformers starts loading the caches ahead of Run, the shard
// coordinator's member Leases and assignment included, so that they load
// while the caller prepares what Run needs besides them (a replica
// connects to the Northbound and loads its cache meanwhile: one after the
// other, the loads added up at every restart). Run starts them itself
// when StartInformers was not called. A caller that starts them and then
// never calls Run stops them with StopInformers. The caches run until Run
// has returned or StopInformers is called, not until ctx ends: the handoff
// after ctx ends still reads them (seeding on the new owner, draining
// here); ctx gives them its values (the logger).
func (c *Controller) StartInformers(ctx context.Context) {
	c.infOnce.Do(func() {
		// Loading the caches is a burst of garbage (collect.go).
		c.loading.Store(true)
		processBursts.enter(c.cfg.BurstGCPercent)
		processBursts.startLift()
		var infCtx context.Context
		infCtx, c.stopInformers = context.WithCancel(context.WithoutCancel(ctx))
		c.informers.Kube.Start(infCtx.Done())
		c.informers.CRDs.Start(infCtx.Done())
		c.informers.NADs.Start(infCtx)
		c.informers.VMs.Start(infCtx)
		c.logLoads(infCtx, time.Now())
		// The member Leases and the assignment too; an error starting
		// them comes back from Run.
		_ = c.coord.StartCaches(ctx)
	})
}

// StopInformers stops the caches and waits for their goroutines. Run calls
// it on its way out; calling it again, or before they started, is a no-op.
func (c *Controller) StopInformers() {
	c.infOnce.Do(func() {}) // never started: nothing to stop, and no start after this
	c.endLoad()
	if c.stopInformers == nil {
		return
	}
	c.stopInformers()
	c.coord.StopCaches()
	c.informers.Kube.Shutdown()
	c.informers.CRDs.Shutdown()
	c.informers.NADs.Shutdown()
	c.informers.VMs.Shutdown()
}

// endLoad ends the caches' load as a burst, once.
func (c *Controller) endLoad() {
	if c.loading.CompareAndSwap(true, false) {
		processBursts.endLift()
		processBursts.exit()
	}
}

// Ready reports whether the replica can take work: caches synced, member
// Lease renewed within the renew deadline, and every ReadyCheck passes.
func (c *Controller) Ready() bool {
	if !c.running.Load() || !c.synced.Load() || c.coord.Healthy() != nil {
		return false
	}
	for _, check := range c.cfg.ReadyChecks {
		if check() != nil {
			return false
		}
	}
	return true
}

// Healthy returns an error once Run has returned (or never started), for a
// liveness probe. A replica that lost its membership is not ready but still
// healthy: it rejoins by itself when the API server answers again.
func (c *Controller) Healthy() error {
	if !c.running.Load() {
		return errors.New("controller is not running")
	}
	return nil
}

// IsLeader reports whether this replica writes the shard assignment.
func (c *Controller) IsLeader() bool { return c.coord.IsLeader() }

// LeaderTerm is the leadership term for the leader's own writes, or an
// error when this replica may not make them now (shard.Coordinator).
func (c *Controller) LeaderTerm() (uint64, error) { return c.coord.LeaderTerm() }

// Owned returns the shards running on this replica with their epochs.
func (c *Controller) Owned() map[int]uint64 { return c.coord.Owned() }

// Enqueue adds a pod key to its shard's queue if this replica runs that
// shard, and drops it otherwise (the owner sees the same events). It
// reports whether the key was queued.
func (c *Controller) Enqueue(key string) bool {
	s := shard.Of(key, c.cfg.Shards)
	c.mu.RLock()
	run := c.runs[s]
	c.mu.RUnlock()
	if run == nil {
		return false
	}
	run.q.Add(key)
	return true
}

// RetryWaiting queues now, in every shard this replica runs, the keys
// that wait out a failure's retry delay (queue.Queue.RetryNow), and
// returns how many: for a dependency that is back after an outage.
func (c *Controller) RetryWaiting() int { return c.eachQueue((*queue.Queue).RetryNow) }

// RetryDelayed queues now, in every shard this replica runs, the keys a
// slow retry put off (queue.Queue.RetryDelayed), and returns how many:
// for an object that appeared which they may wait for.
func (c *Controller) RetryDelayed() int { return c.eachQueue((*queue.Queue).RetryDelayed) }

// eachQueue calls f on the queue of every shard run here, outside the
// lock, and sums what it returns.
func (c *Controller) eachQueue(f func(*queue.Queue) int) int {
	c.mu.RLock()
	qs := make([]*queue.Queue, 0, len(c.runs))
	for _, run := range c.runs {
		qs = append(qs, run.q)
	}
	c.mu.RUnlock()
	n := 0
	for _, q := range qs {
		n += f(q)
	}
	return n
}

// enqueueFresh is enqueueObj for a pod that appeared: its key's earlier
// failures are forgotten.
func (c *Controller) enqueueFresh(obj any) {
	key, err := c.informers.PodKey(obj)
	if err != nil {
		runtime.HandleError(fmt.Errorf("pod event without a key: %w", err))
		return
	}
	s := shard.Of(key, c.cfg.Shards)
	c.mu.RLock()
	run := c.runs[s]
	c.mu.RUnlock()
	if run != nil {
		run.q.Fresh(key)
	}
}

func (c *Controller) enqueueObj(obj any) {
	key, err := c.informers.PodKey(obj)
	if err != nil {
		runtime.HandleError(fmt.Errorf("pod event without a key: %w", err))
		return
	}
	c.Enqueue(key)
}

// Acquire builds the reconciler and the queue of a shard term, calls
// OnAcquire, seeds the queue from the cache and starts the workers.
func (h *holder) Acquire(ctx context.Context, s int, epoch uint64) error {
	c := (*Controller)(h)
	logger := klog.FromContext(ctx).WithValues("shard", s, "epoch", epoch)
	q, err := queue.New(queue.Config{
		Name:      "pods",
		Shard:     s,
		Workers:   c.cfg.WorkersPerShard,
		BaseDelay: c.cfg.Queue.BaseDelay,
		MaxDelay:  c.cfg.Queue.MaxDelay,
		QPS:       c.cfg.Queue.QPS,
		Burst:     c.cfg.Queue.Burst,
		Metrics:   c.queueMet,
	})
	if err != nil {
		return err
	}
	rec, err := c.cfg.NewReconciler(ShardContext{Shard: s, Epoch: epoch, Shards: c.cfg.Shards, Informers: c.informers, Queue: q})
	if err != nil {
		q.Stop()
		return fmt.Errorf("making the reconciler of shard %d: %w", s, err)
	}
	if hooks, ok := rec.(ShardHooks); ok {
		if err := hooks.OnAcquire(ctx, s, epoch); err != nil {
			q.Stop()
			return fmt.Errorf("acquiring shard %d at epoch %d: %w", s, epoch, err)
		}
	}
	runCtx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	run := &shardRun{epoch: epoch, q: q, rec: rec, cancel: cancel}
	// Publish before seeding: an event that arrives in between is queued
	// by the handler, one that came before is already in the cache we list.
	c.mu.Lock()
	c.runs[s] = run
	c.mu.Unlock()
	keys, err := c.informers.PodKeys(s)
	if err != nil {
		logger.Error(err, "Listing the shard's pods; relying on events")
	}
	for _, k := range keys {
		q.Add(k)
	}
	run.seeded = len(keys)
	c.passes.started(run.seeded)
	run.sync = newSeedSync(keys, func(took time.Duration) {
		c.met.synced(took)
		klog.FromContext(runCtx).Info("Shard synced: every seeded pod reconciled", "pods", len(keys), "took", took)
		c.passes.ended(len(keys))
	})
	c.met.acquired(s)
	q.Start(runCtx, run.sync.handler(rec.Reconcile))
	logger.Info("Shard acquired", "pods", len(keys))
	run.sync.check()
	return nil
}

// closeSync ends run's first-pass tracking and reports whether the pass
// had synced; one cut short ends for the pass collector too.
func (c *Controller) closeSync(run *shardRun) bool {
	synced := run.sync.close()
	if !synced {
		c.passes.ended(run.seeded)
	}
	return synced
}

// Release stops routing keys, drains the queue (DrainTimeout), then calls
// OnRelease so the reconciler flushes before the acknowledgement.
func (h *holder) Release(ctx context.Context, s int, epoch uint64) {
	c := (*Controller)(h)
	run := c.detach(s, epoch)
	if run == nil {
		return
	}
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, c.cfg.DrainTimeout)
	defer cancel()
	run.q.Drain(dctx)
	if hooks, ok := run.rec.(ShardHooks); ok {
		if err := hooks.OnRelease(ctx, s, epoch); err != nil {
			klog.FromContext(ctx).Error(err, "Flushing released shard", "shard", s, "epoch", epoch)
		}
	}
	run.cancel()
	c.met.released(s, "handoff", time.Since(start), c.closeSync(run))
	klog.FromContext(ctx).Info("Shard released", "shard", s, "epoch", epoch, "took", time.Since(start))
}

// Abandon stops a shard at once: reconcilers see their context cancelled,
// queued keys are dropped, and OnRelease gets a cancelled context.
func (h *holder) Abandon(s int, epoch uint64) {
	c := (*Controller)(h)
	run := c.detach(s, epoch)
	if run == nil {
		return
	}
	start := time.Now()
	run.cancel()
	run.q.Stop()
	if hooks, ok := run.rec.(ShardHooks); ok {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = hooks.OnRelease(ctx, s, epoch)
	}
	c.met.released(s, "abandon", time.Since(start), c.closeSync(run))
	klog.Background().Info("Shard abandoned", "shard", s, "epoch", epoch)
}

func (c *Controller) detach(s int, epoch uint64) *shardRun {
	c.mu.Lock()
	defer c.mu.Unlock()
	run := c.runs[s]
	if run == nil || run.epoch != epoch {
		return nil
	}
	delete(c.runs, s)
	return run
}
