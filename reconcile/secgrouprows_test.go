package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/ovn/nbdb"
)

// TestSecurityGroupRowsFollowTheAnnotations runs security_groups,
// port_security and port_vips on real servers (docs/contract.md N2, N3,
// N13, E24) and compares the port's row field by field with the shape
// kube-ovn's pod controller writes, through create, change and delete:
// addresses and port_security (MAC, addresses, then the VIPs), the
// external ids security_groups, associated_sg_<sg>, vips and attach-vips,
// and membership of each group's port group ovn.sg.<sg>. A group whose
// port group does not exist yet is recorded, not joined, with a Warning,
// and joined once it appears; a deleted pod's port leaves every group. It
// runs on the default network and on an OVN attachment.
func TestSecurityGroupRowsFollowTheAnnotations(t *testing.T) {
	t.Run("default", func(t *testing.T) { securityGroupRowsFollow(t, DefaultProvider) })
	t.Run("attachment", func(t *testing.T) { securityGroupRowsFollow(t, "net1.sg.ovn") })
}

func securityGroupRowsFollow(t *testing.T, provider string) {
	s := startSlice(t)
	ctx := s.ctx()
	node := s.kube.CreateNode(t, "node-sg", "")
	subnet, base := s.networkUnderTest("sg", provider, "10.44.0.0/24", "10.45.0.0/24")
	vips := "10.44.0.200,10.44.0.201"
	if subnet == "att" {
		vips = "10.45.0.200,10.45.0.201"
	}
	key := func(k string) string { return Key(provider, k) }
	makeGroup := func(sg string) {
		t.Helper()
		ops, err := s.view.Create(&nbdb.PortGroup{Name: ovn.SecurityGroupPortGroup(sg), ExternalIDs: map[string]string{"sg": sg}})
		if err == nil {
			_, err = s.view.Transact(ctx, ops...)
		}
		if err != nil {
			t.Fatalf("creating the port group of %s: %v", sg, err)
		}
	}
	makeGroup("sg-web")
	makeGroup("sg-db")

	ann := maps.Clone(base)
	ann[key(KeySecurityGroups)] = " sg-web , sg-db"
	ann[key(KeyPortSecurity)] = "true"
	ann[key(KeyPortVIPs)] = vips
	s.createPods([]*corev1.Pod{newPod("sg", "p", node.Name, ann)})
	pod := s.waitPod(ctx, "sg", "p", routedOn(DefaultProvider, provider))
	port := PortName("p", "sg", provider)
	mac, ip := pod.Annotations[key(KeyMACAddress)], pod.Annotations[key(KeyIPAddress)]
	// The port stays in its node group too (G3): security groups do not
	// touch it.
	group := NodePortGroupName(subnet, node.Name)

	// read is the pod's port and the port groups it is in, by name.
	read := func() (nbdb.LogicalSwitchPort, []string, bool, error) {
		var lsps []nbdb.LogicalSwitchPort
		var pgs []nbdb.PortGroup
		for _, l := range []any{&lsps, &pgs} {
			if err := s.view.List(context.Background(), l); err != nil {
				return nbdb.LogicalSwitchPort{}, nil, false, err
			}
		}
		i := slices.IndexFunc(lsps, func(p nbdb.LogicalSwitchPort) bool { return p.Name == port })
		if i < 0 {
			var in []string
			for _, pg := range pgs {
				if len(pg.Ports) > 0 && strings.HasPrefix(pg.Name, "ovn.sg.") {
					in = append(in, fmt.Sprintf("%s has %d ports", pg.Name, len(pg.Ports)))
				}
			}
			return nbdb.LogicalSwitchPort{}, in, false, nil
		}
		lsp := lsps[i]
		var groups []string
		for _, pg := range pgs {
			if slices.Contains(pg.Ports, lsp.UUID) {
				groups = append(groups, pg.Name)
			}
		}
		slices.Sort(groups)
		return lsp, groups, true, nil
	}
	// want compares the port with its expected security columns.
	want := func(lsp nbdb.LogicalSwitchPort, groups []string, portSecurity []string, ids map[string]string, wantGroups []string) error {
		if !slices.Equal(lsp.Addresses, []string{mac + " " + ip}) {
			return fmt.Errorf("addresses %v, want [%s %s]", lsp.Addresses, mac, ip)
		}
		if !slices.Equal(lsp.PortSecurity, portSecurity) {
			return fmt.Errorf("port_security %q, want %q", lsp.PortSecurity, portSecurity)
		}
		all := map[string]string{"pod": "sg/p", "ls": subnet, "vendor": "kube-ovn"}
		maps.Copy(all, ids)
		if !maps.Equal(lsp.ExternalIDs, all) {
			return fmt.Errorf("external ids %v, want %v", lsp.ExternalIDs, all)
		}
		if !slices.Equal(groups, wantGroups) {
			return fmt.Errorf("in port groups %v, want %v", groups, wantGroups)
		}
		return nil
	}

	// Created: both groups joined and associated, the VIPs in port
	// security and the external ids.
	waitView(t, ctx, func() error {
		lsp, groups, ok, err := read()
		if err != nil || !ok {
			return fmt.Errorf("port %s: found %v, %v", port, ok, err)
		}
		return want(lsp, groups, []string{mac + " " + ip + " " + strings.ReplaceAll(vips, ",", " ")},
			map[string]string{"security_groups": "sg-web/sg-db", "associated_sg_sg-web": "true", "associated_sg_sg-db": "true",
				"vips": vips, "attach-vips": "true"},
			[]string{group, "ovn.sg.sg.db", "ovn.sg.sg.web"})
	})

	// Changed: sg-db removed (left, associated false), sg-new added before
	// its port group exists (recorded only, E24), the VIPs and port
	// security removed.
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		key(KeySecurityGroups): "sg-web,sg-new", key(KeyPortVIPs): nil, key(KeyPortSecurity): nil,
	}}})
	if _, err := s.kube.Client.CoreV1().Pods("sg").Patch(ctx, "p", types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitView(t, ctx, func() error {
		lsp, groups, ok, err := read()
		if err != nil || !ok {
			return fmt.Errorf("port %s: found %v, %v", port, ok, err)
		}
		return want(lsp, groups, nil,
			map[string]string{"security_groups": "sg-web/sg-new", "associated_sg_sg-web": "true", "associated_sg_sg-db": "false"},
			[]string{group, "ovn.sg.sg.web"})
	})
	waitView(t, ctx, func() error {
		for _, w := range s.warnings(ctx, "sg", "p") {
			if strings.HasPrefix(w, ReasonSecurityGroup+":") && strings.Contains(w, "sg-new") {
				return nil
			}
		}
		return fmt.Errorf("no %s Warning naming sg-new: %v", ReasonSecurityGroup, s.warnings(ctx, "sg", "p"))
	})

	// The group appears: the port joins it on its retry.
	makeGroup("sg-new")
	waitView(t, ctx, func() error {
		lsp, groups, ok, err := read()
		if err != nil || !ok {
			return fmt.Errorf("port %s: found %v, %v", port, ok, err)
		}
		return want(lsp, groups, nil,
			map[string]string{"security_groups": "sg-web/sg-new", "associated_sg_sg-web": "true", "associated_sg_sg-db": "false", "associated_sg_sg-new": "true"},
			[]string{group, "ovn.sg.sg.new", "ovn.sg.sg.web"})
	})

	// Deleted: the port is gone and no group keeps a member.
	if err := s.kube.Client.CoreV1().Pods("sg").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitView(t, ctx, func() error {
		_, left, ok, err := read()
		switch {
		case err != nil:
			return err
		case ok:
			return fmt.Errorf("port %s still there", port)
		case len(left) > 0:
			return fmt.Errorf("security group port groups keep members: %v", left)
		}
		return nil
	})
}
