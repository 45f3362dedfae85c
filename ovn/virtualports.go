package ovn

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// Virtual port columns (docs/contract.md N14).
const (
	PortTypeVirtual      = "virtual"
	OptionVirtualIP      = "virtual-ip"
	OptionVirtualParents = "virtual-parents"
	virtualPortNameInfix = "-vip-"
	attachVIPsTrue       = "true"
)

// VirtualPortName is the virtual port of one VIP of a subnet, as kube-ovn
// names it: <subnet>-vip-<address>.
func VirtualPortName(sw, vip string) string { return sw + virtualPortNameInfix + vip }

// VirtualParents returns, for each VIP, the names of the switch's ports
// whose external ids say attach-vips=true and list the VIP in vips,
// sorted. It scans the cached ports once; the leader calls it per subnet
// with VIPs, never per pod.
func (c *Client) VirtualParents(sw string, vips []string) map[string][]string {
	out := make(map[string][]string, len(vips))
	for _, v := range vips {
		out[v] = nil
	}
	for _, p := range c.portsShallow() {
		ids := p.ExternalIDs
		if ids[ExternalIDSwitch] != sw || ids[ExternalIDAttachVIPs] != attachVIPsTrue || p.Type == PortTypeVirtual {
			continue
		}
		for _, v := range strings.Split(ids[ExternalIDVIPs], ",") {
			if parents, ok := out[v]; ok && !slices.Contains(parents, p.Name) {
				out[v] = append(parents, p.Name)
			}
		}
	}
	for _, parents := range out {
		slices.Sort(parents)
	}
	return out
}

// portsShallow returns the cached ports without copying them: read only.
func (c *Client) portsShallow() []*nbdb.LogicalSwitchPort {
	return shallowRows[*nbdb.LogicalSwitchPort](c, nbdb.LogicalSwitchPortTable)
}

// shallowRows returns the cached rows of table without copying them: read
// only (the cache replaces a row on update, it never changes one in
// place). A pass over every port reads tens of thousands of rows; a copy
// of each (the API's List) allocated about a kilobyte per port.
func shallowRows[T model.Model](c *Client, table string) []T {
	tc := c.nb.Cache()
	if tc == nil {
		return nil
	}
	rc := tc.Table(table)
	if rc == nil {
		return nil
	}
	rows := rc.RowsShallow()
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		if t, ok := r.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// EnsureVirtualPorts returns the ops that make the switch's virtual ports
// match vips and parents (docs/contract.md N14): a port of type virtual
// per VIP with options virtual-ip and, when it has any, virtual-parents;
// a virtual port of the switch whose VIP is no longer listed goes. Other
// options and external ids of an existing port are left as they are.
func (c *Client) EnsureVirtualPorts(sw string, vips []string, parents map[string][]string) ([]ovsdb.Operation, error) {
	if err := c.Ready(); err != nil {
		return nil, err
	}
	ls, ok := c.Switch(sw)
	if !ok {
		return nil, fmt.Errorf("ovn: virtual ports of %s: %w", sw, ErrNotFound)
	}
	for _, v := range vips {
		if _, err := netip.ParseAddr(v); err != nil {
			return nil, fmt.Errorf("ovn: virtual port of %s: %w", sw, err)
		}
	}
	var ops []ovsdb.Operation
	for _, v := range vips {
		name := VirtualPortName(sw, v)
		list := strings.Join(parents[v], ",")
		cur, exists := c.Port(name)
		if !exists {
			opts := map[string]string{OptionVirtualIP: v}
			if list != "" {
				opts[OptionVirtualParents] = list
			}
			uuid := newUUIDName("vlsp")
			ops = append(ops,
				ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: uuid, Row: ovsdb.Row{
					"name": name, "type": PortTypeVirtual, "options": toOvsMap(opts),
					"external_ids": toOvsMap(map[string]string{ExternalIDSwitch: sw, ExternalIDVendor: DefaultVendor}),
				}},
				waitExists(nbdb.LogicalSwitchTable, ls.UUID),
				insertRefs(nbdb.LogicalSwitchTable, ls.UUID, "ports", ovsdb.UUID{GoUUID: uuid}),
			)
			continue
		}
		want := map[string]string{OptionVirtualIP: v}
		var muts []ovsdb.Mutation
		if list != "" {
			want[OptionVirtualParents] = list
		} else {
			muts = dropKeys("options", cur.Options, []string{OptionVirtualParents})
		}
		muts = append(muts, setKeys("options", cur.Options, want)...)
		where := uuidWhere(cur.UUID)
		if cur.Type != PortTypeVirtual {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: nbdb.LogicalSwitchPortTable, Where: where, Row: ovsdb.Row{"type": PortTypeVirtual}})
		}
		if len(muts) > 0 {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchPortTable, Where: where, Mutations: muts})
		}
	}
	for _, p := range c.portsShallow() {
		if p.Type != PortTypeVirtual || p.ExternalIDs[ExternalIDSwitch] != sw || !strings.HasPrefix(p.Name, sw+virtualPortNameInfix) {
			continue
		}
		if !slices.Contains(vips, p.Options[OptionVirtualIP]) {
			ops = append(ops, deleteSwitchPort(p.UUID)...)
		}
	}
	return ops, nil
}

// OnVIPPortChange calls f with the switch of every port whose vips or
// attach-vips external ids change (added, edited, deleted with the port),
// so that the virtual ports' parents follow the pods. f runs on the
// cache's event goroutine: it must only queue work.
func (c *Client) OnVIPPortChange(f func(sw string)) {
	tc := c.nb.Cache()
	if tc == nil {
		return
	}
	vipIDs := func(m model.Model) (string, string, bool) {
		p, ok := m.(*nbdb.LogicalSwitchPort)
		if !ok || p.Type == PortTypeVirtual {
			return "", "", false
		}
		return p.ExternalIDs[ExternalIDSwitch], p.ExternalIDs[ExternalIDAttachVIPs] + "|" + p.ExternalIDs[ExternalIDVIPs], true
	}
	tc.AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc: func(table string, m model.Model) {
			if sw, ids, ok := vipIDs(m); ok && table == nbdb.LogicalSwitchPortTable && ids != "|" {
				f(sw)
			}
		},
		UpdateFunc: func(table string, old, cur model.Model) {
			if table != nbdb.LogicalSwitchPortTable {
				return
			}
			sw0, ids0, ok0 := vipIDs(old)
			sw1, ids1, ok1 := vipIDs(cur)
			if !ok0 || !ok1 || (sw0 == sw1 && ids0 == ids1) {
				return
			}
			if ids0 != "|" {
				f(sw0)
			}
			if ids1 != "|" {
				f(sw1)
			}
		},
		DeleteFunc: func(table string, m model.Model) {
			if sw, ids, ok := vipIDs(m); ok && table == nbdb.LogicalSwitchPortTable && ids != "|" {
				f(sw)
			}
		},
	})
}
