package reconcile

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/internal/ipcache"
	"github.com/shardnet/shardnet/queue"
)

// ensureIPRecord creates or updates a kubeovn.io IP record, reading the
// current one from the informer.
func (t *Term) ensureIPRecord(ctx context.Context, rec *IPRecord) error {
	if rec == nil {
		// A shared VM launcher pod's network: the active pod writes it.
		return nil
	}
	p := t.p
	name, spec, labels := rec.Name, rec.Spec, rec.Labels
	cur, err := p.cfg.IPs.Get(name)
	switch {
	case apierrors.IsNotFound(err):
		if p.ipCreated.Pending(name, spec, labels) {
			// Created by an earlier reconcile of this pod moments ago;
			// the informer has not delivered it yet.
			return nil
		}
		ip := &kubeovnv1.IP{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels)}, Spec: spec}
		// The spec goes into the metadata too, at the generation a
		// create gives, so that replicas can watch records as their
		// metadata only (ipcache.EncodeSpec).
		ipcache.SetSpecInMetadata(ip, 1)
		err = p.cfg.Writes.CreateIP(ctx, ip)
		if apierrors.IsAlreadyExists(err) {
			// The informer lags our own create of an earlier attempt.
			return queue.RetryAfter(200 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("creating IP %s: %w", name, err)
		}
		p.ipCreated.Add(name, spec, labels)
		return nil
	case err != nil:
		return fmt.Errorf("reading IP %s: %w", name, err)
	}
	p.ipCreated.Forget(name)
	// Only the fields shardnet writes are compared and set: a record
	// another controller wrote (kube-ovn's attach lists, container id)
	// keeps the rest, and an adopted record that already says what
	// shardnet would is not written at all.
	merged := ownedIPFields(cur.Spec, spec)
	if equality.Semantic.DeepEqual(cur.Spec, merged) {
		return nil
	}
	upd := cur.DeepCopy()
	upd.Spec = merged
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	for k, v := range labels {
		upd.Labels[k] = v
	}
	// The update carries cur's resourceVersion, and changes the spec: it
	// makes the generation cur's plus one.
	ipcache.SetSpecInMetadata(upd, cur.Generation+1)
	if err := p.cfg.Writes.UpdateIP(ctx, upd); err != nil {
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
	p.ipCreated.Forget(name)
	cur, err := p.cfg.IPs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading IP %s: %w", name, err)
	}
	err = p.cfg.Writes.DeleteIP(ctx, name, cur.UID)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting IP %s: %w", name, err)
	}
	return nil
}

// ownedIPFields is cur with the fields the pod reconciler writes taken
// from want.
func ownedIPFields(cur, want kubeovnv1.IPSpec) kubeovnv1.IPSpec {
	out := cur
	out.PodName, out.Namespace, out.Subnet, out.NodeName = want.PodName, want.Namespace, want.Subnet, want.NodeName
	out.IPAddress, out.V4IPAddress, out.V6IPAddress = want.IPAddress, want.V4IPAddress, want.V6IPAddress
	out.MacAddress, out.PodType = want.MacAddress, want.PodType
	return out
}
