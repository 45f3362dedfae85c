package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/shard"
)

// fault injects one fault into a running, loaded cluster, keeps it for
// its deliberate duration, heals it (when the case heals it), and says
// what it did.
type fault func(ctx context.Context, t *testing.T, e *env, l *load) faultInfo

type faultInfo struct {
	// injected is when the fault began; healed when the case undid it
	// (equal to injected for a fault that is not undone).
	injected, healed time.Time
	note             string
	// extra, when set, waits for a check the fault runs on its own and
	// returns what it found, and a note for the report.
	extra func() (violations, string)
}

// caseResult is one row of the report.
type caseResult struct {
	name string
	// recovered is how long after the fault the cluster was whole again
	// (env.whole).
	recovered time.Duration
	// outage is the longest shard stall from the fault until quiescence;
	// baseline the longest before the fault, under the same load.
	outage, baseline stall
	delays           delayStats
	// caught is the work pending when the fault was healed and how long
	// it took after the heal; took is the whole case.
	caught           catchUp
	took             time.Duration
	created, deleted int
	// sampled is invariant (a) during the load: samples, failed reads,
	// the largest count, and examples.
	samples, sampleErrs, sampledMax int
	sampledExamples                 []string
	final                           []violations
	extra                           *violations
	quiet                           time.Duration
	// races are the data races the replicas' race detector reported.
	races int
	note  string
	// started is false for a case -run left out; complete is false when
	// the case stopped before its checks.
	started, complete bool
}

func TestFaults(t *testing.T) {
	requireFaults(t)
	bin := binary(t)
	cases := []struct {
		name  string
		fault fault
		env   envConfig
	}{
		{name: "kill-follower", fault: killFollower},
		{name: "kill-leader", fault: killLeader},
		{name: "split-brain", fault: splitBrain(false), env: envConfig{nbProxies: true}},
		{name: "split-brain-leader", fault: splitBrain(true), env: envConfig{nbProxies: true}},
		{name: "nb-restart", fault: restartNorthbound},
		{name: "nb-raft-leader-kill", fault: killNBRaftLeader, env: envConfig{nbCluster: true}},
		{name: "nb-unreachable", fault: northboundAway},
		{name: "apiserver-restart", fault: restartAPIServer},
		{name: "etcd-restart", fault: restartEtcd},
		{name: "watch-gap", fault: watchGap, env: envConfig{watchGap: true}},
		{name: "scale-down-up", fault: scaleDownUp},
		{name: "rolling-restart", fault: rollingRestart},
	}
	var results []caseResult
	for _, c := range cases {
		r := &caseResult{name: c.name}
		t.Run(c.name, func(t *testing.T) { runCase(t, bin, r, c.fault, c.env) })
		if r.started {
			results = append(results, *r)
		}
	}
	writeReport(t, results)
}

// runCase starts a cluster of three replicas, runs the load, injects the
// fault a third of the way into it, and checks the invariants once the
// cluster is quiet again.
func runCase(t *testing.T, bin string, r *caseResult, f fault, ec envConfig) {
	name := r.name
	r.started = true
	caseStart := time.Now()
	defer func() { r.took = time.Since(caseStart) }()
	e := newEnv(t, bin, ec)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	for i := range 3 {
		id := fmt.Sprintf("shardnet-%d", i)
		e.startReplica(id)
		if id == e.gated {
			e.waitLeader(ctx, id, time.Minute)
		}
	}
	e.waitWhole(ctx, "three replicas running every shard", 3*time.Minute)
	rec := startRecorder(t, e)
	cfg := defaultLoad(t)
	l := newLoad(e, cfg, rec)

	loadStart := time.Now()
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		l.run(ctx)
	}()
	sctx, stopSampler := context.WithCancel(ctx)
	s := &sampler{}
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		s.run(sctx, e, 2*time.Second)
	}()

	// The fault comes a third of the way into the load.
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(cfg.duration / 3):
	}
	fi := f(ctx, t, e, l)
	r.note = fi.note
	recoveredAt := e.waitWhole(ctx, "the cluster whole after the fault", 3*time.Minute)
	t.Logf("%s: fault at +%v, healed %v later, cluster whole %v after the fault (%s)", name,
		fi.injected.Sub(loadStart).Round(time.Millisecond), fi.healed.Sub(fi.injected).Round(time.Millisecond),
		recoveredAt.Sub(fi.injected).Round(time.Millisecond), fi.note)

	// The load ends by itself (bounded in count and time); the sampler
	// with it.
	<-loadDone
	stopSampler()
	<-samplerDone
	t.Logf("%s: load done after %v: %d creates, %d deletes, %d failed calls %v", name,
		time.Since(loadStart).Round(time.Millisecond), l.creates.Load(), l.deletes.Load(), l.failures.Load(), l.errs)

	r.recovered = recoveredAt.Sub(fi.injected)
	if fi.extra != nil {
		v, note := fi.extra()
		r.extra = &v
		r.note += "; " + note
		t.Logf("%s: %s; %s", name, v, note)
		if v.count > 0 {
			t.Errorf("%s: %s", name, v)
		}
	}
	final, quietAt := waitQuiet(ctx, t, e, 3*time.Minute)
	recs := rec.snapshot()
	r.final, r.quiet = final, quietAt.Sub(fi.injected)
	r.outage = longestStall(recs, fi.injected, quietAt)
	r.baseline = longestStall(recs, loadStart.Add(5*time.Second), fi.injected)
	r.delays = delays(recs, fi.injected, recoveredAt)
	r.caught = catchUpAfter(recs, fi.healed)
	for _, p := range recs {
		if !p.created.Before(fi.injected) && !p.created.After(recoveredAt) {
			r.created++
		}
		if !p.deleted.IsZero() && !p.deleted.Before(fi.injected) && !p.deleted.After(recoveredAt) {
			r.deleted++
		}
	}
	r.samples, r.sampleErrs, r.sampledMax, r.sampledExamples = s.result()

	t.Logf("%s: outage (longest shard stall) %v in shard %d from +%v after the fault (before the fault: %v in shard %d); pods created during the fault: %d, allocated after p50 %v, max %v (%d deleted first, %d never allocated)",
		name, r.outage.length.Round(time.Millisecond), r.outage.shard, r.outage.start.Sub(fi.injected).Round(time.Millisecond),
		r.baseline.length.Round(time.Millisecond), r.baseline.shard, r.created,
		r.delays.p50.Round(time.Millisecond), r.delays.max.Round(time.Millisecond), r.delays.deletedFirst, r.delays.never)
	if c := r.caught; c.pending > 0 {
		t.Logf("%s: %d pods waiting when the fault was healed (by shard %v), allocated the first %v, p50 %v and the last %v after the heal: %s; %s", name, c.pending,
			c.byShard, c.first.Round(time.Millisecond), c.p50.Round(time.Millisecond), c.last.Round(time.Millisecond), describePod(c.lastPod), keyTrail(e, c.lastPod.key()))
	}
	for _, p := range r.outage.waiting[:min(len(r.outage.waiting), 5)] {
		t.Logf("%s: waiting in the longest stall: %s, created +%v after the fault; %s", name, describePod(p),
			p.created.Sub(fi.injected).Round(time.Millisecond), keyTrail(e, p.key()))
	}
	if p := r.delays.slowest; p.name != "" {
		t.Logf("%s: slowest pod created during the fault: %s, created +%v after the fault, allocated %v later; %s", name, describePod(p),
			p.created.Sub(fi.injected).Round(time.Millisecond), p.allocated.Sub(p.created).Round(time.Millisecond), keyTrail(e, p.key()))
	}
	t.Logf("%s: invariants after quiescence:\n%s", name, describe(final))
	if l := e.leaseLosses(); len(l) > 0 {
		t.Logf("%s: replicas that gave up their shards for a member Lease not renewed in time (replica logs): %v", name, l)
		by := map[string]int{}
		for _, x := range l {
			id, _, _ := strings.Cut(x, " ")
			by[id]++
		}
		var parts []string
		for _, id := range sortedKeys(by) {
			parts = append(parts, fmt.Sprintf("%s %d×", id, by[id]))
		}
		r.note += fmt.Sprintf("; all shards given up for a member Lease not renewed in time: %s", strings.Join(parts, ", "))
	}
	t.Logf("%s: replica logs kept in %s", name, e.keepLogs())
	if r.sampledMax > 0 {
		t.Errorf("%s: invariant (a) violated during the load (largest count %d in %d samples):\n    %s", name, r.sampledMax, r.samples,
			strings.Join(r.sampledExamples[:min(len(r.sampledExamples), 10)], "\n    "))
	}
	for _, v := range final {
		if v.count > 0 {
			t.Errorf("%s: %s", name, v)
		}
	}
	if r.delays.never > 0 {
		t.Errorf("%s: %d pods created during the fault were never allocated", name, r.delays.never)
	}
	r.races = e.checkProcesses()
	r.complete = true
}

// waitQuiet checks every invariant every 2 s until none is violated or the
// timeout passes, and returns the last result and when it was read.
func waitQuiet(ctx context.Context, t *testing.T, e *env, timeout time.Duration) ([]violations, time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var last []violations
	var at time.Time
	var err error
	for range int(timeout/(2*time.Second)) + 1 {
		var s *snapshot
		if s, err = readSnapshot(ctx, e.kube, e.view, false); err == nil {
			last, at = checkAll(s), s.at
			if total(last) == 0 {
				t.Logf("quiet after %v", time.Since(start).Round(time.Millisecond))
				return last, at
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
		if ctx.Err() != nil {
			break
		}
	}
	if last == nil {
		t.Fatalf("no snapshot read within %v: %v", timeout, err)
	}
	t.Logf("not quiet after %v", time.Since(start).Round(time.Millisecond))
	return last, at
}

// killFollower: SIGKILL of a replica that is not the leader, restarted
// under its identity a few seconds later.
func killFollower(ctx context.Context, t *testing.T, e *env, l *load) faultInfo {
	leader, err := e.leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var victim string
	for _, id := range sortedKeys(e.running()) {
		if id != leader {
			victim = id
			break
		}
	}
	shards := ownedBy(a, victim)
	r := e.running()[victim]
	fi := faultInfo{injected: time.Now()}
	r.Kill()
	e.forget(victim)
	// Down for 3 s: less than the lease, so the leader may see the new
	// process before the old one expires.
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(3 * time.Second):
	}
	e.startReplica(victim)
	fi.healed = time.Now()
	fi.note = fmt.Sprintf("SIGKILL of %s (shards %v, not the leader), restarted 3 s later", victim, shards)
	return fi
}

// killLeader: SIGKILL of the leader; it does not come back.
func killLeader(ctx context.Context, t *testing.T, e *env, l *load) faultInfo {
	leader, err := e.leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := e.running()[leader]
	if !ok {
		t.Fatalf("the leader %q is not a running replica", leader)
	}
	shards := ownedBy(a, leader)
	fi := faultInfo{injected: time.Now()}
	r.Kill()
	e.forget(leader)
	fi.healed = fi.injected
	var next string
	waitFor(t, ctx, "a new leader", 2*time.Minute, 100*time.Millisecond, func() error {
		l, err := e.leader(ctx)
		if err != nil {
			return err
		}
		if _, ok := e.running()[l]; !ok {
			return fmt.Errorf("the election Lease is held by %q", l)
		}
		next = l
		return nil
	})
	fi.note = fmt.Sprintf("SIGKILL of the leader %s (shards %v), not restarted; %s leads %v later", leader, shards, next,
		time.Since(fi.injected).Round(time.Millisecond))
	return fi
}

// splitBrain: a replica that owns shards — a follower, or with leader the
// leader — is stopped with SIGSTOP right after work for its shards
// (creates, and deletes of allocated pods) was sent. It stays stopped for
// two lease durations, until its shards run elsewhere, and until their new
// owners have released every pod deleted before and during the stop; its
// shards get more work meanwhile. A stopped leader stays stopped also
// until another replica leads and has recorded its term in the
// Northbound. Then it is resumed with SIGCONT, with all that work still
// queued in its watches. Whatever it then writes from what it knew before
// must not land: the Northbound fence refuses port writes of its old
// shard epochs (and, for a leader, switch and port group writes of its old
// term), its shards having moved it starts afresh (new caches, a new
// member incarnation; shardnet_replica_restarts_total counts it), and
// neither the watch of the 10 s after the resume (w) nor the checker may
// find a duplicate or a stray row. For a leader, w also watches every
// Subnet write in those 10 s: one whose status fields the resumed process
// manages (metadata.managedFields names the writer: env.startReplica runs
// each replica under its identity's name) is a status write of a deposed
// leader.
func splitBrain(leader bool) fault {
	return func(ctx context.Context, t *testing.T, e *env, l *load) faultInfo {
		return splitBrainOf(ctx, t, e, l, leader)
	}
}

func splitBrainOf(ctx context.Context, t *testing.T, e *env, l *load, stopLeader bool) faultInfo {
	leader, err := e.leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var victim string
	var shards []int
	for _, id := range sortedKeys(e.running()) {
		if s := ownedBy(a, id); (id == leader) == stopLeader && len(s) > 0 {
			victim, shards = id, s
			break
		}
	}
	if victim == "" {
		t.Fatalf("no replica to stop (the leader: %v) owns shards: %s", stopLeader, a)
	}
	r := e.running()[victim]
	epochs := map[int]uint64{}
	for _, s := range shards {
		epochs[s] = a.Shards[s].Epoch
	}
	var term uint64
	if stopLeader {
		// The leader writes the Subnet counters under load: its own
		// status writes must be seen under its name, or the watch of
		// the writes after the resume would see nothing.
		waitFor(t, ctx, "a Subnet status write attributed to the leader "+victim, time.Minute, 200*time.Millisecond, func() error {
			subs, err := e.kube.Shardnet.KubeovnV1().Subnets().List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, s := range subs.Items {
				if _, ok := statusWriteBy(s.ManagedFields, victim, time.Time{}); ok {
					return nil
				}
			}
			return fmt.Errorf("no Subnet's status is managed by %q", victim)
		})
		if term, err = recordedTerm(ctx, e); err != nil {
			t.Fatal(err)
		}
	}

	// What the replica sends the Northbound from now on is held in its
	// proxy until its shards have moved, then let through: transactions
	// that reach the server only after another replica owns the shard,
	// which only the Northbound fence can refuse.
	px := e.nbProxy[victim]
	if px != nil {
		px.hold()
	}
	// Work queued for its shards: creates and deletes sent just before
	// the stop.
	var wg sync.WaitGroup
	var before []*podRec
	var deletedBefore []podRec
	wg.Add(2)
	go func() { defer wg.Done(); before = burst(ctx, t, l, "sb-before", shards, 20) }()
	go func() { defer wg.Done(); deletedBefore = deleteAllocated(ctx, l, shards, 25) }()
	wg.Wait()
	if px != nil {
		hctx, cancel := context.WithTimeout(ctx, heldWait)
		err := px.waitHeld(hctx, `"Logical_Switch_Port"`, `"insert"`)
		cancel()
		if err != nil {
			t.Fatalf("no port insert of %s held before the stop: %v", victim, err)
		}
	}
	restartsBefore, err := r.Metric("shardnet_replica_restarts_total")
	if err != nil {
		t.Fatal(err)
	}
	fi := faultInfo{injected: time.Now()}
	pid := stopProcess(t, r)

	// Stopped for two lease durations (the fault), and until the table
	// has given every one of its shards to another live replica (and,
	// for a leader, until another leads and recorded its term).
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(2 * leaseDuration):
	}
	waitFor(t, ctx, "the stopped replica's shards running elsewhere", 2*time.Minute, 100*time.Millisecond, func() error {
		a, err := e.assignment(ctx)
		if err != nil {
			return err
		}
		for _, s := range shards {
			en := a.Shards[s]
			if en.Owner == victim || !en.Active() || en.Epoch <= epochs[s] {
				return fmt.Errorf("shard %d: %+v", s, en)
			}
		}
		return nil
	})
	moved := time.Since(fi.injected)
	var next string
	var nextTerm uint64
	if stopLeader {
		waitFor(t, ctx, "another replica leading, its term recorded in the Northbound", 2*time.Minute, 100*time.Millisecond, func() error {
			l, err := e.leader(ctx)
			if err != nil {
				return err
			}
			if _, ok := e.running()[l]; !ok || l == victim {
				return fmt.Errorf("the election Lease is held by %q", l)
			}
			if nextTerm, err = recordedTerm(ctx, e); err != nil {
				return err
			}
			if nextTerm <= term {
				return fmt.Errorf("the Northbound records leader term %d, the stopped leader's", nextTerm)
			}
			next = l
			return nil
		})
	}

	// More work for those shards while it is stopped: the new owners do
	// it; the stopped replica's watches hold the events for when it
	// wakes.
	wg.Add(2)
	var during []*podRec
	var deletedDuring []podRec
	go func() { defer wg.Done(); during = burst(ctx, t, l, "sb-during", shards, 20) }()
	go func() { defer wg.Done(); deletedDuring = deleteAllocated(ctx, l, shards, 25) }()
	wg.Wait()
	// The pods of the burst before the stop go too: the port inserts held
	// in the proxy are theirs.
	for _, p := range before {
		if p.uid != "" {
			l.deletePod(ctx, p)
			deletedDuring = append(deletedDuring, *p)
		}
	}

	// The pods deleted before the stop and while it lasted are gone for
	// good. The stop lasts until the new owners have released them all
	// (those deleted before the stop through their collector: the delete
	// events went to the stopped replica); from then on only a stale
	// writer could give one of them a port or a claim. What exists at the
	// resume is left out.
	gone := append(slices.Clone(deletedBefore), deletedDuring...)
	waitFor(t, ctx, "the new owners releasing every pod deleted before and during the stop", 2*time.Minute, 200*time.Millisecond, func() error {
		return heldByGone(ctx, e, gone)
	})
	released := time.Since(fi.injected)
	// Every other pod the load deleted 5 s or more before the resume, and
	// whose name was not created again, is as gone.
	gone = append(gone, deletedLongAgo(l.rec, time.Now().Add(-5*time.Second), gone)...)
	existing := map[string]bool{}
	var rows []nbdb.LogicalSwitchPort
	if err := e.view.List(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	for _, p := range rows {
		existing[p.UUID] = true
	}
	claims, err := e.kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		existing[string(c.UID)] = true
	}
	// The Subnets as they are at the resume: their writes from then on
	// are watched.
	subs, err := e.kube.Shardnet.KubeovnV1().Subnets().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	heldNote := ""
	if px != nil {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		sent, refused, accepted, err := px.release(rctx)
		cancel()
		if err != nil {
			t.Errorf("sending on what %s sent the Northbound before the stop: %v", victim, err)
		}
		heldNote = fmt.Sprintf("; %d transactions it sent the Northbound before the stop held until then and sent on, %d of them refused", sent, refused)
		if len(accepted) > 0 {
			heldNote += fmt.Sprintf(", the others: %s", strings.Join(accepted, "; "))
		}
	}
	logFrom := fileSize(r.Log)
	contProcess(t, pid)
	fi.healed = time.Now()
	found := make(chan violations, 1)
	go func() { found <- watchWake(ctx, e, gone, existing, 10*time.Second) }()
	var statusWrites chan []string
	if stopLeader {
		statusWrites = make(chan []string, 1)
		go func() {
			statusWrites <- watchStatusWrites(ctx, e, subs.ResourceVersion, victim, fi.healed, 10*time.Second)
		}()
	}
	fi.extra = func() (violations, string) {
		v := <-found
		if statusWrites != nil {
			for _, w := range <-statusWrites {
				v.add("%s", w)
			}
		}
		// Its shards moved: the resumed process must have started
		// afresh, not rejoined with the caches it had. The window of w
		// has passed; the restart is polled a while longer.
		var restarts float64
		var rerr error
		for i := 0; i < 300 && ctx.Err() == nil; i++ {
			if restarts, rerr = r.Metric("shardnet_replica_restarts_total"); rerr == nil && restarts > restartsBefore {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if restarts <= restartsBefore {
			v.add("%s did not start afresh after SIGCONT although its shards moved (shardnet_replica_restarts_total %v, %v before; %v)",
				victim, restarts, restartsBefore, rerr)
		}
		c := scanLog(r.Log, logFrom)
		if c.shardStale > 0 {
			t.Logf("split brain: the first port write refused by the fence in %s's log after SIGCONT: %s", victim, c.firstShardStale)
		}
		if c.termStale > 0 {
			t.Logf("split brain: the first leader write refused by the fence in %s's log after SIGCONT: %s", victim, c.firstTermStale)
		}
		if c.statusRefused > 0 {
			t.Logf("split brain: the first Subnet status write refused in %s's log after SIGCONT: %s", victim, c.firstStatusRefused)
		}
		note := fmt.Sprintf("%s's log after SIGCONT: %d port writes refused by the fence (stale shard epoch)", victim, c.shardStale)
		if stopLeader {
			note += fmt.Sprintf(", %d leader writes refused by the fence (stale term), %d Subnet status writes refused (not the leader)", c.termStale, c.statusRefused)
		}
		note += fmt.Sprintf("; started afresh %v times", restarts-restartsBefore)
		return v, note
	}
	role := "not the leader"
	if stopLeader {
		role = fmt.Sprintf("the leader, term %d; %s leads with term %d recorded %v after the stop", term, next, nextTerm, moved.Round(time.Millisecond))
	}
	fi.note = fmt.Sprintf("SIGSTOP of %s (%s; shards %v) right after %d creates and %d deletes in its shards; shards moved %v after the stop; "+
		"%d creates and %d deletes in them while stopped; every deleted pod released %v after the stop; SIGCONT %v after the stop",
		victim, role, shards, len(before), len(deletedBefore), moved.Round(time.Millisecond),
		len(during), len(deletedDuring), released.Round(time.Millisecond), fi.healed.Sub(fi.injected).Round(time.Millisecond)) + heldNote
	return fi
}

// recordedTerm is the leadership term recorded in the Northbound
// (ovn.EpochKey(ovn.LeaderShard) in NB_Global), 0 when none is.
func recordedTerm(ctx context.Context, e *env) (uint64, error) {
	var g []nbdb.NBGlobal
	if err := e.view.List(ctx, &g); err != nil {
		return 0, err
	}
	if len(g) != 1 {
		return 0, fmt.Errorf("%d NB_Global rows", len(g))
	}
	v, ok := g[0].ExternalIDs[ovn.EpochKey(ovn.LeaderShard)]
	if !ok {
		return 0, nil
	}
	return strconv.ParseUint(v, 10, 64)
}

// statusWriteBy finds, in an object's managedFields, the status fields
// manager last changed at or after since (managedFields times are whole
// seconds, so since is rounded down to one).
func statusWriteBy(fields []metav1.ManagedFieldsEntry, manager string, since time.Time) (time.Time, bool) {
	for _, f := range fields {
		if f.Manager == manager && f.Subresource == "status" && f.Time != nil && !f.Time.Time.Before(since.Truncate(time.Second)) {
			return f.Time.Time, true
		}
	}
	return time.Time{}, false
}

// watchStatusWrites watches every Subnet write from resourceVersion on,
// for d, and returns each one that left status fields managed by manager
// at or after since: a status write of that replica.
func watchStatusWrites(ctx context.Context, e *env, resourceVersion, manager string, since time.Time, d time.Duration) []string {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var out []string
	seen := map[string]bool{}
	rv := resourceVersion
	// A watch the server ends early is opened again from the last event.
	for range 100 {
		w, err := e.kube.Shardnet.KubeovnV1().Subnets().Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() == nil {
				out = append(out, fmt.Sprintf("watching the Subnets after SIGCONT: %v", err))
			}
			return out
		}
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*kubeovnv1.Subnet)
			if !ok {
				continue
			}
			rv = s.ResourceVersion
			if at, ok := statusWriteBy(s.ManagedFields, manager, since); ok && !seen[s.Name+" "+at.String()] {
				seen[s.Name+" "+at.String()] = true
				holder, _ := e.leader(ctx)
				out = append(out, fmt.Sprintf("+%v: Subnet %s status written by %s at %s (resourceVersion %s; %.0f using, %.0f available; the election Lease held by %q)",
					time.Since(since).Round(time.Millisecond), s.Name, manager, at.Format(time.RFC3339), s.ResourceVersion,
					s.Status.V4UsingIPs, s.Status.V4AvailableIPs, holder))
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			break
		}
	}
	return out
}

// deletedLongAgo returns the recorded pods whose delete was sent before
// cutoff and whose name is not created again (no later incarnation, none
// planned), leaving out those of except.
func deletedLongAgo(rec *recorder, cutoff time.Time, except []podRec) []podRec {
	skip := map[types.UID]bool{}
	for _, p := range except {
		skip[p.uid] = true
	}
	recs := rec.snapshot()
	latest := map[string]int{}
	for _, p := range recs {
		latest[p.key()] = max(latest[p.key()], p.gen)
	}
	var out []podRec
	for _, p := range recs {
		if !p.deleted.IsZero() && p.deleted.Before(cutoff) && !p.recreate && p.gen == latest[p.key()] && !skip[p.uid] {
			out = append(out, p)
		}
	}
	return out
}

// heldByGone reports a port or a claim of one of the gone pods.
func heldByGone(ctx context.Context, e *env, gone []podRec) error {
	keys, uids := map[string]bool{}, map[string]bool{}
	for _, p := range gone {
		keys[p.key()], uids[string(p.uid)] = true, true
	}
	var rows []nbdb.LogicalSwitchPort
	if err := e.view.List(ctx, &rows); err != nil {
		return err
	}
	for _, p := range rows {
		if k := p.ExternalIDs["pod"]; keys[k] {
			return fmt.Errorf("port %s of %s is still there", p.Name, k)
		}
	}
	claims, err := e.kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, c := range claims.Items {
		if uids[c.Spec.Owner.UID] {
			return fmt.Errorf("claim %s of %s/%s is still there", c.Name, c.Spec.Owner.Namespace, c.Spec.Owner.Name)
		}
	}
	return nil
}

// restartNorthbound: SIGKILL of the standalone ovsdb-server, restarted on
// the same database file and port 3 s later.
func restartNorthbound(ctx context.Context, t *testing.T, e *env, l *load) faultInfo {
	fi := faultInfo{injected: time.Now()}
	killNB(t, e.nb)
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(3 * time.Second):
	}
	restartNB(t, e.nb)
	fi.healed = time.Now()
	fi.note = fmt.Sprintf("SIGKILL of ovsdb-server, restarted on the same database %v later", fi.healed.Sub(fi.injected).Round(time.Millisecond))
	return fi
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logCounts are the refused writes a replica log reports: port writes
// refused by the Northbound fence (a stale shard epoch), leader writes
// refused by it (a stale leader term), and Subnet status writes not made
// because the replica no longer leads; with the first line of each.
type logCounts struct {
	shardStale, termStale, statusRefused                int
	firstShardStale, firstTermStale, firstStatusRefused string
}

// scanLog counts the refused writes of a log from offset on.
func scanLog(path string, from int64) logCounts {
	var c logCounts
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < from {
		return c
	}
	count := func(n *int, first *string, line string) {
		if *n == 0 {
			*first = line
		}
		*n++
	}
	for line := range strings.SplitSeq(string(b[from:]), "\n") {
		switch {
		case strings.Contains(line, "Writing subnet status"):
			count(&c.statusRefused, &c.firstStatusRefused, line)
		case strings.Contains(line, "leader term") && strings.Contains(line, "is stale"):
			count(&c.termStale, &c.firstTermStale, line)
		case strings.Contains(line, "is stale"):
			count(&c.shardStale, &c.firstShardStale, line)
		}
	}
	return c
}

// writeReport writes the table to $SHARDNET_FAULTS_REPORT, or to
// shardnet-faults-report.md in the system's temp dir, and logs it.
func writeReport(t *testing.T, results []caseResult) {
	var b strings.Builder
	b.WriteString("| case | cluster whole after | outage (longest shard stall; before the fault) | allocation delay p50 / max | waiting at the heal: pods, allocated after first / p50 / last | created / deleted during the fault | violations | case took | fault |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		if !r.complete {
			fmt.Fprintf(&b, "| %s | did not complete: see the test log | | | | | | %v | %s |\n", r.name, r.took.Round(time.Second), r.note)
			continue
		}
		vs := []string{fmt.Sprintf("a(load) %d in %d samples", r.sampledMax, r.samples)}
		if r.extra != nil {
			vs = append(vs, fmt.Sprintf("%s %d", r.extra.id, r.extra.count))
		}
		for _, v := range r.final {
			vs = append(vs, fmt.Sprintf("%s %d", v.id, v.count))
		}
		vs = append(vs, fmt.Sprintf("races %d", r.races))
		delay := fmt.Sprintf("%v / %v", r.delays.p50.Round(10*time.Millisecond), r.delays.max.Round(10*time.Millisecond))
		if r.delays.never > 0 {
			delay += fmt.Sprintf(" (%d never)", r.delays.never)
		}
		caught := fmt.Sprintf("%d, %v / %v / %v", r.caught.pending, r.caught.first.Round(10*time.Millisecond),
			r.caught.p50.Round(10*time.Millisecond), r.caught.last.Round(10*time.Millisecond))
		fmt.Fprintf(&b, "| %s | %v | %v (shard %d; %v) | %s | %s | %d / %d | %s | %v | %s |\n",
			r.name, r.recovered.Round(10*time.Millisecond), r.outage.length.Round(10*time.Millisecond), r.outage.shard,
			r.baseline.length.Round(10*time.Millisecond), delay, caught, r.created, r.deleted, strings.Join(vs, " · "), r.took.Round(time.Second), r.note)
	}
	b.WriteString(`
- cluster whole: every shard active and run by a live replica's current process, every replica ready, a live leader (assignment ConfigMap, member and election Leases, /readyz).
- outage: the longest time, from the fault until quiescence, that some shard had a pod waiting for its addresses without allocating any; in brackets the same before the fault, under the same load.
- allocation delay: from the create to the first sight of ` + "`allocated=true`" + `, for the pods created between the fault and the cluster whole again.
- waiting at the heal: the pods created before the fault was healed (the component back; for a kill without restart, the kill) and not yet allocated then, and how long after the heal they were allocated: the first (how soon work resumed), p50 and the last (which includes working off the backlog at the machine's rate).
- a(load): addresses held twice, sampled every 2 s during the load; a, b, c, d: the invariants once quiet (a: an address on two live pods or two ports; b: a live pod not allocated and routed with exactly one port, claim and IP record carrying its annotated address; c: a port, claim or IP record of a pod that is gone; d: Subnet counters that differ from the claims); w (split-brain cases): new ports or claims for pods deleted before SIGCONT, addresses held twice, or (a stopped leader) Subnet status fields written by the resumed process, in the 10 s after SIGCONT, and a resumed process that did not start afresh; u (nb-unreachable): a replica that stayed ready while the Northbound was away, or a shard that moved from the kill until the cluster was whole; races: data races the replicas reported.
`)
	path := os.Getenv("SHARDNET_FAULTS_REPORT")
	if path == "" {
		path = filepath.Join(os.TempDir(), "shardnet-faults-report.md")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Errorf("report: %v", err)
	} else if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Errorf("report: %v", err)
	}
	t.Logf("fault report (%s):\n%s", path, b.String())
}

// keyTrail summarises what the replicas' logs say about a pod key: how
// many lines name it in each replica's log, and the last of them.
func keyTrail(e *env, key string) string {
	e.mu.Lock()
	started := slices.Clone(e.started)
	e.mu.Unlock()
	needle := "key=\"" + key + "\""
	var parts []string
	for _, r := range started {
		b, err := os.ReadFile(r.Log)
		if err != nil {
			continue
		}
		n, last := 0, ""
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.Contains(line, needle) {
				n++
				last = line
			}
		}
		if n == 0 {
			continue
		}
		if len(last) > 500 {
			last = last[:500] + "..."
		}
		parts = append(parts, fmt.Sprintf("%s (%s): %d log lines, the last: %s", r.Identity, filepath.Base(r.Log), n, last))
	}
	if len(parts) == 0 {
		return "no replica log names it"
	}
	return strings.Join(parts, "; ")
}

// watchWake watches the Northbound every 100 ms, and the pods and claims
// every second, for d after a stopped replica resumed. A port or a claim
// that was not there at the resume (existing holds their UUIDs and UIDs)
// and belongs to a pod of gone (deleted before the resume, its deletion
// long since handled by the shard's new owner), or two ports, or two live
// pods, with one address, is a write that must not land: a stale write of
// the resumed replica, or a write from a cache that still holds what was
// deleted while it was stopped. Each finding names the shard's owner and
// epoch when it was seen.
func watchWake(ctx context.Context, e *env, gone []podRec, existing map[string]bool, d time.Duration) violations {
	v := violations{id: "w", title: "rows written after SIGCONT for pods deleted before it, or held twice"}
	start := time.Now()
	goneKey, goneUID := map[string]bool{}, map[string]bool{}
	for _, p := range gone {
		goneKey[p.key()], goneUID[string(p.uid)] = true, true
	}
	// seen keeps each finding once, with the time it was first seen.
	seen := map[string]bool{}
	note := func(ex string) {
		if !seen[ex] {
			seen[ex] = true
			v.add("+%v: %s", time.Since(start).Round(time.Millisecond), ex)
		}
	}
	ownerOf := func(a *shard.Assignment, key string) string {
		if a == nil {
			return "owner unknown"
		}
		s := shard.Of(key, shardCount)
		en := a.Shards[s]
		return fmt.Sprintf("shard %d owned by %s at epoch %d (active %v)", s, en.Owner, en.Epoch, en.Active())
	}
	var lastSlow time.Time
	for i := 0; i < 1000 && time.Since(start) < d && ctx.Err() == nil; i++ {
		a, err := e.assignment(ctx)
		if err != nil {
			a = nil
		}
		var rows []nbdb.LogicalSwitchPort
		if err := e.view.List(ctx, &rows); err == nil {
			for _, p := range rows {
				if k := p.ExternalIDs["pod"]; goneKey[k] && !existing[p.UUID] {
					note(fmt.Sprintf("new port %s for %s, deleted before the resume, carries %q; %s", p.Name, k, p.Addresses, ownerOf(a, k)))
				}
			}
			s := &snapshot{at: time.Now(), ports: rows}
			if time.Since(lastSlow) >= time.Second {
				lastSlow = time.Now()
				if pods, err := e.kube.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{}); err == nil {
					s.pods = pods.Items
				}
				if claims, err := e.kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{}); err == nil {
					for _, c := range claims.Items {
						o := c.Spec.Owner
						if goneUID[o.UID] && !existing[string(c.UID)] {
							k := o.Namespace + "/" + o.Name
							note(fmt.Sprintf("new claim %s of %s (%s), deleted before the resume; %s", c.Name, k, o.UID, ownerOf(a, k)))
						}
					}
				}
			}
			for _, ex := range checkA(s).examples {
				note(ex)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	// In the order seen, more of them than other reports keep: each is a
	// piece of evidence.
	v.examples = v.examples[:min(len(v.examples), 40)]
	return v
}
