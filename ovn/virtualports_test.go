package ovn

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// TestVirtualPortsFollowTheirParents keeps a switch's virtual ports on a
// real server (docs/contract.md N14): one per VIP, type virtual, with
// virtual-ip and virtual-parents naming the switch's ports that list the
// VIP with attach-vips=true (not those without it, nor another switch's);
// parents follow ports as they come and go, the change handler names the
// switch, a VIP no longer listed loses its port, and a port that matches
// costs no op.
func TestVirtualPortsFollowTheirParents(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	makeSwitch(t, c, "vips")
	makeSwitch(t, c, "other")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var changed []string
	c.OnVIPPortChange(func(sw string) { mu.Lock(); changed = append(changed, sw); mu.Unlock() })
	apply := func(ops []ovsdb.Operation, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if len(ops) > 0 {
			if _, err := c.Transact(ctx, ops...); err != nil {
				t.Fatal(err)
			}
		}
	}
	port := func(name, sw, ip string, vips ...string) {
		t.Helper()
		ops, _, err := c.EnsurePort(PortSpec{Name: name, Switch: sw, Pod: "ns/" + name, MAC: "0a:58:0a:00:00:02", IPs: []string{ip}, VIPs: vips})
		apply(ops, err)
		eventually(t, "port "+name, func() bool { _, ok := c.Port(name); return ok })
	}
	port("a.ns", "vips", "10.0.0.2", "10.0.0.100", "10.0.0.101")
	port("b.ns", "vips", "10.0.0.3", "10.0.0.100")
	port("c.ns", "vips", "10.0.0.4")
	port("d.ns", "other", "10.1.0.4", "10.0.0.100")
	eventually(t, "change events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(changed, "vips") && slices.Contains(changed, "other")
	})

	vips := []string{"10.0.0.100", "10.0.0.101", "10.0.0.102"}
	parents := c.VirtualParents("vips", vips)
	want := map[string][]string{"10.0.0.100": {"a.ns", "b.ns"}, "10.0.0.101": {"a.ns"}, "10.0.0.102": nil}
	for v, w := range want {
		if !slices.Equal(parents[v], w) {
			t.Fatalf("parents of %s = %v, want %v", v, parents[v], w)
		}
	}
	apply(c.EnsureVirtualPorts("vips", vips, parents))
	check := func(vip, parents string) {
		t.Helper()
		name := VirtualPortName("vips", vip)
		eventually(t, name, func() bool {
			p, ok := c.Port(name)
			return ok && p.Type == "virtual" && p.Options["virtual-ip"] == vip && p.Options["virtual-parents"] == parents &&
				p.ExternalIDs["ls"] == "vips" && p.ExternalIDs["vendor"] == "kube-ovn"
		})
	}
	check("10.0.0.100", "a.ns,b.ns")
	check("10.0.0.101", "a.ns")
	check("10.0.0.102", "")
	if p, _ := c.Port(VirtualPortName("vips", "10.0.0.102")); len(p.Options) != 1 {
		t.Fatalf("a VIP without parents has options %v, want virtual-ip only", p.Options)
	}
	if ops, err := c.EnsureVirtualPorts("vips", vips, c.VirtualParents("vips", vips)); err != nil || len(ops) != 0 {
		t.Fatalf("matching virtual ports cost %v, %v; want no op", ops, err)
	}

	// b goes, c takes 10.0.0.102, 10.0.0.101 is no longer listed.
	apply(c.DeletePort("b.ns"))
	port("c.ns", "vips", "10.0.0.4", "10.0.0.102")
	eventually(t, "b gone", func() bool { _, ok := c.Port("b.ns"); return !ok })
	vips = []string{"10.0.0.100", "10.0.0.102"}
	apply(c.EnsureVirtualPorts("vips", vips, c.VirtualParents("vips", vips)))
	check("10.0.0.100", "a.ns")
	check("10.0.0.102", "c.ns")
	eventually(t, "10.0.0.101's port gone", func() bool { _, ok := c.Port(VirtualPortName("vips", "10.0.0.101")); return !ok })
	if _, ok := c.Port("a.ns"); !ok {
		t.Fatal("a parent port was deleted")
	}
	// No VIPs: every virtual port of the switch goes.
	apply(c.EnsureVirtualPorts("vips", nil, nil))
	eventually(t, "virtual ports gone", func() bool {
		_, ok1 := c.Port(VirtualPortName("vips", "10.0.0.100"))
		_, ok2 := c.Port(VirtualPortName("vips", "10.0.0.102"))
		return !ok1 && !ok2
	})
}
