package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Protocols a Subnet may carry.
const (
	ProtocolIPv4 = "IPv4"
	ProtocolIPv6 = "IPv6"
	ProtocolDual = "Dual"
)

// Gateway types of a Subnet.
const (
	GatewayTypeDistributed = "distributed"
	GatewayTypeCentralized = "centralized"
)

// Subnet is an address range with its logical switch. It is cluster scoped.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=subnet
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="Vpc",type=string,JSONPath=`.spec.vpc`
// +kubebuilder:printcolumn:name="Protocol",type=string,JSONPath=`.spec.protocol`
// +kubebuilder:printcolumn:name="CIDR",type=string,JSONPath=`.spec.cidrBlock`
// +kubebuilder:printcolumn:name="Default",type=boolean,JSONPath=`.spec.default`
// +kubebuilder:printcolumn:name="V4Used",type=number,JSONPath=`.status.v4usingIPs`
// +kubebuilder:printcolumn:name="V4Available",type=number,JSONPath=`.status.v4availableIPs`
// +kubebuilder:printcolumn:name="V6Used",type=number,JSONPath=`.status.v6usingIPs`
// +kubebuilder:printcolumn:name="V6Available",type=number,JSONPath=`.status.v6availableIPs`
type Subnet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SubnetSpec   `json:"spec"`
	Status SubnetStatus `json:"status,omitempty"`
}

// SubnetSpec is what a user asks of a Subnet.
//
// +kubebuilder:pruning:PreserveUnknownFields
type SubnetSpec struct {
	// Default marks the subnet pods fall back to when nothing else selects one.
	Default bool `json:"default,omitempty"`
	// Vpc is the VPC whose router the subnet attaches to; empty means the
	// default VPC (ovn-cluster).
	Vpc string `json:"vpc,omitempty"`
	// Protocol is IPv4, IPv6 or Dual; derived from CIDRBlock when empty.
	// +kubebuilder:validation:Enum=IPv4;IPv6;Dual;""
	Protocol string `json:"protocol,omitempty"`
	// Provider is "ovn" (or empty) for the default network, or the provider
	// name of a network attachment.
	Provider string `json:"provider,omitempty"`
	// CIDRBlock is one CIDR, or an IPv4 and an IPv6 CIDR separated by a comma.
	// +kubebuilder:validation:Pattern=`^([0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*/[0-9]{1,3})(,([0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*/[0-9]{1,3}))?$`
	CIDRBlock string `json:"cidrBlock"`
	// Gateway is the gateway address (one per family, comma separated);
	// the first usable address of each CIDR when empty.
	Gateway string `json:"gateway,omitempty"`
	// ExcludeIps are addresses and "a..b" ranges never handed out
	// dynamically. The gateway is always excluded.
	ExcludeIps []string `json:"excludeIps,omitempty"`
	// Namespaces whose pods use this subnet.
	Namespaces []string `json:"namespaces,omitempty"`
	// NamespaceSelectors select namespaces whose pods use this subnet.
	NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors,omitempty"`
	// GatewayType is distributed (default) or centralized.
	// +kubebuilder:validation:Enum=distributed;centralized;""
	GatewayType string `json:"gatewayType,omitempty"`
	// GatewayNode lists the gateway nodes of a centralized subnet.
	GatewayNode string `json:"gatewayNode,omitempty"`
	// NatOutgoing masquerades traffic leaving the cluster.
	NatOutgoing bool `json:"natOutgoing,omitempty"`
	// Vlan names the Vlan of an underlay subnet.
	Vlan string `json:"vlan,omitempty"`
	// LogicalGateway makes an underlay subnet use a logical router gateway.
	LogicalGateway bool `json:"logicalGateway,omitempty"`
	// U2OInterconnection connects an underlay subnet to the overlay.
	U2OInterconnection bool `json:"u2oInterconnection,omitempty"`
	// EnableDHCP sets DHCP options on the subnet's ports.
	EnableDHCP bool `json:"enableDHCP,omitempty"`
	// DHCPv4Options are the IPv4 DHCP options ("key=value" pairs,
	// comma separated); lease_time, router, server_id, server_mac and
	// mtu are filled in where missing.
	DHCPv4Options string `json:"dhcpV4Options,omitempty"`
	// DHCPv6Options are the IPv6 DHCP options; server_id is filled in
	// where missing.
	DHCPv6Options string `json:"dhcpV6Options,omitempty"`
	// Mtu is the MTU DHCP hands out; 0 derives it from the network type.
	Mtu uint32 `json:"mtu,omitempty"`
	// Private restricts traffic to the subnet and AllowSubnets.
	Private bool `json:"private,omitempty"`
	// AllowSubnets may reach a private subnet.
	AllowSubnets []string `json:"allowSubnets,omitempty"`
	// Vips are addresses of the subnet that pods share through their
	// port_vips: each gets a virtual port whose parents are those pods'
	// ports.
	Vips []string `json:"vips,omitempty"`
}

// SubnetStatus reports a Subnet's address usage. Counters are float64 as in
// kube-ovn, since an IPv6 range can exceed any integer type clients use.
//
// +kubebuilder:pruning:PreserveUnknownFields
type SubnetStatus struct {
	V4AvailableIPs     float64 `json:"v4availableIPs"`
	V4AvailableIPRange string  `json:"v4availableIPrange,omitempty"`
	V4UsingIPs         float64 `json:"v4usingIPs"`
	V4UsingIPRange     string  `json:"v4usingIPrange,omitempty"`
	V6AvailableIPs     float64 `json:"v6availableIPs"`
	V6AvailableIPRange string  `json:"v6availableIPrange,omitempty"`
	V6UsingIPs         float64 `json:"v6usingIPs"`
	V6UsingIPRange     string  `json:"v6usingIPrange,omitempty"`
	// DHCPv4OptionsUUID and DHCPv6OptionsUUID name the subnet's
	// DHCP_Options rows while enableDHCP is set.
	DHCPv4OptionsUUID string      `json:"dhcpV4OptionsUUID,omitempty"`
	DHCPv6OptionsUUID string      `json:"dhcpV6OptionsUUID,omitempty"`
	Conditions        []Condition `json:"conditions,omitempty"`
}

// Condition is one observation about an object, as kube-ovn writes them.
//
// +kubebuilder:pruning:PreserveUnknownFields
type Condition struct {
	Type   string                 `json:"type"`
	Status corev1.ConditionStatus `json:"status"`
	Reason string                 `json:"reason,omitempty"`
	// +optional
	Message            string      `json:"message,omitempty"`
	LastUpdateTime     metav1.Time `json:"lastUpdateTime,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	ObservedGeneration int64       `json:"observedGeneration,omitempty"`
}

// SubnetList is a list of Subnets.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type SubnetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Subnet `json:"items"`
}

// IPPool is a set of addresses of one subnet reserved for some namespaces.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ippool
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Subnet",type=string,JSONPath=`.spec.subnet`
// +kubebuilder:printcolumn:name="IPs",type=string,JSONPath=`.spec.ips`
type IPPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IPPoolSpec   `json:"spec"`
	Status IPPoolStatus `json:"status,omitempty"`
}

// IPPoolSpec names the subnet and the addresses of a pool.
//
// +kubebuilder:pruning:PreserveUnknownFields
type IPPoolSpec struct {
	// Subnet the pool's addresses belong to.
	// +kubebuilder:validation:MinLength=1
	Subnet string `json:"subnet"`
	// Namespaces whose pods draw from the pool.
	Namespaces []string `json:"namespaces,omitempty"`
	// IPs are addresses, "a..b" ranges and CIDRs.
	// +kubebuilder:validation:MinItems=1
	IPs []string `json:"ips"`
}

// IPPoolStatus reports a pool's usage.
//
// +kubebuilder:pruning:PreserveUnknownFields
type IPPoolStatus struct {
	V4AvailableIPs float64     `json:"v4AvailableIPs"`
	V4UsingIPs     float64     `json:"v4UsingIPs"`
	V6AvailableIPs float64     `json:"v6AvailableIPs"`
	V6UsingIPs     float64     `json:"v6UsingIPs"`
	Conditions     []Condition `json:"conditions,omitempty"`
}

// IPPoolList is a list of IPPools.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type IPPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []IPPool `json:"items"`
}

// IP records the addresses one pod holds on one provider. It is cluster
// scoped and named <pod>.<namespace>[.<provider>].
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ip
// +kubebuilder:printcolumn:name="V4IP",type=string,JSONPath=`.spec.v4IpAddress`
// +kubebuilder:printcolumn:name="V6IP",type=string,JSONPath=`.spec.v6IpAddress`
// +kubebuilder:printcolumn:name="Mac",type=string,JSONPath=`.spec.macAddress`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Subnet",type=string,JSONPath=`.spec.subnet`
type IP struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec IPSpec `json:"spec"`
}

// IPSpec is the content of an IP record.
//
// +kubebuilder:pruning:PreserveUnknownFields
type IPSpec struct {
	PodName       string   `json:"podName"`
	Namespace     string   `json:"namespace"`
	Subnet        string   `json:"subnet"`
	AttachSubnets []string `json:"attachSubnets,omitempty"`
	NodeName      string   `json:"nodeName,omitempty"`
	IPAddress     string   `json:"ipAddress,omitempty"`
	V4IPAddress   string   `json:"v4IpAddress,omitempty"`
	V6IPAddress   string   `json:"v6IpAddress,omitempty"`
	AttachIPs     []string `json:"attachIps,omitempty"`
	MacAddress    string   `json:"macAddress,omitempty"`
	AttachMacs    []string `json:"attachMacs,omitempty"`
	ContainerID   string   `json:"containerID,omitempty"`
	PodType       string   `json:"podType,omitempty"`
}

// IPList is a list of IPs.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type IPList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []IP `json:"items"`
}

// Vip reserves an address (and MAC) in a subnet, which a pod may take with
// the vip annotation.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=vip
// +kubebuilder:subresource:status
type Vip struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VipSpec   `json:"spec"`
	Status VipStatus `json:"status,omitempty"`
}

// VipSpec asks for an address in a subnet.
//
// +kubebuilder:pruning:PreserveUnknownFields
type VipSpec struct {
	Namespace  string `json:"namespace,omitempty"`
	Subnet     string `json:"subnet"`
	Type       string `json:"type,omitempty"`
	V4ip       string `json:"v4ip,omitempty"`
	V6ip       string `json:"v6ip,omitempty"`
	MacAddress string `json:"macAddress,omitempty"`
}

// VipStatus is the address and MAC reserved for a Vip.
//
// +kubebuilder:pruning:PreserveUnknownFields
type VipStatus struct {
	Ready bool   `json:"ready,omitempty"`
	V4ip  string `json:"v4ip,omitempty"`
	V6ip  string `json:"v6ip,omitempty"`
	Mac   string `json:"mac,omitempty"`
}

// VipList is a list of Vips.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type VipList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Vip `json:"items"`
}

// Vlan is the VLAN of underlay subnets.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=vlan
// +kubebuilder:subresource:status
type Vlan struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VlanSpec   `json:"spec"`
	Status VlanStatus `json:"status,omitempty"`
}

// VlanSpec is a VLAN id on a provider network.
//
// +kubebuilder:pruning:PreserveUnknownFields
type VlanSpec struct {
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4095
	ID       int    `json:"id"`
	Provider string `json:"provider,omitempty"`
}

// VlanStatus lists the subnets on a Vlan.
//
// +kubebuilder:pruning:PreserveUnknownFields
type VlanStatus struct {
	Subnets []string `json:"subnets,omitempty"`
}

// VlanList is a list of Vlans.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type VlanList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Vlan `json:"items"`
}

// Vpc is a virtual private cloud: one logical router and its subnets.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=vpc
// +kubebuilder:subresource:status
type Vpc struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VpcSpec   `json:"spec"`
	Status VpcStatus `json:"status,omitempty"`
}

// VpcSpec lists the namespaces and routes of a Vpc.
//
// +kubebuilder:pruning:PreserveUnknownFields
type VpcSpec struct {
	Namespaces   []string      `json:"namespaces,omitempty"`
	StaticRoutes []StaticRoute `json:"staticRoutes,omitempty"`
}

// StaticRoute is one route on a Vpc's router.
//
// +kubebuilder:pruning:PreserveUnknownFields
type StaticRoute struct {
	// +kubebuilder:validation:Enum=policyDst;policySrc;""
	Policy    string `json:"policy,omitempty"`
	CIDR      string `json:"cidr"`
	NextHopIP string `json:"nextHopIP"`
}

// VpcStatus reports a Vpc's router and subnets.
//
// +kubebuilder:pruning:PreserveUnknownFields
type VpcStatus struct {
	Standby              bool     `json:"standby,omitempty"`
	Default              bool     `json:"default,omitempty"`
	DefaultLogicalSwitch string   `json:"defaultLogicalSwitch,omitempty"`
	Router               string   `json:"router,omitempty"`
	Subnets              []string `json:"subnets,omitempty"`
}

// VpcList is a list of Vpcs.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type VpcList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Vpc `json:"items"`
}
