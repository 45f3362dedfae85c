package shard

import (
	"context"
	"fmt"
	"maps"
	"math"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// updateReport sets what the Lease should say and asks for a write when it
// changed or when the leader waits for this replica's acknowledgement.
func (c *Coordinator) updateReport(holdings map[int]*holding) {
	c.mu.Lock()
	var gen uint64
	table := c.table
	if table != nil {
		gen = table.Generation
	}
	c.mu.Unlock()
	held := make(Set, len(holdings))
	for s := range holdings {
		held[s] = struct{}{}
	}
	c.leaseMu.Lock()
	heldChanged := !held.Equal(c.written.held)
	c.want.held = held
	if !c.lost.Load() {
		// While fenced the table is not being followed, so it must not be
		// reported as seen.
		c.want.seen = max(c.want.seen, gen)
	}
	need := heldChanged || c.want.leaving != c.written.leaving ||
		(table != nil && table.AwaitsAck(c.cfg.Identity, c.written.seen) && c.want.seen > c.written.seen)
	c.leaseMu.Unlock()
	if need {
		c.markDirty()
	}
}

func (c *Coordinator) markDirty() {
	select {
	case c.dirty <- struct{}{}:
	default:
	}
}

// renewLoop writes the member Lease every RenewInterval and whenever the
// report changes.
func (c *Coordinator) renewLoop(ctx context.Context) {
	logger := klog.FromContext(ctx)
	timer := c.clock.NewTimer(c.cfg.RenewInterval)
	defer timer.Stop()
	failed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.dirty:
		case <-timer.C():
		}
		if err := c.writeLease(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Error(err, "Renewing member lease")
			failed = true
			if c.clock.Since(time.Unix(0, c.renewedAt.Load())) > c.cfg.RenewDeadline {
				c.lost.Store(true)
				c.wake()
			}
			// Back off even if the report keeps changing meanwhile.
			select {
			case <-ctx.Done():
				return
			case <-c.clock.After(c.cfg.RetryPeriod):
			}
			c.markDirty()
			continue
		}
		if c.lost.Load() {
			c.lost.Store(false)
			c.wake()
		}
		if failed {
			failed = false
			if f := c.cfg.OnRenewedAgain; f != nil {
				f()
			}
		}
		resetTimer(timer, c.cfg.RenewInterval)
	}
}

// writeLease writes the member Lease with the current report.
//
// A write may take until the renew deadline (at least RetryPeriod): on an
// API server slow enough to take longer than RetryPeriod, a write cut
// short often lands anyway, and the next one then meets a conflict. A
// conflict re-reads the Lease and writes again at once, in the same call.
// Either way the replica acts on its Lease only until RenewDeadline after
// the start of its last write that succeeded.
func (c *Coordinator) writeLease(ctx context.Context) error {
	timeout := c.cfg.RetryPeriod
	if at := c.renewedAt.Load(); at != 0 {
		timeout = max(timeout, c.cfg.RenewDeadline-c.clock.Since(time.Unix(0, at)))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c.leaseMu.Lock()
	cur := c.lease
	c.leaseMu.Unlock()
	err := c.writeLeaseOnce(ctx, cur)
	if apierrors.IsConflict(err) && ctx.Err() == nil {
		err = c.writeLeaseOnce(ctx, nil)
	}
	return err
}

// writeLeaseOnce writes the member Lease over cur, or over the Lease read
// from the API server when cur is nil.
func (c *Coordinator) writeLeaseOnce(ctx context.Context, cur *coordinationv1.Lease) error {
	c.leaseMu.Lock()
	want := c.want
	want.held = maps.Clone(c.want.held)
	c.leaseMu.Unlock()

	leases := c.cfg.Client.CoordinationV1().Leases(c.cfg.Namespace)
	start := c.clock.Now()
	now := metav1.NewMicroTime(start)
	var next *coordinationv1.Lease
	if cur == nil {
		got, err := leases.Get(ctx, c.memberName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("reading member lease %s: %w", c.memberName, err)
		default:
			cur = got
		}
	}
	var l *coordinationv1.Lease
	if cur == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: c.memberName, Namespace: c.cfg.Namespace}}
	} else {
		l = cur.DeepCopy()
	}
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[MemberLabel] = c.cfg.Name
	l.Spec.HolderIdentity = ptr.To(c.cfg.Identity)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(math.Ceil(c.cfg.LeaseDuration.Seconds())))
	l.Spec.RenewTime = &now
	if l.Spec.AcquireTime == nil || cur == nil {
		l.Spec.AcquireTime = &now
	}
	want.annotate(l)
	var err error
	if cur == nil {
		next, err = leases.Create(ctx, l, metav1.CreateOptions{})
	} else {
		next, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) {
			// Re-read on the next try.
			c.leaseMu.Lock()
			c.lease = nil
			c.leaseMu.Unlock()
		}
		return fmt.Errorf("writing member lease %s: %w", c.memberName, err)
	}
	c.renewedAt.Store(start.UnixNano())
	c.leaseMu.Lock()
	c.lease = next
	c.written = want
	c.leaseMu.Unlock()
	return nil
}
