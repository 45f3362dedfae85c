package ovn

import "time"

// Outcome classifies one OVSDB transaction sent by a Batcher.
type Outcome string

const (
	// OutcomeCommitted: the transaction committed.
	OutcomeCommitted Outcome = "committed"
	// OutcomeStaleEpoch: the fence failed; nothing changed.
	OutcomeStaleEpoch Outcome = "stale_epoch"
	// OutcomeRequestError: an op failed; the transaction aborted and the
	// batcher retries without the request that owns the op.
	OutcomeRequestError Outcome = "request_error"
	// OutcomeCommitError: the server refused the commit (constraint or
	// referential integrity); the batcher splits the batch.
	OutcomeCommitError Outcome = "commit_error"
	// OutcomeUnknown: the reply was lost; callers get ErrOutcomeUnknown.
	OutcomeUnknown Outcome = "unknown"
	// OutcomeNotSent: the transaction could not be sent (not ready, or
	// refused by client-side validation).
	OutcomeNotSent Outcome = "not_sent"
)

// Metrics receives the batcher's measurements. It is declared here so that
// this package does not import Prometheus; the metrics package adapts it.
// Implementations must be safe for concurrent use and cheap: they are called
// on the commit path.
type Metrics interface {
	// ObserveTransaction is called once per transaction the batcher sends,
	// with the number of requests and ops it carried (the fence included)
	// and how long the server took to answer.
	ObserveTransaction(shard int, requests, ops int, latency time.Duration, outcome Outcome)
	// ObserveSplit is called each time a failed batch is split in two to
	// find the request the server's commit error belongs to.
	ObserveSplit(shard int)
}

// NopMetrics discards every measurement.
type NopMetrics struct{}

var _ Metrics = NopMetrics{}

func (NopMetrics) ObserveTransaction(int, int, int, time.Duration, Outcome) {}
func (NopMetrics) ObserveSplit(int)                                         {}
