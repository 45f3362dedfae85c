package reconcile

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"strconv"
	"strings"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
)

// Network types, as kube-ovn's --network-type names them: the overlay's
// encapsulation, which sets the MTU DHCP hands out on overlay subnets.
const (
	NetworkTypeGeneve = "geneve"
	NetworkTypeVxlan  = "vxlan"
	NetworkTypeStt    = "stt"
	NetworkTypeVlan   = "vlan"
)

// defaultMTU is the MTU of an underlay subnet, and of an overlay one less
// its encapsulation header.
const defaultMTU = 1500

// encapHeader is the header each network type adds on overlay subnets (a
// vlan cluster's overlay subnets are Geneve, as in kube-ovn).
var encapHeader = map[string]int{
	NetworkTypeGeneve: 100, NetworkTypeVlan: 100, NetworkTypeVxlan: 50, NetworkTypeStt: 72,
}

// ValidNetworkType reports whether t is a network type SubnetConfig takes.
func ValidNetworkType(t string) bool { _, ok := encapHeader[t]; return ok }

// dhcpServerID is the address the DHCPv4 server answers from, kube-ovn's.
const dhcpServerID = "169.254.0.254"

// subnetMTU is the MTU a subnet's DHCPv4 options carry: spec.mtu, else
// 1500 on an underlay subnet and 1500 less the encapsulation on an overlay
// one.
func subnetMTU(s *kubeovnv1.Subnet, networkType string) int {
	if s.Spec.Mtu > 0 {
		return int(s.Spec.Mtu)
	}
	if s.Spec.Vlan != "" {
		return defaultMTU
	}
	h, ok := encapHeader[networkType]
	if !ok {
		h = encapHeader[NetworkTypeGeneve]
	}
	return defaultMTU - h
}

// parseDHCPOptions reads "key=value" pairs separated by commas. A comma
// inside braces belongs to the value (classless_static_route={...}),
// spaces around keys and values are dropped, and a pair without a key or
// an "=" is an error naming it.
func parseDHCPOptions(raw string) (map[string]string, error) {
	out := map[string]string{}
	var parts []string
	depth, start := 0, 0
	for i, r := range raw {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, raw[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, raw[start:])
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("DHCP option %q is not key=value", strings.TrimSpace(p))
		}
		out[k] = v
	}
	return out, nil
}

// dhcpServerMAC is the server MAC of a subnet's family when its row has
// none yet: derived from the subnet's name, so that every leader, and a
// rerun, writes the same one (kube-ovn picks a random 00:00:00 MAC once).
func dhcpServerMAC(subnet, family string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(subnet + "/" + family))
	v := h.Sum32()
	return fmt.Sprintf("00:00:00:%02x:%02x:%02x", byte(v>>16), byte(v>>8), byte(v))
}

// DHCPOptionsSpecs are the DHCP_Options rows a Subnet with enableDHCP
// keeps, one per family of its block (docs/contract.md N4): the user's
// options, with the ones the reference always sets filled in where
// missing. have returns the options of the family's existing row, whose
// server MAC (or DHCPv6 server_id) stays as it is.
func DHCPOptionsSpecs(s *kubeovnv1.Subnet, sub *ipam.Subnet, networkType string, have func(family string) map[string]string) ([]ovn.DHCPSpec, error) {
	v4, v6 := sub.Prefixes()
	var out []ovn.DHCPSpec
	if v4.IsValid() {
		opts, err := parseDHCPOptions(s.Spec.DHCPv4Options)
		if err != nil {
			return nil, fmt.Errorf("spec.dhcpV4Options: %w", err)
		}
		mac := have(ovn.DHCPv4)["server_mac"]
		if mac == "" {
			mac = dhcpServerMAC(s.Name, ovn.DHCPv4)
		}
		gw := familyGateway(sub, true)
		defaults := map[string]string{
			"lease_time": "3600", "router": gw, "server_id": dhcpServerID,
			"server_mac": mac, "mtu": strconv.Itoa(subnetMTU(s, networkType)),
		}
		for k, v := range defaults {
			if _, ok := opts[k]; !ok {
				opts[k] = v
			}
		}
		out = append(out, ovn.DHCPSpec{Switch: s.Name, CIDR: v4.String(), Options: opts})
	}
	if v6.IsValid() {
		opts, err := parseDHCPOptions(s.Spec.DHCPv6Options)
		if err != nil {
			return nil, fmt.Errorf("spec.dhcpV6Options: %w", err)
		}
		if _, ok := opts["server_id"]; !ok {
			id := have(ovn.DHCPv6)["server_id"]
			if id == "" {
				id = dhcpServerMAC(s.Name, ovn.DHCPv6)
			}
			opts["server_id"] = id
		}
		out = append(out, ovn.DHCPSpec{Switch: s.Name, CIDR: v6.String(), Options: opts})
	}
	return out, nil
}

// familyGateway is the subnet's gateway of one family, "" when it has
// none.
func familyGateway(sub *ipam.Subnet, v4 bool) string {
	for _, a := range sub.Gateways().List() {
		if a.Is4() == v4 {
			return a.String()
		}
	}
	return ""
}

// dhcpFamily is the DHCP family of an address block.
func dhcpFamily(p netip.Prefix) string {
	if p.Addr().Is4() {
		return ovn.DHCPv4
	}
	return ovn.DHCPv6
}
