package ovn

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/test/harness"
)

// TestLeaderKillDuringLoad kills the RAFT leader while 16 workers write
// ports through one batcher. Workers behave like the reconciler: build the
// ops from the cache, submit, and on an error retry after the client is
// ready again. Every submit must return (success or error); every port that
// was acknowledged must be present; in the end every port is present exactly
// once, the switch references each once, and nothing else was written.
func TestLeaderKillDuringLoad(t *testing.T) {
	cluster := harness.StartNBCluster(t, 3)
	c := connect(t, cluster.Endpoints, true)
	makeSwitch(t, c, "bulk")
	b := newShardBatcher(t, c, 9, 1, BatcherConfig{TxnTimeout: 20 * time.Second})

	const total, workers, maxAttempts = 3000, 16, 40
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	var (
		next             atomic.Int64
		acked            atomic.Int64
		errorsSeen       sync.Map   // error kind -> *atomic.Int64
		mu               sync.Mutex // guards ackedNames and failed
		ackedNames       = map[string]bool{}
		failed           []string
		wg               sync.WaitGroup
		killedEndpoint   string
		killAfter        = int64(total / 4)
		killed           = make(chan struct{})
		errorsAfterKill  atomic.Int64
		successAfterKill atomic.Int64
	)
	countErr := func(err error) {
		kind := "other"
		switch {
		case errors.Is(err, ErrOutcomeUnknown):
			kind = "outcome-unknown"
		case errors.Is(err, ErrNotReady):
			kind = "not-ready"
		case errors.As(err, new(*RequestError)):
			kind = "request"
		case errors.Is(err, ErrStaleEpoch):
			kind = "stale"
		}
		v, _ := errorsSeen.LoadOrStore(kind, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total || ctx.Err() != nil {
					return
				}
				spec := bulkPort(i)
				ok := false
				for attempt := 0; attempt < maxAttempts && !ok && ctx.Err() == nil; attempt++ {
					rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
					err := c.WaitReady(rctx)
					var ops []ovsdb.Operation
					if err == nil {
						ops, _, err = c.EnsurePort(spec)
					}
					if err == nil {
						_, err = b.Submit(rctx, ops...)
					}
					rcancel()
					if err == nil {
						ok = true
						break
					}
					countErr(err)
					if errors.Is(err, ErrStaleEpoch) {
						t.Errorf("port %d: the fence failed without a take-over: %v", i, err)
						break
					}
					select {
					case <-killed:
						errorsAfterKill.Add(1)
					default:
					}
					time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
				}
				mu.Lock()
				if ok {
					ackedNames[spec.Name] = true
				} else {
					failed = append(failed, spec.Name)
				}
				mu.Unlock()
				if ok {
					if acked.Add(1) > killAfter {
						select {
						case <-killed:
							successAfterKill.Add(1)
						default:
						}
					}
				}
			}
		})
	}

	// Kill the leader once a quarter of the ports are in, with batches in
	// flight.
	for acked.Load() < killAfter && ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
	}
	leader := cluster.Leader(t)
	killedEndpoint = cluster.Endpoints[leader]
	if c.Endpoint() != killedEndpoint {
		t.Fatalf("leader-only client is on %s, the leader is %s", c.Endpoint(), killedEndpoint)
	}
	cluster.Kill(leader)
	close(killed)
	t.Logf("killed leader %d (%s) after %d acknowledged ports", leader, killedEndpoint, acked.Load())
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("load did not finish: %v", ctx.Err())
	}

	errorsSeen.Range(func(k, v any) bool {
		t.Logf("errors %s: %d", k, v.(*atomic.Int64).Load())
		return true
	})
	t.Logf("after the kill: %d errors, %d successes; client now on %s", errorsAfterKill.Load(), successAfterKill.Load(), c.Endpoint())
	if len(failed) > 0 {
		t.Errorf("%d ports never succeeded in %d attempts, e.g. %s", len(failed), maxAttempts, failed[0])
	}
	if c.Endpoint() == killedEndpoint || c.Endpoint() == "" {
		t.Errorf("client endpoint %q after the kill of %s", c.Endpoint(), killedEndpoint)
	}
	if successAfterKill.Load() == 0 {
		t.Error("no port was acknowledged after the kill")
	}

	// Read the new leader, not the cache.
	rows := selectRows(t, c, nbdb.LogicalSwitchPortTable, "_uuid", "name")
	count := map[string]int{}
	uuids := map[string]bool{}
	for _, r := range rows {
		count[r["name"].(string)]++
		uuids[r["_uuid"].(ovsdb.UUID).GoUUID] = true
	}
	for name := range ackedNames {
		if count[name] != 1 {
			t.Errorf("acknowledged port %s present %d times", name, count[name])
		}
	}
	if len(rows) != total || len(count) != total {
		t.Errorf("%d port rows with %d names, want %d", len(rows), len(count), total)
	}
	for _, r := range selectRows(t, c, nbdb.LogicalSwitchTable, "name", "ports") {
		if r["name"] != "bulk" {
			continue
		}
		set, _ := r["ports"].(ovsdb.OvsSet)
		if len(set.GoSet) != total {
			t.Errorf("switch references %d ports, want %d", len(set.GoSet), total)
		}
		for _, u := range set.GoSet {
			if !uuids[u.(ovsdb.UUID).GoUUID] {
				t.Errorf("switch references a missing port %v", u)
			}
		}
	}

	// The killed member comes back and catches up; the data survives.
	cluster.Restart(t, leader)
	fresh := connect(t, []string{cluster.Endpoints[leader]}, false)
	eventually(t, "restarted member caught up", func() bool {
		return len(selectRows(t, fresh, nbdb.LogicalSwitchPortTable, "name")) == total
	})
}

// TestTakeOverOnRAFTSurvivesLeaderChange checks that an epoch recorded
// before a leader change still fences after it.
func TestTakeOverOnRAFTSurvivesLeaderChange(t *testing.T) {
	cluster := harness.StartNBCluster(t, 3)
	c := connect(t, cluster.Endpoints, true)
	makeSwitch(t, c, "bulk")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.TakeOver(ctx, 4, 10); err != nil {
		t.Fatal(err)
	}
	cluster.Kill(cluster.Leader(t))
	if err := c.TakeOver(ctx, 4, 11); err != nil {
		t.Fatal(err)
	}
	stale, err := c.NewBatcher(BatcherConfig{Fence: &Fence{Shard: 4, Epoch: 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close(ctx)
	ops, _, err := c.EnsurePort(bulkPort(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stale.Submit(ctx, ops...); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("stale epoch after the leader change: %v, want ErrStaleEpoch", err)
	}
	if e, ok := c.Epoch(4); !ok || e != 11 {
		t.Errorf("recorded epoch %d (%v), want 11", e, ok)
	}
	if n := len(selectRows(t, c, nbdb.LogicalSwitchPortTable, "name")); n != 0 {
		t.Errorf("%d ports written by a stale owner", n)
	}
}
