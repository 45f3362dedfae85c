// Package v1 holds the subset of kube-ovn's kubeovn.io/v1 API that the pod
// path reads and writes: Subnet, IPPool, IP, Vip, Vlan and Vpc. Field names
// and JSON tags follow kube-ovn, so objects written for kube-ovn read
// unchanged.
//
// It does not model every kube-ovn field. The CRDs generated from these types
// (deploy/kubeovn-crds, opt-in, for clusters without kube-ovn) still keep
// every field kube-ovn writes: each Spec and Status, each nested type that
// lists fewer fields than kube-ovn's (StaticRoute) and the shared Condition
// are marked +kubebuilder:pruning:PreserveUnknownFields, so the API server
// does not prune what these types leave out. On a cluster that runs kube-ovn,
// kube-ovn's own CRDs stay installed; shardnet's are never applied there.
//
// +kubebuilder:object:generate=true
// +groupName=kubeovn.io
package v1
