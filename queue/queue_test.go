package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// wait is a liveness guard, not a timing assertion: it only keeps a broken
// queue from hanging the test binary.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// stepUntil advances clk by d and waits for ch, advancing it by d again
// while ch stays open. A delaying queue reads its clock before it sets the
// timer of a delayed key, so a step that lands in between leaves that
// timer a step ahead: one step alone could wait for good.
func stepUntil(t *testing.T, clk *clocktesting.FakeClock, d time.Duration, ch <-chan struct{}, what string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		clk.Step(d)
		select {
		case <-ch:
			return
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func newQueue(t *testing.T, cfg Config) *Queue {
	t.Helper()
	q, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Stop)
	return q
}

// recorder counts calls per key and closes a channel when a key is seen.
type recorder struct {
	mu     sync.Mutex // guards calls and seen
	calls  map[string]int
	seen   map[string]chan struct{}
	result func(key string, call int) error
}

func newRecorder(result func(string, int) error) *recorder {
	return &recorder{calls: map[string]int{}, seen: map[string]chan struct{}{}, result: result}
}

func (r *recorder) ch(key string) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[key] == nil {
		r.seen[key] = make(chan struct{})
	}
	return r.seen[key]
}

// handle records the call and closes the channel named "key#n".
func (r *recorder) handle(_ context.Context, key string) error {
	r.mu.Lock()
	r.calls[key]++
	n := r.calls[key]
	r.mu.Unlock()
	var err error
	if r.result != nil {
		err = r.result(key, n)
	}
	ch := r.ch(fmt.Sprintf("%s#%d", key, n))
	close(ch)
	return err
}

func (r *recorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[key]
}

func TestDedup(t *testing.T) {
	q := newQueue(t, Config{Workers: 1})
	rec := newRecorder(nil)
	for range 3 {
		q.Add("ns/a")
	}
	q.Add("ns/b")
	q.Start(context.Background(), rec.handle)
	wait(t, rec.ch("ns/b#1"), "ns/b")
	q.Drain(context.Background())
	if got := rec.count("ns/a"); got != 1 {
		t.Fatalf("ns/a added three times before processing was handled %d times, want 1", got)
	}
}

func TestOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name         string
		err          error
		wantRequeues int
	}{
		{"success forgets", nil, 0},
		{"error backs off", errors.New("boom"), 1},
		{"permanent drops", Permanent(errors.New("malformed")), 0},
		{"retry-after is no failure", RetryAfter(time.Minute), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			q := newQueue(t, Config{Workers: 1, Clock: clk, BaseDelay: time.Second, MaxDelay: time.Hour})
			rec := newRecorder(func(key string, n int) error {
				if key == "bad" && n == 1 {
					return tc.err
				}
				return nil
			})
			q.Add("bad")
			q.Add("sentinel")
			q.Start(context.Background(), rec.handle)
			// One worker, FIFO: once sentinel ran, bad's outcome was applied.
			wait(t, rec.ch("sentinel#1"), "sentinel")
			if got := q.wq.NumRequeues("bad"); got != tc.wantRequeues {
				t.Fatalf("NumRequeues = %d, want %d", got, tc.wantRequeues)
			}
			if q.Len() != 0 {
				t.Fatalf("bad is queued again at once (Len %d); retries must be delayed or dropped", q.Len())
			}
			var after time.Duration
			var ra *retryAfter
			switch {
			case errors.As(tc.err, &ra):
				after = ra.d
			case tc.err != nil && !IsPermanent(tc.err):
				after = time.Second
			default:
				return
			}
			stepUntil(t, clk, after, rec.ch("bad#2"), "the retry of bad")
		})
	}
}

// TestBackoff checks the limiter the queue retries with: per-key delays
// double from BaseDelay up to MaxDelay, keys back off independently, and the
// shared bucket spaces out retries of many keys.
func TestBackoff(t *testing.T) {
	q := newQueue(t, Config{BaseDelay: time.Second, MaxDelay: 10 * time.Second, QPS: 1, Burst: 100})
	for i, want := range []time.Duration{1, 2, 4, 8, 10, 10} {
		if got := q.limiter.When("k"); got != want*time.Second {
			t.Fatalf("failure %d of k: delay %s, want %s", i+1, got, want*time.Second)
		}
	}
	if got := q.limiter.When("other"); got != time.Second {
		t.Fatalf("first failure of another key: delay %s, want the base delay", got)
	}
	q.limiter.Forget("k")
	if got := q.limiter.When("k"); got != time.Second {
		t.Fatalf("after Forget: delay %s, want the base delay", got)
	}

	bucket := newQueue(t, Config{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, QPS: 1, Burst: 1})
	if got := bucket.limiter.When("a"); got > time.Millisecond {
		t.Fatalf("first retry with a full bucket: delay %s", got)
	}
	if got := bucket.limiter.When("b"); got < 900*time.Millisecond {
		t.Fatalf("second retry at 1 qps: delay %s, want about 1s from the shared bucket", got)
	}
}

func TestAddAfter(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	q := newQueue(t, Config{Workers: 1, Clock: clk})
	rec := newRecorder(nil)
	q.Start(context.Background(), rec.handle)
	q.AddAfter("later", 30*time.Second)
	q.Add("now")
	wait(t, rec.ch("now#1"), "now")
	if rec.count("later") != 0 || q.Len() != 0 {
		t.Fatal("a delayed key was handed out before its delay")
	}
	stepUntil(t, clk, 30*time.Second, rec.ch("later#1"), "later")
}

func TestNeverTwoWorkersOnOneKey(t *testing.T) {
	q := newQueue(t, Config{Workers: 8})
	var inFlight [4]atomic.Int32
	var overlap atomic.Bool
	var done atomic.Int32
	q.Start(context.Background(), func(_ context.Context, key string) error {
		i := int(key[0] - 'a')
		if inFlight[i].Add(1) > 1 {
			overlap.Store(true)
		}
		for range 100 {
			time.Sleep(0) // yield so that overlaps would show
		}
		inFlight[i].Add(-1)
		done.Add(1)
		return nil
	})
	for n := range 4000 {
		q.Add(string(rune('a' + n%4)))
	}
	q.Drain(context.Background())
	if overlap.Load() {
		t.Fatal("one key was processed by two workers at once")
	}
	if done.Load() == 0 {
		t.Fatal("nothing was processed")
	}
}

func TestDrain(t *testing.T) {
	t.Run("finishes the backlog", func(t *testing.T) {
		q := newQueue(t, Config{Workers: 1})
		rec := newRecorder(nil)
		for i := range 5 {
			q.Add(fmt.Sprint(i))
		}
		q.Start(context.Background(), rec.handle)
		q.Drain(context.Background())
		for i := range 5 {
			if rec.count(fmt.Sprint(i)) != 1 {
				t.Fatalf("key %d not processed by the drain", i)
			}
		}
		q.Add("late")
		if q.Len() != 0 {
			t.Fatal("a drained queue accepted a key")
		}
	})
	t.Run("drops the rest when out of time", func(t *testing.T) {
		q := newQueue(t, Config{Workers: 1})
		release := make(chan struct{})
		started := make(chan struct{})
		var calls atomic.Int32
		for i := range 5 {
			q.Add(fmt.Sprint(i))
		}
		q.Start(context.Background(), func(context.Context, string) error {
			if calls.Add(1) == 1 {
				close(started)
				<-release
			}
			return nil
		})
		wait(t, started, "the first key")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		drained := make(chan struct{})
		go func() { q.Drain(ctx); close(drained) }()
		for !q.dropping.Load() {
			time.Sleep(time.Millisecond) // until Drain saw its deadline
		}
		close(release)
		wait(t, drained, "the drain")
		if got := calls.Load(); got != 1 {
			t.Fatalf("%d keys processed, want only the one in flight", got)
		}
	})
}

func TestPanicIsRetried(t *testing.T) {
	q := newQueue(t, Config{Workers: 1, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	rec := newRecorder(func(key string, n int) error {
		if key == "bad" && n == 1 {
			panic("malformed annotation")
		}
		return nil
	})
	q.Add("bad")
	q.Start(context.Background(), rec.handle)
	wait(t, rec.ch("bad#2"), "the retry after a panic")
}

func TestMetricsByShard(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Fatal("registering the metrics twice on one registry must fail")
	}
	for _, shard := range []int{3, 4} {
		q := newQueue(t, Config{Name: "pods", Shard: shard, Workers: 1, Metrics: m})
		rec := newRecorder(nil)
		for i := range shard {
			q.Add(fmt.Sprint(i))
		}
		q.Start(context.Background(), rec.handle)
		q.Drain(context.Background())
	}
	for _, shard := range []string{"3", "4"} {
		want := map[string]float64{"3": 3, "4": 4}[shard]
		if got := testutil.ToFloat64(m.adds.WithLabelValues("pods", shard)); got != want {
			t.Errorf("adds{shard=%s} = %g, want %g", shard, got, want)
		}
		if got := testutil.ToFloat64(m.depth.WithLabelValues("pods", shard)); got != 0 {
			t.Errorf("depth{shard=%s} = %g after drain, want 0", shard, got)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{
		{Workers: -1},
		{BaseDelay: time.Minute, MaxDelay: time.Second},
		{Burst: -1},
		{Shard: -2},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	if d, ok := RetryDelay(fmt.Errorf("node unknown: %w", RetryAfter(3*time.Second))); !ok || d != 3*time.Second {
		t.Fatalf("RetryDelay of a wrapped RetryAfter = %s, %v; want 3s, true", d, ok)
	}
	if _, ok := RetryDelay(errors.New("boom")); ok {
		t.Fatal("RetryDelay reported a delay for a plain error")
	}
	if !IsPermanent(fmt.Errorf("parsing: %w", Permanent(errors.New("bad")))) || IsPermanent(errors.New("x")) || Permanent(nil) != nil {
		t.Fatal("Permanent/IsPermanent disagree")
	}
}

// TestFreshForgetsFailures: a key that kept failing (a pod deleted while
// the Northbound was down) and then gets a new object (the pod re-created
// under the same name) is processed at once, and its next failure waits
// the base delay, not the doubled delay of the old object's failures.
func TestFreshForgetsFailures(t *testing.T) {
	q := newQueue(t, Config{BaseDelay: time.Second, MaxDelay: time.Minute, QPS: 100, Burst: 100})
	for range 5 {
		q.limiter.When("ns/pod") // five failures: the next delay would be 32 s
	}
	if n := q.Requeues("ns/pod"); n != 5 {
		t.Fatalf("requeues %d, want 5", n)
	}
	q.Fresh("ns/pod")
	if n := q.Requeues("ns/pod"); n != 0 {
		t.Fatalf("requeues after Fresh %d, want 0", n)
	}
	if q.Len() != 1 {
		t.Fatalf("Fresh did not queue the key now (len %d)", q.Len())
	}
	if got := q.limiter.When("ns/pod"); got != time.Second {
		t.Fatalf("first failure after Fresh waits %s, want the base delay", got)
	}
}

// TestRetryNow: a key waiting out a long retry delay after a failure (the
// Northbound away) is processed at once when RetryNow is called (it came
// back), with its failures forgotten; a key that succeeded is not queued.
func TestRetryNow(t *testing.T) {
	q := newQueue(t, Config{Workers: 1, BaseDelay: time.Hour, MaxDelay: time.Hour, QPS: 100, Burst: 100})
	r := newRecorder(func(key string, call int) error {
		if key == "a" && call == 1 {
			return errors.New("northbound away")
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q.Start(ctx, r.handle)
	q.Add("a")
	q.Add("b")
	wait(t, r.ch("a#1"), "the first call of a")
	wait(t, r.ch("b#1"), "the first call of b")
	// The failure is recorded once the handler has returned.
	for deadline := time.Now().Add(30 * time.Second); q.Backoff() != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("%d keys in backoff, want 1 (a)", q.Backoff())
		}
		time.Sleep(time.Millisecond)
	}
	if n := q.RetryNow(); n != 1 {
		t.Fatalf("RetryNow queued %d keys, want 1", n)
	}
	wait(t, r.ch("a#2"), "a retried now instead of after an hour")
	if n := q.RetryNow(); n != 0 {
		t.Errorf("a second RetryNow queued %d keys, want 0", n)
	}
	if got := r.count("b"); got != 1 {
		t.Errorf("b was processed %d times, want 1", got)
	}
}

// TestRetryDelayed: a key put off by a RetryAfter (a Vlan not there yet)
// is processed at once when RetryDelayed is called (the Vlan appeared).
func TestRetryDelayed(t *testing.T) {
	q := newQueue(t, Config{Workers: 1, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, QPS: 100, Burst: 100})
	r := newRecorder(func(key string, call int) error {
		if call == 1 {
			return RetryAfter(time.Hour)
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q.Start(ctx, r.handle)
	q.Add("a")
	wait(t, r.ch("a#1"), "the first call of a")
	for deadline := time.Now().Add(30 * time.Second); ; {
		q.backoffMu.Lock()
		_, ok := q.delayed["a"]
		q.backoffMu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a was not recorded as put off")
		}
		time.Sleep(time.Millisecond)
	}
	if n := q.RetryNow(); n != 0 {
		t.Fatalf("RetryNow queued %d keys: a put-off key is no failure", n)
	}
	if n := q.RetryDelayed(); n != 1 {
		t.Fatalf("RetryDelayed queued %d keys, want 1", n)
	}
	wait(t, r.ch("a#2"), "a retried now instead of after an hour")
}

// TestIdleKeyWait: the idle-key wait counts keys queued while neither
// waiting nor in flight, and leaves out a key queued again while its
// reconcile runs (whose wait is that reconcile's end).
func TestIdleKeyWait(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	q := newQueue(t, Config{Name: "pods", Shard: 1, Workers: 1, Metrics: m, Clock: clk})
	inside, release := make(chan struct{}), make(chan struct{})
	rec := newRecorder(func(key string, call int) error {
		if key == "a" && call == 1 {
			close(inside)
			<-release
		}
		return nil
	})
	q.Add("a")
	clk.Step(3 * time.Second)
	q.Start(context.Background(), rec.handle)
	wait(t, inside, "the first reconcile of a")
	q.Add("a") // in flight: waits for the reconcile, not counted
	q.Add("b") // idle: counted from now
	clk.Step(2 * time.Second)
	close(release)
	wait(t, rec.ch("a#2"), "a's second reconcile")
	wait(t, rec.ch("b#1"), "b's reconcile")
	q.Drain(context.Background())

	count, sum := histogram(t, reg, "shardnet_queue_idle_key_wait_seconds")
	if count != 2 || sum != 5 {
		t.Errorf("idle-key waits: %d observed, %g s in all; want 2 (a's first 3 s, b's 2 s), 5 s", count, sum)
	}
}

// histogram returns the sample count and sum of the one histogram named name.
func histogram(t *testing.T, reg *prometheus.Registry, name string) (uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		if len(mf.GetMetric()) != 1 {
			t.Fatalf("%s: %d series, want 1", name, len(mf.GetMetric()))
		}
		h := mf.GetMetric()[0].GetHistogram()
		return h.GetSampleCount(), h.GetSampleSum()
	}
	t.Fatalf("no %s gathered", name)
	return 0, 0
}
