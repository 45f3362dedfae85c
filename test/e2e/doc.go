// Package e2e holds shardnet's end-to-end suites: several controller
// replicas in one process against the real servers of test/harness
// (kube-apiserver, etcd, kwok, ovsdb-server).
package e2e
