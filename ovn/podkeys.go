package ovn

import (
	"context"
	"strings"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// PodKeys returns the distinct external_ids:pod values of the cached logical
// switch ports: every pod key that holds a port. It walks the port table
// once, so it is for the garbage collector's periodic pass, not per pod.
func (c *Client) PodKeys() []string {
	var ports []nbdb.LogicalSwitchPort
	if err := c.nb.List(context.Background(), &ports); err != nil {
		return nil
	}
	seen := make(map[string]struct{}, len(ports))
	out := make([]string, 0, len(ports))
	for i := range ports {
		k := ports[i].ExternalIDs[ExternalIDPod]
		if k == "" {
			continue
		}
		if _, dup := seen[k]; !dup {
			seen[k] = struct{}{}
			out = append(out, k)
		}
	}
	return out
}

// PortAddress is what adoption reads of one logical switch port.
type PortAddress struct {
	Name string
	// Switch is the port's switch: its external_ids:ls, or the switch
	// whose ports hold it when the port has no such key.
	Switch string
	// Pod is external_ids:pod, "" when the port names no pod.
	Pod string
	// MAC and IPs are the first "MAC IP..." entry of addresses; IPs is
	// empty for a port without fixed addresses (router, unknown,
	// dynamic).
	MAC string
	IPs []string
}

// PortAddresses lists every cached logical switch port with its fixed
// addresses. It walks the port and switch tables once: for adoption and
// the periodic pass, never per pod.
func (c *Client) PortAddresses() []PortAddress {
	var ports []nbdb.LogicalSwitchPort
	if err := c.nb.List(context.Background(), &ports); err != nil {
		return nil
	}
	var switches []nbdb.LogicalSwitch
	_ = c.nb.List(context.Background(), &switches)
	switchOf := make(map[string]string)
	for i := range switches {
		for _, p := range switches[i].Ports {
			switchOf[p] = switches[i].Name
		}
	}
	out := make([]PortAddress, 0, len(ports))
	for i := range ports {
		p := &ports[i]
		pa := PortAddress{Name: p.Name, Switch: p.ExternalIDs[ExternalIDSwitch], Pod: p.ExternalIDs[ExternalIDPod]}
		if pa.Switch == "" {
			pa.Switch = switchOf[p.UUID]
		}
		for _, a := range p.Addresses {
			f := strings.Fields(a)
			if len(f) < 2 {
				continue // "router", "unknown", "dynamic", a bare MAC
			}
			pa.MAC, pa.IPs = f[0], f[1:]
			break
		}
		out = append(out, pa)
	}
	return out
}
