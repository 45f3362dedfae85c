package metrics

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func leaderValue(name string) float64 {
	return testutil.ToFloat64(leaderStatus.WithLabelValues(name))
}

// TestLeaderMetricCountsElectors: the gauge is 1 while any elector of the
// process holds the lease; the Off client-go sends when it builds an
// elector does not clear another elector's hold.
func TestLeaderMetricCountsElectors(t *testing.T) {
	const name = "counts-leader"
	a, b := leaders.NewLeaderMetric(), leaders.NewLeaderMetric()
	steps := []struct {
		do   func(string)
		want float64
	}{
		{a.Off, 0}, // a is built
		{a.On, 1},  // a acquires
		{b.Off, 1}, // b is built while a leads
		{a.On, 1},  // repeated
		{a.Off, 0}, // a loses the lease
		{b.On, 1},
		{b.Off, 0},
		{b.Off, 0},
	}
	for i, s := range steps {
		s.do(name)
		if got := leaderValue(name); got != s.want {
			t.Fatalf("step %d: leader_election_master_status = %v, want %v", i, got, s.want)
		}
	}
}

// TestLeaderElectionMetrics: a client-go LeaderElector reports through the
// provider installed at init: leader_election_master_status{name} is 1 once
// it leads and 0 once it has lost the lease, and RegisterClientGo exports it.
func TestLeaderElectionMetrics(t *testing.T) {
	const name, ns = "metrics-test-leader", "kube-system"
	reg := prometheus.NewRegistry()
	if err := RegisterClientGo(reg); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	var refuse atomic.Bool
	client.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, errors.New("refused by the test")
		}
		return false, nil, nil
	})
	leading := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: ns},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: "replica-a"},
		},
		Name:          name,
		LeaseDuration: 3 * time.Second,
		RenewDeadline: 2 * time.Second,
		RetryPeriod:   100 * time.Millisecond,
		Callbacks: leaderelection.LeaderCallbacks{
			// client-go calls On before it starts this callback.
			OnStartedLeading: func(context.Context) { close(leading) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := leaderValue(name); got != 0 {
		t.Fatalf("built: leader_election_master_status = %v, want 0", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		le.Run(ctx)
	}()
	select {
	case <-leading:
	case <-stopped:
		t.Fatal("elector stopped before leading")
	}
	if got := leaderValue(name); got != 1 {
		t.Fatalf("leading: leader_election_master_status = %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg, "leader_election_master_status"); err != nil || n == 0 {
		t.Fatalf("leader_election_master_status not exported: %d series, %v", n, err)
	}

	// The API server refuses the renewals: after the renew deadline the
	// elector stops, reporting 0, and the slow path was taken.
	refuse.Store(true)
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("elector still running after losing the lease")
	}
	if got := leaderValue(name); got != 0 {
		t.Fatalf("lost: leader_election_master_status = %v, want 0", got)
	}
	if got := testutil.ToFloat64(leaderSlowpath.WithLabelValues(name)); got == 0 {
		t.Error("leader_election_slowpath_total did not count the failed fast-path renewals")
	}
}
