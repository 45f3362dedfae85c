package reconcile

import (
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
)

// NetworkWrites are the rows and annotations of one allocated network:
// what Complete derives from a NetworkPlan and its allocation.
type NetworkWrites struct {
	// Port is the Northbound port; nil for an IPAM-only network.
	Port *ovn.PortSpec
	// Route is the routed phase; nil when it is not due (no node yet,
	// done already for these addresses and node, or not an overlay
	// subnet of the cluster router).
	Route *RouteWrites
	// IPRecord is the kubeovn.io IP record; nil when records are off.
	IPRecord *IPRecord
	// Annotations are the values shardnet owns on this network.
	Annotations map[string]string
	// Routed is true when the pod has a node and the network needs no
	// further routed-phase work after Route.
	Routed bool
	// Reroute is the routed phase the annotations say is done (Route is
	// nil then): the shell applies it when the port itself is missing
	// from the Northbound, since a port created anew is in no group yet
	// (an annotated pod whose port was lost, or that another controller
	// annotated without one).
	Reroute *RouteWrites
	// FollowNode is set on a VM's port whose routed phase the annotations
	// say is done: the shell applies Reroute when the port is not in the
	// group of the pod's node (the VM's active launcher pod changed nodes,
	// docs/contract.md R14).
	FollowNode bool
	// DHCPFamilies are the families (ovn.DHCPv4, ovn.DHCPv6) whose
	// DHCP_Options rows of the subnet the port refers to: those of the
	// subnet's block while it has enableDHCP (docs/contract.md N4). The
	// shell looks the rows up; the port waits until they exist.
	DHCPFamilies []string
}

// RouteWrites are the routed-phase rows of one network.
type RouteWrites struct {
	// PortGroup is the node port group the port joins; "" for none.
	PortGroup string
	Routes    []ovn.RouteSpec
	NATs      []ovn.NATSpec
	// Provider is the network's, for the annotation keys of the rows.
	Provider string
}

// IPRecord is a kubeovn.io IP record to ensure.
type IPRecord struct {
	Name   string
	Labels map[string]string
	Spec   kubeovnv1.IPSpec
}

// Complete derives a network's writes from its plan and the allocation
// the shell obtained for it (docs/contract.md §5). Pure, like Plan.
func (pl *Planner) Complete(pod *corev1.Pod, np *NetworkPlan, al ipam.Allocation) NetworkWrites {
	key := holderKey(pod, np)
	s := np.Subnet
	var w NetworkWrites
	if np.Port != "" {
		w.Port = &ovn.PortSpec{
			Name:          np.Port,
			Switch:        s.Name,
			Pod:           key,
			MAC:           macText(pod, np.Provider, al.MAC),
			IPs:           addrTexts(pod, np.Provider, al.Addresses),
			PortSecurity:  np.Request.PortSecurity,
			VIPs:          addrList(np.Request.PortVIPs),
			Layer2Forward: np.Request.Layer2Forward,
			// docs/contract.md N2.
			SecurityGroups: np.Request.SecurityGroups,
			ExternalIDs:    pl.portExternalIDs(np),
		}
		if s.Spec.EnableDHCP {
			v4, v6 := np.Alloc.Prefixes()
			for _, p := range []netip.Prefix{v4, v6} {
				if p.IsValid() {
					w.DHCPFamilies = append(w.DHCPFamilies, dhcpFamily(p))
				}
			}
		}
	}
	w.Annotations = pl.annotations(pod, np, al)
	if np.Port != "" && pod.Spec.NodeName != "" && np.Request.RouteErr == nil && np.RouteWait == nil {
		// A malformed north_gateway, eip or snat holds back only this
		// phase (docs/contract.md E4), as does a missing external
		// gateway (E25).
		w.Routed = true
		w.Annotations[Key(np.Provider, KeyRouted)] = "true"
		if !alreadyRouted(pod, np.Provider, s.Name, al) {
			w.Route = pl.routeWrites(s, pod, np, al)
		} else {
			w.Reroute = pl.routeWrites(s, pod, np, al)
		}
	}
	if np.IPRecord != "" {
		w.IPRecord = ipRecord(pod, np, al)
	}
	completeVM(pod, np, &w)
	return w
}

// alreadyRouted reports whether the pod's annotations say the routed
// phase is done for these addresses on this subnet. The routed phase runs
// once per address and node: its port group membership is a set mutation
// the trimmed cache cannot see, so redoing it on every pod event would
// cost a transaction each time.
func alreadyRouted(pod *corev1.Pod, provider, subnet string, al ipam.Allocation) bool {
	ann := pod.Annotations
	return ann[Key(provider, KeyRouted)] == "true" && ann[Key(provider, KeyLogicalSwitch)] == subnet &&
		ann[Key(provider, KeyIPAddress)] == addrText(pod, provider, al.Addresses)
}

// annotations are the values shardnet owns on one network
// (docs/contract.md A1-A9).
func (pl *Planner) annotations(pod *corev1.Pod, np *NetworkPlan, al ipam.Allocation) map[string]string {
	s, k := np.Subnet, func(key string) string { return Key(np.Provider, key) }
	want := map[string]string{
		k(KeyIPAddress): addrText(pod, np.Provider, al.Addresses),
		k(KeyCIDR):      s.Spec.CIDRBlock,
		k(KeyGateway):   gatewayText(s, np.Alloc.Gateways()),
		k(KeyAllocated): "true",
	}
	if np.Kind == AttachmentIPAMOnly {
		// Addresses only: the attachment's own CNI plugin wires the
		// interface, so no MAC, switch or NIC type is promised.
		return want
	}
	want[k(KeyMACAddress)] = macText(pod, np.Provider, al.MAC)
	want[k(KeyLogicalSwitch)] = s.Name
	if pod.Annotations[k(KeyPodNICType)] == "" {
		want[k(KeyPodNICType)] = pl.PodNICType
	}
	if s.Spec.Vlan == "" || s.Spec.LogicalGateway || s.Spec.U2OInterconnection {
		want[k(KeyLogicalRouter)] = pl.vpc(s)
	}
	vlanAnnotations(np, want)
	return want
}

func (pl *Planner) vpc(s *kubeovnv1.Subnet) string {
	if s.Spec.Vpc == "" {
		return pl.ClusterRouter
	}
	return s.Spec.Vpc
}

// routedOnClusterRouter reports whether a subnet's ports get the routed
// phase's rows: an overlay subnet (or an underlay one with a logical
// gateway) of the cluster router.
func (pl *Planner) routedOnClusterRouter(s *kubeovnv1.Subnet) bool {
	return (s.Spec.Vlan == "" || s.Spec.LogicalGateway) && pl.vpc(s) == pl.ClusterRouter
}

// routeWrites are the routed-phase rows for a network with a node
// (docs/contract.md §5.2). With eip or snat, the source route of each
// address goes to the external gateway (G11) and north_gateway is not
// used, as kube-ovn does; else to north_gateway (G4).
func (pl *Planner) routeWrites(s *kubeovnv1.Subnet, pod *corev1.Pod, np *NetworkPlan, al ipam.Allocation) *RouteWrites {
	if !pl.routedOnClusterRouter(s) {
		return nil
	}
	vpc := pl.vpc(s)
	req := np.Request
	key := holderKey(pod, np)
	rw := &RouteWrites{Provider: np.Provider}
	natted := req.EIP.IsValid() || req.SNAT.IsValid()
	if !req.NorthGateway.IsValid() && s.Spec.GatewayType != kubeovnv1.GatewayTypeCentralized && !natted {
		rw.PortGroup = NodePortGroupName(s.Name, pod.Spec.NodeName)
	}
	for _, a := range al.Addresses.List() {
		nexthop := req.NorthGateway
		if natted {
			nexthop = np.ExternalGateway.V4
			if a.Is6() {
				nexthop = np.ExternalGateway.V6
			}
		}
		if nexthop.IsValid() && nexthop.Is4() == a.Is4() {
			rw.Routes = append(rw.Routes, ovn.RouteSpec{Router: vpc, Prefix: a.String(), Nexthop: nexthop.String(), Policy: "src-ip", Pod: key})
		}
		if req.EIP.IsValid() && req.EIP.Is4() == a.Is4() {
			rw.NATs = append(rw.NATs, ovn.NATSpec{Router: vpc, Type: "dnat_and_snat", ExternalIP: req.EIP.String(), LogicalIP: a.String(), Pod: key})
		}
		if req.SNAT.IsValid() && req.SNAT.Is4() == a.Is4() {
			rw.NATs = append(rw.NATs, ovn.NATSpec{Router: vpc, Type: "snat", ExternalIP: req.SNAT.String(), LogicalIP: a.String(), Pod: key})
		}
	}
	return rw
}

// LabelNodeName is the IP record label naming the pod's node, as kube-ovn
// writes it.
const LabelNodeName = "ovn.kubernetes.io/node-name"

// ipRecord is the kubeovn.io IP record of one network, named like its
// port (docs/contract.md §5.3).
func ipRecord(pod *corev1.Pod, np *NetworkPlan, al ipam.Allocation) *IPRecord {
	spec := kubeovnv1.IPSpec{
		PodName:    pod.Name,
		Namespace:  pod.Namespace,
		Subnet:     np.Subnet.Name,
		NodeName:   pod.Spec.NodeName,
		IPAddress:  addrText(pod, np.Provider, al.Addresses),
		MacAddress: macText(pod, np.Provider, al.MAC),
		PodType:    PodType(pod),
	}
	if np.Kind == AttachmentIPAMOnly {
		spec.MacAddress = ""
	}
	if al.Addresses.V4.IsValid() {
		spec.V4IPAddress = al.Addresses.V4.String()
	}
	if al.Addresses.V6.IsValid() {
		spec.V6IPAddress = al.Addresses.V6.String()
	}
	labels := map[string]string{"ovn.kubernetes.io/subnet": np.Subnet.Name, np.Subnet.Name: ""}
	if pod.Spec.NodeName != "" {
		labels[LabelNodeName] = pod.Spec.NodeName
	}
	return &IPRecord{Name: np.IPRecord, Labels: labels, Spec: spec}
}

// NodePortGroupName is the port group of a subnet's ports on one node, as
// kube-ovn names it (dashes become dots, port group names allow neither
// dashes at the start nor most punctuation).
func NodePortGroupName(subnet, node string) string {
	return strings.ReplaceAll(subnet+"."+node, "-", ".")
}

// macText is the MAC as the pod's annotation spells it when the
// annotation names m (kube-ovn writes upper-case hex digits, and a static
// MAC keeps the case its author chose), else m's canonical form: an
// adopted pod's annotations, port and IP record stay byte for byte
// (docs/contract.md §15).
func macText(pod *corev1.Pod, provider string, m ipam.MAC) string {
	if s := pod.Annotations[Key(provider, KeyMACAddress)]; s != "" {
		if got, err := ipam.ParseMAC(s); err == nil && got == m {
			return s
		}
	}
	return m.String()
}

// gatewayText is the Subnet's spec.gateway as written when it names the
// allocator's gateways, else their canonical form.
func gatewayText(s *kubeovnv1.Subnet, gw ipam.Addresses) string {
	if got, err := ipam.ParseAddresses(s.Spec.Gateway); err == nil && got == gw {
		return s.Spec.Gateway
	}
	return gw.String()
}

// addrText is the addresses as the pod's annotation spells them when the
// annotation names exactly a, else a's canonical form.
func addrText(pod *corev1.Pod, provider string, a ipam.Addresses) string {
	if s := pod.Annotations[Key(provider, KeyIPAddress)]; s != "" {
		if got, err := ipam.ParseAddresses(s); err == nil && got == a {
			return s
		}
	}
	return a.String()
}

// addrTexts is addrText as a list, in the order the text gives.
func addrTexts(pod *corev1.Pod, provider string, a ipam.Addresses) []string {
	if t := addrText(pod, provider, a); t != a.String() {
		parts := strings.Split(t, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts
	}
	return addrList(a.List())
}

func addrList(as []netip.Addr) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}
