package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/queue"
)

// failureError is how the queue treats a network that could not be
// served: input errors wait for the pod's next update, missing objects
// come back on a slow retry (their informers do not re-enqueue the pod).
func (t *Term) failureError(f *NetworkFailure) error {
	var ie *InputError
	switch {
	case errors.As(f, &ie), errors.Is(f, ipam.ErrInvalid):
		return queue.Permanent(f)
	case errors.Is(f, ErrUnknownSubnet), errors.Is(f, ErrUnknownPool), errors.Is(f, ErrNoSubnet),
		errors.Is(f, ErrUnknownNAD), errors.Is(f, ErrNetConf), errors.Is(f, ErrNADsNotServed), errors.Is(f, ErrNADsNotSynced),
		errors.Is(f, ErrUnknownVlan):
		return retryWith(f, retryUnknownSubnet)
	case errors.Is(f, ErrVipNotApplied):
		// As an ip_address edit (U2): the pod's next update retries.
		return queue.Permanent(f)
	case errors.Is(f, ErrMigrationSubnet):
		// Cured only by an edit of the target pod or the VM's end.
		return queue.Waiting(f)
	case errors.Is(f, ErrVipUnavailable):
		// Cured by the Vip's reconcile or its user's release, which
		// queue the pod again; meanwhile the queue's backoff.
		return queue.Waiting(f)
	}
	return f
}

// addressError reports an allocation failure.
func (t *Term) addressError(pod *corev1.Pod, np *NetworkPlan, err error) error {
	if errors.Is(err, context.Canceled) {
		// The shard term ended under the call (a handoff, a lost
		// lease): nothing the user must act on.
		return err
	}
	if np.Provider != DefaultProvider {
		err = fmt.Errorf("network %s: %w", np.Provider, err)
	}
	if conflict := ipam.IsHoldConflict(err) ||
		(errors.Is(err, ipam.ErrAllocated) && pod.Annotations[Key(np.Provider, KeyAllocated)] == "true"); conflict {
		// Another pod (or a record, a Vip, a port) uses the address the
		// pod was annotated with, or one found in use outside the claims
		// that the pod asks for: a person must act (docs/contract.md
		// §15; a static address another claim holds stays E8). The pod is retried, so it gets the
		// address once the other holder goes, but it does not hold back
		// its shard's first pass.
		t.warn(pod, ReasonAddressConflict, err)
		return queue.Waiting(retryWith(err, retryFull))
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
