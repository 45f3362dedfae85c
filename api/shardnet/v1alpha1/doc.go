// Package v1alpha1 holds shardnet's own API: the AddressClaim, the durable
// record that one address of one subnet belongs to one owner.
//
// A claim is what makes an allocation final. Its name is derived from the
// subnet and the address alone (see ClaimName), so the API server's
// uniqueness of names is the arbiter between replicas: whoever creates the
// claim first holds the address, and a create that fails with AlreadyExists
// means the address is taken. Nothing else is needed to keep two shards,
// replicas or a split brain from handing one address to two pods.
//
// +kubebuilder:object:generate=true
// +groupName=shardnet.io
package v1alpha1
