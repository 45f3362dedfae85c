// Package queue holds the typed per-shard work queues: duplicates collapse,
// a key is never processed by two workers at once, failures come back with
// per-item exponential backoff, and a queue drains and stops when its shard
// is released.
package queue
