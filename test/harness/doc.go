// Package harness starts the real servers that shardnet's end-to-end tests
// run against, on loopback only, each in a temporary folder of its own:
//
//   - etcd and kube-apiserver (RBAC on, a self-signed serving certificate,
//     service-account keys, an admin token and kubeconfig), with shardnet's
//     CRDs (deploy/base/crds and the opt-in deploy/kubeovn-crds, or those a
//     test names: kube-ovn's own, test/crds/kubeovn) installed and
//     Established: StartKube, StartKubeWithCRDs; either server can be
//     stopped and started again on its port and data while the other runs
//     ((*Kube).StopAPIServer and StartAPIServer, StopEtcd and StartEtcd),
//     for fault tests;
//   - kwok, managing fake nodes that carry the kwok annotation, with a pod
//     CIDR (198.18.0.0/15, a benchmarking range) that cannot overlap the
//     subnets tests use: (*Kube).StartKwok and (*Kube).CreateNode;
//   - Debian's ovsdb-server with the pinned OVN Northbound schema,
//     standalone (StartNB) or as a RAFT cluster (StartNBCluster);
//   - CPU placement for benchmarks: etcd, kube-apiserver and kwok on CPUs
//     of their own (KubeOptions.CPUs), this process and what it starts on
//     others (PinProcess, StartOn).
//
// Every start waits for readiness and registers cleanup with the test, which
// stops only the processes it started. The etcd, kube-apiserver and kwok
// binaries come from `make testbin` (a cache folder, $SHARDNET_TESTBIN or
// ~/.cache/shardnet/testbin); ovsdb-server comes from Debian's ovn-central
// package. A test whose binary is missing fails and says which make target
// or package provides it; nothing is skipped.
//
// The harness is for tests and benchmarks. It does not tune the servers for
// durability: etcd runs with --unsafe-no-fsync.
package harness
