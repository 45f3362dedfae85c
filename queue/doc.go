// Package queue holds the typed per-shard work queues, built on client-go's
// workqueue.
//
// Guarantees:
//   - duplicates collapse: a key added again before a worker took it is
//     queued once;
//   - a key is never processed by two workers at once; a key added while in
//     flight is processed again after the current run;
//   - a failing key comes back with per-key exponential backoff (BaseDelay
//     doubling up to MaxDelay), and all retries of a shard share one token
//     bucket (QPS, Burst); RetryAfter re-adds without counting a failure,
//     Permanent drops the key until a new event adds it; a panicking handler
//     counts as a failure and does not take the worker down;
//   - AddAfter delays a key (grace periods);
//   - Drain stops taking keys, finishes the backlog until its context is
//     done, then drops the rest, and returns only once nothing is in flight;
//     Stop drops the backlog at once and also waits for the keys in flight;
//   - the standard workqueue metrics (component-base names) are exported
//     with a "shard" label when a Metrics is given.
//
// Not guaranteed:
//   - keys delayed by AddAfter or a backoff are not kept across Drain or
//     Stop: the next owner of the shard seeds its queue from the informer
//     cache, and keys of objects that are already gone from the cache are
//     left to the reconciler's garbage collection;
//   - order: keys come out in FIFO order of their first add, but retries and
//     delayed keys interleave freely.
package queue
