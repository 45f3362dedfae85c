package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
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
// routes and NAT rules, its IP record, then its claims, in that order, so
// that an address is free only once nothing in the Northbound carries it.
// A StatefulSet pod's addresses and port are kept while its StatefulSet
// (same UID, not being deleted) still counts the ordinal.
func (p *Pods) release(ctx context.Context, w ShardWriter, key string, pod *corev1.Pod) error {
	claims := claimsOf(p.cfg.ClaimIndex, key)
	if len(claims) > 0 && p.retained(pod, claims) {
		return nil
	}
	ports, err := p.cfg.NB.DeletePodPorts(key)
	if err != nil {
		return fmt.Errorf("building delete of ports of %s: %w", key, err)
	}
	routes, err := p.cfg.NB.DeletePodRouting(key)
	if err != nil {
		return fmt.Errorf("building delete of routes of %s: %w", key, err)
	}
	if ops := append(ports, routes...); len(ops) > 0 {
		if _, err := w.Submit(ctx, ops...); err != nil {
			return fmt.Errorf("deleting ports of %s: %w", key, err)
		}
	}
	p.written.Delete(key)
	p.allocs.Delete(key)
	p.patched.Delete(key)
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	if p.cfg.IPRecords {
		if err := p.deleteIPRecord(ctx, PortName(name, ns, DefaultProvider), pod); err != nil {
			return err
		}
	}
	for _, c := range claims {
		if err := p.releaseClaim(ctx, c); err != nil {
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
func (p *Pods) releaseClaim(ctx context.Context, c *v1alpha1.AddressClaim) error {
	a, err := netip.ParseAddr(c.Spec.Address)
	if err != nil {
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

// ensureIPRecord creates or updates the kubeovn.io IP of the pod's default
// network, reading the current one from the informer.
func (p *Pods) ensureIPRecord(ctx context.Context, pod *corev1.Pod, name, subnet string, al ipam.Allocation) error {
	spec := kubeovnv1.IPSpec{
		PodName:    pod.Name,
		Namespace:  pod.Namespace,
		Subnet:     subnet,
		NodeName:   pod.Spec.NodeName,
		IPAddress:  al.Addresses.String(),
		MacAddress: al.MAC.String(),
		PodType:    PodType(pod),
	}
	if al.Addresses.V4.IsValid() {
		spec.V4IPAddress = al.Addresses.V4.String()
	}
	if al.Addresses.V6.IsValid() {
		spec.V6IPAddress = al.Addresses.V6.String()
	}
	labels := map[string]string{"ovn.kubernetes.io/subnet": subnet, subnet: ""}
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

// deleteIPRecord deletes the IP record of a gone pod, unless it already
// belongs to a new pod of the same name (then the new pod's reconcile
// rewrites it).
func (p *Pods) deleteIPRecord(ctx context.Context, name string, pod *corev1.Pod) error {
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

// subnetError reports a failure to find a usable subnet.
func (p *Pods) subnetError(pod *corev1.Pod, err error) error {
	p.warn(pod, ReasonSubnet, err)
	var ie *InputError
	switch {
	case errors.As(err, &ie), errors.Is(err, ipam.ErrInvalid):
		return queue.Permanent(err)
	case errors.Is(err, ErrUnknownSubnet), errors.Is(err, ErrUnknownPool), errors.Is(err, ErrNoSubnet):
		// Cured by creating the subnet or pool; the subnet informer does
		// not re-enqueue pods, so come back.
		return retryWith(err, retryUnknownSubnet)
	}
	return err
}

// addressError reports an allocation failure.
func (p *Pods) addressError(pod *corev1.Pod, err error) error {
	p.warn(pod, ReasonAddress, err)
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
