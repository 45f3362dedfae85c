package shard

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// tickingClock moves on by a millisecond every time it is read, as a real
// clock does while the leader works.
type tickingClock struct{ *clocktesting.FakeClock }

func (c tickingClock) Now() time.Time {
	c.Step(time.Millisecond)
	return c.FakeClock.Now()
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
	c, err := NewCoordinator(Config{
		Client: client, Namespace: "ns", Identity: "a", Holder: nopHolder{}, Shards: 4,
		LeaseDuration: ld, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond, Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	table := NewAssignment(4)
	table.Generation = 1
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
