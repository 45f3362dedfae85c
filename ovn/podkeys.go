package ovn

import (
	"context"
	"fmt"
	"strings"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// PodKeys returns the distinct external_ids:pod values of the cached logical
// switch ports: every pod key that holds a port. It walks the port table
// once, so it is for the garbage collector's periodic pass, not per pod.
func (c *Client) PodKeys() []string {
	ports := c.portsShallow()
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
	// Switch is the port's switch: its external_ids:ls, or, for a port
	// with fixed addresses and no such key, the switch whose ports hold
	// it.
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
// addresses. It walks the port table once, copying no row: for adoption
// and the periodic pass, never per pod.
//
// The cache does not monitor a switch's ports (see monitorRequest), so
// the switch of a port that has fixed addresses but no ls external id
// (shardnet and kube-ovn always write one) is read from the server: one
// select of every switch's name and ports, made only when such a port
// exists.
func (c *Client) PortAddresses(ctx context.Context) ([]PortAddress, error) {
	ports := c.portsShallow()
	out := make([]PortAddress, 0, len(ports))
	var unplaced map[string]int // port UUID -> index in out
	for _, p := range ports {
		pa := PortAddress{Name: p.Name, Switch: p.ExternalIDs[ExternalIDSwitch], Pod: p.ExternalIDs[ExternalIDPod]}
		for _, a := range p.Addresses {
			f := strings.Fields(a)
			if len(f) < 2 {
				continue // "router", "unknown", "dynamic", a bare MAC
			}
			pa.MAC, pa.IPs = f[0], f[1:]
			break
		}
		if pa.Switch == "" && len(pa.IPs) > 0 {
			if unplaced == nil {
				unplaced = map[string]int{}
			}
			unplaced[p.UUID] = len(out)
		}
		out = append(out, pa)
	}
	if len(unplaced) == 0 {
		return out, nil
	}
	op := ovsdb.Operation{Op: ovsdb.OperationSelect, Table: nbdb.LogicalSwitchTable, Columns: []string{"name", "ports"}, Where: []ovsdb.Condition{}}
	res, err := c.Transact(ctx, op)
	if err != nil {
		return nil, fmt.Errorf("reading the switches of %d ports without an %s external id: %w", len(unplaced), ExternalIDSwitch, err)
	}
	for _, row := range res[0].Rows {
		name, _ := row["name"].(string)
		for _, uuid := range rowUUIDs(row["ports"]) {
			if i, ok := unplaced[uuid]; ok {
				out[i].Switch = name
			}
		}
	}
	return out, nil
}

// rowUUIDs are the UUIDs of a set-of-references column as a select
// returns it: a set, or a single UUID.
func rowUUIDs(v any) []string {
	switch s := v.(type) {
	case ovsdb.UUID:
		return []string{s.GoUUID}
	case ovsdb.OvsSet:
		out := make([]string, 0, len(s.GoSet))
		for _, e := range s.GoSet {
			if u, ok := e.(ovsdb.UUID); ok {
				out = append(out, u.GoUUID)
			}
		}
		return out
	}
	return nil
}
