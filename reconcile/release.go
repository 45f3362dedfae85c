package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/queue"
)

// release frees what a pod key holds when no live pod needs it: its ports,
// routes and NAT rules, its IP records, then its claims, in that order, so
// that an address is free only once nothing in the Northbound carries it.
// Every provider goes (docs/contract.md R1). A StatefulSet pod's addresses
// and ports are kept while its StatefulSet (same UID, not being deleted)
// still counts the ordinal.
func (t *Term) release(ctx context.Context, key string, pod *corev1.Pod) error {
	p := t.p
	claims := claimsOf(p.cfg.ClaimIndex, key)
	if len(claims) > 0 && p.retained(pod, claims) {
		return nil
	}
	ports := p.cfg.NB.PortsByPod(key)
	ops, err := p.cfg.NB.DeletePodPorts(key)
	if err != nil {
		return fmt.Errorf("building delete of ports of %s: %w", key, err)
	}
	routes, err := p.cfg.NB.DeletePodRouting(key)
	if err != nil {
		return fmt.Errorf("building delete of routes of %s: %w", key, err)
	}
	if ops = append(ops, routes...); len(ops) > 0 {
		if _, err := t.w.Submit(ctx, ops...); err != nil {
			return fmt.Errorf("deleting ports of %s: %w", key, err)
		}
	}
	for _, port := range ports {
		t.written.Delete(port.Name)
	}
	t.forget(key)
	if p.cfg.IPRecords {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		providers := map[string]bool{DefaultProvider: true}
		for _, c := range claims {
			providers[claimProvider(c)] = true
		}
		prefix := name + "." + ns + "."
		for _, port := range ports {
			if rest, ok := strings.CutPrefix(port.Name, prefix); ok {
				providers[rest] = true
			}
		}
		for provider := range providers {
			if err := t.deleteIPRecord(ctx, PortName(name, ns, provider), pod); err != nil {
				return err
			}
		}
	}
	for _, c := range claims {
		if err := t.releaseClaim(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// retained reports whether the claims of a gone (or terminal) StatefulSet
// pod are kept for the pod that will take its place.
func (p *Pods) retained(pod *corev1.Pod, claims []*v1alpha1.AddressClaim) bool {
	owner := claims[0].Spec.Owner
	if owner.Kind != v1alpha1.OwnerStatefulSetPod {
		return false
	}
	fake := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: owner.Name, Namespace: owner.Namespace}}
	if pod != nil {
		fake = pod
	}
	n, ok := ipam.StatefulSetOrdinal(owner.Name)
	if !ok {
		return false
	}
	stsName := ""
	if pod != nil {
		stsName, _, _ = StatefulSetOwner(pod)
	}
	if stsName == "" {
		// The pod is gone: its StatefulSet is the one whose UID the claim
		// records; its name is the pod name without the ordinal.
		stsName = owner.Name[:len(owner.Name)-len(fmt.Sprint(n))-1]
	}
	sts, err := p.cfg.StatefulSets.StatefulSets(fake.Namespace).Get(stsName)
	if err != nil || string(sts.UID) != owner.UID || sts.DeletionTimestamp != nil {
		return false
	}
	replicas := int32(1)
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	return int32(n) < replicas
}

// releaseClaim deletes one claim with its UID as precondition and frees
// its address in the local bitmap.
func (t *Term) releaseClaim(ctx context.Context, c *v1alpha1.AddressClaim) error {
	p := t.p
	a, ok := addrOf(c)
	if !ok {
		// Unreadable: delete it anyway, it can only block a name.
		return p.deleteClaim(ctx, c)
	}
	sub, err := p.cfg.Subnets.Get(c.Spec.Subnet)
	if err != nil {
		// The subnet is gone or invalid: nothing local to free.
		return p.deleteClaim(ctx, c)
	}
	var one ipam.Addresses
	if a.Is4() {
		one.V4 = a
	} else {
		one.V6 = a
	}
	if err := p.cfg.Claims.Release(ctx, sub, one, c.Spec.Owner); err != nil {
		return fmt.Errorf("releasing %s: %w", c.Name, err)
	}
	return nil
}

func (p *Pods) deleteClaim(ctx context.Context, c *v1alpha1.AddressClaim) error {
	err := p.cfg.Shardnet.ShardnetV1alpha1().AddressClaims().Delete(ctx, c.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &c.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting claim %s: %w", c.Name, err)
	}
	return nil
}

// ensureIPRecord creates or updates a kubeovn.io IP record, reading the
// current one from the informer.
func (t *Term) ensureIPRecord(ctx context.Context, rec *IPRecord) error {
	p := t.p
	name, spec, labels := rec.Name, rec.Spec, rec.Labels
	cur, err := p.cfg.IPs.Get(name)
	switch {
	case apierrors.IsNotFound(err):
		ip := &kubeovnv1.IP{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: spec}
		_, err = p.cfg.Shardnet.KubeovnV1().IPs().Create(ctx, ip, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// The informer lags our own create of an earlier attempt.
			return queue.RetryAfter(200 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("creating IP %s: %w", name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading IP %s: %w", name, err)
	}
	if equality.Semantic.DeepEqual(cur.Spec, spec) {
		return nil
	}
	upd := cur.DeepCopy()
	upd.Spec = spec
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	for k, v := range labels {
		upd.Labels[k] = v
	}
	if _, err := p.cfg.Shardnet.KubeovnV1().IPs().Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) {
			return queue.RetryAfter(200 * time.Millisecond)
		}
		return fmt.Errorf("updating IP %s: %w", name, err)
	}
	return nil
}

// deleteIPRecord deletes an IP record the key no longer needs. The UID
// precondition keeps a record that a new pod of the same name has just
// rewritten.
func (t *Term) deleteIPRecord(ctx context.Context, name string, pod *corev1.Pod) error {
	p := t.p
	cur, err := p.cfg.IPs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading IP %s: %w", name, err)
	}
	uid := cur.UID
	err = p.cfg.Shardnet.KubeovnV1().IPs().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting IP %s: %w", name, err)
	}
	return nil
}

// failureError is how the queue treats a network that could not be
// served: input errors wait for the pod's next update, missing objects
// come back on a slow retry (their informers do not re-enqueue the pod).
func (t *Term) failureError(f *NetworkFailure) error {
	var ie *InputError
	switch {
	case errors.As(f, &ie), errors.Is(f, ipam.ErrInvalid):
		return queue.Permanent(f)
	case errors.Is(f, ErrUnknownSubnet), errors.Is(f, ErrUnknownPool), errors.Is(f, ErrNoSubnet),
		errors.Is(f, ErrUnknownNAD), errors.Is(f, ErrNetConf), errors.Is(f, ErrNADsNotServed), errors.Is(f, ErrNADsNotSynced):
		return retryWith(f, retryUnknownSubnet)
	}
	return f
}

// addressError reports an allocation failure.
func (t *Term) addressError(pod *corev1.Pod, np *NetworkPlan, err error) error {
	if np.Provider != DefaultProvider {
		err = fmt.Errorf("network %s: %w", np.Provider, err)
	}
	t.warn(pod, ReasonAddress, err)
	switch {
	case errors.Is(err, ipam.ErrNotInRange), errors.Is(err, ipam.ErrReserved), errors.Is(err, ipam.ErrOrdinal),
		errors.Is(err, ipam.ErrInvalid), errors.Is(err, ipam.ErrMACInUse):
		return queue.Permanent(err)
	case errors.Is(err, ipam.ErrFull), errors.Is(err, ipam.ErrAllocated):
		// Cured when an address is freed.
		return retryWith(err, retryFull)
	}
	return err
}

// joinRetry combines the errors of a pod's networks: permanent only when
// every one is, else a retry at the soonest delay any of them asks for
// (or the queue's backoff when one asks for none).
func joinRetry(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	joined := errors.Join(errs...)
	var (
		soonest time.Duration
		backoff bool
	)
	allPermanent := true
	for _, e := range errs {
		if queue.IsPermanent(e) {
			continue
		}
		allPermanent = false
		d, ok := queue.RetryDelay(e)
		switch {
		case !ok:
			backoff = true
		case soonest == 0 || d < soonest:
			soonest = d
		}
	}
	switch {
	case allPermanent:
		return queue.Permanent(errors.New(joined.Error()))
	case backoff:
		return errors.New(joined.Error())
	}
	return retryWith(errors.New(joined.Error()), soonest)
}

// retryWith keeps err's message in the log while asking the queue to come
// back after d.
func retryWith(err error, d time.Duration) error {
	return &delayed{err: err, retry: queue.RetryAfter(d)}
}

type delayed struct {
	err   error
	retry error
}

func (d *delayed) Error() string { return d.err.Error() }

// Unwrap exposes both: errors.Is finds the cause, and the queue finds its
// retry-after marker.
func (d *delayed) Unwrap() []error { return []error{d.err, d.retry} }
