package faults

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// killNBRaftLeader: on a cluster whose Northbound is a 3-member RAFT
// cluster, SIGKILL of the RAFT leader; once the other two have elected a
// leader, the killed member is started again on its database and ports.
// The replicas (--nb-leader-only) and the checker's view reconnect to the
// new leader; transactions in flight at the kill fail or commit, and the
// replicas retry what failed.
func killNBRaftLeader(ctx context.Context, t *testing.T, e *env, l *load) faultInfo {
	c := e.nbc
	if c == nil {
		t.Fatal("nb-raft-leader-kill needs envConfig.nbCluster")
	}
	old := c.Leader(t)
	fi := faultInfo{injected: time.Now()}
	c.Kill(old)
	next := c.Leader(t)
	elected := time.Since(fi.injected)
	c.Restart(t, old)
	fi.healed = time.Now()
	fi.note = fmt.Sprintf("SIGKILL of the Northbound RAFT leader (member %d of 3); member %d leads %v later; member %d restarted %v after the kill",
		old, next, elected.Round(time.Millisecond), old, fi.healed.Sub(fi.injected).Round(time.Millisecond))
	return fi
}

// northboundAway: the standalone Northbound server is killed and stays
// away for two lease durations, then is started again on its database.
// While it is away, every replica must report itself not ready (/readyz:
// its Northbound connection is down), and the shard assignment must not
// move (the replicas still renew their member Leases: a Northbound outage
// is no reason to hand shards around, where every new owner would wait for
// the same server). A poller reads /readyz and the assignment table every
// 100 ms from the kill until it finds the cluster whole again (every
// replica ready: the work resuming), and counts the table's generations.
// What the replicas do after that is the load's, as in every case.
func northboundAway(ctx context.Context, t *testing.T, e *env, l *load) faultInfo {
	before, err := e.assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replicas := e.running()
	ids := sortedKeys(replicas)

	pctx, stopPoll := context.WithCancel(ctx)
	var (
		mu sync.Mutex
		// notReady counts, per replica, the polls in the outage that
		// found it not ready; polls those in the outage.
		notReady    = map[string]int{}
		polls       int
		generations = map[uint64]bool{}
		moves       []string
		readErrs    int
		// away is true from the kill to the restart.
		away = true
		// wholeAt is when the poller first found the cluster whole after
		// the restart, which ends its window.
		wholeAt time.Time
	)
	polled := make(chan struct{})
	fi := faultInfo{injected: time.Now()}
	killNB(t, e.nb)
	go func() {
		defer close(polled)
		seen := map[string]bool{}
		for i := 0; i < int(time.Hour/(100*time.Millisecond)) && pctx.Err() == nil; i++ {
			mu.Lock()
			outage := away
			mu.Unlock()
			// The window ends when the cluster is whole again after the
			// restart; what happens later is the load's.
			if !outage && e.whole(pctx) == nil {
				mu.Lock()
				wholeAt = time.Now()
				mu.Unlock()
				return
			}
			var down []string
			if outage {
				for _, id := range ids {
					if !replicas[id].Ready() {
						down = append(down, id)
					}
				}
			}
			a, err := e.assignment(pctx)
			mu.Lock()
			if outage && away {
				polls++
				for _, id := range down {
					notReady[id]++
				}
			}
			switch {
			case err != nil:
				if pctx.Err() == nil {
					readErrs++
				}
			default:
				if a.Generation != before.Generation {
					generations[a.Generation] = true
				}
				for s, en := range a.Shards {
					was := before.Shards[s]
					if en.Owner != was.Owner || en.Epoch != was.Epoch || en.Active() != was.Active() {
						m := fmt.Sprintf("generation %d: shard %d %s epoch %d (active %v), was %s epoch %d (active %v)",
							a.Generation, s, en.Owner, en.Epoch, en.Active(), was.Owner, was.Epoch, was.Active())
						if !seen[m] {
							seen[m] = true
							moves = append(moves, fmt.Sprintf("+%v: %s", time.Since(fi.injected).Round(time.Millisecond), m))
						}
					}
				}
			}
			mu.Unlock()
			select {
			case <-pctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(2 * leaseDuration):
	}
	restartNB(t, e.nb)
	mu.Lock()
	away = false
	mu.Unlock()
	fi.healed = time.Now()
	fi.note = fmt.Sprintf("SIGKILL of ovsdb-server, away %v (2 lease durations), restarted on the same database", fi.healed.Sub(fi.injected).Round(time.Millisecond))
	fi.extra = func() (violations, string) {
		stopPoll()
		<-polled
		mu.Lock()
		defer mu.Unlock()
		v := violations{id: "u", title: "while the Northbound was away: replicas that stayed ready, or shards that moved"}
		var readiness []string
		for _, id := range ids {
			readiness = append(readiness, fmt.Sprintf("%s %d", id, notReady[id]))
			if notReady[id] == 0 {
				v.add("%s answered /readyz 200 in each of %d polls while the Northbound was away", id, polls)
			}
		}
		for _, m := range moves {
			v.add("%s", m)
		}
		gens := slices.Sorted(func(yield func(uint64) bool) {
			for g := range generations {
				if !yield(g) {
					return
				}
			}
		})
		until := "the case's check (never whole)"
		if !wholeAt.IsZero() {
			until = fmt.Sprintf("whole %v after the kill", wholeAt.Sub(fi.injected).Round(time.Millisecond))
		}
		note := fmt.Sprintf("polls not ready of %d in the outage: %s; from the kill until %s: %d assignment generations after %d %v, %d shard moves, %d failed table reads",
			polls, strings.Join(readiness, ", "), until, len(gens), before.Generation, gens, len(moves), readErrs)
		return v, note
	}
	return fi
}

// restartAPIServer: kube-apiserver is stopped (SIGTERM) and started again
// on its port, certificates and etcd. While it is down no replica can
// renew its member Lease, so every replica gives up its shards at the
// renew deadline; the invariants must hold through whatever the
// replicas do when it is back (rejoin in place, or start afresh where a
// shard moved).
func restartAPIServer(ctx context.Context, t *testing.T, e *env, l *load) faultInfo {
	fi := faultInfo{injected: time.Now()}
	e.kube.StopAPIServer()
	stopped := time.Since(fi.injected)
	e.kube.StartAPIServer(t)
	fi.healed = time.Now()
	fi.note = fmt.Sprintf("SIGTERM of kube-apiserver: %s; started again on the same port and etcd, ready %v after the SIGTERM",
		describeStop("kube-apiserver", stopped), fi.healed.Sub(fi.injected).Round(time.Millisecond))
	return fi
}

// restartEtcd: etcd is stopped (SIGTERM), kept down for a lease duration
// (so that every member Lease renewal misses its renew deadline, whatever
// the machine's speed), and started again on its data and ports;
// kube-apiserver keeps running and reconnects.
func restartEtcd(ctx context.Context, t *testing.T, e *env, l *load) faultInfo {
	fi := faultInfo{injected: time.Now()}
	e.kube.StopEtcd()
	stopped := time.Since(fi.injected)
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(leaseDuration):
	}
	e.kube.StartEtcd(t)
	fi.healed = time.Now()
	fi.note = fmt.Sprintf("SIGTERM of etcd: %s; down a lease duration, started again on its data: healthy %v after the SIGTERM",
		describeStop("etcd", stopped), fi.healed.Sub(fi.injected).Round(time.Millisecond))
	return fi
}

// describeStop says how a process the harness stopped (SIGTERM, SIGKILL
// after 10 s) went, from how long the stop took.
func describeStop(id string, d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%s killed after the 10 s grace", id)
	}
	return fmt.Sprintf("%s exited %v after SIGTERM", id, d.Round(time.Millisecond))
}

// stopReplica stops a replica as Kubernetes does: SIGTERM, SIGKILL after
// 10 s (the harness's grace). It returns how long it took.
func stopReplica(e *env, id string) time.Duration {
	r := e.running()[id]
	start := time.Now()
	r.Stop()
	e.forget(id)
	return time.Since(start)
}

// scaleDownUp: a graceful scale from 3 replicas to 1 and back under load:
// SIGTERM of the leader and one follower at once (each hands its shards
// over as it stops), until the one left runs every shard, then both
// started again under their identities.
func scaleDownUp(ctx context.Context, t *testing.T, e *env, l *load) faultInfo {
	leader, err := e.leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victims := []string{leader}
	for _, id := range sortedKeys(e.running()) {
		if id != leader && len(victims) < 2 {
			victims = append(victims, id)
		}
	}
	if len(victims) != 2 {
		t.Fatalf("the leader %q and one other replica: %v running", leader, sortedKeys(e.running()))
	}
	var kept string
	for _, id := range sortedKeys(e.running()) {
		if !slices.Contains(victims, id) {
			kept = id
		}
	}
	var shards []string
	for _, id := range victims {
		shards = append(shards, fmt.Sprintf("%s %v", id, ownedBy(a, id)))
	}
	fi := faultInfo{injected: time.Now()}
	took := make([]time.Duration, len(victims))
	var wg sync.WaitGroup
	for i, id := range victims {
		wg.Add(1)
		go func() { defer wg.Done(); took[i] = stopReplica(e, id) }()
	}
	wg.Wait()
	one := e.waitWhole(ctx, "one replica running every shard", 3*time.Minute)
	for _, id := range victims {
		e.startReplica(id)
	}
	fi.healed = time.Now()
	var stops []string
	for i, id := range victims {
		stops = append(stops, describeStop(id, took[i]))
	}
	fi.note = fmt.Sprintf("SIGTERM of the leader and a follower at once (%s); %s; %s alone whole %v after the SIGTERM; both started again",
		strings.Join(shards, ", "), strings.Join(stops, ", "), kept, one.Sub(fi.injected).Round(time.Millisecond))
	return fi
}

// rollingRestart: each replica in turn, in the order a StatefulSet rolls
// (the highest ordinal first), is stopped with SIGTERM, the other two run
// every shard, and it is started again under its identity, until the
// three run every shard; then the next.
func rollingRestart(ctx context.Context, t *testing.T, e *env, l *load) faultInfo {
	leader, err := e.leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := sortedKeys(e.running())
	slices.Reverse(ids)
	fi := faultInfo{injected: time.Now()}
	var steps []string
	for _, id := range ids {
		a, err := e.assignment(ctx)
		if err != nil {
			t.Fatal(err)
		}
		owned := ownedBy(a, id)
		start := time.Now()
		d := stopReplica(e, id)
		two := e.waitWhole(ctx, "two replicas running every shard while "+id+" restarts", 3*time.Minute)
		e.startReplica(id)
		three := e.waitWhole(ctx, "three replicas running every shard after "+id+" restarted", 3*time.Minute)
		role := ""
		if id == leader {
			role = ", the leader"
		}
		steps = append(steps, fmt.Sprintf("%s (shards %v%s): %s, the others whole %v after the SIGTERM, all three %v",
			id, owned, role, describeStop(id, d), two.Sub(start).Round(time.Millisecond), three.Sub(start).Round(time.Millisecond)))
	}
	fi.healed = time.Now()
	fi.note = "SIGTERM and restart of each replica in turn: " + strings.Join(steps, "; ")
	return fi
}
