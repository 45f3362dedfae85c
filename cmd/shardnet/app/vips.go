package app

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/controller"
	"github.com/shardnet/shardnet/metrics"
	"github.com/shardnet/shardnet/reconcile"
)

// vipPath is the Vip part of a replica (docs/decisions/0014-vips.md): the
// leader's Vip reconciler with its queue, and, on every replica, the
// re-queue of the pods that name a Vip when it changes.
type vipPath struct {
	// q holds Vip names for the leader's Vip reconciler.
	q   workqueue.TypedRateLimitingInterface[string]
	rec *reconcile.VipReconciler
	met *metrics.Vips
}

func newVipPath(reg prometheus.Registerer) (*vipPath, error) {
	met, err := metrics.NewVips(reg)
	if err != nil {
		return nil, err
	}
	return &vipPath{
		q: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "vips"}),
		met: met,
	}, nil
}

// start builds the leader's Vip reconciler over the replica's caches.
func (v *vipPath) start(r *incarnation, recorder record.EventRecorder) error {
	c := r.caches
	rec, err := reconcile.NewVipReconciler(reconcile.VipConfig{
		Writes: r.writes(), Vips: c.Vips, Pods: c.Pods,
		ClaimLister: c.Claims, Claims: c.Allocator, Registry: c.Registry, Catalog: c, Recorder: recorder,
	})
	if err != nil {
		return err
	}
	v.rec = rec
	return nil
}

// watch feeds the Vip queue from Vip events and, on every replica,
// queues the pods that name the Vip, so that a pod waiting for it is
// served as soon as it is reserved or given back (the shard owner of each
// reconciles it; others drop the key).
func (v *vipPath) watch(r *incarnation, inf *controller.Informers) error {
	on := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		vip, ok := obj.(*kubeovnv1.Vip)
		if !ok {
			return
		}
		v.q.Add(vip.Name)
		r.enqueueVipUsers(vip.Name)
	}
	_, err := inf.CRDs.Kubeovn().V1().Vips().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: on, UpdateFunc: func(_, o any) { on(o) }, DeleteFunc: on,
	})
	return err
}

// enqueueVipUsers queues the pods whose ovn.kubernetes.io/vip is name.
func (r *incarnation) enqueueVipUsers(name string) {
	if r.caches == nil {
		return
	}
	pods, err := r.caches.Pods.List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if p.Annotations[reconcile.DefaultKey(reconcile.KeyVIP)] == name {
			r.ctrl.Enqueue(reconcile.PodKey(p, r.opts.KeepVMIP))
		}
	}
}

// enqueueAll queues every Vip: a new leader re-runs them all.
func (v *vipPath) enqueueAll(r *incarnation) {
	vips, err := r.caches.Vips.List(labels.Everything())
	if err != nil {
		return
	}
	for _, vip := range vips {
		v.q.Add(vip.Name)
	}
}

// work runs the Vip reconciler for queued Vips while this replica leads;
// keys that arrive while it does not lead are dropped (the next leader
// re-runs every Vip).
func (v *vipPath) work(ctx context.Context, r *incarnation) {
	// The term check, not only the election's view: a paused leader
	// that resumes writes no Vip before its run loop notices.
	leading := func() bool { _, err := r.leaderTerm(); return err == nil && v.rec != nil }
	leaderWorker(ctx, v.q, "Vip", leading, func(ctx context.Context, name string) error {
		return v.rec.Reconcile(ctx, name)
	})
}
