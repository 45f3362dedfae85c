package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/ovn"
)

// RoutingChange is what makes a routed network's source routes and NAT
// rules match its north_gateway, eip and snat annotations
// (docs/contract.md G4-G7): rows to insert, rows whose target changes in
// place, rows to delete, and the node port group moves that go with them.
// diffRouting decides it from the wanted rows and the rows found; it reads
// no cache and writes nothing.
type RoutingChange struct {
	Routes []ovn.RouteSpec
	NATs   []ovn.NATSpec
	// Update are existing rows (shardnet's or kube-ovn's) pointed at a new
	// target: a route's next hop, a NAT's external IP.
	Update []RowUpdate
	Delete []ovn.RoutingRow
	// JoinGroup: the rows the port had are gone and its node group is due
	// (G3), so it rejoins it. LeaveGroups: it gets its first rows, so it
	// leaves its node groups, as kube-ovn takes a port with an EIP or SNAT
	// out of them.
	JoinGroup, LeaveGroups bool
	// Conflicts are EIPs another address already uses: not written.
	Conflicts []*InputError
}

// RowUpdate points one existing row at Target.
type RowUpdate struct {
	Row    ovn.RoutingRow
	Target string
}

// Empty reports whether nothing changes.
func (c RoutingChange) Empty() bool {
	return len(c.Routes) == 0 && len(c.NATs) == 0 && len(c.Update) == 0 && len(c.Delete) == 0 && !c.JoinGroup && !c.LeaveGroups
}

// diffRouting compares the rows a network wants with the rows found for
// its addresses (have: shardnet's and kube-ovn's, ovn.PodRouting).
// eipUser names the other address a dnat_and_snat external IP is used
// by, "" when none. follow is set for a network already routed, whose
// node group membership follows its rows; on the first routed phase the
// caller places the port itself.
func diffRouting(want *RouteWrites, have []ovn.RoutingRow, eipUser func(eip string) string, follow bool) RoutingChange {
	var c RoutingChange
	used := map[string]bool{}
	// match finds the rows of kind for address; the first (shardnet's
	// before kube-ovn's) is kept, the others are duplicates.
	match := func(kind, address string) []ovn.RoutingRow {
		var rows []ovn.RoutingRow
		for _, r := range have {
			if r.Kind == kind && r.Address == address {
				rows = append(rows, r)
			}
		}
		slices.SortStableFunc(rows, func(a, b ovn.RoutingRow) int {
			switch {
			case a.Foreign() == b.Foreign():
				return 0
			case b.Foreign():
				return -1
			}
			return 1
		})
		return rows
	}
	keep := func(rows []ovn.RoutingRow, target string) bool {
		if len(rows) == 0 {
			return false
		}
		used[rows[0].UUID] = true
		// A kube-ovn row that already says the right thing is adopted as
		// it is: no write.
		if rows[0].Target != target {
			c.Update = append(c.Update, RowUpdate{Row: rows[0], Target: target})
		}
		return true
	}
	for _, r := range want.Routes {
		if !keep(match(ovn.RowRoute, r.Prefix), r.Nexthop) {
			c.Routes = append(c.Routes, r)
		}
	}
	for _, n := range want.NATs {
		rows := match(n.Type, n.LogicalIP)
		if n.Type == "dnat_and_snat" {
			if other := eipUser(n.ExternalIP); other != "" {
				c.Conflicts = append(c.Conflicts, &InputError{Key(want.Provider, KeyEIP), n.ExternalIP,
					fmt.Errorf("external IP is already mapped to %s", other)})
				// What the address has stays until the EIP is free.
				for _, r := range rows {
					used[r.UUID] = true
				}
				continue
			}
		}
		if !keep(rows, n.ExternalIP) {
			c.NATs = append(c.NATs, n)
		}
	}
	natted := len(want.NATs) > 0 || len(c.Conflicts) > 0
	for _, r := range have {
		if !used[r.UUID] {
			c.Delete = append(c.Delete, r)
		}
	}
	if follow {
		wanted := len(want.Routes) > 0 || natted
		c.JoinGroup = want.PortGroup != "" && len(have) > 0 && !wanted
		c.LeaveGroups = wanted && len(have) == 0
	}
	return c
}

// podRouting is what the routed phase reads beyond Northbound: the rows
// of a pod's addresses, the users of an EIP, and the router of a row
// another controller wrote. *ovn.Client implements it.
type podRouting interface {
	PodRouting(pod string, addrs []string) ([]ovn.RoutingRow, error)
	NATsByExternalIP(typ, ip string) []ovn.RoutingRow
	RoutingRowRouter(ctx context.Context, row ovn.RoutingRow) (string, error)
}

var _ podRouting = (*ovn.Client)(nil)

// routingOps are the ops of a network's routes and NAT rules (G4-G7):
// rows found for the port's addresses are changed in place or deleted,
// missing ones inserted, never beside an existing one. follow is set for
// a network already routed. The EIP conflicts come back as errors to
// retry, after a Warning; the rest of the network is written.
func (t *Term) routingOps(ctx context.Context, pod *corev1.Pod, w NetworkWrites, route *RouteWrites, ref ovn.Ref, follow bool) ([]ovsdb.Operation, []error, error) {
	nb := t.p.cfg.NB
	pr, ok := nb.(podRouting)
	if !ok {
		// A Northbound without the lookups (tests): insert or update by key.
		return t.ensureRouting(route)
	}
	have, err := pr.PodRouting(w.Port.Pod, w.Port.IPs)
	if err != nil {
		return nil, nil, err
	}
	if t.p.cfg.DisableEIPSNAT {
		have = routesOnly(have)
	}
	mine := func(addr string) bool { return slices.Contains(w.Port.IPs, addr) }
	eipUser := func(eip string) string {
		for _, r := range pr.NATsByExternalIP("dnat_and_snat", eip) {
			if !mine(r.Address) {
				return r.Address
			}
		}
		return ""
	}
	change := diffRouting(route, have, eipUser, follow)
	var warns []error
	for _, e := range change.Conflicts {
		t.warn(pod, ReasonInvalidAnnotation, e)
		warns = append(warns, retryWith(e, retryFull))
	}
	if change.Empty() {
		return nil, warns, nil
	}
	klog.FromContext(ctx).V(2).Info("Routes and NAT rules follow the pod's annotations", "port", w.Port.Name,
		"insert", len(change.Routes)+len(change.NATs), "update", len(change.Update), "delete", len(change.Delete),
		"joinGroup", change.JoinGroup, "leaveGroups", change.LeaveGroups)
	var ops []ovsdb.Operation
	router := t.p.cfg.ClusterRouter
	for _, u := range change.Update {
		if ok, err := t.onRouter(ctx, pr, u.Row, router); err != nil || !ok {
			if err != nil {
				return nil, warns, err
			}
			continue
		}
		ops = append(ops, ovn.UpdateRoutingRow(u.Row, u.Target, router, w.Port.Pod)...)
	}
	for _, r := range change.Delete {
		if ok, err := t.onRouter(ctx, pr, r, router); err != nil || !ok {
			if err != nil {
				return nil, warns, err
			}
			continue
		}
		ops = append(ops, ovn.DeleteRoutingRow(r)...)
	}
	for _, r := range change.Routes {
		rops, err := nb.EnsureStaticRoute(r)
		if err != nil {
			return nil, warns, err
		}
		ops = append(ops, ovn.PodRowAbsent(ovn.RowRoute, r.Prefix, r.Pod))
		ops = append(ops, rops...)
	}
	for _, n := range change.NATs {
		nops, err := nb.EnsureNAT(n)
		if err != nil {
			return nil, warns, err
		}
		ops = append(ops, ovn.PodRowAbsent(n.Type, n.LogicalIP, n.Pod))
		ops = append(ops, nops...)
	}
	if change.LeaveGroups {
		ops = append(ops, nb.LeaveNodePortGroups(w.Port.Switch, ref)...)
	}
	if change.JoinGroup {
		aops, err := nb.AddToPortGroup(route.PortGroup, ref)
		if errors.Is(err, ovn.ErrNotFound) {
			return nil, warns, retryWith(err, retryNodeGroup)
		}
		if err != nil {
			return nil, warns, fmt.Errorf("building port group %s membership: %w", route.PortGroup, err)
		}
		ops = append(ops, aops...)
	}
	return ops, warns, nil
}

// retryNodeGroup is how long a port waits for its node's group.
const retryNodeGroup = time.Second

// onRouter reports whether a row is on router: shardnet's rows say so,
// kube-ovn's are looked up on the server. A row of another router (a
// custom VPC's, with an overlapping address) is left alone.
func (t *Term) onRouter(ctx context.Context, pr podRouting, r ovn.RoutingRow, router string) (bool, error) {
	if r.Router != "" {
		return r.Router == router, nil
	}
	got, err := pr.RoutingRowRouter(ctx, r)
	if err != nil {
		return false, fmt.Errorf("finding the router of %s: %w", r, err)
	}
	return got == router, nil
}

// ensureRouting is the routed phase's rows by key, for a Northbound
// without the lookups of podRouting.
func (t *Term) ensureRouting(route *RouteWrites) ([]ovsdb.Operation, []error, error) {
	var ops []ovsdb.Operation
	for _, r := range route.Routes {
		rops, err := t.p.cfg.NB.EnsureStaticRoute(r)
		if err != nil {
			return nil, nil, err
		}
		ops = append(ops, rops...)
	}
	for _, n := range route.NATs {
		nops, err := t.p.cfg.NB.EnsureNAT(n)
		if err != nil {
			return nil, nil, err
		}
		ops = append(ops, nops...)
	}
	return ops, nil, nil
}

// describeChange is a RoutingChange in one line, for tests and logs.
func describeChange(c RoutingChange) string {
	var parts []string
	for _, r := range c.Routes {
		parts = append(parts, "insert route "+r.Prefix+"->"+r.Nexthop)
	}
	for _, n := range c.NATs {
		parts = append(parts, "insert "+n.Type+" "+n.LogicalIP+"->"+n.ExternalIP)
	}
	for _, u := range c.Update {
		who := "own"
		if u.Row.Foreign() {
			who = "kube-ovn"
		}
		parts = append(parts, fmt.Sprintf("update %s %s %s->%s", who, u.Row.Kind, u.Row.Address, u.Target))
	}
	for _, r := range c.Delete {
		who := "own"
		if r.Foreign() {
			who = "kube-ovn"
		}
		parts = append(parts, fmt.Sprintf("delete %s %s", who, r))
	}
	if c.JoinGroup {
		parts = append(parts, "join group")
	}
	if c.LeaveGroups {
		parts = append(parts, "leave groups")
	}
	for _, e := range c.Conflicts {
		parts = append(parts, "conflict "+e.Key)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

// routesOnly drops the NAT rules from rows: with EIP/SNAT handling off
// they are another controller's to keep (docs/contract.md G10).
func routesOnly(rows []ovn.RoutingRow) []ovn.RoutingRow {
	return slices.DeleteFunc(rows, func(r ovn.RoutingRow) bool { return r.Kind != ovn.RowRoute })
}
