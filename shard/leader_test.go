package shard

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// tickingClock moves on by a millisecond every time it is read, as a real
// clock does while the leader works.
type tickingClock struct{ *clocktesting.FakeClock }

func (c tickingClock) Now() time.Time {
	c.Step(time.Millisecond)
	return c.FakeClock.Now()
}

// leaderUnderTest is the coordinator of member "a" over four shards whose
// lead steps a test drives by hand.
func leaderUnderTest(t *testing.T, client *fake.Clientset, clk clock.WithTicker, ld time.Duration) *Coordinator {
	t.Helper()
	c, err := NewCoordinator(Config{
		Client: client, Namespace: "ns", Identity: "a", Holder: nopHolder{}, Shards: 4,
		LeaseDuration: ld, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond, Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A member whose last sign of life is about to be a lease duration old
// (its Lease renewed since, but this replica's watch stalled) must not
// look alive to the expiry check and expired to the plan of the same step:
// that moved a live member's shards away and back again.
func TestLeadChecksExpiryAndPlansAtOneInstant(t *testing.T) {
	const ld = 4 * time.Second
	t0 := time.Unix(1000, 0)
	// The first reading is t0+ld-1ms: a is not yet suspect; a second one
	// would be t0+ld, when a counts as expired.
	clk := tickingClock{clocktesting.NewFakeClock(t0.Add(ld - 2*time.Millisecond))}
	client := fake.NewClientset()
	c := leaderUnderTest(t, client, clk, ld)
	table := NewAssignment(4)
	table.Generation = 1
	table.Members = []string{"a", "b"}
	for s, owner := range []string{"a", "a", "b", "b"} {
		table.Shards[s] = Entry{Owner: owner, Inc: "i-" + owner, Epoch: 1, Gen: 1}
	}
	c.setTable(table, "1")
	c.observed["a"] = &observation{rv: "1", lastSeen: t0, report: report{incarnation: "i-a", held: NewSet(0, 1), seen: 1}}
	c.observed["b"] = &observation{rv: "1", lastSeen: t0.Add(ld), report: report{incarnation: "i-b", held: NewSet(2, 3), seen: 1}}

	c.lead(context.Background())

	for _, a := range client.Actions() {
		if a.GetResource().Resource == "configmaps" && (a.GetVerb() == "update" || a.GetVerb() == "create") {
			t.Errorf("the leader rewrote the assignment (%s) although no member expired at the instant it checked", a.GetVerb())
		}
	}
	if got := c.table.Owners()["a"]; got != 2 {
		t.Errorf("a owns %d shards after the step, want 2: %v", got, c.table)
	}
}

// After every replica restarted, the first leader finds the members the
// table last saw ready without a member Lease: it holds the assignment
// back until they register (then gives each its share at once, moving
// nothing twice) or until FirstAssignmentWait has passed (then assigns
// without them). A member whose Lease exists, even expired, is not waited
// for.
func TestFreshLeaderWaitsForTheTableOwners(t *testing.T) {
	const ld = 4 * time.Second
	t0 := time.Unix(1000, 0)
	// The table as every replica's shutdown left it: no owners, the
	// members last ready recorded.
	table := NewAssignment(4)
	table.Generation = 3
	table.Members = []string{"a", "b"}
	for s := range table.Shards {
		table.Shards[s] = Entry{Epoch: 2, Gen: 3}
	}
	start := func(t *testing.T) (*Coordinator, *clocktesting.FakeClock, *fake.Clientset) {
		clk := clocktesting.NewFakeClock(t0)
		client := fake.NewClientset()
		c := leaderUnderTest(t, client, clk, ld)
		text, err := table.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().ConfigMaps("ns").Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: c.tableName, Namespace: "ns", ResourceVersion: "1"},
			Data:       map[string]string{AssignmentKey: text},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		client.ClearActions()
		c.setTable(table, "1")
		c.ledSince.Store(t0.UnixNano())
		c.observed["a"] = &observation{rv: "1", lastSeen: t0, report: report{incarnation: "new-a", held: NewSet(), seen: 3}}
		return c, clk, client
	}
	wrote := func(client *fake.Clientset) bool {
		for _, a := range client.Actions() {
			if a.GetResource().Resource == "configmaps" && (a.GetVerb() == "update" || a.GetVerb() == "create") {
				return true
			}
		}
		return false
	}

	t.Run("the owner registers", func(t *testing.T) {
		c, clk, client := start(t)
		if wake := c.lead(context.Background()); !wake.Equal(t0.Add(ld / 2)) {
			t.Errorf("wake %v, want the end of the wait %v", wake, t0.Add(ld/2))
		}
		if wrote(client) {
			t.Fatal("the leader assigned while b, an owner of the table, had no Lease yet")
		}
		clk.Step(time.Second)
		c.observed["b"] = &observation{rv: "2", lastSeen: clk.Now(), report: report{incarnation: "new-b", held: NewSet(), seen: 3}}
		c.lead(context.Background())
		if !wrote(client) {
			t.Fatal("no assignment once every owner registered")
		}
		if got := c.table.Owners(); got["a"] != 2 || got["b"] != 2 {
			t.Errorf("owners %v, want a and b with two shards each from the first assignment", got)
		}
	})
	t.Run("the wait ends", func(t *testing.T) {
		c, clk, client := start(t)
		c.lead(context.Background())
		clk.Step(ld / 2)
		c.lead(context.Background())
		if !wrote(client) {
			t.Fatal("no assignment after FirstAssignmentWait")
		}
		if got := c.table.Owners()["a"]; got != 4 {
			t.Errorf("a owns %d shards, want all 4 once b is given up on", got)
		}
	})
	t.Run("a leader that is leaving does not wait", func(t *testing.T) {
		c, _, client := start(t)
		// a, the leader, took the shards over from the others on their
		// way out, and is on its way out too.
		owned := table.Clone()
		owned.Generation++
		for s := range owned.Shards {
			owned.Shards[s].Owner, owned.Shards[s].Inc = "a", "new-a"
		}
		c.setTable(owned, "1")
		c.observed["a"].report.leaving = true
		c.leaseMu.Lock()
		c.want.leaving = true
		c.leaseMu.Unlock()
		c.lead(context.Background())
		if !wrote(client) {
			t.Fatal("the leader, itself shutting down, waited for b before assigning")
		}
		if got := c.table.Owners()[""]; got != 4 {
			t.Errorf("%d shards without an owner, want all 4: no member is ready (%v)", got, c.table.Owners())
		}
	})
	t.Run("an expired Lease is not waited for", func(t *testing.T) {
		c, _, client := start(t)
		// Confirmed expired on the server (read live, still there).
		c.observed["b"] = &observation{rv: "1", confirmedRV: "1", lastSeen: t0.Add(-2 * ld), report: report{incarnation: "old-b", held: NewSet(), seen: 3}}
		c.lead(context.Background())
		if !wrote(client) {
			t.Fatal("the leader waited for b, whose Lease exists (expired)")
		}
	})
}

// A member on its way out starts no shard the table newly names it for
// (the leader assigned it before it saw the member leaving), and keeps
// running the ones it holds until the leader moves them.
func TestLeavingMemberStartsNoShard(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	c := leaderUnderTest(t, fake.NewClientset(), clk, 4*time.Second)
	table := NewAssignment(4)
	table.Generation = 2
	for s := range table.Shards {
		table.Shards[s] = Entry{Owner: "a", Epoch: 1, Gen: 2}
	}
	c.setTable(table, "1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	holdings := map[int]*holding{}
	// The shards started below wait for an order to stop.
	defer func() {
		for _, h := range holdings {
			closeOnce(h.abandon)
		}
		wg.Wait()
	}()
	held := &holding{epoch: 1, stop: make(chan struct{}), abandon: make(chan struct{}), cancel: func() {}}
	holdings[0] = held
	c.leaseMu.Lock()
	c.want.leaving = true
	c.leaseMu.Unlock()
	c.follow(ctx, holdings, map[int]time.Time{}, &wg)
	if len(holdings) != 1 || holdings[0] != held {
		t.Fatalf("a leaving member holds %v, want only shard 0, which it held before", holdings)
	}
	if held.stopping {
		t.Error("a held shard the table still names this member for was stopped while leaving")
	}
	c.leaseMu.Lock()
	c.want.leaving = false
	c.leaseMu.Unlock()
	c.follow(ctx, holdings, map[int]time.Time{}, &wg)
	if len(holdings) != 4 {
		t.Errorf("a member not leaving holds %d shards, want all 4 the table names it for", len(holdings))
	}
}
