package ovn

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// External ids of a subnet's DHCP_Options rows, as kube-ovn writes them:
// the switch, the family ("IPv4" or "IPv6") and the vendor. kube-ovn's
// per-port rows also carry ExternalIDDHCPPort; shardnet never writes
// those and never takes one for a subnet's row.
const (
	ExternalIDLogicalSwitch = "logical_switch"
	ExternalIDProtocol      = "protocol"
	ExternalIDDHCPPort      = "port"
)

// DHCP families, the values of ExternalIDProtocol.
const (
	DHCPv4 = "IPv4"
	DHCPv6 = "IPv6"
)

// DHCPSpec is one family's DHCP_Options row of a subnet (docs/contract.md
// N4).
type DHCPSpec struct {
	// Switch is the subnet's switch, external_ids:logical_switch.
	Switch string
	// CIDR is the subnet's block of this family; it says the family.
	CIDR string
	// Options are the row's options, written in full.
	Options map[string]string
	Vendor  string
}

func (s *DHCPSpec) family() (string, error) {
	p, err := netip.ParsePrefix(s.CIDR)
	if err != nil {
		return "", fmt.Errorf("ovn: DHCP options of %s: %w", s.Switch, err)
	}
	if p.Addr().Is4() {
		return DHCPv4, nil
	}
	return DHCPv6, nil
}

// SubnetDHCPOptions returns the cached DHCP_Options row of the switch for
// family (DHCPv4 or DHCPv6): a row of the switch, family and vendor that
// is not a port's. Should there be several, the one with the lowest UUID
// is the subnet's, for every caller alike.
func (c *Client) SubnetDHCPOptions(sw, family string) (*nbdb.DHCPOptions, bool) {
	rows := c.subnetDHCPRows(sw, family, DefaultVendor)
	if len(rows) == 0 {
		return nil, false
	}
	return rows[0], true
}

func (c *Client) subnetDHCPRows(sw, family, vendor string) []*nbdb.DHCPOptions {
	rows := lookupBy[*nbdb.DHCPOptions](c, nbdb.DHCPOptionsTable, bySwitch, sw)
	out := rows[:0]
	for _, r := range rows {
		ids := r.ExternalIDs
		if ids[ExternalIDProtocol] != family || ids[ExternalIDVendor] != vendor || ids[ExternalIDDHCPPort] != "" {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UUID < out[j].UUID })
	return out
}

// EnsureDHCPOptions returns the ops that make the switch's row of spec's
// family hold spec's block and options: an insert when there is none, an
// update of the columns that differ otherwise (none when it matches).
// The row follows its Subnet whoever inserted it (docs/decisions/0016).
func (c *Client) EnsureDHCPOptions(spec DHCPSpec) ([]ovsdb.Operation, error) {
	if spec.Switch == "" {
		return nil, fmt.Errorf("ovn: DHCP options without a switch")
	}
	family, err := spec.family()
	if err != nil {
		return nil, err
	}
	if err := c.Ready(); err != nil {
		return nil, err
	}
	rows := c.subnetDHCPRows(spec.Switch, family, vendor(spec.Vendor))
	if len(rows) == 0 {
		ids := map[string]string{
			ExternalIDLogicalSwitch: spec.Switch,
			ExternalIDProtocol:      family,
			ExternalIDVendor:        vendor(spec.Vendor),
		}
		return []ovsdb.Operation{{
			Op: ovsdb.OperationInsert, Table: nbdb.DHCPOptionsTable, UUIDName: newUUIDName("dhcp"),
			Row: ovsdb.Row{"cidr": spec.CIDR, "options": toOvsMap(spec.Options), "external_ids": toOvsMap(ids)},
		}}, nil
	}
	cur := rows[0]
	row := ovsdb.Row{}
	if cur.Cidr != spec.CIDR {
		row["cidr"] = spec.CIDR
	}
	if !maps.Equal(cur.Options, spec.Options) {
		row["options"] = toOvsMap(spec.Options)
	}
	if len(row) == 0 {
		return nil, nil
	}
	return []ovsdb.Operation{{Op: ovsdb.OperationUpdate, Table: nbdb.DHCPOptionsTable, Where: uuidWhere(cur.UUID), Row: row}}, nil
}

// DeleteDHCPOptions returns the ops that delete the switch's rows of the
// families not in keep (all of them when keep is empty), and the UUIDs of
// those rows. Ports refer to the rows weakly: the server clears their
// references with the rows.
func (c *Client) DeleteDHCPOptions(sw string, keep ...string) ([]ovsdb.Operation, []string, error) {
	if err := c.Ready(); err != nil {
		return nil, nil, err
	}
	var (
		ops     []ovsdb.Operation
		deleted []string
	)
	for _, family := range []string{DHCPv4, DHCPv6} {
		if slices.Contains(keep, family) {
			continue
		}
		for _, r := range c.subnetDHCPRows(sw, family, DefaultVendor) {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationDelete, Table: nbdb.DHCPOptionsTable, Where: uuidWhere(r.UUID)})
			deleted = append(deleted, r.UUID)
		}
	}
	return ops, deleted, nil
}
