package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/puzpuzpuz/xsync/v4"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Handler processes one key. A nil error forgets the key's failures; an
// error brings the key back with per-key exponential backoff, except the
// errors made by Permanent (dropped) and RetryAfter (re-added after the
// given delay, without counting as a failure).
type Handler func(ctx context.Context, key string) error

// Config configures one shard's queue. Zero fields take the documented
// defaults.
type Config struct {
	// Name is the queue's metrics name, for example "pods".
	Name string
	// Shard labels the metrics and the logs.
	Shard int
	// Workers is how many keys are processed at once. Default 2.
	Workers int
	// BaseDelay is the first retry delay of a failing key; it doubles per
	// failure. Default 5ms.
	BaseDelay time.Duration
	// MaxDelay caps the per-key delay. Default 5m.
	MaxDelay time.Duration
	// QPS and Burst are the overall token bucket that retries of all keys
	// of the shard share, so that a storm of failures does not hammer the
	// Northbound database. Defaults 50 and 500.
	QPS   float64
	Burst int
	// Metrics exports the standard workqueue metrics labelled by shard; nil
	// exports none.
	Metrics *Metrics
	// Clock is for tests; default the real clock.
	Clock clock.WithTicker
}

func (c *Config) setDefaults() error {
	if c.Workers == 0 {
		c.Workers = 2
	}
	if c.BaseDelay == 0 {
		c.BaseDelay = 5 * time.Millisecond
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = 5 * time.Minute
	}
	if c.QPS == 0 {
		c.QPS = 50
	}
	if c.Burst == 0 {
		c.Burst = 500
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	switch {
	case c.Workers < 0:
		return fmt.Errorf("queue: workers must be positive, got %d", c.Workers)
	case c.BaseDelay < 0 || c.MaxDelay < c.BaseDelay:
		return fmt.Errorf("queue: need 0 < base delay (%s) <= max delay (%s)", c.BaseDelay, c.MaxDelay)
	case c.QPS < 0 || c.Burst < 1:
		return fmt.Errorf("queue: need qps (%g) >= 0 and burst (%d) >= 1", c.QPS, c.Burst)
	case c.Shard < 0:
		return fmt.Errorf("queue: shard must not be negative, got %d", c.Shard)
	}
	return nil
}

// Queue is the work queue of one shard. Start it once; stop it once with
// Drain or Stop. Add and AddAfter may be called at any time and are ignored
// once the queue is stopping.
type Queue struct {
	cfg     Config
	limiter workqueue.TypedRateLimiter[string]
	wq      workqueue.TypedRateLimitingInterface[string]

	// dropping makes workers hand keys back without processing them: set
	// when a drain runs out of time or the queue is stopped hard.
	dropping atomic.Bool
	// workers tracks the worker goroutines started by Start.
	workers sync.WaitGroup
	// started guards against a second Start.
	started atomic.Bool
	// stopOnce makes Drain and Stop idempotent and mutually exclusive.
	stopOnce sync.Once

	// backoffMu guards backoff, the keys waiting out a failure's retry
	// delay (RetryNow), and delayed, the keys a RetryAfter put off
	// (RetryDelayed).
	backoffMu sync.Mutex
	backoff   map[string]struct{}
	delayed   map[string]struct{}

	// idleWait observes the wait of keys queued while idle; nil without
	// metrics. queuedAt holds when such a key was queued, until a worker
	// takes it; inFlight the keys the workers hold.
	idleWait prometheus.Observer
	queuedAt *xsync.Map[string, time.Time]
	inFlight *xsync.Map[string, struct{}]
}

// New builds a shard queue.
func New(cfg Config) (*Queue, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	limiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](cfg.BaseDelay, cfg.MaxDelay),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(cfg.QPS), cfg.Burst)},
	)
	qc := workqueue.TypedRateLimitingQueueConfig[string]{Clock: cfg.Clock}
	// An unnamed workqueue records no metrics, whatever global provider
	// was set elsewhere, so the name is only given with our provider.
	if cfg.Metrics != nil && cfg.Name != "" {
		qc.Name = cfg.Name
		qc.MetricsProvider = cfg.Metrics.provider(strconv.Itoa(cfg.Shard))
	}
	q := &Queue{cfg: cfg, limiter: limiter, wq: workqueue.NewTypedRateLimitingQueueWithConfig(limiter, qc),
		backoff: map[string]struct{}{}, delayed: map[string]struct{}{}}
	if cfg.Metrics != nil && cfg.Name != "" {
		q.idleWait = cfg.Metrics.idleWait.WithLabelValues(cfg.Name, strconv.Itoa(cfg.Shard))
		q.queuedAt = xsync.NewMap[string, time.Time]()
		q.inFlight = xsync.NewMap[string, struct{}]()
	}
	return q, nil
}

// Add queues key now; a key already waiting is not queued twice.
func (q *Queue) Add(key string) {
	q.noteQueued(key)
	q.wq.Add(key)
}

// noteQueued remembers when an idle key was queued. A key in flight is
// left out: it waits for its reconcile to end, which is not queueing. A
// key already waiting keeps its first time.
func (q *Queue) noteQueued(key string) {
	if q.idleWait == nil {
		return
	}
	if _, busy := q.inFlight.Load(key); busy {
		return
	}
	q.queuedAt.LoadOrStore(key, q.cfg.Clock.Now())
}

// taken marks key in flight and observes its wait if it was queued idle.
func (q *Queue) taken(key string) {
	if q.idleWait == nil {
		return
	}
	q.inFlight.Store(key, struct{}{})
	if at, ok := q.queuedAt.LoadAndDelete(key); ok {
		q.idleWait.Observe(q.cfg.Clock.Since(at).Seconds())
	}
}

// released ends key's time in flight.
func (q *Queue) released(key string) {
	if q.idleWait != nil {
		q.inFlight.Delete(key)
	}
}

// Fresh queues key now and forgets its failures, so that its next
// failure waits the base delay again: for a new object under a key whose
// earlier object kept failing (a pod re-created under the name of a pod
// deleted while the Northbound was down).
func (q *Queue) Fresh(key string) {
	q.settled(key)
	q.wq.Forget(key)
	q.Add(key)
}

// RetryNow queues every key that waits out a failure's retry delay now,
// with its failures forgotten, and returns how many: for a dependency
// that came back (the Northbound reconnected, the API server answers
// again), so that the work that failed while it was away does not wait
// out delays that grew during the outage. The delayed retry still comes
// and finds the key done or does it once more.
func (q *Queue) RetryNow() int {
	keys := q.take(q.backoff)
	for _, k := range keys {
		q.wq.Forget(k)
		q.Add(k)
	}
	return len(keys)
}

// RetryDelayed queues now every key a RetryAfter put off, and returns how
// many: for an object that appeared which such keys may wait for (a
// Subnet, a Vlan), so that they do not wait out their slow retry. The
// delayed retry still comes and finds the key done or does it once more.
func (q *Queue) RetryDelayed() int {
	keys := q.take(q.delayed)
	for _, k := range keys {
		q.Add(k)
	}
	return len(keys)
}

// take empties set (backoff or delayed) and returns its keys.
func (q *Queue) take(set map[string]struct{}) []string {
	q.backoffMu.Lock()
	defer q.backoffMu.Unlock()
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	clear(set)
	return keys
}

// Backoff is how many keys wait out a failure's retry delay.
func (q *Queue) Backoff() int {
	q.backoffMu.Lock()
	defer q.backoffMu.Unlock()
	return len(q.backoff)
}

func (q *Queue) settled(key string) {
	q.backoffMu.Lock()
	delete(q.backoff, key)
	delete(q.delayed, key)
	q.backoffMu.Unlock()
}

// Requeues is how many failures key has counted since it last succeeded.
func (q *Queue) Requeues(key string) int { return q.wq.NumRequeues(key) }

// AddAfter queues key once d has passed (for example a grace period).
func (q *Queue) AddAfter(key string, d time.Duration) { q.wq.AddAfter(key, d) }

// Len is the number of keys waiting (not those in flight or delayed).
func (q *Queue) Len() int { return q.wq.Len() }

// Start runs cfg.Workers workers calling h until the queue stops. ctx is
// handed to h; cancelling it does not stop the queue (Drain or Stop do).
func (q *Queue) Start(ctx context.Context, h Handler) {
	if !q.started.CompareAndSwap(false, true) {
		panic("queue: Start called twice")
	}
	for range q.cfg.Workers {
		q.workers.Go(func() {
			for q.next(ctx, h) {
			}
		})
	}
}

// Drain stops taking keys, lets the workers finish the keys already queued
// until ctx is done, then drops the rest, and returns once no key is in
// flight and every worker has exited. Delayed keys are dropped: whoever
// takes the shard next seeds its queue from the informer cache.
func (q *Queue) Drain(ctx context.Context) {
	q.stopOnce.Do(func() {
		// ShutDownWithDrain returns as soon as nothing is in flight, which can
		// be before the queued keys were handed out: the workers' exit is
		// what says the queue is empty.
		done := make(chan struct{})
		go func() {
			defer close(done)
			q.wq.ShutDownWithDrain()
			q.workers.Wait()
		}()
		select {
		case <-done:
		case <-ctx.Done():
			q.dropping.Store(true)
			<-done
		}
		q.cfg.Metrics.reset(q.cfg.Name, strconv.Itoa(q.cfg.Shard))
	})
}

// Stop drops every queued key and returns once the keys in flight are done
// and every worker has exited.
func (q *Queue) Stop() {
	q.stopOnce.Do(func() {
		q.dropping.Store(true)
		q.wq.ShutDownWithDrain()
		q.workers.Wait()
		q.cfg.Metrics.reset(q.cfg.Name, strconv.Itoa(q.cfg.Shard))
	})
}

// next processes one key and reports whether the worker should go on. The
// workqueue guarantees a key is never handed to two workers at once: a key
// re-added while in flight waits until Done.
func (q *Queue) next(ctx context.Context, h Handler) bool {
	key, shutdown := q.wq.Get()
	if shutdown {
		return false
	}
	q.taken(key)
	defer q.wq.Done(key)
	defer q.released(key)
	if q.dropping.Load() {
		q.wq.Forget(key)
		return true
	}
	err := q.call(ctx, h, key)
	q.settled(key)
	logger := klog.FromContext(ctx)
	var after *retryAfter
	var perm *permanent
	switch {
	case err == nil:
		q.wq.Forget(key)
	case errors.As(err, &after):
		q.backoffMu.Lock()
		q.delayed[key] = struct{}{}
		q.backoffMu.Unlock()
		q.wq.Forget(key)
		q.wq.AddAfter(key, after.d)
	case errors.As(err, &perm):
		q.wq.Forget(key)
		logger.Error(err, "Dropping key after a permanent error", "shard", q.cfg.Shard, "key", key)
	default:
		q.backoffMu.Lock()
		q.backoff[key] = struct{}{}
		q.backoffMu.Unlock()
		q.wq.AddRateLimited(key)
		logger.V(2).Info("Retrying key", "shard", q.cfg.Shard, "key", key, "requeues", q.wq.NumRequeues(key), "err", err)
	}
	return true
}

// call runs h, turning a panic into an error so that bad input never takes
// a worker down (the key is retried with backoff instead).
func (q *Queue) call(ctx context.Context, h Handler, key string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			runtime.HandleErrorWithContext(ctx, nil, "Reconcile panicked", "shard", q.cfg.Shard, "key", key, "panic", r)
			err = fmt.Errorf("reconcile of %s panicked: %v", key, r)
		}
	}()
	return h(ctx, key)
}

type retryAfter struct {
	d time.Duration
}

func (r *retryAfter) Error() string { return "retry after " + r.d.String() }

// RetryAfter returns an error that makes the queue process the key again
// after d without counting a failure (for example: the pod's node is not
// known yet).
func RetryAfter(d time.Duration) error { return &retryAfter{d: d} }

type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// Permanent marks err as one that retrying cannot fix (malformed input): the
// queue drops the key until it is added again by a new event.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err: err}
}

// IsPermanent reports whether err was marked by Permanent.
func IsPermanent(err error) bool {
	var p *permanent
	return errors.As(err, &p)
}

type waiting struct{ err error }

func (w *waiting) Error() string { return w.err.Error() }
func (w *waiting) Unwrap() error { return w.err }

// Waiting marks err as one that waits on a change elsewhere that may
// never come without a person (an address another holder keeps): the key
// is retried as err says, but a first pass over a shard's keys counts it
// as done (see IsWaiting), since the shard has no more work it can do for
// it.
func Waiting(err error) error {
	if err == nil {
		return nil
	}
	return &waiting{err: err}
}

// IsWaiting reports whether err was marked by Waiting.
func IsWaiting(err error) bool {
	var w *waiting
	return errors.As(err, &w)
}
