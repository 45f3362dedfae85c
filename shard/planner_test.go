package shard

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestOf(t *testing.T) {
	const shards = 64
	counts := make([]int, shards)
	for i := range 64000 {
		key := fmt.Sprintf("ns-%d/pod-%d", i%7, i)
		s := Of(key, shards)
		if s < 0 || s >= shards {
			t.Fatalf("Of(%q) = %d, out of range", key, s)
		}
		if again := Of(key, shards); again != s {
			t.Fatalf("Of(%q) not stable: %d then %d", key, s, again)
		}
		counts[s]++
	}
	// 1000 expected per shard; xxhash spreads well within a few percent.
	for s, c := range counts {
		if c < 850 || c > 1150 {
			t.Errorf("shard %d got %d keys of 64000, want about 1000", s, c)
		}
	}
}

func TestSetRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		set  Set
		text string
	}{
		{NewSet(), ""},
		{NewSet(5), "5"},
		{NewSet(0, 1, 2, 3, 7, 9, 10), "0-3,7,9-10"},
	} {
		if got := tc.set.String(); got != tc.text {
			t.Errorf("%v.String() = %q, want %q", tc.set.Sorted(), got, tc.text)
		}
		back, err := ParseSet(tc.text, 64)
		if err != nil || !back.Equal(tc.set) {
			t.Errorf("ParseSet(%q) = %v, %v; want %v", tc.text, back.Sorted(), err, tc.set.Sorted())
		}
	}
	for _, bad := range []string{"x", "3-1", "1,", "-2", "0-64", "1-x"} {
		if _, err := ParseSet(bad, 64); err == nil {
			t.Errorf("ParseSet(%q) accepted a bad set", bad)
		}
	}
}

func FuzzParseSet(f *testing.F) {
	for _, s := range []string{"", "0-3,7", "1", "63", "2-2,4-9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSet(text, 256)
		if err != nil {
			return
		}
		back, err := ParseSet(s.String(), 256)
		if err != nil || !back.Equal(s) {
			t.Fatalf("%q -> %q does not round-trip: %v", text, s.String(), err)
		}
	})
}

func TestAssignmentEncoding(t *testing.T) {
	a := NewAssignment(4)
	a.Generation = 7
	a.Shards[1] = Entry{Owner: "b", Epoch: 3, Gen: 7, Pending: []string{"a"}}
	a.Shards[2] = Entry{Owner: "a", Epoch: 1, Gen: 2}
	text, err := a.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalAssignment(text, 4)
	if err != nil {
		t.Fatal(err)
	}
	if back.String() != a.String() || back.Shards[1].Epoch != 3 || back.Shards[1].Gen != 7 {
		t.Fatalf("round trip changed the table: %s -> %s", a, back)
	}
	if _, err := UnmarshalAssignment(text, 8); !errors.Is(err, ErrShardCount) {
		t.Fatalf("decoding a 4-shard table as 8 shards: got %v, want ErrShardCount", err)
	}
	if got := back.Runnable("a"); len(got) != 1 || got[2] != 1 {
		t.Errorf("Runnable(a) = %v, want map[2:1]", got)
	}
	if got := back.Runnable("b"); len(got) != 0 {
		t.Errorf("Runnable(b) = %v: shard 1 is pending on a", got)
	}
	if !back.AwaitsAck("a", 6) || back.AwaitsAck("a", 7) || back.AwaitsAck("b", 0) {
		t.Error("AwaitsAck disagrees with the pending lists")
	}
}

// settle runs steps with every member acknowledging at once until the table
// stops changing, and returns the number of shards moved on the way.
func settle(t *testing.T, p *Planner, table *Assignment, names []string, now time.Time) (*Assignment, int) {
	t.Helper()
	moved := 0
	if table == nil {
		table = NewAssignment(p.Shards)
	}
	for range 10 {
		var members []Member
		for _, n := range names {
			held := Set{}
			for s := range table.Runnable(n) {
				held[s] = struct{}{}
			}
			members = append(members, Member{Name: n, LastSeen: now, Seen: table.Generation, Held: held})
		}
		plan, err := p.Step(table, members, now)
		if err != nil {
			t.Fatal(err)
		}
		if !plan.Changed {
			return table, moved
		}
		moved += len(plan.Moved)
		table = plan.Next
	}
	t.Fatalf("table did not settle: %s", table)
	return nil, 0
}

// TestMovesBounded checks the scheme's promise on random membership
// histories: one join or leave among N members moves at most ceil(S/N)
// shards (plus one for rounding), and no member owns more than ceil(S/N).
func TestMovesBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, shards := range []int{16, 64, 256} {
		t.Run(fmt.Sprint(shards), func(t *testing.T) {
			p, err := NewPlanner(shards, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(shards), 1))
			members := []string{"shardnet-0"}
			next := 1
			table, _ := settle(t, p, nil, members, now)
			for range 200 {
				before := len(members)
				if before > 1 && (before >= 8 || rng.IntN(2) == 0) {
					i := rng.IntN(len(members))
					members = append(members[:i:i], members[i+1:]...)
				} else {
					members = append(members, fmt.Sprintf("shardnet-%d", next))
					next++
				}
				var moved int
				table, moved = settle(t, p, table, members, now)
				n := max(before, len(members))
				bound := (shards+n-1)/n + 1
				if moved > bound {
					t.Fatalf("%d -> %d members moved %d shards, bound %d", before, len(members), moved, bound)
				}
				limit := (shards + len(members) - 1) / len(members)
				for owner, c := range table.Owners() {
					if owner == "" || c > limit {
						t.Fatalf("owner %q has %d shards, limit %d: %s", owner, c, limit, table)
					}
				}
			}
		})
	}
}

func TestStepRejectsWrongShardCount(t *testing.T) {
	p, err := NewPlanner(8, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Step(NewAssignment(4), nil, time.Now()); !errors.Is(err, ErrShardCount) {
		t.Fatalf("got %v, want ErrShardCount", err)
	}
	if _, err := NewPlanner(0, time.Second); err == nil {
		t.Fatal("NewPlanner accepted zero shards")
	}
}

// TestUnackedMoveWaitsForLease: a live previous owner that never
// acknowledges keeps the new owner waiting; its expiry releases the shard.
func TestUnackedMoveWaitsForLease(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p, _ := NewPlanner(4, 10*time.Second)
	table, _ := settle(t, p, nil, []string{"a"}, now)
	stale := Member{Name: "a", LastSeen: now, Seen: table.Generation, Held: NewSet(0, 1, 2, 3), Leaving: true}
	b := Member{Name: "b", LastSeen: now, Seen: table.Generation}
	plan, err := p.Step(table, []Member{stale, b}, now)
	if err != nil || !plan.Changed {
		t.Fatalf("leave of a did not move anything: %v", err)
	}
	for at := now; at.Before(now.Add(10 * time.Second)); at = at.Add(time.Second) {
		b.LastSeen = at
		next, err := p.Step(plan.Next, []Member{stale, b}, at)
		if err != nil {
			t.Fatal(err)
		}
		if len(next.Next.Runnable("b")) != 0 {
			t.Fatalf("b may run shards at %s while a still holds them", at.Sub(now))
		}
	}
	at := now.Add(10 * time.Second)
	b.LastSeen = at
	next, _ := p.Step(plan.Next, []Member{stale, b}, at)
	if got := len(next.Next.Runnable("b")); got != 4 {
		t.Fatalf("after a's lease expired b may run %d shards, want 4: %s", got, next.Next)
	}
	if !plan.Wake.Equal(now.Add(10 * time.Second)) {
		t.Errorf("Wake = %s, want the first expiry", plan.Wake)
	}
}

func TestElectionTimings(t *testing.T) {
	for _, tc := range []struct {
		lease, renew, retry  time.Duration
		wantLease, wantRenew time.Duration
	}{
		{15 * time.Second, 10 * time.Second, 2 * time.Second, 13 * time.Second, 8 * time.Second},
		{4 * time.Second, 3 * time.Second, time.Second, 3 * time.Second, 2 * time.Second},
		// Shorter timings would break renew > 1.2 x retry: keep them.
		{4 * time.Second, 2 * time.Second, time.Second, 4 * time.Second, 2 * time.Second},
	} {
		ld, rd := electionTimings(Config{LeaseDuration: tc.lease, RenewDeadline: tc.renew, RetryPeriod: tc.retry})
		if ld != tc.wantLease || rd != tc.wantRenew {
			t.Errorf("electionTimings(%s, %s, %s) = %s, %s; want %s, %s", tc.lease, tc.renew, tc.retry, ld, rd, tc.wantLease, tc.wantRenew)
		}
	}
}

type nopHolder struct{}

func (nopHolder) Acquire(context.Context, int, uint64) error { return nil }
func (nopHolder) Release(context.Context, int, uint64)       {}
func (nopHolder) Abandon(int, uint64)                        {}

// A renewal whose earlier write landed after its client gave up meets a
// conflict; the same call re-reads the Lease and writes it, rather than
// failing the renewal and waiting a retry period.
func TestLeaseWriteAfterALandedTimeoutSucceedsInOneCall(t *testing.T) {
	client := fake.NewClientset()
	c, err := NewCoordinator(Config{Client: client, Namespace: "ns", Identity: "shardnet-0", Holder: nopHolder{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.writeLease(ctx); err != nil {
		t.Fatalf("first write: %v", err)
	}
	// The write the client saw time out: the Lease moved on under it.
	landed, err := client.CoordinationV1().Leases("ns").Get(ctx, c.memberName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	landed.ResourceVersion = "" // the tracker refuses a stale version, not an empty one
	landed.Annotations = map[string]string{"moved": "on"}
	if _, err := client.CoordinationV1().Leases("ns").Update(ctx, landed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	conflicts := 0
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if l.Annotations["moved"] != "on" {
			conflicts++
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), l.Name, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	if err := c.writeLease(ctx); err != nil {
		t.Fatalf("renewal after a landed write: %v", err)
	}
	if conflicts != 1 {
		t.Fatalf("%d conflicts, want the one of the stale copy", conflicts)
	}
}

func TestCoordinatorConfig(t *testing.T) {
	client := fake.NewClientset()
	good := func() Config {
		return Config{Client: client, Namespace: "ns", Identity: "shardnet-0", Holder: nopHolder{}}
	}
	c, err := NewCoordinator(good())
	if err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	if c.cfg.Shards != DefaultShards || c.cfg.LeaseDuration != 15*time.Second || c.cfg.RenewInterval != 5*time.Second ||
		c.memberName != "shardnet-member-shardnet-0" || c.tableName != "shardnet-assignment" {
		t.Fatalf("defaults not filled in: %+v", c.cfg)
	}
	if c.Healthy() == nil {
		t.Fatal("a coordinator that never wrote its lease reports healthy")
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no client", func(c *Config) { c.Client = nil }, "client"},
		{"no namespace", func(c *Config) { c.Namespace = "" }, "namespace"},
		{"no identity", func(c *Config) { c.Identity = "" }, "identity"},
		{"no holder", func(c *Config) { c.Holder = nil }, "holder"},
		{"lease below renew", func(c *Config) { c.LeaseDuration, c.RenewDeadline = 5*time.Second, 6*time.Second }, "lease duration"},
		{"renew below retry", func(c *Config) { c.RenewDeadline, c.RetryPeriod = 2*time.Second, 2*time.Second }, "retry period"},
		{"renew interval too long", func(c *Config) { c.RenewInterval = 11 * time.Second }, "renew interval"},
	} {
		cfg := good()
		tc.mutate(&cfg)
		if _, err := NewCoordinator(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error about %q", tc.name, err, tc.want)
		}
	}
}
