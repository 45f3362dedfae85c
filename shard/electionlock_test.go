package shard

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func leaseLock(client *fake.Clientset, identity string) *resourcelock.LeaseLock {
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: "shardnet-leader", Namespace: "ns"},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
}

func record(holder string, at time.Time) resourcelock.LeaderElectionRecord {
	return resourcelock.LeaderElectionRecord{
		HolderIdentity: holder, LeaseDurationSeconds: 10,
		AcquireTime: metav1.NewTime(at), RenewTime: metav1.NewTime(at),
	}
}

func holderOf(t *testing.T, client *fake.Clientset) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases("ns").Get(context.Background(), "shardnet-leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// A leader paused past its lease resumes believing it still holds the
// Lease, and its elector, failing to renew, releases it: client-go reads
// the Lease first but decides from the record it observed before the
// pause. The release must not clear the successor's Lease. A release of
// the elector's own term still goes through.
func TestElectionLockReleasesOnlyItsOwnTerm(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1000, 0)
	clk := clocktesting.NewFakeClock(t0)

	// Another elector takes the Lease over while a is paused: another
	// replica, or a restarted process of a's own identity with a newer
	// term. a's release must leave the Lease to it either way.
	for _, next := range []string{"b", "a"} {
		t.Run("taken over by "+next, func(t *testing.T) {
			client := fake.NewClientset()
			at := new(atomic.Int64)
			a := &electionLock{Interface: leaseLock(client, "a"), clock: clk, renewedAt: at}
			if err := a.Create(ctx, record("a", t0)); err != nil {
				t.Fatal(err)
			}
			if at.Load() != t0.UnixNano() {
				t.Fatalf("renewedAt %d after acquiring, want %d", at.Load(), t0.UnixNano())
			}
			successor := &electionLock{Interface: leaseLock(client, next), clock: clk, renewedAt: new(atomic.Int64)}
			if _, _, err := successor.Get(ctx); err != nil {
				t.Fatal(err)
			}
			if err := successor.Update(ctx, record(next, t0.Add(20*time.Second))); err != nil {
				t.Fatal(err)
			}
			// a resumes: tryRelease reads the Lease, then writes no holder.
			if _, _, err := a.Get(ctx); err != nil {
				t.Fatal(err)
			}
			if err := a.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1}); err == nil {
				t.Fatalf("a released the Lease %s took over", next)
			}
			if h := holderOf(t, client); h != next {
				t.Fatalf("the Lease names %q after a's release, want %s", h, next)
			}
			if at.Load() != 0 {
				t.Fatalf("a still counts as renewed (%d) after trying to release", at.Load())
			}
		})
	}

	t.Run("own term", func(t *testing.T) {
		client := fake.NewClientset()
		at := new(atomic.Int64)
		a := &electionLock{Interface: leaseLock(client, "a"), clock: clk, renewedAt: at}
		if err := a.Create(ctx, record("a", t0)); err != nil {
			t.Fatal(err)
		}
		// A renewal keeps the acquire time and moves renewedAt on.
		clk.Step(time.Second)
		if _, _, err := a.Get(ctx); err != nil {
			t.Fatal(err)
		}
		r := record("a", t0)
		r.RenewTime = metav1.NewTime(clk.Now())
		if err := a.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
		if at.Load() != clk.Now().UnixNano() {
			t.Fatalf("renewedAt %d after renewing, want %d", at.Load(), clk.Now().UnixNano())
		}
		if _, _, err := a.Get(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1}); err != nil {
			t.Fatalf("releasing its own term: %v", err)
		}
		if h := holderOf(t, client); h != "" {
			t.Fatalf("the Lease names %q after the release, want nobody", h)
		}
	})
}

// LeaderTerm's fence needs both Leases renewed recently: a resumed leader
// renews its member Lease at once, but its last renewal of the leader
// Lease is as old as the pause.
func TestLeaderTermNeedsARecentElectionRenewal(t *testing.T) {
	t0 := time.Unix(1000, 0)
	clk := clocktesting.NewFakeClock(t0)
	c := leaderUnderTest(t, fake.NewClientset(), clk, 4*time.Second)
	rd := electionRenewDeadline(c.cfg)
	c.term.Store(7)
	c.renewedAt.Store(t0.UnixNano())
	for _, tc := range []struct {
		name      string
		electedAt time.Time
		ok        bool
	}{
		{"never renewed", time.Time{}, false},
		{"renewed now", t0, true},
		{"renewed at the deadline", t0.Add(-rd), true},
		{"renewed before a pause", t0.Add(-rd - time.Millisecond), false},
	} {
		if tc.electedAt.IsZero() {
			c.electedAt.Store(0)
		} else {
			c.electedAt.Store(tc.electedAt.UnixNano())
		}
		term, err := c.fencedTerm(t0)
		if tc.ok && (err != nil || term != 7) {
			t.Errorf("%s: term %d, %v; want 7", tc.name, term, err)
		}
		if !tc.ok && !errors.Is(err, ErrNotLeader) {
			t.Errorf("%s: term %d, %v; want ErrNotLeader", tc.name, term, err)
		}
	}
	// The member Lease still counts on its own.
	c.electedAt.Store(t0.UnixNano())
	c.renewedAt.Store(t0.Add(-c.cfg.RenewDeadline - time.Millisecond).UnixNano())
	if _, err := c.fencedTerm(t0); !errors.Is(err, ErrNotLeader) {
		t.Errorf("member Lease renewed before a pause: %v, want ErrNotLeader", err)
	}
}

// pausingLock stands for a leader paused while a renewal is on its way:
// once paused, the next Update waits until the caller's deadline has
// passed, as a write sent before SIGSTOP is answered only after SIGCONT,
// and then fails as the API server answers a write over a Lease changed
// meanwhile. A Get under an expired context fails as a real client's does.
type pausingLock struct {
	resourcelock.Interface
	paused  atomic.Bool
	blocked chan struct{}
}

func (l *pausingLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return l.Interface.Get(ctx)
}

func (l *pausingLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if r.HolderIdentity != "" && l.paused.CompareAndSwap(true, false) {
		close(l.blocked)
		<-ctx.Done()
		return apierrors.NewConflict(coordinationv1.Resource("leases"), "shardnet-leader", errors.New("the object has been modified"))
	}
	return l.Interface.Update(ctx, r)
}

// TestPausedLeaderLeavesItsSuccessorsLease runs client-go's elector over
// electionLock through a pause that outlasts the renew deadline, during
// which another replica takes the Lease. The elector gives up and
// releases what it believes it holds (ReleaseOnCancel); the successor
// must still hold the Lease afterwards. Without electionLock's check the
// release cleared it.
func TestPausedLeaderLeavesItsSuccessorsLease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := fake.NewClientset()
	inner := &pausingLock{Interface: leaseLock(client, "a"), blocked: make(chan struct{})}
	renewed := new(atomic.Int64)
	lock := &electionLock{Interface: inner, clock: clock.RealClock{}, renewedAt: renewed}
	started, stopped := make(chan struct{}), make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond,
		ReleaseOnCancel: true, Name: "test",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(started) },
			OnStoppedLeading: func() { close(stopped) },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go le.Run(ctx)
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("a never led")
	}
	inner.paused.Store(true)
	select {
	case <-inner.blocked:
	case <-ctx.Done():
		t.Fatal("a never renewed")
	}
	// b takes the Lease while a's renewal hangs.
	leases := client.CoordinationV1().Leases("ns")
	l, err := leases.Get(ctx, "shardnet-leader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = ptr.To("b"), &now, &now
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("a never stopped leading")
	}
	if h := holderOf(t, client); h != "b" {
		t.Fatalf("the Lease names %q after a stopped leading, want b", h)
	}
	if renewed.Load() != 0 {
		t.Errorf("a still counts as renewed after it stopped leading")
	}
}
