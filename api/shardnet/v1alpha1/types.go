package v1alpha1

import (
	"encoding/hex"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels every claim carries, so that an informer or a list can select the
// claims of one subnet or one owner without reading them all.
const (
	LabelSubnet = "shardnet.io/subnet"
	LabelFamily = "shardnet.io/family"
)

// Owner kinds of a claim.
const (
	OwnerPod            = "Pod"
	OwnerStatefulSetPod = "StatefulSetPod"
	OwnerVM             = "VirtualMachine"
	OwnerVip            = "Vip"
)

// AddressClaim says that one address of one subnet belongs to one owner. It
// is cluster scoped and named by ClaimName(subnet, address); create it before
// the address is used anywhere else, delete it (with a UID precondition)
// when the address is released.
//
// +genclient
// +genclient:nonNamespaced
// +genclient:noStatus
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=aclaim
// +kubebuilder:printcolumn:name="Subnet",type=string,JSONPath=`.spec.subnet`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.spec.address`
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.spec.owner.name`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
type AddressClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AddressClaimSpec `json:"spec"`
}

// AddressClaimSpec is what a claim records: enough to restore an allocator
// and to tell whether its owner still exists.
type AddressClaimSpec struct {
	// Subnet is the name of the Subnet the address belongs to.
	// +kubebuilder:validation:MinLength=1
	Subnet string `json:"subnet"`
	// Address is the claimed address in canonical form.
	// +kubebuilder:validation:MinLength=2
	Address string `json:"address"`
	// Provider is the network provider the address was given on ("ovn" for
	// the default network).
	Provider string `json:"provider,omitempty"`
	// MAC is the MAC address given with the address, if any.
	MAC string `json:"mac,omitempty"`
	// NodeName is the owner's node when it has one.
	NodeName string `json:"nodeName,omitempty"`
	// Owner identifies who holds the address.
	Owner ClaimOwner `json:"owner"`
}

// ClaimOwner identifies the holder of a claim. For a pod, UID is the pod's
// UID; for a retained owner (StatefulSet pod, VM) it is the UID of the
// object the address is retained for, so a re-created pod can take its
// address back.
type ClaimOwner struct {
	// +kubebuilder:validation:Enum=Pod;StatefulSetPod;VirtualMachine;Vip
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
}

// AddressClaimList is a list of AddressClaims.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type AddressClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []AddressClaim `json:"items"`
}

// ClaimName is the name of the claim for addr in subnet: the subnet name, a
// dot, and the address. An IPv4 address is written dotted; an IPv6 address
// as its 32 hex digits, since the text form's colons (and a leading or
// trailing "::") are not allowed in an object name. The address part is
// recognisable from the right, so distinct pairs give distinct names.
func ClaimName(subnet string, addr netip.Addr) string {
	var buf [80]byte
	return string(AppendClaimName(buf[:0], subnet, addr))
}

// AppendClaimName appends ClaimName(subnet, addr) to b: a caller that
// looks many names up (a cache read per address) builds each in one
// buffer.
func AppendClaimName(b []byte, subnet string, addr netip.Addr) []byte {
	addr = addr.Unmap()
	b = append(append(b, subnet...), '.')
	if addr.Is4() {
		return addr.AppendTo(b)
	}
	a := addr.As16()
	return hex.AppendEncode(b, a[:])
}
