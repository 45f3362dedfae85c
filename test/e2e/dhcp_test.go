package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/test/harness"
)

// TestDHCPOptionsFollowTheSubnet runs DHCP on real servers, with kube-ovn's
// own Subnet CRD and a replica process (docs/contract.md N4): a Subnet with
// enableDHCP gets a DHCP_Options row per family, shaped as kube-ovn's
// (cidr, options with the defaults filled in, external ids
// logical_switch, protocol and vendor) and recorded in its status; the
// ports of its pods, on the default network and on an OVN attachment,
// refer to them. Changed options update the rows in place; enableDHCP
// turned off deletes them (and the ports' references go with them);
// turned on again, the pods' ports refer to the new rows.
func TestDHCPOptionsFollowTheSubnet(t *testing.T) {
	c := startKubeOVNCluster(t, "dhcp")
	c.kube.InstallNADCRD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	node := c.kube.CreateNode(t, "kwok-node-dhcp", "")
	const provider = "net1.dhcp.ovn"
	nad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
		"metadata": map[string]any{"name": "net1", "namespace": "dhcp"},
		"spec":     map[string]any{"config": `{"type":"kube-ovn"}`},
	}}
	if _, err := dynamic.NewForConfigOrDie(c.kube.Config).Resource(harness.NADResource).Namespace("dhcp").Create(ctx, nad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.subnet("main", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) {
		s.Default, s.EnableDHCP, s.DHCPv4Options = true, true, "lease_time=600"
	})
	c.subnet("vms", "10.50.0.0/24,fd00:50::/120", func(s *kubeovnv1.SubnetSpec) {
		s.Provider, s.EnableDHCP, s.DHCPv6Options = provider, true, "dns_server=fd00:50::53"
	})
	c.startProcess("shardnet-0")

	pods := c.kube.Client.CoreV1().Pods("dhcp")
	if _, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "d1", Namespace: "dhcp",
			Annotations: map[string]string{"k8s.v1.cni.cncf.io/networks": "net1"}},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rows := func() map[string]nbdb.DHCPOptions {
		var list []nbdb.DHCPOptions
		if err := c.view.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		out := map[string]nbdb.DHCPOptions{}
		for _, r := range list {
			out[r.ExternalIDs[ovn.ExternalIDLogicalSwitch]+"/"+r.ExternalIDs[ovn.ExternalIDProtocol]] = r
		}
		return out
	}
	port := func(name string) (nbdb.LogicalSwitchPort, bool) {
		p, ok := c.ports(ctx)[name]
		return p, ok
	}
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	subnetStatus := func(name string) kubeovnv1.SubnetStatus {
		s, err := c.kube.Shardnet.KubeovnV1().Subnets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Status
	}
	patchSpec := func(name string, spec map[string]any) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"spec": spec})
		if _, err := c.kube.Shardnet.KubeovnV1().Subnets().Patch(ctx, name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// wantRow checks a row field by field against the shape kube-ovn
	// writes.
	wantRow := func(r nbdb.DHCPOptions, sw, family, cidr string, opts map[string]string) error {
		ids := map[string]string{"logical_switch": sw, "protocol": family, "vendor": "kube-ovn"}
		if r.Cidr != cidr || !maps.Equal(r.Options, opts) || !maps.Equal(r.ExternalIDs, ids) {
			return errorf("%s %s row: cidr %s options %v external ids %v; want %s %v %v", sw, family, r.Cidr, r.Options, r.ExternalIDs, cidr, opts, ids)
		}
		return nil
	}

	var main4, vms4, vms6 nbdb.DHCPOptions
	waitFor(t, ctx, "DHCP rows, their status and the ports' references", func() error {
		all := rows()
		if len(all) != 3 {
			return errorf("%d DHCP_Options rows, want 3: %v", len(all), all)
		}
		main4, vms4, vms6 = all["main/IPv4"], all["vms/IPv4"], all["vms/IPv6"]
		mac4 := main4.Options["server_mac"]
		if err := wantRow(main4, "main", "IPv4", "10.16.0.0/16", map[string]string{
			"lease_time": "600", "router": "10.16.0.1", "server_id": "169.254.0.254", "server_mac": mac4, "mtu": "1400",
		}); err != nil {
			return err
		}
		if err := wantRow(vms4, "vms", "IPv4", "10.50.0.0/24", map[string]string{
			"lease_time": "3600", "router": "10.50.0.1", "server_id": "169.254.0.254", "server_mac": vms4.Options["server_mac"], "mtu": "1400",
		}); err != nil {
			return err
		}
		if err := wantRow(vms6, "vms", "IPv6", "fd00:50::/120", map[string]string{
			"dns_server": "fd00:50::53", "server_id": vms6.Options["server_id"],
		}); err != nil {
			return err
		}
		for _, mac := range []string{mac4, vms4.Options["server_mac"], vms6.Options["server_id"]} {
			if len(mac) != 17 || mac[:9] != "00:00:00:" {
				return errorf("server MAC %q, want a 00:00:00 MAC", mac)
			}
		}
		if st := subnetStatus("main"); st.DHCPv4OptionsUUID != main4.UUID || st.DHCPv6OptionsUUID != "" {
			return errorf("main status records %q/%q, want %s/none", st.DHCPv4OptionsUUID, st.DHCPv6OptionsUUID, main4.UUID)
		}
		if st := subnetStatus("vms"); st.DHCPv4OptionsUUID != vms4.UUID || st.DHCPv6OptionsUUID != vms6.UUID {
			return errorf("vms status records %q/%q, want %s/%s", st.DHCPv4OptionsUUID, st.DHCPv6OptionsUUID, vms4.UUID, vms6.UUID)
		}
		p, ok := port("d1.dhcp")
		if !ok || deref(p.Dhcpv4Options) != main4.UUID || p.Dhcpv6Options != nil {
			return errorf("port d1.dhcp: %v, dhcp %q/%q; want %s/none", ok, deref(p.Dhcpv4Options), deref(p.Dhcpv6Options), main4.UUID)
		}
		p, ok = port("d1.dhcp." + provider)
		if !ok || deref(p.Dhcpv4Options) != vms4.UUID || deref(p.Dhcpv6Options) != vms6.UUID {
			return errorf("attachment port: %v, dhcp %q/%q; want %s/%s", ok, deref(p.Dhcpv4Options), deref(p.Dhcpv6Options), vms4.UUID, vms6.UUID)
		}
		return nil
	})

	// Options change: the row is updated in place, its server MAC kept.
	patchSpec("main", map[string]any{"dhcpV4Options": "lease_time=300,dns_server=10.16.0.10", "mtu": 1300})
	waitFor(t, ctx, "main's options follow its spec", func() error {
		r, ok := rows()["main/IPv4"]
		if !ok || r.UUID != main4.UUID {
			return errorf("main's IPv4 row %v (%s), want it updated in place (%s)", ok, r.UUID, main4.UUID)
		}
		return wantRow(r, "main", "IPv4", "10.16.0.0/16", map[string]string{
			"lease_time": "300", "dns_server": "10.16.0.10", "router": "10.16.0.1", "server_id": "169.254.0.254",
			"server_mac": main4.Options["server_mac"], "mtu": "1300",
		})
	})

	// enableDHCP off: the rows and the references go.
	patchSpec("vms", map[string]any{"enableDHCP": false})
	waitFor(t, ctx, "vms's rows deleted", func() error {
		all := rows()
		if _, ok := all["vms/IPv4"]; ok {
			return errorf("vms's IPv4 row is still there")
		}
		if _, ok := all["vms/IPv6"]; ok {
			return errorf("vms's IPv6 row is still there")
		}
		if st := subnetStatus("vms"); st.DHCPv4OptionsUUID != "" || st.DHCPv6OptionsUUID != "" {
			return errorf("vms status still records %q/%q", st.DHCPv4OptionsUUID, st.DHCPv6OptionsUUID)
		}
		if p, _ := port("d1.dhcp." + provider); p.Dhcpv4Options != nil || p.Dhcpv6Options != nil {
			return errorf("attachment port still refers to %q/%q", deref(p.Dhcpv4Options), deref(p.Dhcpv6Options))
		}
		return nil
	})

	// On again: new rows, and the running pod's port refers to them.
	patchSpec("vms", map[string]any{"enableDHCP": true})
	waitFor(t, ctx, "the attachment port refers to vms's new rows", func() error {
		all := rows()
		r4, ok4 := all["vms/IPv4"]
		r6, ok6 := all["vms/IPv6"]
		if !ok4 || !ok6 {
			return errorf("vms's rows: IPv4 %v, IPv6 %v", ok4, ok6)
		}
		if r4.Options["server_mac"] != vms4.Options["server_mac"] {
			return errorf("server MAC %s after re-creation, want the one derived before (%s)", r4.Options["server_mac"], vms4.Options["server_mac"])
		}
		p, _ := port("d1.dhcp." + provider)
		if deref(p.Dhcpv4Options) != r4.UUID || deref(p.Dhcpv6Options) != r6.UUID {
			return errorf("attachment port refers to %q/%q, want %s/%s", deref(p.Dhcpv4Options), deref(p.Dhcpv6Options), r4.UUID, r6.UUID)
		}
		return nil
	})

	// The pod goes: its ports go, the subnets' rows stay.
	if err := pods.Delete(ctx, "d1", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the pod's ports deleted", func() error {
		if _, ok := port("d1.dhcp"); ok {
			return errorf("port d1.dhcp is still there")
		}
		if _, ok := port("d1.dhcp." + provider); ok {
			return errorf("the attachment port is still there")
		}
		return nil
	})
	if n := len(rows()); n != 3 {
		t.Fatalf("%d DHCP_Options rows after the pod went, want the subnets' 3", n)
	}
}
