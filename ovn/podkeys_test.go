package ovn

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/test/harness"
)

// TestPortAddressesReadsEveryPort: adoption reads each port's switch (its
// ls external id, else the switch that lists it), pod and first fixed
// "MAC IP..." entry; a port with no fixed address is listed without IPs.
// What it returns does not change when the cache's rows do.
func TestPortAddressesReadsEveryPort(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	ls := makeSwitch(t, c, "bulk")
	ops, _, err := c.EnsurePort(bulkPort(1))
	if err != nil {
		t.Fatal(err)
	}
	// A port written by another controller: no ls external id, a
	// router entry before its fixed address.
	foreign := &nbdb.LogicalSwitchPort{UUID: "foreign", Name: "foreign-port",
		Addresses: []string{"router", "00:00:00:aa:bb:cc 10.16.9.9 fd00:10:16::9"}}
	create, err := c.nb.Create(foreign)
	if err != nil {
		t.Fatal(err)
	}
	router := &nbdb.LogicalSwitchPort{UUID: "router", Name: "router-port", Addresses: []string{"router"}}
	routerOps, err := c.nb.Create(router)
	if err != nil {
		t.Fatal(err)
	}
	// Ports are not a root table: a port no switch lists is removed.
	attach, err := c.nb.Where(ls).Mutate(ls, model.Mutation{Field: &ls.Ports, Mutator: ovsdb.MutateOperationInsert, Value: []string{foreign.UUID, router.UUID}})
	if err != nil {
		t.Fatal(err)
	}
	ops = slices.Concat(ops, create, routerOps, attach)
	mustTransact(t, c, ops)
	eventually(t, "ports in cache", func() bool {
		_, ok1 := c.Port("foreign-port")
		_, ok2 := c.Port("router-port")
		return ok1 && ok2
	})

	byName := func() map[string]PortAddress {
		out := map[string]PortAddress{}
		pas, err := c.PortAddresses(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, pa := range pas {
			out[pa.Name] = pa
		}
		return out
	}
	got := byName()
	want := map[string]PortAddress{
		"pod-00001.bulk": {Name: "pod-00001.bulk", Switch: "bulk", Pod: "bulk/pod-00001", MAC: "00:00:0a:00:00:01", IPs: []string{"10.16.0.1"}},
		"foreign-port":   {Name: "foreign-port", Switch: "bulk", MAC: "00:00:00:aa:bb:cc", IPs: []string{"10.16.9.9", "fd00:10:16::9"}},
		"router-port":    {Name: "router-port"}, // no fixed address: its switch is not looked up
	}
	if len(got) != len(want) {
		t.Fatalf("PortAddresses = %+v, want %+v", got, want)
	}
	for name, w := range want {
		g := got[name]
		if g.Name != w.Name || g.Switch != w.Switch || g.Pod != w.Pod || g.MAC != w.MAC || !slices.Equal(g.IPs, w.IPs) {
			t.Errorf("port %s: %+v, want %+v", name, g, w)
		}
	}

	// The cache's row changes; what was returned stays as read.
	moved := bulkPort(1)
	moved.IPs = []string{"10.16.0.200"}
	ops, _, err = c.EnsurePort(moved)
	if err != nil {
		t.Fatal(err)
	}
	mustTransact(t, c, ops)
	eventually(t, "port updated in cache", func() bool { return slices.Equal(byName()["pod-00001.bulk"].IPs, moved.IPs) })
	if ips := got["pod-00001.bulk"].IPs; !slices.Equal(ips, []string{"10.16.0.1"}) {
		t.Errorf("a returned port changed with the cache: IPs %v", ips)
	}
}

// portAddressesByList is how PortAddresses read the ports before: the
// API's List, which copies every row. The benchmark's baseline.
func portAddressesByList(c *Client) ([]PortAddress, error) {
	var ports []nbdb.LogicalSwitchPort
	if err := c.nb.List(context.Background(), &ports); err != nil {
		return nil, err
	}
	out := make([]PortAddress, 0, len(ports))
	for i := range ports {
		p := &ports[i]
		pa := PortAddress{Name: p.Name, Switch: p.ExternalIDs[ExternalIDSwitch], Pod: p.ExternalIDs[ExternalIDPod]}
		for _, a := range p.Addresses {
			if f := strings.Fields(a); len(f) >= 2 {
				pa.MAC, pa.IPs = f[0], f[1:]
				break
			}
		}
		out = append(out, pa)
	}
	return out, nil
}

// BenchmarkPortAddresses reads 10,000 cached ports the way adoption and
// the status loop's pass do, against the copying read of the API's List
// in the same run (the ratio is the figure; bytes/op says what each pass
// allocates).
//
//	go test -run '^$' -bench BenchmarkPortAddresses -benchmem ./ovn
func BenchmarkPortAddresses(b *testing.B) {
	const n = 10000
	nb := harness.StartNB(b)
	c := connect(b, []string{nb.Endpoint}, false)
	makeSwitch(b, c, "bulk")
	for start := 0; start < n; start += 500 {
		var ops []ovsdb.Operation
		for i := start; i < start+500; i++ {
			o, _, err := c.EnsurePort(bulkPort(i))
			if err != nil {
				b.Fatal(err)
			}
			ops = append(ops, o...)
		}
		mustTransact(b, c, ops)
	}
	eventually(b, "ports in cache", func() bool { _, ok := c.Port(bulkPort(n - 1).Name); return ok })
	var perPort [2]float64
	shallow := func(c *Client) ([]PortAddress, error) { return c.PortAddresses(context.Background()) }
	for i, read := range []func(*Client) ([]PortAddress, error){portAddressesByList, shallow} {
		name := []string{"list", "shallow"}[i]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pas, err := read(c)
				if err != nil || len(pas) != n {
					b.Fatalf("%s read %d ports (%v), want %d", name, len(pas), err, n)
				}
			}
			perPort[i] = float64(b.Elapsed().Nanoseconds()) / float64(b.N) / n
			b.ReportMetric(perPort[i], "ns/port")
		})
	}
	if perPort[0] > 0 && perPort[1] > 0 {
		fmt.Printf("PortAddresses: shallow/list time per port %.2f\n", perPort[1]/perPort[0])
	}
}
