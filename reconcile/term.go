package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/puzpuzpuz/xsync/v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/queue"
)

// Term reconciles the pod keys of one shard term: it applies the
// Planner's plans through the term's fenced Northbound writer. What it
// remembers about keys (ports it committed, allocations it made, patches
// it wrote) belongs to the term and ends with it, so a shard that moves
// away and back starts from the caches, never from an older term's
// memory.
//
// One key is never reconciled by two goroutines at once (the queue
// guarantees it), so the per-key entries need no lock of their own; the
// maps are shared by the term's workers, which is why they are xsync
// maps: lock-free reads on every reconcile, no global mutex across
// workers.
type Term struct {
	p     *Pods
	shard int
	w     ShardWriter
	// written maps a port name to what this term last committed for it,
	// so that a reconcile running before the cache has the port does not
	// write it again.
	written *xsync.Map[string, writtenPort]
	// recent maps a pod key to the allocations this term made for it,
	// for the moment before the claim informer delivers the claims.
	recent *xsync.Map[string, recentAllocs]
	// patched maps a pod key to the version this term's last annotation
	// patch created, so that a reconcile reading a cache older than that
	// write leaves the work to the event the write is bound to bring.
	patched *xsync.Map[string, patchedVersion]
	// later queues a key of the term again after a delay; nil when the
	// term has no queue (tests).
	later func(key string, after time.Duration)
	// stores counts the entries stored in written, recent and patched;
	// every pruneEvery of them, and at the first store a lag tolerance
	// after the last prune, the entries past cacheLagTolerance are
	// dropped (prune).
	stores atomic.Int64
	// lastPrune is when the last prune ran (Unix nanoseconds; 0 before
	// the first).
	lastPrune atomic.Int64
}

// pruneEvery is how many stores in a term's memory of its own writes
// (written, recent, patched) pass between two prunes at most. An entry is
// of no use once cacheLagTolerance has passed, but only a pod's release
// removed it: at 50,000 pods a replica kept one of each per pod for good,
// some 15 MB. A prune walks every entry, so spacing it by this many stores
// keeps its cost per store constant.
//
// A count alone is not enough: with 64 shards a term stores about 2,300
// entries for 50,000 pods, fewer than pruneEvery, and kept them all. So a
// store also prunes when the last prune is a lag tolerance old, which
// bounds the walks to one per tolerance and what is kept to what was
// stored since the one before.
const pruneEvery = 4096

// stored counts one store, made at now, and prunes every pruneEvery, or
// when the last prune is cacheLagTolerance old.
func (t *Term) stored(now time.Time) {
	n := t.stores.Add(1)
	last := t.lastPrune.Load()
	if n%pruneEvery != 0 && now.UnixNano()-last < int64(cacheLagTolerance) {
		return
	}
	// One of the stores that find a prune due runs it.
	if t.lastPrune.CompareAndSwap(last, now.UnixNano()) {
		t.prune(now)
	}
}

// prune drops the entries of written, recent and patched that are older
// than cacheLagTolerance at now: each reader already ignores them.
func (t *Term) prune(now time.Time) {
	expired := func(at time.Time) bool { return now.Sub(at) >= cacheLagTolerance }
	pruneMap(t.written, func(v writtenPort) bool { return expired(v.at) }, func(a, b writtenPort) bool { return a == b })
	pruneMap(t.recent, func(v recentAllocs) bool { return expired(v.at) },
		func(a, b recentAllocs) bool { return a.at.Equal(b.at) && a.owner == b.owner })
	pruneMap(t.patched, func(v patchedVersion) bool { return expired(v.at) }, func(a, b patchedVersion) bool { return a == b })
}

// pruneMap deletes the entries of m that stale reports, each only if it
// is still the one read (same), so that a store made meanwhile stays.
func pruneMap[V any](m *xsync.Map[string, V], stale func(V) bool, same func(a, b V) bool) {
	m.Range(func(k string, v V) bool {
		if stale(v) {
			m.Compute(k, func(old V, loaded bool) (V, xsync.ComputeOp) {
				if loaded && same(old, v) {
					return old, xsync.DeleteOp
				}
				return old, xsync.CancelOp
			})
		}
		return true
	})
}

// NewTerm returns the reconciler of one shard term writing through w;
// later, when not nil, queues one of the term's keys again after a delay
// (the shard queue's AddAfter).
func (p *Pods) NewTerm(shard int, w ShardWriter, later func(key string, after time.Duration)) *Term {
	return &Term{
		p: p, shard: shard, w: w, later: later,
		written: xsync.NewMap[string, writtenPort](),
		recent:  xsync.NewMap[string, recentAllocs](),
		patched: xsync.NewMap[string, patchedVersion](),
	}
}

// cacheLagTolerance is how long a term trusts its own memory of a write
// the caches have not shown yet; past it the write is taken for lost.
const cacheLagTolerance = 30 * time.Second

// writtenPort is a committed port: what it carried and when.
type writtenPort struct {
	fingerprint string
	at          time.Time
}

// recentAllocs are the allocations made for one owner, by provider.
type recentAllocs struct {
	owner v1alpha1.ClaimOwner
	at    time.Time
	by    map[string]ipam.Allocation
}

// patchedVersion is the pod version an annotation patch returned.
type patchedVersion struct {
	uid     types.UID
	version string
	at      time.Time
}

// Reconcile converges the pod key. Input errors come back as
// queue.Permanent (the pod's next update retries), failures a retry can
// cure as plain errors or queue.RetryAfter.
func (t *Term) Reconcile(ctx context.Context, key string) error {
	start := t.p.cfg.Now()
	ctx, span := startReconcile(withStageMetrics(ctx, t.p.cfg.Metrics), t.shard, key)
	phase, err := t.reconcile(ctx, key)
	result := "ok"
	switch {
	case err == nil:
	case queue.IsPermanent(err):
		result = "invalid"
	default:
		result = "error"
	}
	t.p.cfg.Metrics.Reconciled(phase, result, t.p.cfg.Now().Sub(start))
	endReconcile(span, phase, result, err)
	return err
}

func (t *Term) reconcile(ctx context.Context, key string) (string, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return "noop", queue.Permanent(fmt.Errorf("bad pod key %q: %w", key, err))
	}
	if t.p.cfg.KeepVMIP {
		if pods := launcherPods(t.p.cfg.PodIndex, key); len(pods) > 0 {
			return t.reconcileVM(ctx, key, pods)
		}
	}
	pod, err := t.p.cfg.Pods.Pods(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return "noop", err
	}
	if t.launcherOfOtherKey(key, pod) {
		return "noop", nil
	}
	if pod == nil || pod.Spec.HostNetwork || !Alive(pod, t.p.cfg.Now()) {
		return "release", t.release(ctx, key, pod)
	}
	if end, ok := GraceEnd(pod); ok && t.later != nil {
		// A terminating pod whose delete may never finish (its node is
		// gone): its key comes back when its grace runs out, and is
		// released then (R3), with no polling meanwhile.
		t.later(key, end.Sub(t.p.cfg.Now())+graceMargin)
	}
	return t.ensure(ctx, key, pod, nil)
}

// graceMargin is how long after a pod's grace has run out its key is
// looked at again, so that the clock has certainly passed the deadline.
const graceMargin = 100 * time.Millisecond

// behindOwnPatch reports whether the cached pod is older than the version
// this term's last patch of it created: everything the reconcile would
// do from that pod was done for it, and the informer has yet to deliver
// the patch, whose event queues the key again. Versions that do not
// compare (an API server that is not etcd-backed) are never behind.
func (t *Term) behindOwnPatch(key string, pod *corev1.Pod) bool {
	pv, ok := t.patched.Load(key)
	if !ok {
		return false
	}
	if pv.uid != pod.UID || t.p.cfg.Now().Sub(pv.at) >= cacheLagTolerance {
		t.patched.Compute(key, func(old patchedVersion, loaded bool) (patchedVersion, xsync.ComputeOp) {
			if loaded && old == pv {
				return old, xsync.DeleteOp
			}
			return old, xsync.CancelOp
		})
		return false
	}
	c, err := resourceversion.CompareResourceVersion(pod.ResourceVersion, pv.version)
	return err == nil && c < 0
}

// recentFor returns this term's recent allocations for the owner.
func (t *Term) recentFor(key string, owner v1alpha1.ClaimOwner) map[string]ipam.Allocation {
	r, ok := t.recent.Load(key)
	if !ok || r.owner != owner || t.p.cfg.Now().Sub(r.at) >= cacheLagTolerance {
		return nil
	}
	return r.by
}

// remember records an allocation made for the owner on provider.
func (t *Term) remember(key string, owner v1alpha1.ClaimOwner, provider string, al ipam.Allocation) {
	now := t.p.cfg.Now()
	by := map[string]ipam.Allocation{}
	if r, ok := t.recent.Load(key); ok && r.owner == owner && now.Sub(r.at) < cacheLagTolerance {
		for k, v := range r.by {
			by[k] = v
		}
	}
	by[provider] = al
	t.recent.Store(key, recentAllocs{owner: owner, at: now, by: by})
	t.stored(now)
}

func (t *Term) forget(key string) {
	t.recent.Delete(key)
	t.patched.Delete(key)
}

func (t *Term) recentlyWritten(port, fingerprint string) bool {
	w, ok := t.written.Load(port)
	return ok && w.fingerprint == fingerprint && t.p.cfg.Now().Sub(w.at) < cacheLagTolerance
}

func (t *Term) warn(pod *corev1.Pod, reason string, err error) {
	t.p.cfg.Recorder.Event(pod, corev1.EventTypeWarning, reason, err.Error())
}

// ensure applies a live pod's plan: releases what unplugged networks
// hold, allocates each network's addresses, commits every port and
// routed-phase row of the pod in one Northbound request, writes the IP
// records, and patches the pod once.
func (t *Term) ensure(ctx context.Context, key string, pod *corev1.Pod, vm *VMHolder) (string, error) {
	log := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	// Patches are remembered per pod: a VM key has several.
	podKey := pod.Namespace + "/" + pod.Name
	if t.behindOwnPatch(podKey, pod) {
		// An event of the pod from before this term's patch (kwok's or
		// the kubelet's status update racing it): redoing the routed phase
		// and the patch from it would cost a transaction and a write.
		log.V(5).Info("Cache behind this term's own patch; waiting for its event", "version", pod.ResourceVersion)
		return "noop", nil
	}
	owner := ClaimOwnerOf(pod)
	if vm != nil {
		owner = vm.Owner
	}
	var plan *Plan
	if err := inStage(ctx, stageResolve, func(context.Context) error {
		var err error
		plan, err = t.p.planner.Plan(PlanInput{
			Pod: pod, Claims: claimsOf(t.p.cfg.ClaimIndex, key), Recent: t.recentFor(key, owner), Now: t.p.cfg.Now(), VM: vm,
		})
		return err
	}); err != nil {
		return "allocate", queue.Permanent(err)
	}
	var errs []error
	for _, f := range plan.Failed {
		t.countVipWait(f)
		t.warn(pod, f.Reason, f)
		errs = append(errs, t.failureError(f))
	}

	var (
		ops    []ovsdb.Operation
		remove []string
	)
	for _, u := range plan.Unplug {
		uops, err := t.unplugOps(u)
		if err != nil {
			return "allocate", err
		}
		ops = append(ops, uops...)
		remove = append(remove, u.Annotations...)
	}

	type done struct {
		np *NetworkPlan
		w  NetworkWrites
	}
	var served []done
	for _, np := range plan.Networks {
		al, err := t.allocate(ctx, pod, plan, np)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w := t.p.planner.Complete(pod, np, al)
		nops, warns, err := t.networkOps(ctx, pod, plan, w, pod.Spec.NodeName)
		errs = append(errs, warns...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ops = append(ops, nops...)
		served = append(served, done{np, w})
		errs = append(errs, t.requestWarnings(pod, np)...)
		if err := t.routeWait(pod, np); err != nil {
			errs = append(errs, err)
		}
		if err := t.securityGroupsMissing(pod, np, w); err != nil {
			errs = append(errs, err)
		}
		if np.IgnoredSwitch != "" {
			// The patch below writes the subnet back, so this is said once
			// per edit.
			t.warn(pod, ReasonSubnetChangeIgnored, fmt.Errorf("network %s is allocated on subnet %s: %s=%s is ignored; re-create the pod to move it",
				np.Provider, np.Subnet.Name, Key(np.Provider, KeyLogicalSwitch), np.IgnoredSwitch))
		}
	}

	var submit, records func() error
	if len(ops) > 0 {
		submit = func() error {
			return timed(ctx, StageNB, func(ctx context.Context) error { _, err := t.w.Submit(ctx, ops...); return err })
		}
	}
	if t.p.cfg.IPRecords {
		recs := make([]*IPRecord, 0, len(served))
		for _, d := range served {
			recs = append(recs, d.w.IPRecord)
		}
		records = func() error { return t.writeIPRecords(ctx, plan.Unplug, recs) }
	}
	// The served networks' IP records say what the claims hold, not what
	// the ports do, so they are written while the Northbound transaction
	// is in flight: the patch (A10) needs both, neither needs the other.
	// With networks to unplug they follow it, in the order of release
	// (R5): an unplugged network's record goes after its port, and before
	// a served one of the same name is written.
	nbErr, recErr := portsAndRecords(submit, records, len(plan.Unplug) == 0)
	if len(ops) > 0 {
		if nbErr != nil {
			for _, d := range served {
				if d.w.Port != nil {
					t.written.Delete(d.w.Port.Name)
				}
			}
			if !errors.Is(nbErr, ovn.ErrStaleEpoch) {
				t.warn(pod, ReasonPort, nbErr)
			}
			return "allocate", fmt.Errorf("writing the ports of %s: %w", key, nbErr)
		}
		now := t.p.cfg.Now()
		for _, d := range served {
			if d.w.Port != nil {
				t.written.Store(d.w.Port.Name, writtenPort{fingerprint: portFingerprint(d.w, pod.Spec.NodeName), at: now})
				t.stored(now)
			}
		}
	}

	if recErr != nil {
		return "allocate", recErr
	}
	for _, u := range plan.Unplug {
		for _, c := range u.Claims {
			if err := t.releaseClaim(ctx, c); err != nil {
				return "allocate", err
			}
		}
	}

	want := map[string]string{}
	routed := false
	for _, d := range served {
		for k, v := range d.w.Annotations {
			want[k] = v
		}
		routed = routed || d.w.Routed
	}
	phase := "allocate"
	if routed {
		phase = "route"
	}
	if len(plan.Waiting) > 0 {
		log.V(2).Info("Launcher pod waits for the VM's active launcher pod", "providers", plan.Waiting)
	}
	patched, err := t.patch(ctx, podKey, pod, want, remove)
	if err != nil {
		return "allocate", err
	}
	if len(errs) > 0 {
		return phase, joinRetry(errs)
	}
	if !patched && len(ops) == 0 && len(plan.Unplug) == 0 {
		return "noop", nil
	}
	return phase, nil
}

// portsAndRecords runs a reconcile's Northbound transaction (submit) and
// its IP record writes (records), either of which may be nil. Together,
// both run at once and both have ended when it returns, so nothing of the
// reconcile still writes after it (a retry, or the next term, reads what
// it wrote). Otherwise the records follow a transaction that succeeded
// and are not written after one that failed.
func portsAndRecords(submit, records func() error, together bool) (submitErr, recordsErr error) {
	switch {
	case submit == nil && records == nil:
		return nil, nil
	case submit == nil:
		return nil, records()
	case records == nil:
		return submit(), nil
	case !together:
		if err := submit(); err != nil {
			return err, nil
		}
		return nil, records()
	}
	done := make(chan error, 1)
	go func() { done <- records() }()
	submitErr = submit()
	return submitErr, <-done
}

// writeIPRecords deletes the IP records of the unplugged networks, then
// writes those of the served ones, as one stage.
func (t *Term) writeIPRecords(ctx context.Context, unplug []*Unplug, recs []*IPRecord) error {
	return inStage(ctx, stageIPRecord, func(ctx context.Context) error {
		for _, u := range unplug {
			if err := t.deleteIPRecord(ctx, u.IPRecord, nil); err != nil {
				return err
			}
		}
		for _, rec := range recs {
			if err := t.ensureIPRecord(ctx, rec); err != nil {
				return err
			}
		}
		return nil
	})
}

// allocate obtains a network's addresses as its plan says: releasing the
// claims the plan gave up first, and never allocating twice for one
// owner (the claims of a lost reply are found by name).
func (t *Term) allocate(ctx context.Context, pod *corev1.Pod, plan *Plan, np *NetworkPlan) (ipam.Allocation, error) {
	var al ipam.Allocation
	err := inStage(ctx, stageIPAM, func(ctx context.Context) error {
		for _, c := range np.Release {
			if err := t.releaseClaim(ctx, c); err != nil {
				return err
			}
		}
		a := np.Address
		r := ipam.Request{Owner: plan.Owner, Provider: np.Provider, NodeName: pod.Spec.NodeName, MAC: a.MAC}
		claims, sub := t.p.cfg.Claims, np.Alloc
		var err error
		switch a.Source {
		case FromClaims, FromRecent:
			al = ipam.Allocation{Subnet: np.Subnet.Name, Addresses: a.Addresses, MAC: a.MAC}
		case FromVip:
			if al, err = t.takeVip(ctx, pod, np); err != nil {
				return t.vipError(pod, err)
			}
			return nil
		case FromAnnotations, FromStatic:
			al, err = claims.AllocateStatic(ctx, sub, a.Addresses, t.shard, r)
		case FromList:
			al, err = claims.AllocateFromList(ctx, sub, a.List, a.Ordinal, t.shard, r)
		case FromPool:
			al, err = claims.AllocateFromPool(ctx, sub, a.Pool, t.shard, r)
		default:
			al, err = claims.Allocate(ctx, sub, t.shard, r)
		}
		if err != nil {
			return t.addressError(pod, np, err)
		}
		if a.Source != FromClaims && a.Source != FromRecent {
			t.remember(plan.Key, plan.Owner, np.Provider, al)
		}
		if err := checkStaticMatches(np.Request, al); err != nil {
			if a.Source == FromRecent {
				// The annotation may be an earlier owner's allocation that
				// landed after this term's read, whose claims the cache
				// has not shown yet (landedElsewhere): wait for them.
				return fmt.Errorf("%w; waiting for the claims of the annotated addresses", err)
			}
			if a.Source == FromClaims {
				if fixed, ok, ferr := t.claimsFollowPort(ctx, pod, np, r, al); ok {
					al = fixed
					if ferr == nil {
						t.remember(plan.Key, plan.Owner, np.Provider, al)
					}
					return ferr
				}
			}
			t.warn(pod, ReasonAddress, err)
			return queue.Permanent(err)
		}
		return nil
	})
	return al, err
}

// networkOps are the Northbound ops of one network's writes, nil when
// this term committed exactly them a moment ago and the cache has not
// caught up (writing the port again would fail on its unique name).
//
// warns are input errors of the routed phase (an EIP in use, G7) that
// leave the rest of the network written.
func (t *Term) networkOps(ctx context.Context, pod *corev1.Pod, plan *Plan, w NetworkWrites, node string) (ops []ovsdb.Operation, warns []error, err error) {
	if w.Port == nil {
		return nil, nil, nil
	}
	nb := t.p.cfg.NB
	if err := dhcpReferences(nb, w); err != nil {
		return nil, nil, err
	}
	// The plan read the key's ports a moment ago; a port it did not
	// find that way (its external_ids:pod is another's) is searched by
	// name.
	cur, cached := plan.Port(w.Port.Name)
	if !cached {
		cur, cached = nb.Port(w.Port.Name)
	}
	if !cached && t.recentlyWritten(w.Port.Name, portFingerprint(w, node)) {
		return nil, nil, nil
	}
	ops, ref, err := nb.EnsurePortFrom(*w.Port, cur)
	if err != nil {
		if errors.Is(err, ovn.ErrNotFound) {
			// The subnet reconciler has not created the switch yet.
			return nil, nil, queue.RetryAfter(time.Second)
		}
		return nil, nil, fmt.Errorf("building port %s: %w", w.Port.Name, err)
	}
	route := w.Route
	if route == nil && !cached {
		// Annotated as routed, but the port is created now: it joins
		// its node group (and gets its rows) as on the first route.
		route = w.Reroute
	}
	if route == nil && cached {
		route = t.movedRoute(w, cur)
	}
	if route == nil && cached && w.Reroute != nil {
		// Routed already: the rows follow north_gateway, eip and snat
		// (docs/contract.md G7), at no write when they match.
		rops, warns, err := t.routingOps(ctx, pod, w, w.Reroute, ref, true)
		if err != nil {
			return nil, warns, err
		}
		return append(ops, rops...), warns, nil
	}
	if route == nil {
		return ops, nil, nil
	}
	if g := route.PortGroup; g != "" {
		if cached {
			// The port was there before this routed phase: it may be in
			// another node's group (a re-created pod on another node).
			ops = append(ops, nb.LeaveNodePortGroups(w.Port.Switch, ref)...)
		}
		aops, err := nb.AddToPortGroup(g, ref)
		if errors.Is(err, ovn.ErrNotFound) {
			// The subnet reconciler creates each node's group; until it
			// has, the pod waits rather than racing other pods to insert it.
			return nil, nil, queue.RetryAfter(time.Second)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("building port group %s membership: %w", g, err)
		}
		ops = append(ops, aops...)
	} else if cached && len(route.Routes)+len(route.NATs) > 0 {
		// A port with an EIP, SNAT or north gateway is in no node group.
		ops = append(ops, nb.LeaveNodePortGroups(w.Port.Switch, ref)...)
	}
	rops, warns, err := t.routingOps(ctx, pod, w, route, ref, false)
	if err != nil {
		return nil, warns, err
	}
	return append(ops, rops...), warns, nil
}

// unplugOps delete the ports of a provider the pod no longer asks for.
func (t *Term) unplugOps(u *Unplug) ([]ovsdb.Operation, error) {
	var ops []ovsdb.Operation
	for _, name := range u.Ports {
		dops, err := t.p.cfg.NB.DeletePort(name)
		if err != nil {
			return nil, fmt.Errorf("building delete of port %s: %w", name, err)
		}
		ops = append(ops, dops...)
		t.written.Delete(name)
	}
	return ops, nil
}

// portFingerprint is what a port and its routed phase were written from.
func portFingerprint(w NetworkWrites, node string) string {
	p := w.Port
	fp := fmt.Sprintf("%s|%s|%s|%v|%v|%v|%v|%s|%v|%s|%s", p.Switch, p.IPs, p.MAC, p.PortSecurity, p.Layer2Forward, p.VIPs, w.Routed, node, p.SecurityGroups, p.DHCPv4, p.DHCPv6)
	if w.Route != nil {
		fp += fmt.Sprintf("|%s|%v|%v", w.Route.PortGroup, w.Route.Routes, w.Route.NATs)
	}
	return fp
}

// patch writes the pod's annotations in one merge patch, carrying the
// pod's UID so that it cannot land on a re-created pod of the same name.
// It reports whether there was anything to write.
func (t *Term) patch(ctx context.Context, key string, pod *corev1.Pod, want map[string]string, remove []string) (bool, error) {
	body := annotationPatch(pod, want, remove)
	if body == nil {
		return false, nil
	}
	wasAllocated := pod.Annotations[DefaultKey(KeyAllocated)] == "true"
	err := inStage(ctx, stagePatch, func(ctx context.Context) error {
		out, err := t.p.cfg.Writes.PatchPod(ctx, pod.Namespace, pod.Name, body)
		if err == nil && out != nil {
			now := t.p.cfg.Now()
			t.patched.Store(key, patchedVersion{uid: out.UID, version: out.ResourceVersion, at: now})
			t.stored(now)
		}
		return err
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsInvalid(err):
		// Gone, or replaced by a pod of another UID (the patch carries the
		// UID as a precondition): the next reconcile of the key sees which.
		klog.FromContext(ctx).V(4).Info("Pod changed under the patch; retrying", "pod", key, "err", err)
		return true, queue.RetryAfter(100 * time.Millisecond)
	case err != nil:
		return true, fmt.Errorf("patching pod %s: %w", key, err)
	}
	if !wasAllocated && want[DefaultKey(KeyAllocated)] == "true" {
		t.p.cfg.Metrics.Annotated(t.p.cfg.Now().Sub(pod.CreationTimestamp.Time))
	}
	return true, nil
}

// annotationPatch is the merge patch that sets want and removes remove on
// pod, with the pod's UID as a precondition; nil when nothing changes.
func annotationPatch(pod *corev1.Pod, want map[string]string, remove []string) []byte {
	changed := map[string]any{}
	for k, v := range want {
		if cur, ok := pod.Annotations[k]; !ok || cur != v {
			changed[k] = v
		}
	}
	for _, k := range remove {
		if _, ok := pod.Annotations[k]; ok {
			changed[k] = nil
		}
	}
	if len(changed) == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID, "annotations": changed}})
	return b
}

// claimsFollowPort handles a pod whose claims hold other addresses than
// its annotation, while its Northbound port carries the annotated ones:
// two allocations raced across an interrupted term (a claim or a patch
// whose outcome was lost), and the one that reached the annotation and the
// port is the one the pod uses. The annotated addresses are claimed for
// the pod and the held ones released. ok is false when the port does not
// carry the annotation (a user's edit of a running pod's address, refused
// by the caller); err is the claim's failure (another holder has the
// annotated address), with nothing released.
func (t *Term) claimsFollowPort(ctx context.Context, pod *corev1.Pod, np *NetworkPlan, r ipam.Request, held ipam.Allocation) (ipam.Allocation, bool, error) {
	prior, ok := annotatedAllocation(pod, np.Provider, np.Subnet.Name)
	if !ok || np.Port == "" || prior.Addresses == held.Addresses {
		return held, false, nil
	}
	port, ok := t.p.cfg.NB.Port(np.Port)
	if !ok || len(port.Addresses) != 1 {
		return held, false, nil
	}
	on := strings.Fields(port.Addresses[0])
	for _, a := range prior.Addresses.List() {
		if !slices.ContainsFunc(on, func(f string) bool { b, err := netip.ParseAddr(f); return err == nil && b == a }) {
			return held, false, nil
		}
	}
	if !prior.MAC.IsZero() {
		r.MAC = prior.MAC
	}
	al, err := t.p.cfg.Claims.AllocateStatic(ctx, np.Alloc, prior.Addresses, t.shard, r)
	if err != nil {
		return held, true, t.addressError(pod, np, err)
	}
	klog.FromContext(ctx).Info("The pod's annotation and port carry other addresses than its claims: the claims follow them",
		"pod", pod.Namespace+"/"+pod.Name, "annotated", prior.Addresses, "claimed", held.Addresses)
	for _, a := range held.Addresses.List() {
		if a == prior.Addresses.V4 || a == prior.Addresses.V6 {
			continue
		}
		c := &v1alpha1.AddressClaim{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClaimName(np.Subnet.Name, a)},
			Spec:       v1alpha1.AddressClaimSpec{Subnet: np.Subnet.Name, Address: a.String(), Owner: r.Owner},
		}
		if err := t.releaseClaim(ctx, c); err != nil {
			return al, true, err
		}
	}
	return al, true, nil
}

// checkStaticMatches refuses a held allocation that no longer matches a
// static address the user has since written: the address of a running pod
// is not changed under it.
func checkStaticMatches(req Request, al ipam.Allocation) error {
	if req.Static.IsZero() {
		return nil
	}
	for _, a := range req.Static.List() {
		if a != al.Addresses.V4 && a != al.Addresses.V6 {
			return fmt.Errorf("pod already holds %s; a running pod's address is not changed to %s", al.Addresses, req.Static)
		}
	}
	return nil
}

// dhcpRetry is how soon a port whose subnet's DHCP options are not in the
// Northbound yet is tried again: the leader's subnet reconciler writes
// them right after the switch.
const dhcpRetry = time.Second

// dhcpReferences points the port at its subnet's DHCP_Options rows
// (docs/contract.md N4). A port is not written without them while its
// subnet has enableDHCP: a VM booted on it would get no lease.
func dhcpReferences(nb Northbound, w NetworkWrites) error {
	for _, family := range w.DHCPFamilies {
		row, ok := nb.SubnetDHCPOptions(w.Port.Switch, family)
		if !ok {
			return fmt.Errorf("port %s waits for the %s DHCP options of subnet %s: %w", w.Port.Name, family, w.Port.Switch, queue.RetryAfter(dhcpRetry))
		}
		if family == ovn.DHCPv4 {
			w.Port.DHCPv4 = row.UUID
		} else {
			w.Port.DHCPv6 = row.UUID
		}
	}
	return nil
}
