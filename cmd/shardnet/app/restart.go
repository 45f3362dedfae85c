package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/shard"
)

// Replica is one shardnet controller replica: the sharded runtime with the
// pod reconciler on every owned shard, and, while it leads, the subnet
// reconciler and the status writer. Tests and the demo run several in one
// process.
//
// A replica that loses its membership (no renewal of its member Lease
// within the renew deadline: the API server was out of reach, or the
// process was paused) stops every shard at once. When it renews again and
// a shard it held has moved meanwhile, it does not rejoin with the caches
// it had: a paused process resumes with informer caches and an address
// registry from before the pause, and acting on them could write a port
// for a pod the other owner deleted, or hand out an address it gave away.
// It starts afresh instead, as a new process would: new informers listed
// from the API server, a new Northbound connection and monitor, the
// adoption pass, then a new member incarnation. The process, its endpoints
// and its process-wide metrics stay; the replica's own metrics start again
// from zero, and shardnet_replica_restarts_total counts the restarts. A
// loss too short for the leader to move anything (a renewal late by less
// than the gap between renew deadline and lease duration) rejoins in
// place: nobody else wrote for its shards.
type Replica struct {
	opts Options
	rc   *rest.Config
	reg  prometheus.Registerer

	cur      atomic.Pointer[incarnation]
	scope    *scopedRegisterer // cur's metrics
	running  atomic.Bool
	restarts prometheus.Counter
	// restartCount is restarts, for Restarts.
	restartCount atomic.Int64
	// nbStart is how the last incarnation's Northbound connect went
	// (nbStartMemory).
	nbStart nbStartMemory
}

// NewReplica builds a replica from validated options. rc, when not nil,
// replaces --kubeconfig; reg receives every metric. While the Northbound
// cannot be reached it tries again every retry period, logging each
// attempt, until ctx ends (retryEvery, isNBConnect).
func NewReplica(ctx context.Context, opts Options, rc *rest.Config, reg prometheus.Registerer) (*Replica, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	r := &Replica{opts: opts, rc: rc, reg: reg}
	r.restarts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shardnet_replica_restarts_total",
		Help: "Times this replica started afresh (new caches, Northbound connection and membership) after losing its membership.",
	})
	if err := reg.Register(r.restarts); err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx).WithValues("identity", opts.Identity)
	if err := retryEvery(ctx, opts.RetryPeriod, logger, "Northbound not reached", isNBConnect, func() error { return r.buildCurrent(ctx) }); err != nil {
		reg.Unregister(r.restarts)
		return nil, err
	}
	return r, nil
}

// errNBConnect marks an incarnation that could not connect to the
// Northbound, which another attempt may well reach: a server busy sending
// other replicas their monitor replies (at 50,000 ports, longer than the
// connect timeout) or not up yet.
var errNBConnect = errors.New("connecting to the Northbound")

// isNBConnect reports an incarnation that failed on its Northbound
// connection. A replica's first incarnation is retried on that error
// alone: exiting instead would cost a container restart and the kubelet's
// growing back-off for a server that was only slow to answer, while a bad
// option still ends the process.
func isNBConnect(err error) bool { return errors.Is(err, errNBConnect) }

// anyError retries every error.
func anyError(error) bool { return true }

// retryEvery calls try until it succeeds, fails with an error retryable
// does not accept, or ctx ends, waiting every between attempts and
// logging each failed one as what.
func retryEvery(ctx context.Context, every time.Duration, logger klog.Logger, what string, retryable func(error) bool, try func() error) error {
	for {
		err := try()
		if err == nil || !retryable(err) {
			return err
		}
		logger.Error(err, what+"; trying again", "after", every)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (stopped trying: %w)", err, context.Cause(ctx))
		case <-time.After(every):
		}
	}
}

// buildCurrent builds a new incarnation and makes it the current one.
func (r *Replica) buildCurrent(ctx context.Context) error {
	inc, scope, err := r.build(ctx)
	if err != nil {
		return err
	}
	r.cur.Store(inc)
	r.scope = scope
	return nil
}

// build makes a new incarnation whose metrics can be taken out of reg
// again.
func (r *Replica) build(ctx context.Context) (*incarnation, *scopedRegisterer, error) {
	scope := &scopedRegisterer{reg: r.reg}
	inc, err := newIncarnation(ctx, r.opts, r.rc, scope, &r.nbStart)
	if err != nil {
		scope.unregisterAll()
		return nil, nil, err
	}
	return inc, scope, nil
}

// Run runs the replica until ctx ends, then hands its shards over and
// returns. It returns early with an error only if the runtime fails; a
// lost membership makes it start afresh (see Replica), not return.
func (r *Replica) Run(ctx context.Context) error {
	r.running.Store(true)
	defer r.running.Store(false)
	logger := klog.FromContext(ctx).WithValues("identity", r.opts.Identity)
	for {
		err := r.cur.Load().run(ctx)
		if ctx.Err() != nil || !errors.Is(err, shard.ErrMembershipLost) {
			return err
		}
		logger.Info("Membership lost: starting afresh with new caches, a new Northbound connection and a new member incarnation")
		r.scope.unregisterAll()
		if err := retryEvery(ctx, r.opts.RetryPeriod, logger, "Starting afresh failed", anyError, func() error { return r.buildCurrent(ctx) }); err != nil {
			return fmt.Errorf("starting afresh after losing the membership: %w", err)
		}
		r.restarts.Inc()
		r.restartCount.Add(1)
	}
}

// close releases what the current incarnation holds when Run is never
// called.
func (r *Replica) close() {
	inc := r.cur.Load()
	inc.ctrl.StopInformers()
	inc.nb.Close()
	inc.events.Shutdown()
	r.scope.unregisterAll()
	r.reg.Unregister(r.restarts)
}

// Ready reports whether the replica can take work.
func (r *Replica) Ready() bool { return r.running.Load() && r.cur.Load().ctrl.Ready() }

// Healthy is the liveness check: the replica runs, possibly starting
// afresh.
func (r *Replica) Healthy() error {
	if !r.running.Load() {
		return errors.New("replica is not running")
	}
	return nil
}

// IsLeader reports whether this replica leads.
func (r *Replica) IsLeader() bool { return r.cur.Load().ctrl.IsLeader() }

// Owned is the shards this replica runs, with their epochs.
func (r *Replica) Owned() map[int]uint64 { return r.cur.Load().ctrl.Owned() }

// Restarts is how many times the replica started afresh.
func (r *Replica) Restarts() int { return int(r.restartCount.Load()) }

// scopedRegisterer registers into reg and remembers what it registered, so
// that one incarnation's metrics can be removed before the next registers
// its own under the same names.
type scopedRegisterer struct {
	reg prometheus.Registerer
	mu  sync.Mutex
	cs  []prometheus.Collector
}

var _ prometheus.Registerer = (*scopedRegisterer)(nil)

func (s *scopedRegisterer) Register(c prometheus.Collector) error {
	if err := s.reg.Register(c); err != nil {
		return err
	}
	s.mu.Lock()
	s.cs = append(s.cs, c)
	s.mu.Unlock()
	return nil
}

func (s *scopedRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := s.Register(c); err != nil {
			panic(err)
		}
	}
}

func (s *scopedRegisterer) Unregister(c prometheus.Collector) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, have := range s.cs {
		if have == c {
			s.cs = append(s.cs[:i], s.cs[i+1:]...)
			break
		}
	}
	return s.reg.Unregister(c)
}

// unregisterAll removes every collector registered through s.
func (s *scopedRegisterer) unregisterAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.cs {
		s.reg.Unregister(c)
	}
	s.cs = nil
}
