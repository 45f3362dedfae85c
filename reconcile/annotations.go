package reconcile

import (
	"maps"
	"sync/atomic"
)

// DefaultProvider is the provider of a pod's default network.
const DefaultProvider = "ovn"

// Annotation keys, without the "<provider>.kubernetes.io/" prefix (see
// docs/contract.md).
const (
	KeyLogicalSwitch   = "logical_switch"
	KeyIPAddress       = "ip_address"
	KeyMACAddress      = "mac_address"
	KeyIPPool          = "ip_pool"
	KeyCIDR            = "cidr"
	KeyGateway         = "gateway"
	KeyAllocated       = "allocated"
	KeyRouted          = "routed"
	KeyPodNICType      = "pod_nic_type"
	KeyLogicalRouter   = "logical_router"
	KeyVlanID          = "vlan_id"
	KeyProviderNetwork = "provider_network"
	KeyPortSecurity    = "port_security"
	KeyPortVIPs        = "port_vips"
	KeySecurityGroups  = "security_groups"
	KeyLayer2Forward   = "layer2_forward"
	KeyVIP             = "vip"
	KeyNorthGateway    = "north_gateway"
	KeyEIP             = "eip"
	KeySNAT            = "snat"
	KeyVirtualMachine  = "virtualmachine"
)

// Key is the full annotation key of key on provider's network.
func Key(provider, key string) string {
	if provider != DefaultProvider {
		return provider + ".kubernetes.io/" + key
	}
	return defaultKey(key)
}

// defaultKeys keeps the full keys of the default network that Key has
// built, at most maxDefaultKeys of them: a reconcile asks for about a
// dozen, each a new string otherwise. The map is replaced, never changed,
// so a lookup reads it without a lock.
var defaultKeys atomic.Pointer[map[string]string]

const maxDefaultKeys = 64

func defaultKey(key string) string {
	m := defaultKeys.Load()
	if m != nil {
		if full, ok := (*m)[key]; ok {
			return full
		}
	}
	full := DefaultKey(key)
	var kept map[string]string
	if m != nil {
		kept = *m
	}
	if len(kept) < maxDefaultKeys {
		next := make(map[string]string, 1+len(kept))
		maps.Copy(next, kept)
		next[key] = full
		// A lost race drops this key until its next call.
		defaultKeys.CompareAndSwap(m, &next)
	}
	return full
}

// DefaultKey is the full annotation key of key on the default network.
func DefaultKey(key string) string { return "ovn.kubernetes.io/" + key }

// DefaultPodNICType is what pod_nic_type is set to when the user gave none.
const DefaultPodNICType = "veth-pair"

// PortName is the Northbound port (and IP record) name of a pod's network:
// "<pod>.<namespace>" on the default network, "<pod>.<namespace>.<provider>"
// on another, as kube-ovn names them.
func PortName(pod, namespace, provider string) string {
	if provider == "" || provider == DefaultProvider {
		return pod + "." + namespace
	}
	return pod + "." + namespace + "." + provider
}
