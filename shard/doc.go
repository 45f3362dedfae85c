// Package shard maps pod keys to S virtual shards and decides which replica
// runs each shard.
//
// A key's shard is xxhash64(key) % S (Of). The key is the caller's: the
// pod path queues a pod under "namespace/name", except a KubeVirt launcher
// pod (owned by a kubevirt.io VirtualMachineInstance) with --keep-vm-ip,
// which is queued under its VM's key "namespace/<vm>" (the VMI's name is
// the VM's), so that every launcher pod of one VM, during a migration or a
// re-creation, is reconciled by one shard under one key; see
// controller.Config.PodKey and reconcile.PodKey. A key derives from the
// pod's own fields only, so every replica computes the same. Coordination uses
// three kinds of objects in one namespace, so its steady-state write rate
// does not depend on S or on the number of pods:
//   - a member Lease per replica (<name>-member-<identity>), renewed every
//     RenewInterval; its annotations say which shards the replica holds
//     (running or draining) and which table generation it processed;
//   - the client-go leader election Lease (<name>-leader);
//   - one ConfigMap (<name>-assignment) holding the whole table: per shard
//     the owner, an epoch, and the members still pending on it. Only the
//     leader writes it, and only when membership or a handoff changes.
//
// The Planner is the deterministic core: Step(table, members, now) returns
// the next table. It has no goroutines and reads no clock. It gives each
// ready member S/N shards with a sticky rendezvous hash, so one join or
// leave among N members moves about S/N shards. The Coordinator is the
// concurrent shell: it renews the member Lease, campaigns, runs the Planner
// when leading, and starts and stops shards through a Holder.
//
// Guarantees:
//   - a shard's epoch grows by one on every change of owner and never
//     decreases; (shard, epoch) names one ownership term;
//   - handoff: a new owner starts only once every member that may still run
//     the shard has acknowledged the release (reported a table generation at
//     least the move's, without the shard among its held ones; a member
//     already pending before the move, at least the move it was pending
//     on), or once that member's Lease has not changed for LeaseDuration on
//     the leader's clock;
//   - a replica that cannot renew its member Lease for RenewDeadline
//     abandons every shard by itself; since RenewDeadline < LeaseDuration and
//     both are measured from the renewal's send on one side and its
//     observation on the other, the abandon comes first, given bounded clock
//     rate skew (the same assumption as client-go's election);
//   - a member that shuts down (Run's context ends) marks itself leaving,
//     hands its shards over with acknowledgements, releases leadership and
//     deletes its Lease, so a rolling update waits for no lease to expire;
//   - a leader that sees a member expire re-reads its Lease before acting,
//     so a stalled watch alone does not hand a live member's shards away;
//   - a replica that starts leading holds its first assignment back, for
//     at most FirstAssignmentWait, while members the table last saw ready
//     have no member Lease at all (every replica was restarted and the
//     others are still loading their caches), so their shards are not
//     given to it and moved back a moment later. An existing Lease, even expired, is not
//     waited for: a dead replica's shards move as soon as without it; nor
//     does a leader that is itself shutting down wait (it gets no shard
//     either way), so that the last replica of a full stop exits at once;
//   - a leader's own writes (LeaderTerm) stop once its last renewal of the
//     leader Lease was sent longer than the election's renew deadline ago,
//     whatever its elector still believes, so a leader resumed after a
//     pause is refused before its elector notices it lost the Lease;
//   - a leader that gives the Lease up releases it only if the Lease still
//     names its own term: client-go decides to release from the record it
//     observed before a pause, and would otherwise clear a successor's
//     Lease (electionLock).
//
// Not guaranteed:
//   - fencing. Like client-go's leader election this package cannot stop a
//     paused process (a long GC pause, a frozen VM) from writing after its
//     term ended. The Northbound epoch fence does that: the new owner
//     records its epoch and every transaction of the shard is conditional on
//     it (see package ovn).
//   - that reconciler code honours cancellation: an abandoned shard's
//     context is cancelled, but a reconciler that ignores it keeps running
//     until it returns.
//   - balance beyond whole shards: with S not a multiple of N, some members
//     run one shard more than others.
//   - garbage collection of member Leases of replicas that crashed and never
//     came back; they expire and are ignored.
package shard
