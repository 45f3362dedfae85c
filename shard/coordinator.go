package shard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Holder runs the shards a Coordinator gives this replica. The Coordinator
// calls it from one goroutine per shard and never overlaps two calls for the
// same shard.
type Holder interface {
	// Acquire starts the shard at epoch and returns once it runs. On error
	// nothing may run for the shard; the Coordinator retries after
	// RetryPeriod while the shard is still assigned here. ctx is cancelled
	// if the replica loses its membership meanwhile.
	Acquire(ctx context.Context, shard int, epoch uint64) error
	// Release stops the shard gracefully: stop taking keys, finish the work
	// in flight, flush. The Coordinator acknowledges the release to the
	// leader only after Release returned. ctx is cancelled if the replica
	// loses its membership meanwhile: Release must then return promptly,
	// since the leader may soon give the shard to another replica.
	Release(ctx context.Context, shard int, epoch uint64)
	// Abandon stops the shard at once: the replica's membership expired, so
	// the leader may give the shard to another replica without waiting.
	Abandon(shard int, epoch uint64)
}

// Config configures a Coordinator. Zero durations take the defaults, which
// are client-go's leader election defaults.
type Config struct {
	// Client talks to the API server (Leases and one ConfigMap).
	Client kubernetes.Interface
	// Namespace holds the Leases and the assignment ConfigMap. Required.
	Namespace string
	// Identity names this replica; it must be stable across restarts (the
	// pod name of a StatefulSet member) and unique. Required.
	Identity string
	// Name prefixes the objects: Lease <Name>-leader for the election, Lease
	// <Name>-member-<Identity> per replica, ConfigMap <Name>-assignment.
	// Default "shardnet".
	Name string
	// Shards is S. Default DefaultShards (64).
	Shards int
	// LeaseDuration is how long a member (or the leader) counts as alive
	// after the last change of its Lease that another replica observed.
	// Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline is how long a replica keeps acting on its Lease without a
	// successful renewal before it stops all its shards itself. It must be
	// below LeaseDuration: the gap is what keeps an old and a new owner from
	// overlapping. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between tries (election, failed renewals and
	// acquisitions). Default 2s.
	RetryPeriod time.Duration
	// RenewInterval is how often the member Lease is renewed when nothing
	// else changes; it sets the steady-state write rate. Default
	// LeaseDuration/3.
	RenewInterval time.Duration
	// ShutdownTimeout bounds the graceful handoff when Run's context ends;
	// shards still held after it are abandoned. Default LeaseDuration.
	ShutdownTimeout time.Duration
	// FirstAssignmentWait bounds how long a replica that starts leading
	// holds back its first assignment while members the table names as
	// owners have no member Lease (they were stopped and are starting
	// again: a restart of every replica). Assigning at once would give
	// their shards to the members already there and move them back a
	// moment later, reconciling those pods twice. A member whose Lease
	// exists, even expired, is never waited for, so a dead replica's
	// shards move as they do without this. Default LeaseDuration/2;
	// negative turns it off.
	FirstAssignmentWait time.Duration
	// Holder runs the shards. Required.
	Holder Holder
	// OnLeading, if set, is called when this replica starts leading, with
	// a context that ends with the leadership term. It must return
	// promptly; work that lasts the term belongs in a goroutine that
	// watches the context.
	OnLeading func(ctx context.Context)
	// OnRenewedAgain, if set, is called when the member Lease is written
	// after one or more failed writes: the API server answers again, so
	// work that failed while it did not can be retried now. It must return
	// promptly.
	OnRenewedAgain func()
	// ExitOnLoss makes Run return ErrMembershipLost when a replica whose
	// membership was lost (no renewal within RenewDeadline; every shard
	// stopped) renews again and finds that a shard it held has moved
	// meanwhile (its epoch in the table changed), instead of rejoining. Set
	// it when the Holder acts on caches that may have missed what the other
	// owner wrote (a paused process resumes with caches from before the
	// pause): the caller then starts afresh, with new caches, under a new
	// incarnation. A loss short enough that no shard moved rejoins in
	// place, as without ExitOnLoss: nobody else wrote for those shards.
	ExitOnLoss bool
	// Clock is for tests. Default the real clock.
	Clock clock.WithTicker
}

// ErrMembershipLost is returned by Run, with Config.ExitOnLoss, after the
// replica lost its membership and stopped every shard.
var ErrMembershipLost = errors.New("shard membership lost")

func (c *Config) validate() error {
	if c.Name == "" {
		c.Name = "shardnet"
	}
	if c.Shards == 0 {
		c.Shards = DefaultShards
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = 10 * time.Second
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = 2 * time.Second
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = c.LeaseDuration / 3
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = c.LeaseDuration
	}
	if c.FirstAssignmentWait == 0 {
		c.FirstAssignmentWait = c.LeaseDuration / 2
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("namespace is required"))
	}
	if c.Identity == "" {
		errs = append(errs, errors.New("identity is required"))
	}
	if c.Holder == nil {
		errs = append(errs, errors.New("holder is required"))
	}
	if c.Shards < 1 {
		errs = append(errs, fmt.Errorf("shards must be positive, got %d", c.Shards))
	}
	if c.LeaseDuration <= c.RenewDeadline {
		errs = append(errs, fmt.Errorf("lease duration (%s) must be greater than the renew deadline (%s)", c.LeaseDuration, c.RenewDeadline))
	}
	if float64(c.RenewDeadline) <= leaderelection.JitterFactor*float64(c.RetryPeriod) {
		errs = append(errs, fmt.Errorf("renew deadline (%s) must be greater than %g x retry period (%s)", c.RenewDeadline, leaderelection.JitterFactor, c.RetryPeriod))
	}
	if c.RenewInterval <= 0 || c.RenewInterval >= c.RenewDeadline {
		errs = append(errs, fmt.Errorf("renew interval (%s) must be positive and below the renew deadline (%s)", c.RenewInterval, c.RenewDeadline))
	}
	if c.RetryPeriod <= 0 || c.ShutdownTimeout < 0 {
		errs = append(errs, errors.New("retry period must be positive and shutdown timeout not negative"))
	}
	return errors.Join(errs...)
}

// Coordinator is the concurrent shell around Planner: it keeps this
// replica's member Lease, campaigns for leadership, and as leader writes the
// assignment table; as a member it acquires and releases shards through the
// Holder and acknowledges releases on its Lease.
type Coordinator struct {
	cfg     Config
	planner *Planner
	clock   clock.WithTicker

	leaderName, memberName, tableName string

	// kick wakes the run loop; capacity one, so signals coalesce.
	kick chan struct{}
	// results carries the outcome of per-shard goroutines to the run loop.
	results chan holdResult

	// mu guards observed, table, tableRV and the leader fields; held briefly
	// by informer handlers and the run loop, never across API calls.
	mu sync.Mutex
	// observed is what this replica saw of every member Lease, by identity.
	observed map[string]*observation
	// table is the newest assignment seen: its generation never decreases.
	table *Assignment
	// tableRV is the resourceVersion of the ConfigMap behind table ("" when
	// the ConfigMap does not exist yet).
	tableRV string

	// leading is true between OnStartedLeading and the end of that term.
	leading atomic.Bool
	// ledSince is when the current leadership term started (UnixNano),
	// for FirstAssignmentWait.
	ledSince atomic.Int64
	// term is the current leadership term (LeaderTerm), 0 when unknown.
	term atomic.Uint64
	// electedAt is the clock reading (UnixNano) taken before sending the
	// last write that left the leader Lease naming this replica, 0 when
	// none counts (electionLock).
	electedAt atomic.Int64
	// elector is the current election attempt, for IsLeader.
	elector atomic.Pointer[leaderelection.LeaderElector]

	// leaseMu guards want, written and lease: what the member Lease should
	// say, what it said after the last successful write, and that object.
	leaseMu sync.Mutex
	want    report
	written report
	lease   *coordinationv1.Lease
	// dirty asks the renew loop to write the Lease now; capacity one.
	dirty chan struct{}
	// renewedAt is the clock reading (UnixNano) taken before sending the last
	// successful Lease write. Measuring from the send, not the reply, keeps
	// self-fencing strictly earlier than any other replica's expiry reading.
	renewedAt atomic.Int64
	// lost is set when renewedAt is older than RenewDeadline: every shard
	// is abandoned and nothing is acquired until a renewal succeeds again.
	lost atomic.Bool

	// synced are the coordination informers' sync checkers, set before Run
	// waits.
	synced []cache.DoneChecker
	// cachesOnce starts the coordination informers once (StartCaches or
	// Run); stopCaches ends their context, cachesWG waits for them and
	// cachesErr is the start's error.
	cachesOnce sync.Once
	stopCaches context.CancelFunc
	cachesWG   sync.WaitGroup
	cachesErr  error
	// tableErr is set (under mu) when the stored table was written for
	// another shard count: Run refuses to start on it.
	tableErr error

	// owned mirrors the shards that are running (Acquire returned), for
	// Owned; guarded by ownedMu.
	ownedMu sync.Mutex
	owned   map[int]uint64
}

// observation is one member Lease as this replica saw it.
type observation struct {
	rv       string
	lastSeen time.Time
	report   report
	deleted  bool
	// confirmedRV is the resourceVersion a live read found when the member
	// looked expired; it avoids re-reading an expired Lease on every step.
	confirmedRV string
}

// holding is the run loop's record of one shard this replica runs or
// stops; only the run loop touches it.
type holding struct {
	epoch    uint64
	stopping bool
	stop     chan struct{} // closed to release gracefully
	abandon  chan struct{} // closed to stop at once
	cancel   context.CancelFunc
}

type holdResult struct {
	shard    int
	epoch    uint64
	acquired bool  // Acquire returned
	err      error // Acquire's error; the shard is not held
	ended    bool  // Release or Abandon returned; the shard is not held
}

// NewCoordinator validates cfg (filling in defaults) and returns a
// Coordinator; Run starts it.
func NewCoordinator(cfg Config) (*Coordinator, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("shard coordinator config: %w", err)
	}
	p, err := NewPlanner(cfg.Shards, cfg.LeaseDuration)
	if err != nil {
		return nil, err
	}
	return &Coordinator{
		cfg:        cfg,
		planner:    p,
		clock:      cfg.Clock,
		leaderName: cfg.Name + "-leader",
		memberName: cfg.Name + "-member-" + cfg.Identity,
		tableName:  cfg.Name + "-assignment",
		kick:       make(chan struct{}, 1),
		results:    make(chan holdResult, 2*cfg.Shards),
		observed:   map[string]*observation{},
		dirty:      make(chan struct{}, 1),
		owned:      map[int]uint64{},
	}, nil
}

func (c *Coordinator) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// IsLeader reports whether this replica currently writes the assignment.
func (c *Coordinator) IsLeader() bool {
	le := c.elector.Load()
	return c.leading.Load() && le != nil && le.IsLeader()
}

// LeaderTerm returns this replica's leadership term for the writes only
// the leader makes, checked at the moment of the call: it fails unless the
// replica leads, its member Lease was renewed within RenewDeadline and the
// leader Lease within the election's renew deadline (electionTimings). A
// paused leader that resumes fails here before its first write, even
// before its run loop or its elector noticed the pause: its member Lease,
// which it may renew at once, says nothing of the election, and a renewal
// of the leader Lease sent before the pause counts from when it was sent
// (electionLock). Terms grow with every leader
// (the leader Lease's acquire time), so a store that records the newest
// term (ovn.Client.TakeOver with ovn.LeaderShard) refuses a deposed
// leader's writes even when this check passed just before a pause.
func (c *Coordinator) LeaderTerm() (uint64, error) {
	if !c.IsLeader() {
		return 0, ErrNotLeader
	}
	return c.fencedTerm(c.clock.Now())
}

// fencedTerm is LeaderTerm's check past the elector's own view: both
// Leases renewed recently enough at now, and the term known.
func (c *Coordinator) fencedTerm(now time.Time) (uint64, error) {
	if at := c.renewedAt.Load(); at == 0 || c.lost.Load() || now.Sub(time.Unix(0, at)) > c.cfg.RenewDeadline {
		return 0, fmt.Errorf("%w: member lease not renewed within the renew deadline", ErrNotLeader)
	}
	if at, rd := c.electedAt.Load(), electionRenewDeadline(c.cfg); at == 0 || now.Sub(time.Unix(0, at)) > rd {
		return 0, fmt.Errorf("%w: leader lease not renewed within the election's renew deadline", ErrNotLeader)
	}
	t := c.term.Load()
	if t == 0 {
		return 0, fmt.Errorf("%w: leadership term unknown", ErrNotLeader)
	}
	return t, nil
}

// ErrNotLeader is returned by LeaderTerm when the replica may not make the
// leader's writes.
var ErrNotLeader = errors.New("not the current leader")

// Owned returns the running shards and their epochs.
func (c *Coordinator) Owned() map[int]uint64 {
	c.ownedMu.Lock()
	defer c.ownedMu.Unlock()
	return maps.Clone(c.owned)
}

// Assignment returns a copy of the newest table this replica has seen, or
// nil before the first one.
func (c *Coordinator) Assignment() *Assignment {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.table == nil {
		return nil
	}
	return c.table.Clone()
}

// Healthy returns an error when the member Lease has not been renewed
// within the renew deadline (the replica has stopped its shards).
func (c *Coordinator) Healthy() error {
	at := c.renewedAt.Load()
	if at == 0 {
		return errors.New("member lease not written yet")
	}
	if c.lost.Load() {
		return fmt.Errorf("member lease not renewed since %s", time.Unix(0, at).UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// StartCaches starts loading the member Leases and the assignment ahead of
// Run, so that a replica loads them while it loads its other caches
// instead of after. Run starts them itself when StartCaches was not
// called, and stops them when it returns; a caller that starts them and
// never calls Run stops them with StopCaches. They run until then, not
// until ctx ends (the handoff after Run's context ends still reads them);
// ctx gives them its values.
func (c *Coordinator) StartCaches(ctx context.Context) error {
	c.cachesOnce.Do(func() {
		cctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		c.stopCaches = stop
		c.cachesErr = c.startInformers(cctx, &c.cachesWG)
	})
	return c.cachesErr
}

// StopCaches stops the caches StartCaches or Run started and waits for
// them; calling it again, or before they started, is a no-op.
func (c *Coordinator) StopCaches() {
	c.cachesOnce.Do(func() {})
	if c.stopCaches != nil {
		c.stopCaches()
		c.cachesWG.Wait()
	}
}

// Run registers the member, runs until ctx ends, then hands every shard
// over (bounded by ShutdownTimeout), releases leadership and deletes the
// member Lease, so that a rolling update does not wait a lease duration.
// It returns nil after a graceful shutdown, or the error that kept it from
// starting (ErrShardCount when the stored table was written for another S).
func (c *Coordinator) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("identity", c.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	// The shell's own work outlives ctx: the handoff after ctx ends needs the
	// informers and the API.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer func() {
		stopRun()
		wg.Wait()
		c.StopCaches()
	}()
	if err := c.StartCaches(ctx); err != nil {
		return err
	}
	if !cache.WaitFor(ctx, "", c.synced...) {
		return fmt.Errorf("waiting for the coordination caches: %w", context.Cause(ctx))
	}
	c.mu.Lock()
	startGen := uint64(0)
	if c.table != nil {
		startGen = c.table.Generation
	}
	bad := c.tableErr
	c.mu.Unlock()
	if bad != nil {
		return bad
	}
	// A fresh process holds nothing, so it can truthfully report having seen
	// the current table: that acknowledges any release a previous
	// incarnation with the same identity still owed.
	c.leaseMu.Lock()
	c.want = report{incarnation: strconv.FormatInt(c.clock.Now().UnixNano(), 36), held: Set{}, seen: startGen}
	c.leaseMu.Unlock()
	for {
		err := c.writeLease(ctx)
		if err == nil {
			break
		}
		logger.Error(err, "Registering member lease")
		select {
		case <-ctx.Done():
			return fmt.Errorf("registering member lease: %w", context.Cause(ctx))
		case <-c.clock.After(c.cfg.RetryPeriod):
		}
	}
	logger.Info("Registered shard member", "lease", c.memberName, "shards", c.cfg.Shards)

	// The renew loop stops before the final write below, so that the two
	// never race on the Lease's resourceVersion.
	renewCtx, stopRenew := context.WithCancel(runCtx)
	renewDone := make(chan struct{})
	go func() {
		defer close(renewDone)
		c.renewLoop(renewCtx)
	}()
	electCtx, stopElect := context.WithCancel(runCtx)
	electDone := make(chan struct{})
	go func() {
		defer close(electDone)
		c.electLoop(electCtx)
	}()

	lost := c.loop(ctx, runCtx)

	// Acknowledge the last releases before the Lease goes: the leader then
	// sees an empty held set and lets the new owners start without waiting
	// for this Lease to expire.
	stopRenew()
	<-renewDone
	if !c.lost.Load() {
		// writeLease re-reads the Lease itself on a conflict (the renew
		// loop's last write cut off after it landed); the tries are for
		// writes cut off here.
		var err error
		for range 3 {
			// Each try bounded as before the renew deadline applied,
			// so that leaving stays quick on a slow API server.
			wctx, cancel := context.WithTimeout(runCtx, c.cfg.RetryPeriod)
			err = c.writeLease(wctx)
			cancel()
			if err == nil {
				break
			}
		}
		if err != nil {
			logger.Error(err, "Writing the final acknowledgement; the leader will wait for the lease to expire")
		}
	}
	stopElect()
	<-electDone
	delCtx, cancel := context.WithTimeout(runCtx, c.cfg.RetryPeriod)
	defer cancel()
	if err := c.cfg.Client.CoordinationV1().Leases(c.cfg.Namespace).Delete(delCtx, c.memberName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "Deleting member lease; it will expire instead")
	}
	if lost {
		logger.Info("Shard member stopped after losing its membership")
		return ErrMembershipLost
	}
	logger.Info("Shard member stopped")
	return nil
}

// loop is the run loop: it reacts to table and lease changes, results of
// shard goroutines and timers, and exits once the graceful shutdown is over
// or, with ExitOnLoss, once a lost membership stopped every shard (then it
// returns true).
func (c *Coordinator) loop(ctx, runCtx context.Context) bool {
	logger := klog.FromContext(ctx)
	holdings := map[int]*holding{}
	retryAt := map[int]time.Time{}
	var wg sync.WaitGroup
	defer wg.Wait()

	done := ctx.Done()
	var shutdownBy time.Time
	fenced := false
	// lostEpochs are the shards held when the membership was lost.
	var lostEpochs map[int]uint64
	timer := c.clock.NewTimer(c.cfg.RetryPeriod)
	defer timer.Stop()
	for {
		select {
		case <-c.kick:
		case <-timer.C():
		case r := <-c.results:
			c.onResult(ctx, holdings, retryAt, r)
			for more := true; more; {
				select {
				case r := <-c.results:
					c.onResult(ctx, holdings, retryAt, r)
				default:
					more = false
				}
			}
		case <-done:
			done = nil
			shutdownBy = c.clock.Now().Add(c.cfg.ShutdownTimeout)
			logger.Info("Shutting down: handing shards over", "held", len(holdings))
			c.leaseMu.Lock()
			c.want.leaving = true
			c.leaseMu.Unlock()
			c.markDirty()
		}
		now := c.clock.Now()

		if !c.lost.Load() && now.Sub(time.Unix(0, c.renewedAt.Load())) > c.cfg.RenewDeadline {
			c.lost.Store(true)
		}
		if c.lost.Load() && !fenced {
			fenced = true
			lostEpochs = map[int]uint64{}
			for sh, h := range holdings {
				lostEpochs[sh] = h.epoch
			}
			logger.Error(nil, "Member lease not renewed within the renew deadline: abandoning all shards", "held", len(holdings))
			for _, h := range holdings {
				h.stopping = true
				closeOnce(h.abandon)
				h.cancel()
			}
		}
		if fenced && !c.lost.Load() && len(holdings) == 0 {
			// Rejoined. The cached table may predate the leader's reaction to
			// the expiry: read it live before acting on it again.
			if err := c.refreshTable(runCtx); err != nil {
				logger.Error(err, "Reading the assignment after rejoining")
			} else if moved := c.movedSince(lostEpochs); c.cfg.ExitOnLoss && done != nil && len(moved) > 0 {
				logger.Info("Member lease renewed again, but shards held before moved meanwhile: leaving to start afresh", "moved", moved)
				c.updateReport(holdings)
				return true
			} else {
				fenced = false
				logger.Info("Member lease renewed again: rejoining")
			}
		}

		wake := now.Add(c.cfg.RetryPeriod)
		if c.IsLeader() {
			if w := c.lead(runCtx); !w.IsZero() && w.Before(wake) {
				wake = w
			}
		}
		if !fenced {
			// Shards still assigned here keep running while shutting down
			// until the leader moves them: dropping them early would leave
			// them idle.
			c.follow(runCtx, holdings, retryAt, &wg)
		}
		c.updateReport(holdings)

		if fence := time.Unix(0, c.renewedAt.Load()).Add(c.cfg.RenewDeadline); fence.After(now) && fence.Before(wake) {
			wake = fence
		}
		if done == nil {
			if len(holdings) == 0 && !c.awaited() {
				return false
			}
			if !now.Before(shutdownBy) {
				logger.Error(nil, "Shutdown timeout: abandoning the shards not handed over yet", "held", len(holdings))
				for _, h := range holdings {
					h.stopping = true
					closeOnce(h.abandon)
					h.cancel()
				}
				for len(holdings) > 0 {
					c.onResult(ctx, holdings, retryAt, <-c.results)
				}
				c.updateReport(holdings)
				return false
			}
			if shutdownBy.Before(wake) {
				wake = shutdownBy
			}
		}
		resetTimer(timer, max(wake.Sub(now), time.Millisecond))
	}
}

// movedSince returns the shards of held whose epoch in the current table
// is another: another replica owned them meanwhile, or still does.
func (c *Coordinator) movedSince(held map[int]uint64) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var moved []int
	for s, e := range held {
		if c.table == nil || s >= len(c.table.Shards) || c.table.Shards[s].Epoch != e {
			moved = append(moved, s)
		}
	}
	slices.Sort(moved)
	return moved
}

// resetTimer re-arms t, dropping a fire that was not consumed, so that one
// reading of the channel matches one arming.
func resetTimer(t clock.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C():
		default:
		}
	}
	t.Reset(d)
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// awaited reports whether, as leader, this replica still has to write a
// table that lets the new owners of its released shards start.
func (c *Coordinator) awaited() bool {
	if !c.IsLeader() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.table == nil {
		return false
	}
	for _, e := range c.table.Shards {
		if slices.Contains(e.Pending, c.cfg.Identity) {
			return true
		}
	}
	return false
}

func (c *Coordinator) onResult(ctx context.Context, holdings map[int]*holding, retryAt map[int]time.Time, r holdResult) {
	h := holdings[r.shard]
	if h == nil || h.epoch != r.epoch {
		return
	}
	logger := klog.FromContext(ctx)
	switch {
	case r.err != nil:
		logger.Error(r.err, "Acquiring shard failed; retrying", "shard", r.shard, "epoch", r.epoch)
		delete(holdings, r.shard)
		retryAt[r.shard] = c.clock.Now().Add(c.cfg.RetryPeriod)
	case r.acquired:
		c.ownedMu.Lock()
		c.owned[r.shard] = r.epoch
		c.ownedMu.Unlock()
		logger.V(2).Info("Shard running", "shard", r.shard, "epoch", r.epoch)
	case r.ended:
		delete(holdings, r.shard)
		c.ownedMu.Lock()
		delete(c.owned, r.shard)
		c.ownedMu.Unlock()
		logger.V(2).Info("Shard stopped", "shard", r.shard, "epoch", r.epoch)
	}
}

// isLeaving reports whether this member has begun its graceful shutdown
// (its Lease says leaving, or is about to).
func (c *Coordinator) isLeaving() bool {
	c.leaseMu.Lock()
	defer c.leaseMu.Unlock()
	return c.want.leaving
}

// follow makes holdings match what the table lets this replica run. A
// member on its way out starts no shard it does not hold already: the
// leader assigned it before it saw the member leaving and moves it away
// at once, and starting it would seed the shard's pods (a second of a
// replica's CPU at 800 pods a shard) only to release them; the new owner
// starts as soon as the table names it.
func (c *Coordinator) follow(ctx context.Context, holdings map[int]*holding, retryAt map[int]time.Time, wg *sync.WaitGroup) {
	c.mu.Lock()
	var runnable map[int]uint64
	if c.table != nil {
		runnable = c.table.Runnable(c.cfg.Identity)
	}
	c.mu.Unlock()
	leaving := c.isLeaving()
	for s, h := range holdings {
		if want, ok := runnable[s]; ok && want == h.epoch {
			continue
		}
		if !h.stopping {
			h.stopping = true
			close(h.stop)
		}
	}
	now := c.clock.Now()
	for s, epoch := range runnable {
		if _, busy := holdings[s]; busy || leaving || now.Before(retryAt[s]) {
			continue
		}
		delete(retryAt, s)
		hctx, cancel := context.WithCancel(ctx)
		h := &holding{epoch: epoch, stop: make(chan struct{}), abandon: make(chan struct{}), cancel: cancel}
		holdings[s] = h
		wg.Go(func() { c.hold(hctx, s, h) })
	}
}

// hold is the goroutine of one held shard: acquire, wait for the order to
// stop, release or abandon.
func (c *Coordinator) hold(ctx context.Context, s int, h *holding) {
	defer h.cancel()
	if err := c.cfg.Holder.Acquire(ctx, s, h.epoch); err != nil {
		c.results <- holdResult{shard: s, epoch: h.epoch, err: err}
		return
	}
	c.results <- holdResult{shard: s, epoch: h.epoch, acquired: true}
	// ctx is cancelled only on abandon (or after Run's shutdown), so a
	// release that runs into a lost membership is cut short too.
	select {
	case <-h.abandon:
		c.cfg.Holder.Abandon(s, h.epoch)
	case <-h.stop:
		select {
		case <-h.abandon:
			c.cfg.Holder.Abandon(s, h.epoch)
		default:
			c.cfg.Holder.Release(ctx, s, h.epoch)
		}
	}
	c.results <- holdResult{shard: s, epoch: h.epoch, ended: true}
}
