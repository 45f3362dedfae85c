package ovn

import (
	"errors"
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

var (
	// ErrStaleEpoch is matched (errors.Is) by every error that reports a
	// write refused because the shard's epoch recorded in the Northbound
	// database is not the caller's. Such a write changed nothing and must not
	// be retried with the same epoch: the shard has a newer owner.
	ErrStaleEpoch = errors.New("ovn: shard epoch is stale")

	// ErrOutcomeUnknown is matched by errors from a transaction whose reply
	// was lost (the connection dropped or the leader changed while it was in
	// flight). The transaction may or may not have committed; the caller
	// should rebuild its ops from the cache once the client is ready again
	// and retry. Op builders in this package produce ops from the cache, so
	// that a retry after a commit does not apply the change twice.
	ErrOutcomeUnknown = errors.New("ovn: transaction outcome unknown")

	// ErrClosed is returned by Batcher.Submit after Close has begun.
	ErrClosed = errors.New("ovn: batcher closed")

	// ErrNotReady is returned when the client is not connected to a
	// (leader) server with a current cache.
	ErrNotReady = errors.New("ovn: northbound client not ready")

	// ErrNotFound is returned by op builders when a row they must refer to
	// (a logical switch for a port, a router for a route) is not in the
	// cache.
	ErrNotFound = errors.New("ovn: row not found")
)

// StaleEpochError is the typed form of ErrStaleEpoch.
type StaleEpochError struct {
	Shard int
	// Epoch is the epoch the caller wrote with.
	Epoch uint64
	// Recorded is the epoch found in the database when known (TakeOver),
	// zero when the server only reported that the fence did not hold.
	Recorded uint64
}

func (e *StaleEpochError) Error() string {
	if e.Shard == LeaderShard {
		if e.Recorded != 0 {
			return fmt.Sprintf("ovn: leader term %d is stale (recorded %d)", e.Epoch, e.Recorded)
		}
		return fmt.Sprintf("ovn: leader term %d is stale", e.Epoch)
	}
	if e.Recorded != 0 {
		return fmt.Sprintf("ovn: shard %d epoch %d is stale (recorded %d)", e.Shard, e.Epoch, e.Recorded)
	}
	return fmt.Sprintf("ovn: shard %d epoch %d is stale", e.Shard, e.Epoch)
}

// Is makes errors.Is(err, ErrStaleEpoch) true.
func (e *StaleEpochError) Is(target error) bool { return target == ErrStaleEpoch }

// RequestError reports that one of the request's own operations failed. The
// request changed nothing (its transaction aborted), and other requests of the
// same batch were committed without it. Retrying the same ops will fail the
// same way unless the database changes; callers should treat it as a bad
// request, not a transient error.
type RequestError struct {
	// Index is the position of the failing op in the request, or -1 when the
	// server reported the failure at commit (a constraint or referential
	// integrity violation), which cannot be pinned to one op.
	Index int
	// Op is the failing op when Index >= 0.
	Op *ovsdb.Operation
	// Err is the server's error (an ovsdb.OperationError).
	Err error
}

func (e *RequestError) Error() string {
	if e.Index >= 0 && e.Op != nil {
		return fmt.Sprintf("ovn: request op %d (%s %s) failed: %v", e.Index, e.Op.Op, e.Op.Table, e.Err)
	}
	return fmt.Sprintf("ovn: request failed at commit: %v", e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }
