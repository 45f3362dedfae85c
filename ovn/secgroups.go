package ovn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// External ids of a pod's port that record its VIPs and security groups,
// as kube-ovn writes them.
const (
	// ExternalIDVIPs lists the port's VIPs, comma-separated; with
	// ExternalIDAttachVIPs=true it makes the port a virtual parent of
	// those VIPs' virtual ports.
	ExternalIDVIPs       = "vips"
	ExternalIDAttachVIPs = "attach-vips"
	// ExternalIDSecurityGroups lists the port's security groups,
	// separated by "/".
	ExternalIDSecurityGroups = "security_groups"
	// externalIDAssociatedSG prefixes associated_sg_<group>: "true" while
	// the port is in the group, "false" once it left it.
	externalIDAssociatedSG = "associated_sg_"
	// DefaultSecurityGroup is kube-ovn's security group for the ports of
	// custom VPCs.
	DefaultSecurityGroup = "default-securitygroup"
)

// AssociatedSecurityGroupKey is the external id that says whether a port
// is in security group sg.
func AssociatedSecurityGroupKey(sg string) string { return externalIDAssociatedSG + sg }

// SecurityGroupPortGroup is the port group of security group sg, as
// kube-ovn's SecurityGroup controller names it: "ovn.sg.<sg>" with every
// "-" turned into ".".
func SecurityGroupPortGroup(sg string) string {
	return strings.ReplaceAll("ovn.sg."+sg, "-", ".")
}

// portMembership is what a port spec's VIPs and security groups change on
// the port: external ids to set and to drop, and the security group port
// groups to join and to leave.
type portMembership struct {
	set         map[string]string
	drop        []string
	join, leave []string
}

// membership compares spec's VIPs and security groups with the port's
// current external ids (have; nil for a new port). A group is joined, and
// its associated_sg_ key set to "true", only once its port group exists,
// so that a retry after the group appears still joins it; a group the
// port was associated with and no longer names is left and marked
// "false", as kube-ovn marks it. security_groups lists every group the
// spec names, and stays (empty) once the last is removed. Nothing is
// returned for what already matches, so a rerun costs no op.
func (c *Client) membership(spec *PortSpec, have map[string]string, exists bool) portMembership {
	m := portMembership{set: map[string]string{}}
	if len(spec.VIPs) > 0 {
		m.set[ExternalIDVIPs] = strings.Join(spec.VIPs, ",")
		m.set[ExternalIDAttachVIPs] = "true"
	} else {
		m.drop = append(m.drop, ExternalIDVIPs, ExternalIDAttachVIPs)
	}
	want := map[string]bool{}
	for _, sg := range spec.SecurityGroups {
		want[sg] = true
		key := AssociatedSecurityGroupKey(sg)
		if _, ok := c.PortGroup(SecurityGroupPortGroup(sg)); !ok {
			continue
		}
		m.set[key] = "true"
		if !exists || have[key] != "true" {
			m.join = append(m.join, SecurityGroupPortGroup(sg))
		}
	}
	for key, v := range have {
		sg, ok := strings.CutPrefix(key, externalIDAssociatedSG)
		if !ok || v != "true" || want[sg] {
			continue
		}
		m.set[key] = "false"
		if _, ok := c.PortGroup(SecurityGroupPortGroup(sg)); ok {
			m.leave = append(m.leave, SecurityGroupPortGroup(sg))
		}
	}
	// have is a map: the order of its keys is not the ops' order.
	slices.Sort(m.leave)
	if _, ok := have[ExternalIDSecurityGroups]; ok || len(spec.SecurityGroups) > 0 {
		m.set[ExternalIDSecurityGroups] = strings.Join(spec.SecurityGroups, "/")
	}
	return m
}

// ops are the port group mutations of m for the port ref.
func (c *Client) membershipOps(m portMembership, ref Ref) ([]ovsdb.Operation, error) {
	var ops []ovsdb.Operation
	for _, g := range m.join {
		gops, err := c.AddToPortGroup(g, ref)
		if err != nil {
			return nil, fmt.Errorf("ovn: joining security group port group %s: %w", g, err)
		}
		ops = append(ops, gops...)
	}
	for _, g := range m.leave {
		gops, err := c.RemoveFromPortGroup(g, ref)
		if err != nil {
			return nil, fmt.Errorf("ovn: leaving security group port group %s: %w", g, err)
		}
		ops = append(ops, gops...)
	}
	return ops, nil
}
