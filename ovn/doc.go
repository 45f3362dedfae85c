// Package ovn is shardnet's OVN Northbound client: the connection and its
// cache, the per-shard batcher with its epoch fence, and typed op builders
// for the rows the reconciler writes. The generated models are in package
// nbdb.
//
// # Client
//
// NewClient connects to tcp:, ssl: or unix: remotes; with several remotes
// and LeaderOnly it talks only to the RAFT leader. It reconnects with
// exponential backoff for as long as it lives, and after a reconnect or a
// leader change it rebuilds its cache before Ready reports healthy again.
// The cache holds only the tables and columns the reconciler reads; a
// switch's or router's reference sets (ports, routes, NAT) are not cached,
// because each added port would otherwise copy the whole set. Reads go
// through schema and client indexes (port by name, ports by
// external_ids:pod, routes/policies/NAT by router and key column or by pod),
// never a scan per pod.
//
// The connection's JSON-RPC codec is a patched copy of cenkalti/rpc2
// (third_party/rpc2, through go.mod's replace): after a message over
// 1 MiB, the reply to the first monitor being the one that matters, it
// reads on with a new decoder, so that the buffer that reply needed (about
// 16 MB at 50,000 ports) is not kept for the life of the connection.
//
// libovsdb itself is a patched copy too (third_party/libovsdb): its cache
// keeps the one row of an index value inline, where upstream makes a set
// per value. Every port has two index values (its name and its pod), and
// those sets were about 400 bytes per port, 20 MB per replica at 50,000
// ports (BenchmarkIndexSetsRetained). And it drops each row of the first
// monitor's reply, decoded, once the row is in the cache, instead of
// holding the whole reply until the last row (BenchmarkMonitorLoadPeak).
// A lookup by one indexed column reads that index without a condition
// (lookupBy, through the copy's RowsByIndexValue): upstream's search built
// a model from the condition, intersected sets and read every candidate
// again by reflection, 5,024 bytes for a port's two lookups against 1,272
// (BenchmarkPortLookupAlloc), on every reconcile.
//
// # Batcher
//
// A Batcher collects the op lists that many goroutines Submit, one request
// each, and commits them as one transaction after a short linger or at an op
// cap. It guarantees:
//   - each request is answered exactly once, with its own results and the
//     UUIDs of the rows it inserted, or with an error;
//   - a request's ops commit atomically, all or none;
//   - a request whose op fails is failed alone (*RequestError) and the rest
//     of its batch commits; a commit error that names no op (a unique index
//     or referential integrity violation) is isolated by splitting the batch
//     in halves;
//   - every transaction is checked with ovsdb.CheckOperationResults;
//   - with a Fence, every transaction starts with a wait that aborts it
//     unless the shard's epoch recorded in NB_Global.external_ids equals the
//     batcher's; a stale batch changes nothing and every request in it gets
//     a *StaleEpochError (the batch is not split: all are equally stale);
//   - Close commits what was submitted before it and waits for it.
//
// To make batches cheap for the server, the batcher merges set-insert
// mutations of one row by UUID (a switch's ports) into one mutation at the
// end of the transaction, and keeps one copy of identical existence waits.
// The merged insert runs after the request's other ops; requests built from
// this package's builders do not notice.
//
// It does not guarantee:
//   - that a request whose reply was lost (the connection dropped, the
//     leader died) did not commit: such requests get ErrOutcomeUnknown, and
//     the caller must rebuild its ops from the cache once the client is
//     Ready and submit again. The builders make that retry safe: they read
//     the cache, so a port that was in fact created yields an update or no
//     ops at all, and unique indexes (port names) make a duplicate insert
//     fail instead of landing twice;
//   - that a request whose ctx ended after it was sent did not commit;
//   - ordering between requests in one batch beyond "all of a batch or
//     none of a request": callers that need order wait for the first result;
//   - fencing of writes that bypass a fenced Batcher (Client.Transact).
//
// # Fence
//
// TakeOver(shard, epoch) records a shard's new owner epoch with a
// compare-and-swap on NB_Global.external_ids, so concurrent take-overs of
// other shards are not lost, and refuses to lower an epoch. Epoch uniqueness
// per owner is the caller's (package shard's) job.
//
// # Op builders
//
// The Ensure* builders read the cache and return the ops that make a row
// match its spec: an insert (with the parent's reference and a wait that the
// parent still exists) when the row is missing, only the changed columns
// otherwise, and nothing when it already matches. Map columns shared with
// other writers (external_ids, options, other_config) are changed key by key
// with mutations, never rewritten. Delete* builders return nothing for rows
// the cache does not have. A builder's result is valid for one request: it
// reflects the cache at the time it ran.
package ovn
