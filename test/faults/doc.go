// Package faults is shardnet's fault suite: separate `shardnet controller`
// processes against a real kube-apiserver, kwok and ovsdb-server (see
// test/harness), a steady create/delete load of pods, and one fault per
// case — a replica killed, the leader killed, a replica stopped past its
// lease and resumed (split brain), the Northbound server killed and
// restarted — with an invariant checker that reads the servers, not
// shardnet's metrics:
//
//	(a) no two live pods of a subnet are annotated with one address, and no
//	    two Northbound ports carry one address;
//	(b) every live pod bound to a node is allocated and routed, with exactly
//	    one port, carrying exactly its annotated MAC and address, on its
//	    annotated switch, and its claim and IP record say the same;
//	(c) no port, claim or IP record is left for a pod that is gone;
//	(d) every Subnet's status counters equal the claims in it.
//
// (a) is sampled during the load and the fault; (b)–(d) are checked once
// the cluster is quiet again. The checker is itself tested: each invariant
// is shown to fail on a violation written straight into the servers.
//
// Each case runs on a cluster of its own (kube-apiserver, kwok, a
// standalone ovsdb-server, three replicas with 4 s leases) and reports how
// long the cluster took to be whole again, the outage (the longest time a
// shard had pods waiting without allocating any), the allocation delay of
// the pods created during the fault, how many pods were created and
// deleted during it, and each invariant's count.
//
// The suite takes about ten minutes and is skipped unless
// SHARDNET_FAULTS=1 is set: run it with `make test-faults`. It prints its
// report table in the test log and writes it to $SHARDNET_FAULTS_REPORT,
// or shardnet-faults-report.md in the system's temp dir; the replicas'
// logs of each case are kept under shardnet-faults-logs there.
// SHARDNET_FAULTS_PODS, SHARDNET_FAULTS_SECONDS and SHARDNET_FAULTS_SEED
// change the load (1,500 pods over 60 s by default) and its random seed.
package faults
