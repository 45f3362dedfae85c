package reconcile

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/shardnet/shardnet/api/client/clientset/versioned/fake"
	kubeovnlisters "github.com/shardnet/shardnet/api/client/listers/kubeovn/v1"
	claimlisters "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/queue"
	"github.com/shardnet/shardnet/test/harness"
)

// The subnet reconciler over a Northbound that kube-ovn built
// (docs/decisions/0011-adopt-topology.md), against a real ovsdb-server;
// the Subnets, Events and conditions go through a fake clientset and a
// fake recorder.

// topoMetrics records TopologyDifference calls.
type topoMetrics struct {
	mu    sync.Mutex
	calls []string
}

func (m *topoMetrics) TopologyDifference(subnet, object string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, subnet+"/"+object)
}

func (m *topoMetrics) get() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

func topoMap(m map[string]string) ovsdb.OvsMap {
	out := ovsdb.OvsMap{GoMap: map[any]any{}}
	for k, v := range m {
		out.GoMap[k] = v
	}
	return out
}

func topoSet(vs ...any) ovsdb.OvsSet { return ovsdb.OvsSet{GoSet: vs} }

func named(n string) ovsdb.UUID { return ovsdb.UUID{GoUUID: n} }

// kubeOVNSubnetRows are the rows kube-ovn leaves for one overlay subnet:
// its switch (other_config subnet and exclude_ips, vendor=kube-ovn), the
// router port ovn-cluster-<subnet> with a random upper-case MAC and the
// given networks (its router references it by the named UUID
// "lrp_<subnet>"), the peer <subnet>-ovn-cluster of type router, a DHCP
// options row and a pod port pointing at it, and node1's port group as
// kube-ovn before v1.14 made it (np=<subnet>/node1 only), holding the pod.
func kubeOVNSubnetRows(subnet, cidr, networks string) []ovsdb.Operation {
	u := func(kind string) string { return kind + "_" + strings.ReplaceAll(subnet, "-", "_") }
	vendor := map[string]string{"vendor": "kube-ovn"}
	gw := strings.Split(networks, "/")[0]
	return []ovsdb.Operation{
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterPortTable, UUIDName: u("lrp"), Row: ovsdb.Row{
			"name": "ovn-cluster-" + subnet, "mac": "00:00:00:AB:CD:EF", "networks": networks, "external_ids": topoMap(vendor),
		}},
		{Op: ovsdb.OperationInsert, Table: nbdb.DHCPOptionsTable, UUIDName: u("dhcp"), Row: ovsdb.Row{
			"cidr": cidr, "external_ids": topoMap(map[string]string{"subnet": subnet, "vendor": "kube-ovn"}),
			"options": topoMap(map[string]string{"lease_time": "3600", "router": gw, "server_id": "169.254.0.254", "server_mac": "00:00:00:2E:2F:B8"}),
		}},
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: u("lsp_router"), Row: ovsdb.Row{
			"name": subnet + "-ovn-cluster", "type": "router", "addresses": "router",
			"options":      topoMap(map[string]string{"router-port": "ovn-cluster-" + subnet}),
			"external_ids": topoMap(map[string]string{"ls": subnet, "vendor": "kube-ovn"}),
		}},
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: u("lsp_pod"), Row: ovsdb.Row{
			"name": "p." + subnet, "addresses": "00:00:00:11:22:33 " + strings.TrimSuffix(gw, "1") + "5",
			"dhcpv4_options": named(u("dhcp")),
			"external_ids":   topoMap(map[string]string{"ls": subnet, "pod": subnet + "/p", "vendor": "kube-ovn"}),
		}},
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable, UUIDName: u("ls"), Row: ovsdb.Row{
			"name": subnet, "other_config": topoMap(map[string]string{"subnet": cidr, "exclude_ips": gw}),
			"external_ids": topoMap(vendor), "ports": topoSet(named(u("lsp_router")), named(u("lsp_pod"))),
		}},
		{Op: ovsdb.OperationInsert, Table: nbdb.PortGroupTable, UUIDName: u("pg"), Row: ovsdb.Row{
			"name": NodePortGroupName(subnet, "node1"), "external_ids": topoMap(map[string]string{"np": subnet + "/node1"}),
			"ports": named(u("lsp_pod")),
		}},
	}
}

// topoSnapshot reads every column of every row of the topology tables
// from the server; _version changes on any write to a row.
func topoSnapshot(t *testing.T, nb *ovn.Client) map[string]ovsdb.Row {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := map[string]ovsdb.Row{}
	for _, table := range []string{nbdb.LogicalSwitchTable, nbdb.LogicalSwitchPortTable, nbdb.LogicalRouterTable,
		nbdb.LogicalRouterPortTable, nbdb.PortGroupTable, nbdb.DHCPOptionsTable} {
		res, err := nb.Transact(ctx, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: table})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res[0].Rows {
			out[table+" "+r["_uuid"].(ovsdb.UUID).GoUUID] = r
		}
	}
	return out
}

type topoFixture struct {
	subnets  cache.Indexer
	nb       *ovn.Client
	cs       *fake.Clientset
	rec      *record.FakeRecorder
	metrics  *topoMetrics
	r        *SubnetReconciler
	recorder []string
}

// startTopology writes kube-ovn's rows for kovn (whose rows agree with its
// Subnet), kdiff (whose router port has a /24 where the Subnet has a /16)
// and kother (whose router port ovn-cluster-kother sits on router vpc1),
// and builds a subnet reconciler over them with nodes node1 and node2.
func startTopology(t *testing.T) *topoFixture {
	t.Helper()
	server := harness.StartNB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nb, err := ovn.NewClient(ctx, ovn.Config{Endpoints: []string{server.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Close)

	var ops []ovsdb.Operation
	ops = append(ops, kubeOVNSubnetRows("kovn", "10.66.0.0/16", "10.66.0.1/16")...)
	ops = append(ops, kubeOVNSubnetRows("kdiff", "10.77.0.0/16", "10.77.0.1/24")...)
	ops = append(ops, kubeOVNSubnetRows("kother", "10.88.0.0/16", "10.88.0.1/16")...)
	ops = append(ops,
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable, Row: ovsdb.Row{
			"name": "ovn-cluster", "external_ids": topoMap(map[string]string{"vendor": "kube-ovn"}),
			"ports": topoSet(named("lrp_kovn"), named("lrp_kdiff")),
		}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable, Row: ovsdb.Row{
			"name": "vpc1", "external_ids": topoMap(map[string]string{"vendor": "kube-ovn"}), "ports": named("lrp_kother"),
		}},
	)
	if _, err := nb.Transact(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, a := nb.Switch("kother")
		_, b := nb.RouterPort("ovn-cluster-kother")
		_, c := nb.PortGroup(NodePortGroupName("kother", "node1"))
		_, d := nb.Router("vpc1")
		if a && b && c && d {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("kube-ovn's rows never reached the cache")
		}
	}

	subnets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	var objs []*kubeovnv1.Subnet
	for name, cidr := range map[string]string{"kovn": "10.66.0.0/16", "kdiff": "10.77.0.0/16", "kother": "10.88.0.0/16"} {
		objs = append(objs, &kubeovnv1.Subnet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{SubnetFinalizer}},
			Spec:       kubeovnv1.SubnetSpec{CIDRBlock: cidr, Protocol: kubeovnv1.ProtocolIPv4},
		})
	}
	cs := fake.NewSimpleClientset()
	for _, s := range objs {
		if _, err := cs.KubeovnV1().Subnets().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := subnets.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"node1", "node2"} {
		if err := nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	alloc, err := ipam.NewClaims(ipam.NewClientStore(cs))
	if err != nil {
		t.Fatal(err)
	}
	claimLister := claimlisters.NewAddressClaimLister(claims)
	registry := NewSubnets(alloc, claimLister, 1)
	for _, s := range objs {
		if err := registry.Sync(s, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	f := &topoFixture{subnets: subnets, nb: nb, cs: cs, rec: record.NewFakeRecorder(100), metrics: &topoMetrics{}}
	f.r, err = NewSubnetReconciler(SubnetConfig{
		NB: nb, Shardnet: cs, Subnets: kubeovnlisters.NewSubnetLister(subnets), Nodes: corelisters.NewNodeLister(nodes),
		Claims: claimLister, Registry: registry, Recorder: f.rec, Metrics: f.metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// reconcile runs the reconciler until it neither fails nor asks for a
// quick retry (the cache catching up with its own inserts), and returns
// its last answer.
func (f *topoFixture) reconcile(t *testing.T, name string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		f.syncStatus(t, name)
		err := f.r.Reconcile(ctx, name)
		if d, retry := queue.RetryDelay(err); err == nil || !retry || d >= time.Second {
			return err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("reconcile of %s: %v", name, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// syncStatus copies the Subnet's status from the clientset into the
// lister's copy, as the informer would deliver the reconciler's own status
// patches.
func (f *topoFixture) syncStatus(t *testing.T, name string) {
	t.Helper()
	cur, err := f.cs.KubeovnV1().Subnets().Get(context.Background(), name, metav1.GetOptions{})
	obj, ok, _ := f.subnets.GetByKey(name)
	if err != nil || !ok {
		return
	}
	s := obj.(*kubeovnv1.Subnet).DeepCopy()
	s.Status = cur.Status
	if err := f.subnets.Update(s); err != nil {
		t.Fatal(err)
	}
}

// events drains the recorder.
func (f *topoFixture) events() []string {
	for {
		select {
		case e := <-f.rec.Events:
			f.recorder = append(f.recorder, e)
		default:
			out := f.recorder
			f.recorder = nil
			return out
		}
	}
}

func (f *topoFixture) ready(t *testing.T, name string) *kubeovnv1.Condition {
	t.Helper()
	s, err := f.cs.KubeovnV1().Subnets().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == ConditionReady {
			return &s.Status.Conditions[i]
		}
	}
	t.Fatalf("subnet %s has no Ready condition: %+v", name, s.Status)
	return nil
}

// TestSubnetReconcilerAdoptsKubeOVNTopology runs the subnet reconciler
// over kube-ovn's rows. Every existing row keeps every column (kube-ovn's
// router port MAC above all, which pods hold as their gateway's); the
// missing node port groups are added; a router port whose networks lack
// the Subnet's gateway and one on another router are reported (a Warning
// Event, a count, Ready=False with reason TopologyDiffers), once, and not
// written.
func TestSubnetReconcilerAdoptsKubeOVNTopology(t *testing.T) {
	f := startTopology(t)
	before := topoSnapshot(t, f.nb)

	// Rows that agree with the Subnet: adopted, Ready.
	if err := f.reconcile(t, "kovn"); err != nil {
		t.Fatalf("reconcile of kovn: %v", err)
	}
	if c := f.ready(t, "kovn"); c.Status != corev1.ConditionTrue || c.Reason != ReasonReady {
		t.Errorf("kovn Ready condition %+v, want True/%s", c, ReasonReady)
	}
	if ev := f.events(); len(ev) > 0 {
		t.Errorf("events for kovn: %v, want none", ev)
	}

	// A router port whose networks lack the gateway's prefix.
	err := f.reconcile(t, "kdiff")
	if d, retry := queue.RetryDelay(err); !retry || d != topologyRecheck {
		t.Errorf("reconcile of kdiff: %v, want a retry after %v", err, topologyRecheck)
	}
	wantEvent := `Warning TopologyDiffers Logical_Router_Port ovn-cluster-kdiff: networks is "10.77.0.1/24", the Subnet says "10.77.0.1/16"; left as it is`
	if ev := f.events(); !slices.Equal(ev, []string{wantEvent}) {
		t.Errorf("events for kdiff:\n %q\nwant\n %q", ev, wantEvent)
	}
	c := f.ready(t, "kdiff")
	if c.Status != corev1.ConditionFalse || c.Reason != ReasonTopologyDiffers ||
		!strings.Contains(c.Message, `Logical_Router_Port ovn-cluster-kdiff: networks is "10.77.0.1/24", the Subnet says "10.77.0.1/16"`) {
		t.Errorf("kdiff Ready condition %+v, want False/%s naming the router port", c, ReasonTopologyDiffers)
	}

	// A router port of that name on another router.
	err = f.reconcile(t, "kother")
	if d, retry := queue.RetryDelay(err); !retry || d != topologyRecheck {
		t.Errorf("reconcile of kother: %v, want a retry after %v", err, topologyRecheck)
	}
	wantEvent = `Warning TopologyDiffers Logical_Router_Port ovn-cluster-kother: router is "vpc1", the Subnet says "ovn-cluster"; left as it is`
	if ev := f.events(); !slices.Equal(ev, []string{wantEvent}) {
		t.Errorf("events for kother:\n %q\nwant\n %q", ev, wantEvent)
	}
	if c := f.ready(t, "kother"); c.Status != corev1.ConditionFalse || c.Reason != ReasonTopologyDiffers {
		t.Errorf("kother Ready condition %+v, want False/%s", c, ReasonTopologyDiffers)
	}

	// The same differences again: no new Event, no new count.
	for _, name := range []string{"kdiff", "kother", "kovn"} {
		_ = f.reconcile(t, name)
	}
	if ev := f.events(); len(ev) > 0 {
		t.Errorf("events on the second round: %v, want none", ev)
	}
	if got, want := f.metrics.get(), []string{"kdiff/" + ovn.ObjectRouterPort, "kother/" + ovn.ObjectRouterPort}; !slices.Equal(got, want) {
		t.Errorf("topology differences counted %v, want %v", got, want)
	}

	// Nothing that existed changed in any column; the missing node port
	// groups were added, for kdiff and kother too.
	after := topoSnapshot(t, f.nb)
	for k, b := range before {
		if a, ok := after[k]; !ok {
			t.Errorf("row %s (%v) was deleted", k, b["name"])
		} else if !reflect.DeepEqual(a, b) {
			t.Errorf("row %s (%v) changed:\n before %v\n after  %v", k, b["name"], b, a)
		}
	}
	var added []string
	for k, a := range after {
		if _, ok := before[k]; !ok {
			added = append(added, fmt.Sprintf("%s %v", strings.Fields(k)[0], a["name"]))
		}
	}
	slices.Sort(added)
	if want := []string{"Port_Group kdiff.node2", "Port_Group kother.node2", "Port_Group kovn.node2"}; !slices.Equal(added, want) {
		t.Errorf("rows added %v, want %v", added, want)
	}
	for _, lrp := range []string{"ovn-cluster-kovn", "ovn-cluster-kdiff"} {
		if p, ok := f.nb.RouterPort(lrp); !ok || p.MAC != "00:00:00:AB:CD:EF" {
			t.Errorf("router port %s: %+v, want kube-ovn's MAC", lrp, p)
		}
	}
}
