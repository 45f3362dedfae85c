package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// startInformers watches the member Leases and the assignment ConfigMap.
func (c *Coordinator) startInformers(ctx context.Context, wg *sync.WaitGroup) error {
	leaseFactory := informers.NewSharedInformerFactoryWithOptions(c.cfg.Client, 0,
		informers.WithNamespace(c.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.SelectorFromSet(labels.Set{MemberLabel: c.cfg.Name}).String()
		}))
	tableFactory := informers.NewSharedInformerFactoryWithOptions(c.cfg.Client, 0,
		informers.WithNamespace(c.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", c.tableName).String()
		}))
	leaseInf := leaseFactory.Coordination().V1().Leases().Informer()
	tableInf := tableFactory.Core().V1().ConfigMaps().Informer()
	// The registrations' HasSynced, unlike the informers', also waits until
	// the handlers saw the initial list, so the first table is in c.table.
	leaseReg, err := leaseInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.onLease,
		UpdateFunc: func(_, obj any) { c.onLease(obj) },
		DeleteFunc: c.onLeaseDelete,
	})
	if err != nil {
		return fmt.Errorf("watching member leases: %w", err)
	}
	tableReg, err := tableInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onTable(ctx, obj) },
		UpdateFunc: func(_, obj any) { c.onTable(ctx, obj) },
	})
	if err != nil {
		return fmt.Errorf("watching the assignment: %w", err)
	}
	c.synced = []cache.DoneChecker{leaseReg.HasSyncedChecker(), tableReg.HasSyncedChecker()}
	wg.Go(func() { leaseFactory.Start(ctx.Done()); leaseFactory.Shutdown() })
	wg.Go(func() { tableFactory.Start(ctx.Done()); tableFactory.Shutdown() })
	return nil
}

func (c *Coordinator) onLease(obj any) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	c.mu.Lock()
	c.observeLocked(l, c.clock.Now())
	c.mu.Unlock()
	c.wake()
}

// observeLocked records a member Lease; c.mu must be held. Any change of the
// object counts as a sign of life, and the time is this replica's own.
func (c *Coordinator) observeLocked(l *coordinationv1.Lease, now time.Time) {
	name, r, err := parseReport(l, c.cfg.Shards)
	if err != nil {
		klog.Background().Error(err, "Ignoring unreadable member lease")
		return
	}
	o := c.observed[name]
	if o == nil {
		o = &observation{}
		c.observed[name] = o
	}
	if o.rv == l.ResourceVersion && !o.deleted {
		return
	}
	o.rv, o.lastSeen, o.report, o.deleted = l.ResourceVersion, now, r, false
}

func (c *Coordinator) onLeaseDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l.Spec.HolderIdentity == nil {
		return
	}
	c.mu.Lock()
	if o := c.observed[*l.Spec.HolderIdentity]; o != nil {
		o.deleted = true
		// The final state counts as the member's last report (an empty held
		// set acknowledges its releases); it is no sign of life, so lastSeen
		// stays.
		if _, r, err := parseReport(l, c.cfg.Shards); err == nil {
			o.report = r
		}
	}
	// Forget members whose Lease is gone and expired, so the map does not
	// grow with every identity ever seen.
	now := c.clock.Now()
	for name, o := range c.observed {
		if o.deleted && !now.Before(o.lastSeen.Add(c.cfg.LeaseDuration)) {
			delete(c.observed, name)
		}
	}
	c.mu.Unlock()
	c.wake()
}

func (c *Coordinator) onTable(ctx context.Context, obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	a, err := UnmarshalAssignment(cm.Data[AssignmentKey], c.cfg.Shards)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Ignoring unreadable shard assignment", "configmap", c.tableName)
		if errors.Is(err, ErrShardCount) {
			c.mu.Lock()
			c.tableErr = fmt.Errorf("assignment %s/%s: %w", c.cfg.Namespace, c.tableName, err)
			c.mu.Unlock()
		}
		return
	}
	c.setTable(a, cm.ResourceVersion)
	c.wake()
}
