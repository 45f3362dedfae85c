// Package bench measures shardnet end to end against the ceilings of the
// machine it runs on, all in one run so that the figures are ratios of
// numbers measured side by side (these machines are shared and noisy).
//
// One run (Run) brings up, for each scenario, a fresh kube-apiserver with
// etcd, kwok and ovsdb-server from test/harness, creates N kwok pods at full
// speed and times them from create to annotated:
//
//   - raw: a trivial in-process writer doing exactly shardnet's API writes
//     per pod (claim create, IP record create when enabled, one pod merge
//     patch) with no logic and no Northbound: the API server's ceiling;
//   - shardnet with 1 replica, then with 3 replicas, each a separate
//     `shardnet controller` process (so RSS and CPU are its own);
//   - baseline: shardnet with one shard and batching off (one Northbound
//     transaction per pod), the shape of kube-ovn's controller;
//   - shardnet-3-half: 3 replicas again, with the pods created at half the
//     rate the 3-replica scenario reached, for the create-to-routed latency
//     below the ceiling (its p99 is reported against a 250 ms goal);
//   - raw-attach and shardnet-3-attach, back to back: the raw ceiling and
//     3 replicas again with every pod carrying one OVN attachment (multus's
//     NetworkAttachmentDefinition CRD installed, a NAD of type kube-ovn and
//     a subnet of its provider), so two claims, two IP records and one
//     patch per pod; a pod counts once both networks are routed. Their
//     ratio is reported, with no threshold.
//
// Once the 3-replica scenario's pods are routed and kwok has marked them
// all Running, every replica is stopped (SIGTERM) and started again under
// the same identity, Restarts times, and each restart is timed to steady
// state: every shard owned and synced (each pod it was seeded with
// reconciled since the start, shardnet_shards_synced) and no key queued.
// Peak RSS is reported for the routing and for each restart, against the
// 600 MiB goal at 50,000 pods; the replicas run with deploy/base's
// --memory-limit. With Profiles, pprof heap profiles of the replicas and
// CPU profiles of the replicas and the API server over the first restart
// go to Out/pprof, and every replica's log to Out/logs, so that a missed
// goal comes with where the time and memory went. Scenarios selects a
// subset (for the 50,000-pod run, say).
//
// It then runs the IPAM and Northbound micro-benchmarks, and writes a JSON
// result, a Markdown report and SVG plots. Check compares a result's ratios
// (never absolute times) with committed thresholds.
package bench
