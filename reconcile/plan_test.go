package reconcile

import (
	"flag"
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/golden"
	"github.com/shardnet/shardnet/ipam"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden scenario files under testdata/")

// fakeView is a View built from scenario commands, over the resolver
// tests' catalog.
type fakeView struct {
	*fakeCatalog
	nads    map[string]string
	nadsOff bool
	full    map[string]bool
	ports   map[string][]PortInfo
	vlans   map[string]*kubeovnv1.Vlan
	// configMaps hold the external gateway ConfigMap (G11).
	configMaps cache.Indexer
}

func newFakeView() *fakeView {
	return &fakeView{
		fakeCatalog: &fakeCatalog{subnets: map[string]*kubeovnv1.Subnet{}, pools: map[string]*kubeovnv1.IPPool{},
			namespaces: map[string]*corev1.Namespace{}},
		nads: map[string]string{}, full: map[string]bool{}, ports: map[string][]PortInfo{},
		vlans: map[string]*kubeovnv1.Vlan{}, configMaps: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
	}
}

func (v *fakeView) Vlan(name string) (*kubeovnv1.Vlan, bool) { vl, ok := v.vlans[name]; return vl, ok }

func (v *fakeView) Allocator(name string) (*ipam.Subnet, error) {
	s, ok := v.subnets[name]
	if !ok {
		return nil, fmt.Errorf("subnet %q: %w", name, ErrUnknownSubnet)
	}
	return ipam.NewSubnet(ipam.SubnetConfigFrom(s, v.IPPools()))
}
func (v *fakeView) HasFree(subnet string) bool     { return !v.full[subnet] }
func (v *fakeView) PodPorts(key string) []PortInfo { return v.ports[key] }
func (v *fakeView) NAD(ns, name string) (string, bool, error) {
	if v.nadsOff {
		return "", false, ErrNADsNotServed
	}
	c, ok := v.nads[ns+"/"+name]
	return c, ok, nil
}

// planScenario holds one scenario file's state.
type planScenario struct {
	view    *fakeView
	planner *Planner
	pod     *corev1.Pod
	claims  []*v1alpha1.AddressClaim
	recent  map[string]ipam.Allocation
}

// kv splits "k=v" arguments; a bare word maps to "true".
func kv(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			v = "true"
		}
		m[k] = v
	}
	return m
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (sc *planScenario) run(cmd string, args []string) string {
	switch cmd {
	case "subnet":
		m := kv(args[1:])
		s := &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: args[0]}, Spec: kubeovnv1.SubnetSpec{
			CIDRBlock: m["cidr"], Provider: m["provider"], Default: m["default"] == "true",
			Namespaces: splitList(m["ns"]), Vlan: m["vlan"], Vpc: m["vpc"], GatewayType: m["gwtype"],
			LogicalGateway: m["logicalgw"] == "true", ExcludeIps: splitList(m["exclude"]),
			U2OInterconnection: m["u2o"] == "true", EnableDHCP: m["dhcp"] == "true", Gateway: m["gateway"],
		}}
		sc.view.subnets[s.Name] = s
		sc.view.full[s.Name] = m["full"] == "true"
	case "pool":
		m := kv(args[1:])
		sc.view.pools[args[0]] = &kubeovnv1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: args[0]},
			Spec: kubeovnv1.IPPoolSpec{Subnet: m["subnet"], IPs: splitList(m["ips"]), Namespaces: splitList(m["ns"])}}
	case "namespace":
		sc.view.namespaces[args[0]] = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: args[0], Annotations: kv(args[1:])}}
	case "nad":
		if args[1] == "delete" {
			delete(sc.view.nads, args[0])
		} else {
			sc.view.nads[args[0]] = strings.Join(args[1:], " ")
		}
	case "vlan":
		// vlan NAME id=N provider=P, or vlan NAME delete
		if len(args) > 1 && args[1] == "delete" {
			delete(sc.view.vlans, args[0])
			break
		}
		m := kv(args[1:])
		id, _ := strconv.Atoi(m["id"])
		sc.view.vlans[args[0]] = &kubeovnv1.Vlan{ObjectMeta: metav1.ObjectMeta{Name: args[0]}, Spec: kubeovnv1.VlanSpec{ID: id, Provider: m["provider"]}}
	case "extgw-config":
		// extgw-config [external-gw-addr=A]: the ConfigMap in
		// kube-system; extgw-config delete removes it.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: DefaultExternalGatewayNamespace, Name: ExternalGatewayConfigMap}, Data: kv(args)}
		if len(args) == 1 && args[0] == "delete" {
			_ = sc.view.configMaps.Delete(cm)
			break
		}
		_ = sc.view.configMaps.Add(cm)
	case "nads-not-served":
		sc.view.nadsOff = true
	case "claim":
		// claim SUBNET ADDR [provider=P] [mac=M] [uid=U] [kind=K]: held by the current pod's name
		m := kv(args[2:])
		owner := ClaimOwnerOf(sc.pod)
		if u, ok := m["uid"]; ok {
			owner.UID = u
		}
		if k, ok := m["kind"]; ok {
			owner.Kind = k
		}
		a := netip.MustParseAddr(args[1])
		sc.claims = append(sc.claims, &v1alpha1.AddressClaim{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClaimName(args[0], a)},
			Spec:       v1alpha1.AddressClaimSpec{Subnet: args[0], Address: a.String(), Provider: m["provider"], MAC: m["mac"], Owner: owner},
		})
	case "port":
		// port NAME switch=S: a Northbound port of the current pod
		m := kv(args[1:])
		key := sc.pod.Namespace + "/" + sc.pod.Name
		sc.view.ports[key] = append(sc.view.ports[key], PortInfo{Name: args[0], Switch: m["switch"]})
	case "recent":
		// recent PROVIDER SUBNET ADDRS MAC
		a, _ := ipam.ParseAddresses(args[2])
		mac, _ := ipam.ParseMAC(args[3])
		sc.recent[args[0]] = ipam.Allocation{Subnet: args[1], Addresses: a, MAC: mac}
	case "pod":
		// pod NS/NAME uid=U [node=N] [sts=NAME] [key=value]...: the pod
		// under test; claims, ports and recent allocations start empty.
		ns, name, _ := strings.Cut(args[0], "/")
		m := kv(args[1:])
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(m["uid"]), Annotations: map[string]string{}}}
		p.Spec.NodeName = m["node"]
		if sts := m["sts"]; sts != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts, UID: "sts-uid"}}
		}
		for k, v := range m {
			if strings.Contains(k, "/") {
				p.Annotations[k] = v
			}
		}
		sc.pod, sc.claims, sc.recent = p, nil, map[string]ipam.Allocation{}
	case "annotate":
		for k, v := range kv(args) {
			if v == "-" {
				delete(sc.pod.Annotations, k)
			} else {
				sc.pod.Annotations[k] = v
			}
		}
	case "plan":
		return sc.plan()
	default:
		return "unknown command " + cmd
	}
	return "ok"
}

// plan prints the plan of the current pod, each network completed with
// the allocation the claim layer would give it on an empty subnet.
func (sc *planScenario) plan() string {
	p, err := sc.planner.Plan(PlanInput{Pod: sc.pod, Claims: sc.claims, Recent: sc.recent, Now: time.Unix(0, 0)})
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "owner %s %s/%s", p.Owner.Kind, p.Owner.Namespace, p.Owner.Name)
	for _, np := range p.Networks {
		fmt.Fprintf(&b, "\nnet %s kind=%s subnet=%s why=%s address=%s", np.Provider, np.Kind, np.Subnet.Name, np.Why, np.Address.Source)
		if np.Attachment != "" {
			fmt.Fprintf(&b, " nad=%s", np.Attachment)
		}
		if np.IgnoredSwitch != "" {
			fmt.Fprintf(&b, " ignored-switch=%s", np.IgnoredSwitch)
		}
		for _, c := range np.Release {
			fmt.Fprintf(&b, "\n  release %s", c.Name)
		}
		al := sc.allocate(np)
		w := sc.planner.Complete(sc.pod, np, al)
		if w.Port != nil {
			fmt.Fprintf(&b, "\n  port %s switch=%s ips=%s mac=%s security=%v vips=%v l2=%v", w.Port.Name, w.Port.Switch,
				strings.Join(w.Port.IPs, ","), w.Port.MAC, w.Port.PortSecurity, w.Port.VIPs, w.Port.Layer2Forward)
			if len(w.Port.SecurityGroups) > 0 || len(w.Port.ExternalIDs) > 0 {
				fmt.Fprintf(&b, " sgs=%v ids=%v", w.Port.SecurityGroups, w.Port.ExternalIDs)
			}
			if len(w.DHCPFamilies) > 0 {
				fmt.Fprintf(&b, " dhcp=%s", strings.Join(w.DHCPFamilies, ","))
			}
		}
		for _, ie := range np.Request.Ignored {
			fmt.Fprintf(&b, "\n  ignored %v", ie)
		}
		if np.Request.RouteErr != nil {
			fmt.Fprintf(&b, "\n  route-waits %v", np.Request.RouteErr)
		}
		if np.RouteWait != nil {
			fmt.Fprintf(&b, "\n  route-waits %v", np.RouteWait)
		}
		if r := w.Route; r != nil {
			fmt.Fprintf(&b, "\n  route portgroup=%q", r.PortGroup)
			for _, rt := range r.Routes {
				fmt.Fprintf(&b, " route=%s->%s", rt.Prefix, rt.Nexthop)
			}
			for _, n := range r.NATs {
				fmt.Fprintf(&b, " nat=%s:%s->%s", n.Type, n.LogicalIP, n.ExternalIP)
			}
		}
		if w.IPRecord != nil {
			fmt.Fprintf(&b, "\n  record %s subnet=%s ip=%s mac=%s", w.IPRecord.Name, w.IPRecord.Spec.Subnet, w.IPRecord.Spec.IPAddress, w.IPRecord.Spec.MacAddress)
		}
		keys := make([]string, 0, len(w.Annotations))
		for k := range w.Annotations {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "\n  ann %s=%s", k, w.Annotations[k])
		}
	}
	for _, f := range p.Failed {
		fmt.Fprintf(&b, "\nfailed reason=%s: %v", f.Reason, f)
	}
	for _, u := range p.Unplug {
		var claims []string
		for _, c := range u.Claims {
			claims = append(claims, c.Name)
		}
		fmt.Fprintf(&b, "\nunplug %s ports=%v record=%q claims=%v annotations=%v", u.Provider, u.Ports, u.IPRecord, claims, u.Annotations)
	}
	return b.String()
}

// allocate stands in for the claim layer: the requested addresses, the
// first list entry, or the first free address of the subnet or pool.
func (sc *planScenario) allocate(np *NetworkPlan) ipam.Allocation {
	a := np.Address
	al := ipam.Allocation{Subnet: np.Subnet.Name, MAC: a.MAC}
	sub, _ := sc.view.Allocator(np.Subnet.Name)
	switch a.Source {
	case FromList:
		al.Addresses = a.List[0]
	case FromPool:
		al.Addresses, _ = sub.AllocateFromPool(a.Pool)
	case FromDynamic:
		al.Addresses, _ = sub.Allocate(0)
	default:
		al.Addresses = a.Addresses
	}
	if al.MAC.IsZero() {
		al.MAC = sub.DerivedMAC(al.Addresses)
	}
	return al
}

// TestPlanScenarios runs the plan scenarios under testdata/plan; each
// scenario names the docs/contract.md rows it pins. Run with -rewrite to
// regenerate the expected outputs after a deliberate change.
func TestPlanScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/plan/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no plan scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			golden.Run(t, file, *rewrite, func(header string) golden.Runner {
				m := kv(strings.Fields(header))
				sc := &planScenario{view: newFakeView()}
				sc.planner = &Planner{View: sc.view, DefaultSubnet: m["default-subnet"], ClusterRouter: DefaultClusterRouter,
					PodNICType: DefaultPodNICType, IPRecords: m["records"] == "true", Vlans: sc.view, IgnoreEIPSNAT: m["eip-snat"] == "false",
					ExternalGateway: ExternalGatewayConfig{ConfigMaps: corelisters.NewConfigMapLister(sc.view.configMaps),
						Namespace: DefaultExternalGatewayNamespace, Subnets: sc.view, Switch: DefaultExternalGatewaySwitch}}
				return sc.run
			})
		})
	}
}
