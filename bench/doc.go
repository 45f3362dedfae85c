// Package bench measures shardnet end to end against the ceilings of the
// machine it runs on, all in one run so that the figures are ratios of
// numbers measured side by side (these machines are shared and noisy).
//
// By default one run (Run) brings up, for each scenario, a fresh kube-apiserver with
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
//   - raw-half and shardnet-3-half, back to back: the raw writer, then 3
//     replicas again, with the pods created at half the rate the 3-replica
//     scenario reached, for the create-to-routed latency below the ceiling:
//     shardnet's p99 is reported against a 250 ms goal and as a ratio over
//     the raw writer's p99 at the same rate, the latency of the same API
//     writes with no logic;
//   - raw-90 and shardnet-3-90, back to back: the same pair paced at 90%
//     of the 3-replica rate, for the p99 near the ceiling (reported, no
//     goal; the ceiling is shardnet's own rate, since at 90% of the raw
//     writer's the replicas would be past theirs whenever shardnet/raw is
//     below 0.9, and the p99 would measure the backlog);
//   - raw-attach and shardnet-3-attach, back to back: the raw ceiling and
//     3 replicas again with every pod carrying one OVN attachment (multus's
//     NetworkAttachmentDefinition CRD installed, a NAD of type kube-ovn and
//     a subnet of its provider), so two claims, two IP records and one
//     patch per pod; a pod counts once both networks are routed. Their
//     ratio is reported, with no threshold;
//   - shardnet-3-ports: 3 replicas again with every pod asking for port
//     security, two VIPs of its own and a security group whose port group
//     the bench makes first, as kube-ovn's SecurityGroup controller would:
//     its pods/s over shardnet-3's is reported (no threshold), with API
//     writes, Northbound transactions and Northbound requests per pod
//     (shardnet_nb_batch_requests: a reconcile that writes sends one
//     request with all of the pod's rows).
//
// Once the 3-replica scenario's pods are routed and kwok has marked them
// all Running, every replica is stopped at once (SIGTERM) and started again under
// the same identity, Restarts times, and each restart is timed to steady
// state: every shard owned and synced (each pod it was seeded with
// reconciled since the start, shardnet_shards_synced) and no key queued.
// After each restart the restarts' ceiling is measured (both from
// collected heaps of the API server and the bench): as many plain
// clients as replicas, each a process of its own started from the
// bench's binary (ReloadClientCommand) as a restarted replica is, loading
// the pods, claims and IP records at once, as the replicas decode them;
// then the same clients in the bench's own process, whose start is paid
// and whose memory is grown already, reported beside it. A fresh process
// faults in every page it grows into, at 9 µs a page on these machines
// (decision 0009). The ratio is the median restart over the
// median ceiling: at 1,000 pods each takes a fraction of a second, and a
// collection of the API server falling into one of them doubles it. Each
// restart reports the CPU the replicas and the servers used to get there,
// with the replicas' kernel CPU and page faults, and each ceiling the CPU
// and page faults of its clients and the servers' CPU. With
// Profiles, one more restart comes first, profiled: reported, and left
// out of the ratios, since profiling took a quarter more of the
// replicas' CPU.
// Peak RSS is reported for the routing and for each restart, against the
// 400 MiB goal at 50,000 pods, with the live heap the replicas' last
// collection kept (go_gc_heap_live_bytes) at the same moments; the
// replicas run with deploy/base's --memory-limit. With Profiles, pprof heap profiles of the replicas and
// CPU profiles of the replicas and the API server over the create phases
// of the raw and 3-replica scenarios and over the first restart go to
// Out/pprof, and every replica's log to Out/logs with the API server's
// and etcd's (<scenario>-kube-apiserver.log, <scenario>-etcd.log), so that a missed
// goal comes with where the time and memory went. Scenarios selects a
// subset (for the 50,000-pod run, say).
//
// It then runs the IPAM and Northbound micro-benchmarks, and writes a JSON
// result, a Markdown report and SVG plots: pods done over time, and the
// create-to-done distribution on a log time axis with round ticks (1, 2
// and 5 times a power of ten: 20ms, 50ms, ... 1s, 2s), so that a p50 of
// tens of milliseconds and a tail of seconds both read. Every scenario
// also reports its longest stall: the longest time no pod became done
// while created pods waited (a plateau of the timeline, from the pods'
// own times), beside the raw ceiling's in the same run, so that a stall
// of the API server is told from one of shardnet, with how fast the
// bench's own creates returned during it against their rate over the
// creates (creates that stalled too were the API server's), and the
// watches the API server closed during the create phase as too slow to
// read (apiserver_terminated_watchers_total, by resource): the bench sees
// a pod done through its own watch, so a closed watch of its shows as a
// plateau however fast the replicas were. The bench's pod watches, the
// observer's and the raw writer's, outlive an early end by the API
// server as the replicas' do (watch.Resume), so client-go's backoff after
// one is not counted against either scenario. That watch is over protobuf on
// a connection of its own, as a cluster's kubelets watch pods (the API
// server encodes pod events as protobuf there whatever the replicas do). Where a pod's time goes
// starts with the bench's own create requests and its watch's delay after
// them, then the replicas' queue wait and reconcile stages. Check compares
// a result's ratios (never absolute times) with committed thresholds:
// lower bounds of the throughput ratios, upper bounds of the half-rate p99
// over the raw writer's and of the median restart over the ceiling. With
// Config.Rounds the full-speed scenarios run that many times, one after
// the other in the same order, and so does the half-rate pair, and those
// ratios are the medians of each round's: each scenario is some ten
// seconds at 1,000 pods, and one of them slowed by the shared machine
// moved a single run's ratio by a third (make bench-ci runs three
// rounds).
//
// During every scenario a progress line goes to ProgressLines every
// ProgressInterval and once at its end: the time elapsed, the pods
// created, allocated and routed, and the rate now and on average.
//
// With Kubeconfig, a run load-tests an existing cluster, with kwok and
// shardnet installed there, and starts no server or replica of its own:
//
//   - raw: plain pod creates, host-network pods (which shardnet leaves
//     alone) timed from create to seen by the bench's watch: the
//     cluster's ceiling;
//   - shardnet-installed: pods timed from create to routed (the
//     ovn.kubernetes.io/allocated and routed annotations) by the shardnet
//     installed there, on the cluster's default subnet or on Subnet.
//
// The other scenarios start replicas of their own or install
// cluster-scoped objects, and are skipped with the reason printed. The run
// creates its pods only in namespaces it creates,
// shardnet-bench-<run id>-<scenario>, with a service account of its own,
// on 5 kwok nodes of its own, shardnet-bench-<run id>-node-<i> (tainted
// so that the cluster's workloads stay off them), all labelled
// LabelRun=<run id>; the raw scenario's namespace allows Pod Security's
// privileged level, which host-network pods need. It checks that kwok runs: the nodes carry
// kwok's annotation (kwok.x-k8s.io/node=fake) and must turn Ready within
// KwokTimeout, else the run fails saying whether kwok's CRDs are installed
// and what kwok must manage. At the end, on error and on interrupt, it
// deletes everything it created (pods at once, then service accounts,
// namespaces and nodes) and waits until it is gone, unless Keep.
package bench
