package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/ipcache"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/test/harness"
)

// The takeover suite prepares a cluster exactly as kube-ovn's controller
// leaves it (pod annotations in kube-ovn's spelling, IP records,
// Logical_Switch_Ports with kube-ovn's external ids, router ports with
// kube-ovn's random upper-case MACs, node port groups, a policy and a
// route on the cluster router), then starts three shardnet replicas
// while 1,000 new pods are being created, and proves the takeover moved
// nothing (docs/contract.md §15).
const (
	toNS     = "takeover"
	toFullNS = "takeover-full"
	toHalfNS = "takeover-half"
	toShards = 16
	toRouter = "ovn-cluster"
	// toPods are the running pods kube-ovn gave addresses in the default
	// subnet; toFullPods fill 230 of the 253 usable addresses of "full".
	toPods     = 2700
	toFullPods = 230
	toSTSPods  = 30
	toStatic   = 50
	toNewPods  = 1000
	toNewFull  = 20
	toNodes    = 3
)

// toSubnet is one subnet as kube-ovn's subnet controller completes it.
type toSubnet struct {
	name, cidr, gw string
	namespaces     []string
	def            bool
	// lrpMAC is the router port MAC kube-ovn generated.
	lrpMAC string
}

var toSubnets = []toSubnet{
	{name: "ovn-default", cidr: "10.80.0.0/16", gw: "10.80.0.1", def: true, lrpMAC: "00:00:00:5A:0C:11"},
	{name: "full", cidr: "10.81.0.0/24", gw: "10.81.0.1", namespaces: []string{toFullNS}, lrpMAC: "00:00:00:9E:31:07"},
	{name: "join", cidr: "100.64.0.0/16", gw: "100.64.0.1", lrpMAC: "00:00:00:C2:4B:E9"},
}

// toPod is one pod kube-ovn served, as prepared.
type toPod struct {
	ns, name, node, subnet string
	ip, mac                string
	// static: the user wrote ip_address (and a lower-case MAC) himself.
	static bool
	sts    bool
	// noPort, noRecord: half-written state.
	noPort, noRecord bool
	// portIP overrides the port's address (a port that disagrees).
	portIP string
}

func (p *toPod) key() string      { return p.ns + "/" + p.name }
func (p *toPod) portName() string { return p.name + "." + p.ns }

// kubeMAC is a MAC in kube-ovn's spelling: 00:00:00 and three upper-case
// hex bytes.
func kubeMAC(n int) string {
	return fmt.Sprintf("00:00:00:%02X:%02X:%02X", byte(n>>16)|0xA0, byte(n>>8), byte(n))
}

func (e *takeoverEnv) subnet(name string) toSubnet {
	for _, s := range toSubnets {
		if s.name == name {
			return s
		}
	}
	e.t.Fatalf("no subnet %s", name)
	return toSubnet{}
}

// annotations are the pod's annotations as kube-ovn writes them.
func (e *takeoverEnv) annotations(p *toPod) map[string]string {
	s := e.subnet(p.subnet)
	return map[string]string{
		"ovn.kubernetes.io/allocated":      "true",
		"ovn.kubernetes.io/routed":         "true",
		"ovn.kubernetes.io/ip_address":     p.ip,
		"ovn.kubernetes.io/mac_address":    p.mac,
		"ovn.kubernetes.io/cidr":           s.cidr,
		"ovn.kubernetes.io/gateway":        s.gw,
		"ovn.kubernetes.io/logical_switch": s.name,
		"ovn.kubernetes.io/logical_router": toRouter,
		"ovn.kubernetes.io/pod_nic_type":   "veth-pair",
	}
}

type takeoverEnv struct {
	t        *testing.T
	kube     *harness.Kube
	view     client.Client
	bin      string
	args     []string
	nodes    []string
	replicas map[string]*harness.Replica
	prepared []*toPod
	stsUID   types.UID
}

func TestTakeOverKubeOVNCluster(t *testing.T) {
	// A kube-ovn cluster: kube-ovn's own kubeovn.io CRDs (pinned copies),
	// and shardnet's base (the AddressClaim CRD) installed beside them.
	e := &takeoverEnv{t: t, replicas: map[string]*harness.Replica{}}
	e.kube = harness.StartKubeWithCRDs(t, harness.DefaultCRDDirs(t)[0], harness.KubeOVNCRDDir(t))
	e.kube.StartKwok(t)
	nb := harness.StartNB(t)
	e.view = harness.NBView(t, client.WithEndpoint(nb.Endpoint))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	e.prepareKube(ctx)
	e.prepareNB(ctx)
	e.bin = harness.BuildShardnet(t)
	e.args = []string{
		"--kubeconfig=" + e.kube.Kubeconfig,
		"--namespace=" + coordNS,
		"--nb-endpoints=" + nb.Endpoint,
		fmt.Sprintf("--shards=%d", toShards), "--workers-per-shard=4",
		// Leases long enough for three race-enabled replicas adopting
		// thousands of pods on two cores; this suite is not about
		// failover.
		"--lease-duration=10s", "--renew-deadline=8s", "--retry-period=1s",
		"--ip-records=true", "--default-subnet=ovn-default",
		// The orphan rows stay until the test removes them, as the
		// collector (tested on its own) or a person would.
		"--gc-interval=2s", "--gc-grace=10m", "--status-interval=500ms",
		"--memory-limit=none",
		"--v=2",
	}
	before := e.snapshotNB(ctx)
	subnetsBefore := e.readSubnets(ctx)
	preparedPods := e.readPods(ctx)
	preparedIPs := e.readIPs(ctx)

	// The replicas start, and the new pods come while they do.
	start := time.Now()
	var wg sync.WaitGroup
	newPods := e.newPods()
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.createPods(ctx, newPods)
	}()
	for i := range 3 {
		id := fmt.Sprintf("shardnet-%d", i)
		r := harness.StartReplica(t, e.bin, id, e.args...)
		e.replicas[id] = r
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("replica %s: last log lines:\n%s", id, r.LogTail())
			}
		})
	}
	wg.Wait()
	t.Logf("created %d new pods while the replicas started, in %v", len(newPods), time.Since(start).Round(time.Millisecond))

	// The contenders for the orphan rows' addresses come once the
	// replicas hold what is in use.
	e.waitAdoptionHeld(ctx)
	contenders := e.contenders()
	e.createPods(ctx, contenders)

	adopted := e.waitSettled(ctx, newPods)
	t.Logf("takeover settled after %v", time.Since(start).Round(time.Millisecond))

	e.checkUnchanged(ctx, before, preparedPods, preparedIPs)
	e.checkSubnetsKept(ctx, subnetsBefore)
	e.checkHalfWritten(ctx, contenders)
	e.checkNoDuplicates(ctx)
	e.report(ctx, adopted)
	for id, r := range e.replicas {
		if n := r.RaceReports(); n > 0 {
			t.Errorf("replica %s reported %d data races", id, n)
		}
	}
}

// prepareKube writes the Kubernetes half of a kube-ovn cluster.
func (e *takeoverEnv) prepareKube(ctx context.Context) {
	t := e.t
	for _, ns := range []string{coordNS, toNS, toFullNS, toHalfNS} {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if ns == toFullNS {
			n.Annotations = map[string]string{"ovn.kubernetes.io/logical_switch": "full", "ovn.kubernetes.io/cidr": "10.81.0.0/24"}
		}
		if _, err := e.kube.Client.CoreV1().Namespaces().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range toNodes {
		e.nodes = append(e.nodes, e.kube.CreateNode(t, fmt.Sprintf("kwok-to-%d", i), "").Name)
	}
	for _, s := range toSubnets {
		sub := &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: s.name}, Spec: kubeovnv1.SubnetSpec{
			CIDRBlock: s.cidr, Gateway: s.gw, ExcludeIps: []string{s.gw}, Provider: "ovn", Vpc: toRouter,
			Protocol: "IPv4", Default: s.def, Namespaces: s.namespaces, GatewayType: "distributed",
		}}
		if _, err := e.kube.Shardnet.KubeovnV1().Subnets().Create(ctx, sub, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Fields of kube-ovn's Subnet that shardnet's type does not know,
		// in spec and in status, as kube-ovn's controllers leave them.
		spec := []byte(`{"spec":{"mtu":1400,"enableLb":true,"natOutgoing":true,"enableEcmp":false,` +
			`"acls":[{"action":"allow-related","direction":"to-lport","match":"ip4.src==10.0.0.0/8","priority":1000}]}}`)
		if _, err := e.dyn().Resource(subnetGVR).Patch(ctx, s.name, types.MergePatchType, spec, metav1.PatchOptions{}); err != nil {
			t.Fatalf("subnet %s spec: %v", s.name, err)
		}
		status := []byte(`{"status":{"activateGateway":"kwok-to-0","dhcpV4OptionsUUID":"5b2f6e4c-0000-4000-8000-000000000001","u2oInterconnectionIP":"","v4availableIPs":0,"v4usingIPs":0}}`)
		if _, err := e.dyn().Resource(subnetGVR).Patch(ctx, s.name, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("subnet %s status: %v", s.name, err)
		}
	}
	sts, err := e.kube.Client.AppsV1().StatefulSets(toNS).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr(int32(toSTSPods)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.stsUID = sts.UID

	// The default subnet: ordinary, static and StatefulSet pods.
	n := 0
	next := func() int { n++; return n }
	for i := range toPods {
		a := netip.MustParseAddr("10.80.0.10")
		for range i * 3 { // spread over the /16
			a = a.Next()
		}
		p := &toPod{ns: toNS, name: fmt.Sprintf("run-%04d", i), node: e.nodes[i%toNodes], subnet: "ovn-default", ip: a.String(), mac: kubeMAC(next())}
		switch {
		case i < toSTSPods:
			p.name, p.sts = fmt.Sprintf("web-%d", i), true
		case i < toSTSPods+toStatic:
			p.static = true
			p.mac = fmt.Sprintf("0e:5a:00:00:%02x:%02x", byte(i>>8), byte(i))
		}
		e.prepared = append(e.prepared, p)
	}
	// The nearly full subnet: .2 to .231 of 253 usable.
	for i := range toFullPods {
		a := netip.AddrFrom4([4]byte{10, 81, 0, byte(2 + i)})
		e.prepared = append(e.prepared, &toPod{ns: toFullNS, name: fmt.Sprintf("full-%03d", i), node: e.nodes[i%toNodes], subnet: "full", ip: a.String(), mac: kubeMAC(next())})
	}
	// Half-written state in the default subnet (10.80.250.x).
	half := func(name, ip string) *toPod {
		return &toPod{ns: toHalfNS, name: name, node: e.nodes[0], subnet: "ovn-default", ip: ip, mac: kubeMAC(next())}
	}
	annNoPort := half("ann-no-port", "10.80.250.1")
	annNoPort.noPort = true
	dupA := half("dup-a", "10.80.250.4") // annotated, no port, no record
	dupA.noPort, dupA.noRecord = true, true
	dupB := half("dup-b", "10.80.250.4") // annotated, and the port carries it
	disagree := half("disagree", "10.80.250.5")
	disagree.portIP = "10.80.250.6"
	e.prepared = append(e.prepared, annNoPort, dupA, dupB, disagree)

	e.parallel(ctx, len(e.prepared), func(i int) error {
		p := e.prepared[i]
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.ns, Annotations: e.annotations(p)},
			Spec:       corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		if p.sts {
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: e.stsUID, Controller: ptr(true)}}
		}
		if _, err := e.kube.Client.CoreV1().Pods(p.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("pod %s: %w", p.key(), err)
		}
		if p.noRecord {
			return nil
		}
		return e.createRecord(ctx, p.portName(), p)
	})
	// An IP record whose pod is gone, and the join subnet's node records.
	rec := half("rec-no-pod", "10.80.250.3")
	if err := e.createRecord(ctx, rec.portName(), rec); err != nil {
		t.Fatal(err)
	}
	for i, node := range e.nodes {
		ip := &kubeovnv1.IP{ObjectMeta: metav1.ObjectMeta{Name: "node-" + node, Labels: map[string]string{"ovn.kubernetes.io/subnet": "join", "join": "", "ovn.kubernetes.io/node-name": node}},
			Spec: kubeovnv1.IPSpec{PodName: node, Subnet: "join", NodeName: node, IPAddress: fmt.Sprintf("100.64.0.%d", 2+i), V4IPAddress: fmt.Sprintf("100.64.0.%d", 2+i), MacAddress: kubeMAC(0xF00 + i)}}
		if _, err := e.kube.Shardnet.KubeovnV1().IPs().Create(ctx, ip, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("prepared %d pods with kube-ovn's annotations and IP records", len(e.prepared))
}

func (e *takeoverEnv) createRecord(ctx context.Context, name string, p *toPod) error {
	podType := ""
	if p.sts {
		podType = "StatefulSet"
	}
	ip := &kubeovnv1.IP{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"ovn.kubernetes.io/subnet": p.subnet, p.subnet: "", "ovn.kubernetes.io/node-name": p.node,
		}},
		Spec: kubeovnv1.IPSpec{PodName: p.name, Namespace: p.ns, Subnet: p.subnet, NodeName: p.node,
			IPAddress: p.ip, V4IPAddress: p.ip, MacAddress: p.mac, PodType: podType, AttachSubnets: []string{}, AttachIPs: []string{}, AttachMacs: []string{}},
	}
	if _, err := e.kube.Shardnet.KubeovnV1().IPs().Create(ctx, ip, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("IP %s: %w", name, err)
	}
	return nil
}

// prepareNB writes the Northbound half: the cluster router with a policy
// and a route, a switch, router port pair and node port groups per
// subnet, the join subnet's node ports, and a port per pod.
func (e *takeoverEnv) prepareNB(ctx context.Context) {
	t := e.t
	ops := []ovsdb.Operation{
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterPolicyTable, UUIDName: "pol", Row: ovsdb.Row{
			"priority": 31000, "match": "ip4.dst == 10.80.0.0/16", "action": "allow",
			"external_ids": ovsMap(map[string]string{"vendor": "kube-ovn", "subnet": "ovn-default"})}},
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterStaticRouteTable, UUIDName: "rt", Row: ovsdb.Row{
			"ip_prefix": "0.0.0.0/0", "nexthop": "100.64.0.1", "policy": "dst-ip",
			"external_ids": ovsMap(map[string]string{"vendor": "kube-ovn"})}},
	}
	var lrps []ovsdb.UUID
	for _, s := range toSubnets {
		bits := netip.MustParsePrefix(s.cidr).Bits()
		lrp, lsp, ls := "lrp_"+strings.ReplaceAll(s.name, "-", "_"), "lsp_"+strings.ReplaceAll(s.name, "-", "_"), "ls_"+strings.ReplaceAll(s.name, "-", "_")
		ops = append(ops,
			ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterPortTable, UUIDName: lrp, Row: ovsdb.Row{
				"name": toRouter + "-" + s.name, "mac": s.lrpMAC, "networks": ovsSet(fmt.Sprintf("%s/%d", s.gw, bits)),
				"external_ids": ovsMap(map[string]string{"vendor": "kube-ovn"})}},
			ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: lsp, Row: ovsdb.Row{
				"name": s.name + "-" + toRouter, "type": "router", "addresses": ovsSet("router"),
				"options":      ovsMap(map[string]string{"router-port": toRouter + "-" + s.name}),
				"external_ids": ovsMap(map[string]string{"vendor": "kube-ovn"})}},
			ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchTable, UUIDName: ls, Row: ovsdb.Row{
				"name":         s.name,
				"other_config": ovsMap(map[string]string{"subnet": s.cidr, "gateway": s.gw, "exclude_ips": s.gw, "mcast_querier": "false"}),
				"external_ids": ovsMap(map[string]string{"vendor": "kube-ovn"}),
				"ports":        ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: lsp}}}}},
		)
		lrps = append(lrps, ovsdb.UUID{GoUUID: lrp})
		if s.name == "join" {
			continue
		}
		for _, node := range e.nodes {
			ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.PortGroupTable, Row: ovsdb.Row{
				"name":         strings.ReplaceAll(s.name+"."+node, "-", "."),
				"external_ids": ovsMap(map[string]string{"subnet": s.name, "node": node, "np": ""})}})
		}
	}
	var lrpSet []any
	for _, u := range lrps {
		lrpSet = append(lrpSet, u)
	}
	ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalRouterTable, Row: ovsdb.Row{
		"name": toRouter, "ports": ovsdb.OvsSet{GoSet: lrpSet},
		"policies":      ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "pol"}}},
		"static_routes": ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "rt"}}},
		"external_ids":  ovsMap(map[string]string{"vendor": "kube-ovn"}),
	}})
	e.transact(ctx, ops)

	// The join subnet's node ports (no pod), then the pods' ports.
	type port struct {
		name, sw, pod, mac, ip, group string
	}
	var ports []port
	for i, node := range e.nodes {
		ports = append(ports, port{name: "node-" + node, sw: "join", mac: kubeMAC(0xF00 + i), ip: fmt.Sprintf("100.64.0.%d", 2+i)})
	}
	for _, p := range e.prepared {
		if p.noPort {
			continue
		}
		ip := p.ip
		if p.portIP != "" {
			ip = p.portIP
		}
		ports = append(ports, port{name: p.portName(), sw: p.subnet, pod: p.key(), mac: p.mac, ip: ip,
			group: strings.ReplaceAll(p.subnet+"."+p.node, "-", ".")})
	}
	// A port whose pod is gone.
	ports = append(ports, port{name: "port-no-pod." + toHalfNS, sw: "ovn-default", pod: toHalfNS + "/port-no-pod", mac: kubeMAC(0xE01), ip: "10.80.250.2"})
	for start := 0; start < len(ports); start += 500 {
		batch := ports[start:min(start+500, len(ports))]
		var ops []ovsdb.Operation
		for i, p := range batch {
			u := fmt.Sprintf("p%d", i)
			ids := map[string]string{"vendor": "kube-ovn", "ls": p.sw}
			if p.pod != "" {
				ids["pod"] = p.pod
			}
			ops = append(ops,
				ovsdb.Operation{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: u, Row: ovsdb.Row{
					"name": p.name, "addresses": ovsSet(p.mac + " " + p.ip), "external_ids": ovsMap(ids)}},
				ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
					Where:     []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: p.sw}},
					Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: u}}}}}},
			)
			if p.group != "" {
				ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: nbdb.PortGroupTable,
					Where:     []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: p.group}},
					Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: u}}}}}})
			}
		}
		e.transact(ctx, ops)
	}
	want := len(ports) + len(toSubnets)
	waitFor(t, ctx, "the prepared Northbound in the view", func() error {
		var lsps []nbdb.LogicalSwitchPort
		if err := e.view.List(ctx, &lsps); err != nil {
			return err
		}
		if len(lsps) != want {
			return fmt.Errorf("%d ports, want %d", len(lsps), want)
		}
		return nil
	})
	t.Logf("prepared the Northbound: %d ports", want)
}

func (e *takeoverEnv) transact(ctx context.Context, ops []ovsdb.Operation) {
	e.t.Helper()
	res, err := e.view.Transact(ctx, ops...)
	if err == nil {
		_, err = ovsdb.CheckOperationResults(res, ops)
	}
	if err != nil {
		e.t.Fatalf("preparing the Northbound: %v", err)
	}
}

func ovsMap(m map[string]string) ovsdb.OvsMap {
	out := ovsdb.OvsMap{GoMap: map[any]any{}}
	for k, v := range m {
		out.GoMap[k] = v
	}
	return out
}

func ovsSet(ss ...string) ovsdb.OvsSet {
	out := ovsdb.OvsSet{}
	for _, s := range ss {
		out.GoSet = append(out.GoSet, s)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// parallel runs f for 0..n-1 with 16 at a time and fails on the first
// error.
func (e *takeoverEnv) parallel(ctx context.Context, n int, f func(i int) error) {
	e.t.Helper()
	sem := make(chan struct{}, 16)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs <- f(i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			e.t.Fatal(err)
		}
	}
}

// newPod is a pod created during the takeover.
type newPod struct {
	ns, name, node string
	ann            map[string]string
	// want is the address a contender asks for.
	want string
}

func (e *takeoverEnv) newPods() []*newPod {
	var out []*newPod
	for i := range toNewPods {
		p := &newPod{ns: toNS, name: fmt.Sprintf("new-%04d", i), node: e.nodes[i%toNodes]}
		if i < toNewFull {
			p.ns = toFullNS
		}
		out = append(out, p)
	}
	return out
}

// contenders ask, each with a static address, for an address an orphan
// row holds (a port without a pod, an IP record without a pod) and for
// the address a disagreeing port carries.
func (e *takeoverEnv) contenders() []*newPod {
	var out []*newPod
	for name, ip := range map[string]string{"wants-port": "10.80.250.2", "wants-record": "10.80.250.3"} {
		out = append(out, &newPod{ns: toHalfNS, name: name, node: e.nodes[1], want: ip,
			ann: map[string]string{"ovn.kubernetes.io/ip_address": ip}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (e *takeoverEnv) createPods(ctx context.Context, pods []*newPod) {
	e.parallel(ctx, len(pods), func(i int) error {
		p := pods[i]
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.ns, Annotations: p.ann},
			Spec:       corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		_, err := e.kube.Client.CoreV1().Pods(p.ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
}

// nbSnapshot is every Northbound row the takeover must leave alone.
type nbSnapshot struct {
	ports    map[string]nbdb.LogicalSwitchPort
	switches map[string]nbdb.LogicalSwitch
	lrps     map[string]nbdb.LogicalRouterPort
	groups   map[string]nbdb.PortGroup
	routers  map[string]nbdb.LogicalRouter
	policies map[string]nbdb.LogicalRouterPolicy
	routes   map[string]nbdb.LogicalRouterStaticRoute
}

func (e *takeoverEnv) snapshotNB(ctx context.Context) *nbSnapshot {
	e.t.Helper()
	s := &nbSnapshot{}
	s.ports = listBy(e, ctx, func(r nbdb.LogicalSwitchPort) string { return r.Name })
	s.switches = listBy(e, ctx, func(r nbdb.LogicalSwitch) string { return r.Name })
	s.lrps = listBy(e, ctx, func(r nbdb.LogicalRouterPort) string { return r.Name })
	s.groups = listBy(e, ctx, func(r nbdb.PortGroup) string { return r.Name })
	s.routers = listBy(e, ctx, func(r nbdb.LogicalRouter) string { return r.Name })
	s.policies = listBy(e, ctx, func(r nbdb.LogicalRouterPolicy) string { return r.UUID })
	s.routes = listBy(e, ctx, func(r nbdb.LogicalRouterStaticRoute) string { return r.UUID })
	return s
}

func listBy[T any](e *takeoverEnv, ctx context.Context, key func(T) string) map[string]T {
	var rows []T
	if err := e.view.List(ctx, &rows); err != nil {
		e.t.Fatal(err)
	}
	out := make(map[string]T, len(rows))
	for _, r := range rows {
		out[key(r)] = r
	}
	return out
}

func (e *takeoverEnv) readPods(ctx context.Context) map[string]corev1.Pod {
	e.t.Helper()
	out := map[string]corev1.Pod{}
	for _, ns := range []string{toNS, toFullNS, toHalfNS} {
		l, err := e.kube.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, p := range l.Items {
			out[p.Namespace+"/"+p.Name] = p
		}
	}
	return out
}

// withoutMarking is m without the label and the annotation that write
// an IP record's spec into its metadata (ipcache.SetSpecInMetadata).
func withoutMarking(m map[string]string) map[string]string {
	out := maps.Clone(m)
	delete(out, v1alpha1.LabelSpecInMetadata)
	delete(out, v1alpha1.AnnotationSpec)
	if len(out) == 0 {
		return nil
	}
	return out
}

func (e *takeoverEnv) readIPs(ctx context.Context) map[string]kubeovnv1.IP {
	e.t.Helper()
	l, err := e.kube.Shardnet.KubeovnV1().IPs().List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]kubeovnv1.IP{}
	for _, ip := range l.Items {
		out[ip.Name] = ip
	}
	return out
}

// waitAdoptionHeld waits until every replica has held the addresses in
// use (it exported its first adoption pass) and runs shards.
func (e *takeoverEnv) waitAdoptionHeld(ctx context.Context) {
	waitFor(e.t, ctx, "adoption held on every replica", func() error {
		for id, r := range e.replicas {
			if !r.Running() {
				return fmt.Errorf("replica %s exited:\n%s", id, r.LogTail())
			}
			held, err := r.Metric("shardnet_held_addresses")
			if err != nil {
				return err
			}
			if held == 0 {
				return fmt.Errorf("replica %s holds no address yet", id)
			}
		}
		return nil
	})
}

// waitSettled waits until every new pod is routed, no replica has an
// address left to adopt, and every shard's first pass is done; it returns
// the adoption figures of each replica.
func (e *takeoverEnv) waitSettled(ctx context.Context, newPods []*newPod) map[string]float64 {
	waitFor(e.t, ctx, "takeover settled", func() error {
		routed := 0
		for _, ns := range []string{toNS, toFullNS} {
			l, err := e.kube.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, p := range l.Items {
				if strings.HasPrefix(p.Name, "new-") && p.Annotations["ovn.kubernetes.io/routed"] == "true" {
					routed++
				}
			}
		}
		// The full subnet has room for 23 of the 20 new pods it gets.
		if routed != len(newPods) {
			return fmt.Errorf("%d of %d new pods routed", routed, len(newPods))
		}
		owned, synced, pending := 0.0, 0.0, 0.0
		for id, r := range e.replicas {
			if !r.Running() {
				return fmt.Errorf("replica %s exited", id)
			}
			o, err := r.Metric("shardnet_shards_owned")
			if err != nil {
				return err
			}
			s, _ := r.Metric("shardnet_shards_synced")
			p, _ := r.Metric("shardnet_adoption_pending_addresses")
			owned, synced, pending = owned+o, synced+s, pending+p
		}
		if owned != toShards || synced != toShards {
			return fmt.Errorf("%v shards owned, %v synced, want %d", owned, synced, toShards)
		}
		if pending != 0 {
			return fmt.Errorf("%v addresses still to adopt", pending)
		}
		return nil
	})
	out := map[string]float64{}
	for id, r := range e.replicas {
		out[id], _ = r.Metric("shardnet_adoption_seconds")
	}
	return out
}

// checkUnchanged: no prepared pod was patched or changed, no IP record
// rewritten, no Northbound row kube-ovn wrote changed (port groups and
// switches may only gain the new pods' ports).
func (e *takeoverEnv) checkUnchanged(ctx context.Context, before *nbSnapshot, pods map[string]corev1.Pod, ips map[string]kubeovnv1.IP) {
	t := e.t
	nowPods := e.readPods(ctx)
	for key, was := range pods {
		now, ok := nowPods[key]
		if !ok {
			t.Errorf("pod %s is gone", key)
			continue
		}
		if now.UID != was.UID {
			t.Errorf("pod %s was re-created", key)
		}
		if !maps.Equal(now.Annotations, was.Annotations) {
			t.Errorf("pod %s annotations changed:\n was %v\n now %v", key, was.Annotations, now.Annotations)
		}
		for _, mf := range now.ManagedFields {
			if strings.Contains(mf.Manager, "shardnet") {
				t.Errorf("pod %s was written by %s (%s)", key, mf.Manager, mf.Operation)
			}
		}
	}
	nowIPs := e.readIPs(ctx)
	for name, was := range ips {
		now, ok := nowIPs[name]
		if !ok {
			if name == "rec-no-pod."+toHalfNS {
				continue // collected, as checkHalfWritten expects
			}
			t.Errorf("IP record %s is gone", name)
			continue
		}
		if now.ResourceVersion == was.ResourceVersion {
			continue
		}
		// The one write a record may have had: the leader's marking,
		// which writes its spec into its metadata at its generation
		// (ipcache.MarkOld) and changes nothing else.
		spec, marked, err := ipcache.DecodeSpec(now.Generation, now.Labels, now.Annotations)
		if !marked || err != nil || !equality.Semantic.DeepEqual(spec, now.Spec) || !equality.Semantic.DeepEqual(now.Spec, was.Spec) ||
			!maps.Equal(withoutMarking(now.Labels), withoutMarking(was.Labels)) || !maps.Equal(withoutMarking(now.Annotations), withoutMarking(was.Annotations)) {
			t.Errorf("IP record %s was rewritten:\n was %+v %v %v\n now %+v %v %v", name, was.Spec, was.Labels, was.Annotations, now.Spec, now.Labels, now.Annotations)
		}
	}

	after := e.snapshotNB(ctx)
	for name, was := range before.ports {
		now, ok := after.ports[name]
		switch {
		case name == "disagree."+toHalfNS || name == "port-no-pod."+toHalfNS:
			// Rewritten and collected, as checkHalfWritten expects.
		case !ok:
			t.Errorf("port %s is gone", name)
		case !reflect.DeepEqual(now, was):
			t.Errorf("port %s changed:\n was %+v\n now %+v", name, was, now)
		}
	}
	for name, was := range before.switches {
		now := after.switches[name]
		if !maps.Equal(now.OtherConfig, was.OtherConfig) || !maps.Equal(now.ExternalIDs, was.ExternalIDs) || now.UUID != was.UUID {
			t.Errorf("switch %s changed:\n was %+v\n now %+v", name, was, now)
		}
		for _, p := range was.Ports {
			if !slices.Contains(now.Ports, p) && !e.halfPortUUID(before, p) {
				t.Errorf("switch %s lost port %s", name, p)
			}
		}
	}
	for name, was := range before.lrps {
		if now := after.lrps[name]; !reflect.DeepEqual(now, was) {
			t.Errorf("router port %s changed:\n was %+v\n now %+v", name, was, now)
		}
	}
	for name, was := range before.groups {
		now, ok := after.groups[name]
		if !ok || !maps.Equal(now.ExternalIDs, was.ExternalIDs) || !slices.Equal(now.ACLs, was.ACLs) || now.UUID != was.UUID {
			t.Errorf("port group %s changed:\n was %+v\n now %+v", name, was, now)
			continue
		}
		for _, p := range was.Ports {
			if !slices.Contains(now.Ports, p) {
				t.Errorf("port group %s lost port %s", name, p)
			}
		}
	}
	for name, was := range before.routers {
		now := after.routers[name]
		if !maps.Equal(now.ExternalIDs, was.ExternalIDs) || !slices.Equal(sorted(now.Policies), sorted(was.Policies)) ||
			!slices.Equal(sorted(now.StaticRoutes), sorted(was.StaticRoutes)) || !slices.Equal(sorted(now.Ports), sorted(was.Ports)) {
			t.Errorf("router %s changed:\n was %+v\n now %+v", name, was, now)
		}
	}
	for u, was := range before.policies {
		if now := after.policies[u]; !reflect.DeepEqual(now, was) {
			t.Errorf("policy %s changed: was %+v now %+v", u, was, now)
		}
	}
	for u, was := range before.routes {
		if now := after.routes[u]; !reflect.DeepEqual(now, was) {
			t.Errorf("route %s changed: was %+v now %+v", u, was, now)
		}
	}

	// Every prepared address was adopted by its pod: one claim each,
	// owned by it.
	claims := e.claimsByAddr(ctx)
	for _, p := range e.prepared {
		if p.ns == toHalfNS {
			continue
		}
		c, ok := claims[p.subnet+"/"+p.ip]
		if !ok {
			t.Errorf("pod %s: no claim of %s", p.key(), p.ip)
			continue
		}
		if c.Spec.Owner.Namespace != p.ns || c.Spec.Owner.Name != p.name {
			t.Errorf("claim of %s is owned by %+v, want %s", p.ip, c.Spec.Owner, p.key())
		}
		if p.sts && (c.Spec.Owner.Kind != v1alpha1.OwnerStatefulSetPod || c.Spec.Owner.UID != string(e.stsUID)) {
			t.Errorf("StatefulSet pod %s: claim owner %+v", p.key(), c.Spec.Owner)
		}
	}
}

// halfPortUUID reports whether u is a port the half-written cases may
// remove.
func (e *takeoverEnv) halfPortUUID(before *nbSnapshot, u string) bool {
	return before.ports["port-no-pod."+toHalfNS].UUID == u
}

func sorted(s []string) []string { s = slices.Clone(s); sort.Strings(s); return s }

func (e *takeoverEnv) claimsByAddr(ctx context.Context) map[string]v1alpha1.AddressClaim {
	l, err := e.kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]v1alpha1.AddressClaim{}
	for _, c := range l.Items {
		out[c.Spec.Subnet+"/"+c.Spec.Address] = c
	}
	return out
}

// checkHalfWritten checks each half-written case against
// docs/contract.md §15.
func (e *takeoverEnv) checkHalfWritten(ctx context.Context, contenders []*newPod) {
	t := e.t
	claims := e.claimsByAddr(ctx)
	ports := listBy(e, ctx, func(r nbdb.LogicalSwitchPort) string { return r.Name })
	owner := func(addr string) string {
		c, ok := claims["ovn-default/"+addr]
		if !ok {
			return ""
		}
		return c.Spec.Owner.Namespace + "/" + c.Spec.Owner.Name
	}
	byName := map[string]*toPod{}
	for _, p := range e.prepared {
		byName[p.name] = p
	}

	// An annotation without a port: the port is created with exactly the
	// annotated address and MAC, and joins its node's group.
	p := byName["ann-no-port"]
	if got := ports[p.portName()]; !slices.Equal(got.Addresses, []string{p.mac + " " + p.ip}) {
		t.Errorf("ann-no-port: port addresses %v, want %q", got.Addresses, p.mac+" "+p.ip)
	} else {
		groups := listBy(e, ctx, func(r nbdb.PortGroup) string { return r.Name })
		if g := groups[strings.ReplaceAll("ovn-default."+p.node, "-", ".")]; !slices.Contains(g.Ports, got.UUID) {
			t.Errorf("ann-no-port: the created port is not in its node group %s", g.Name)
		}
	}
	if owner(p.ip) != p.key() {
		t.Errorf("ann-no-port: claim owner %q", owner(p.ip))
	}
	// Two pods annotated with one address: the one whose port carries it
	// keeps it; the other is left alone with a Warning Event.
	if o := owner("10.80.250.4"); o != toHalfNS+"/dup-b" {
		t.Errorf("10.80.250.4 claimed by %q, want dup-b (its port carries it)", o)
	}
	e.wantEvent(ctx, "dup-a", "AddressConflict")
	// A port and its annotation disagree: the annotation wins, the port
	// is rewritten to it.
	p = byName["disagree"]
	if got := ports[p.portName()]; !slices.Equal(got.Addresses, []string{p.mac + " " + p.ip}) {
		t.Errorf("disagree: port addresses %v, want %q", got.Addresses, p.mac+" "+p.ip)
	}
	if owner(p.ip) != p.key() || owner(p.portIP) != "" {
		t.Errorf("disagree: %s claimed by %q, %s by %q", p.ip, owner(p.ip), p.portIP, owner(p.portIP))
	}
	// The orphan port and record hold their addresses: their contenders
	// are refused with AddressConflict and get nothing.
	for _, c := range contenders {
		e.wantEvent(ctx, c.name, "AddressConflict")
	}
	claims = e.claimsByAddr(ctx)
	for _, c := range contenders {
		if cl, ok := claims["ovn-default/"+c.want]; ok {
			t.Errorf("%s, held by an orphan row, was claimed by %+v", c.want, cl.Spec.Owner)
		}
	}
	// Once the rows are gone (as the collector or a person removes them),
	// the contenders get the addresses.
	ports = listBy(e, ctx, func(r nbdb.LogicalSwitchPort) string { return r.Name })
	orphan := ports["port-no-pod."+toHalfNS]
	e.transact(ctx, []ovsdb.Operation{
		{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
			Where:     []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: "ovn-default"}},
			Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationDelete, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: orphan.UUID}}}}}},
		{Op: ovsdb.OperationDelete, Table: nbdb.LogicalSwitchPortTable, Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: orphan.UUID}}}},
	})
	if err := e.kube.Shardnet.KubeovnV1().IPs().Delete(ctx, "rec-no-pod."+toHalfNS, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "orphan rows removed and their addresses handed on", func() error {
		claims := e.claimsByAddr(ctx)
		for _, c := range contenders {
			cl, ok := claims["ovn-default/"+c.want]
			if !ok || cl.Spec.Owner.Name != c.name {
				return fmt.Errorf("%s not yet claimed by %s", c.want, c.name)
			}
		}
		ports := listBy(e, ctx, func(r nbdb.LogicalSwitchPort) string { return r.Name })
		if _, ok := ports["port-no-pod."+toHalfNS]; ok {
			return fmt.Errorf("the orphan port is still there")
		}
		if _, err := e.kube.Shardnet.KubeovnV1().IPs().Get(ctx, "rec-no-pod."+toHalfNS, metav1.GetOptions{}); err == nil {
			return fmt.Errorf("the orphan IP record is still there")
		}
		return nil
	})
}

func (e *takeoverEnv) wantEvent(ctx context.Context, pod, reason string) {
	e.t.Helper()
	waitFor(e.t, ctx, "event "+reason+" on "+pod, func() error {
		l, err := e.kube.Client.CoreV1().Events(toHalfNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
		if err != nil {
			return err
		}
		for _, ev := range l.Items {
			if ev.Reason == reason && ev.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("no %s event on %s yet", reason, pod)
	})
}

// checkNoDuplicates: no address is annotated on two pods, and none of the
// new pods got an address any prepared row held.
func (e *takeoverEnv) checkNoDuplicates(ctx context.Context) {
	t := e.t
	held := map[string]string{}
	for _, p := range e.prepared {
		held[p.ip] = p.key()
		if p.portIP != "" {
			held[p.portIP] = p.key() + " (port)"
		}
	}
	held["10.80.250.2"], held["10.80.250.3"] = "port-no-pod", "rec-no-pod"
	seen := map[string]string{}
	pods := e.readPods(ctx)
	for _, key := range slices.Sorted(maps.Keys(pods)) {
		p := pods[key]
		ip := p.Annotations["ovn.kubernetes.io/ip_address"]
		if ip == "" || p.Annotations["ovn.kubernetes.io/allocated"] != "true" {
			continue
		}
		if key == toHalfNS+"/dup-a" {
			continue // the prepared duplicate, left for a person
		}
		if other, dup := seen[ip]; dup {
			t.Errorf("address %s annotated on %s and %s", ip, other, key)
		}
		seen[ip] = key
		if strings.Contains(p.Name, "new-") {
			if h, ok := held[ip]; ok {
				t.Errorf("new pod %s got %s, which %s held", key, ip, h)
			}
			if p.Namespace == toFullNS && !netip.MustParsePrefix("10.81.0.0/24").Contains(netip.MustParseAddr(ip)) {
				t.Errorf("new pod %s got %s outside its subnet", key, ip)
			}
		}
	}
}

var subnetGVR = schema.GroupVersionResource{Group: "kubeovn.io", Version: "v1", Resource: "subnets"}

func (e *takeoverEnv) dyn() dynamic.Interface { return dynamic.NewForConfigOrDie(e.kube.Config) }

// readSubnets reads every Subnet as the API server stores it.
func (e *takeoverEnv) readSubnets(ctx context.Context) map[string]map[string]any {
	e.t.Helper()
	l, err := e.dyn().Resource(subnetGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, u := range l.Items {
		out[u.GetName()] = u.Object
	}
	return out
}

// checkSubnetsKept: shardnet's writes to Subnets (its finalizer, the Ready
// condition, the counters) left every other field as kube-ovn wrote it.
func (e *takeoverEnv) checkSubnetsKept(ctx context.Context, before map[string]map[string]any) {
	now := e.readSubnets(ctx)
	for name, was := range before {
		cur := now[name]
		if !reflect.DeepEqual(cur["spec"], was["spec"]) {
			e.t.Errorf("subnet %s spec changed:\n was %v\n now %v", name, was["spec"], cur["spec"])
		}
		ws, _ := was["status"].(map[string]any)
		cs, _ := cur["status"].(map[string]any)
		for _, k := range []string{"activateGateway", "dhcpV4OptionsUUID"} {
			if cs[k] != ws[k] {
				e.t.Errorf("subnet %s status.%s: was %v, now %v", name, k, ws[k], cs[k])
			}
		}
		meta, _ := cur["metadata"].(map[string]any)
		if fins, _ := meta["finalizers"].([]any); !slices.Contains(fins, any("shardnet.io/subnet")) {
			e.t.Errorf("subnet %s: finalizers %v, want shardnet's", name, fins)
		}
	}
}

// report logs what the takeover cost.
func (e *takeoverEnv) report(ctx context.Context, adoption map[string]float64) {
	var writes, patches float64
	for _, r := range e.replicas {
		for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			v, _ := r.MetricWhere("rest_client_requests_total", map[string]string{"method": m})
			writes += v
			if m == "PATCH" {
				patches += v
			}
		}
	}
	claims := e.claimsByAddr(ctx)
	adopted := 0
	for _, c := range claims {
		if strings.HasPrefix(c.Spec.Owner.Name, "run-") || strings.HasPrefix(c.Spec.Owner.Name, "web-") || strings.HasPrefix(c.Spec.Owner.Name, "full-") {
			adopted++
		}
	}
	e.t.Logf("takeover: %d prepared pods adopted with %d claims and 0 pod patches; adoption (hold before the first allocation) took %v by replica; "+
		"all replica API writes during the run (adoption, %d new pods, leases, events): %.0f, of them %.0f patches",
		len(e.prepared), adopted, adoption, toNewPods, writes, patches)
}
