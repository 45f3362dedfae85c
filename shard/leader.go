package shard

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// electLoop campaigns for the leader Lease until ctx ends, and releases it
// then (ReleaseOnCancel), so that a successor does not wait a lease duration.
func (c *Coordinator) electLoop(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for ctx.Err() == nil {
		lock := &electionLock{
			Interface: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Name: c.leaderName, Namespace: c.cfg.Namespace},
				Client:     c.cfg.Client.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: c.cfg.Identity},
			},
			clock:     c.clock,
			renewedAt: &c.electedAt,
		}
		leaseDuration, renewDeadline := electionTimings(c.cfg)
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   leaseDuration,
			RenewDeadline:   renewDeadline,
			RetryPeriod:     c.cfg.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            c.leaderName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					// The term is the Lease's acquire time in microseconds:
					// client-go sets it when an elector that did not hold
					// the Lease takes it and keeps it while renewing, and a
					// successor takes it at least a lease duration after
					// the last renewal, so a later leader has a later term
					// as long as clocks agree within a lease duration; unlike
					// the transition count it does not start again when the
					// Lease is re-created.
					// (Read through the client: the elector's lock is not
					// safe to share.) Until it is known, LeaderTerm fails
					// and the leader's own writes wait; the assignment,
					// written by compare-and-swap, does not.
					c.term.Store(0)
					c.ledSince.Store(c.clock.Now().UnixNano())
					c.leading.Store(true)
					c.wake()
					if f := c.cfg.OnLeading; f != nil {
						f(lctx)
					}
					for lctx.Err() == nil {
						l, err := c.cfg.Client.CoordinationV1().Leases(c.cfg.Namespace).Get(lctx, c.leaderName, metav1.GetOptions{})
						if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == c.cfg.Identity && l.Spec.AcquireTime != nil {
							c.term.Store(uint64(l.Spec.AcquireTime.UnixMicro()))
							logger.Info("Leading shard assignment", "term", c.term.Load())
							break
						}
						if err == nil {
							err = fmt.Errorf("the leader Lease names %v, acquired %v", l.Spec.HolderIdentity, l.Spec.AcquireTime)
						}
						logger.Error(err, "Reading the leadership term from the leader Lease; retrying", "after", c.cfg.RetryPeriod)
						select {
						case <-lctx.Done():
						case <-c.clock.After(c.cfg.RetryPeriod):
						}
					}
					<-lctx.Done()
					c.leading.Store(false)
					c.term.Store(0)
					c.wake()
				},
				OnStoppedLeading: func() {
					c.leading.Store(false)
					c.wake()
				},
			},
		})
		if err != nil {
			// The config was validated against the same rules.
			logger.Error(err, "Building leader elector")
			return
		}
		c.elector.Store(le)
		le.Run(ctx)
	}
}

// electionRenewDeadline is the renew deadline the elector runs with.
func electionRenewDeadline(cfg Config) time.Duration {
	_, rd := electionTimings(cfg)
	return rd
}

// electionTimings shortens the election lease by one RetryPeriod against the
// member lease. A successor polls the election lease only every RetryPeriod,
// so with equal leases a dead leader's shards would wait for the election
// about a RetryPeriod past the dead member's expiry; this way the successor
// is in place by then. The table stays safe with any number of writers (each
// write is a compare-and-swap on the previous table and keeps the handoff
// rules), so the shorter lease costs nothing but a possibly earlier
// takeover. When the shorter timings would break client-go's rules the
// member timings are used as they are.
func electionTimings(cfg Config) (leaseDuration, renewDeadline time.Duration) {
	ld, rd := cfg.LeaseDuration-cfg.RetryPeriod, cfg.RenewDeadline-cfg.RetryPeriod
	if ld > rd && float64(rd) > leaderelection.JitterFactor*float64(cfg.RetryPeriod) {
		return ld, rd
	}
	return cfg.LeaseDuration, cfg.RenewDeadline
}

// lead runs one planner step as leader and writes the table if it changed.
// It returns when the planner wants to run again.
func (c *Coordinator) lead(ctx context.Context) time.Time {
	logger := klog.FromContext(ctx)
	// One reading of the clock for the confirmation and the plan: with a
	// later one the planner could find a member expired that the
	// confirmation, a moment earlier, did not yet suspect, and move its
	// shards away although its Lease is renewed (seen while this
	// replica's watches stalled).
	now := c.clock.Now()
	c.confirmExpiries(ctx, now)
	c.mu.Lock()
	table, rv := c.table, c.tableRV
	members := make([]Member, 0, len(c.observed))
	for name, o := range c.observed {
		members = append(members, Member{
			Name: name, Incarnation: o.report.incarnation, LastSeen: o.lastSeen, Seen: o.report.seen, Held: o.report.held,
			Leaving: o.report.leaving, Deleted: o.deleted,
		})
	}
	c.mu.Unlock()
	slices.SortFunc(members, func(a, b Member) int { return cmpString(a.Name, b.Name) })
	if until, missing := c.settling(table, members, now); len(missing) > 0 {
		logger.V(2).Info("Waiting for the owners the assignment names before assigning", "missing", missing, "until", until)
		return until
	}
	plan, err := c.planner.Step(table, members, now)
	if err != nil {
		logger.Error(err, "Planning shard assignment")
		return time.Time{}
	}
	if !plan.Changed {
		return plan.Wake
	}
	text, err := plan.Next.Marshal()
	if err != nil {
		logger.Error(err, "Encoding shard assignment")
		return time.Time{}
	}
	cms := c.cfg.Client.CoreV1().ConfigMaps(c.cfg.Namespace)
	wctx, cancel := context.WithTimeout(ctx, c.cfg.RetryPeriod)
	defer cancel()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: c.tableName, Namespace: c.cfg.Namespace, ResourceVersion: rv},
		Data:       map[string]string{AssignmentKey: text},
	}
	var got *corev1.ConfigMap
	if rv == "" {
		got, err = cms.Create(wctx, cm, metav1.CreateOptions{})
	} else {
		got, err = cms.Update(wctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		logger.Error(err, "Writing shard assignment; re-reading it", "generation", plan.Next.Generation)
		if err := c.refreshTable(ctx); err != nil {
			logger.Error(err, "Re-reading shard assignment")
		}
		c.wake()
		return plan.Wake
	}
	c.setTable(plan.Next, got.ResourceVersion)
	logger.Info("Wrote shard assignment", "generation", plan.Next.Generation, "moved", len(plan.Moved), "owners", plan.Next.Owners())
	c.wake()
	return plan.Wake
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// settling reports the members the table last saw ready (Members) that
// have no member Lease while this leadership term is younger than
// FirstAssignmentWait, and when that wait ends: a replica that starts
// leading after every replica was restarted finds the others' Leases gone
// (each deleted its own on the way out) until they have loaded their
// caches and registered again, a moment later. Planning then would give
// it every shard and move most of them back once the others register. A
// Lease that exists counts, live or expired: a dead replica's shards are
// never held back. A leader that is itself shutting down does not wait:
// it is given no shard either way, and waiting kept its own shards, and
// its exit, for the whole wait when every replica stopped at once (at
// 50,000 pods, 9.7 s instead of a fraction of a second: the leader left
// first, the last replica to go took over the lead, and waited for the
// two that had just left).
func (c *Coordinator) settling(table *Assignment, members []Member, now time.Time) (time.Time, []string) {
	if c.cfg.FirstAssignmentWait <= 0 || table == nil {
		return time.Time{}, nil
	}
	if c.isLeaving() {
		return time.Time{}, nil
	}
	until := time.Unix(0, c.ledSince.Load()).Add(c.cfg.FirstAssignmentWait)
	if !now.Before(until) {
		return time.Time{}, nil
	}
	present := map[string]bool{}
	for _, m := range members {
		if !m.Deleted {
			present[m.Name] = true
		}
	}
	var missing []string
	for _, name := range table.Members {
		if !present[name] {
			missing = append(missing, name)
		}
	}
	return until, missing
}

// confirmExpiries reads live the Leases of members that look expired, so a
// stalled watch cannot make the leader hand a live member's shards away.
// now is the time the planner step that follows uses.
func (c *Coordinator) confirmExpiries(ctx context.Context, now time.Time) {
	c.mu.Lock()
	var suspects []string
	for name, o := range c.observed {
		if !o.deleted && !now.Before(o.lastSeen.Add(c.cfg.LeaseDuration)) && o.confirmedRV != o.rv {
			suspects = append(suspects, name)
		}
	}
	c.mu.Unlock()
	for _, name := range suspects {
		gctx, cancel := context.WithTimeout(ctx, c.cfg.RetryPeriod)
		l, err := c.cfg.Client.CoordinationV1().Leases(c.cfg.Namespace).Get(gctx, c.cfg.Name+"-member-"+name, metav1.GetOptions{})
		cancel()
		c.mu.Lock()
		o := c.observed[name]
		switch {
		case o == nil:
		case apierrors.IsNotFound(err):
			o.deleted = true
		case err != nil:
			// Unknown: treat as alive for one more retry period.
			o.lastSeen = now.Add(c.cfg.RetryPeriod - c.cfg.LeaseDuration)
		case l.ResourceVersion != o.rv:
			c.observeLocked(l, now)
		default:
			o.confirmedRV = o.rv
		}
		c.mu.Unlock()
	}
}

// refreshTable reads the assignment ConfigMap live.
func (c *Coordinator) refreshTable(ctx context.Context) error {
	gctx, cancel := context.WithTimeout(ctx, c.cfg.RetryPeriod)
	defer cancel()
	cm, err := c.cfg.Client.CoreV1().ConfigMaps(c.cfg.Namespace).Get(gctx, c.tableName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading assignment %s: %w", c.tableName, err)
	}
	a, err := UnmarshalAssignment(cm.Data[AssignmentKey], c.cfg.Shards)
	if err != nil {
		return err
	}
	c.setTable(a, cm.ResourceVersion)
	return nil
}

// setTable keeps the newer of the current and the given table.
func (c *Coordinator) setTable(a *Assignment, rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.table == nil || a.Generation > c.table.Generation {
		c.table = a
		c.tableRV = rv
	} else if a.Generation == c.table.Generation {
		c.tableRV = rv
	}
}
