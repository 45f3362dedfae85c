// Package v1 holds the subset of kube-ovn's kubeovn.io/v1 API that the pod
// path reads and writes: Subnet, IPPool, IP, Vip, Vlan and Vpc. Field names
// and JSON tags follow kube-ovn, so objects written for kube-ovn read
// unchanged.
//
// It does not model every kube-ovn field. The CRDs generated from these types
// (deploy/crds) are structural, so the API server prunes fields they do not
// list; a cluster that also runs other kube-ovn components should install
// kube-ovn's own CRDs, which are a superset of these.
//
// +kubebuilder:object:generate=true
// +groupName=kubeovn.io
package v1
