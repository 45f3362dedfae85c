// Package controller is the sharded runtime that reconcilers plug into: the
// shared informers, one queue and a few workers per owned shard, and the
// shard membership of package shard.
//
// The main program builds a Config, calls New and runs the result:
//
//	ctrl, err := controller.New(controller.Config{
//		Kubeconfig:      path,        // or RESTConfig; empty: in-cluster
//		Identity:        podName,     // stable: a StatefulSet pod name
//		Namespace:       podNamespace, // holds the Leases and the assignment
//		Shards:          64,          // S, fixed for a cluster
//		WorkersPerShard: 2,
//		LeaseDuration:   15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
//		NewReconciler:   func(sc controller.ShardContext) (controller.Reconciler, error) { ... },
//		ReadyChecks:     []func() error{nb.Ready},
//		Registerer:      prometheus.DefaultRegisterer,
//	})
//	...
//	err = ctrl.Run(ctx) // ctx ends on SIGTERM; Run hands the shards over, then returns
//
// and serves ctrl.Healthy (liveness: /healthz), ctrl.Ready (readiness:
// /readyz) and the registry (/metrics). Every field has a documented
// default; New returns an error for a missing identity, namespace or
// factory, or for lease timings that client-go's election would reject
// (LeaseDuration > RenewDeadline > 1.2 x RetryPeriod).
//
// Per shard term (a shard and its epoch) the runtime calls NewReconciler,
// then OnAcquire if the Reconciler implements ShardHooks (record the epoch
// as the Northbound fence there), seeds the queue with the shard's pods from
// the cache and starts the workers. On a handoff it stops routing keys to
// the queue, lets the backlog run for up to DrainTimeout, waits for the keys
// in flight, calls OnRelease (flush the batch there) and only then lets the
// shard be acknowledged to the next owner.
//
// Guarantees:
//   - every pod event is routed by shard.Of of its key ("namespace/name",
//     or Config.PodKey's, which gives the launcher pods of one KubeVirt VM
//     the VM's key) to the queue of its shard, and dropped unless this
//     replica runs that shard; seeding queues each key once; Enqueue does
//     the same for keys a caller derives from other objects (a VM's);
//   - a key is never reconciled by two workers of a replica at once, and,
//     through the handoff protocol, not by two replicas holding valid terms;
//   - OnAcquire runs before the first Reconcile of a term, OnRelease after
//     its last;
//   - Run returns only after its shards were handed over (or abandoned at
//     ShutdownTimeout) and its goroutines ended.
//
// Not guaranteed:
//   - fencing against a paused process: client-go's leader election does not
//     fence and neither does the handoff; the Northbound epoch fence (package
//     ovn) rejects a stale term's writes;
//   - that keys of deleted pods still queued or delayed on the old owner
//     reach the new one: the new owner seeds from the cache, which no longer
//     has them, so orphans are the garbage collector's work;
//   - pod fields beyond those TrimPod keeps.
package controller
