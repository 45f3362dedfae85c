package faults

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/test/harness"
)

// The annotation keys of the default network (docs/contract.md §3), as
// CNI daemons read them. The checker spells them out rather than taking
// them from shardnet's code.
const (
	annAllocated = "ovn.kubernetes.io/allocated"
	annRouted    = "ovn.kubernetes.io/routed"
	annIP        = "ovn.kubernetes.io/ip_address"
	annMAC       = "ovn.kubernetes.io/mac_address"
	annSwitch    = "ovn.kubernetes.io/logical_switch"
)

// maxExamples is how many examples a violation report keeps.
const maxExamples = 8

// snapshot is one read of the servers: every pod, Northbound switch and
// switch port, claim, IP record and Subnet.
type snapshot struct {
	at       time.Time
	pods     []corev1.Pod
	ports    []nbdb.LogicalSwitchPort
	switches []nbdb.LogicalSwitch
	claims   []v1alpha1.AddressClaim
	ips      []kubeovnv1.IP
	subnets  []kubeovnv1.Subnet
}

// readSnapshot reads the API server with live lists (not shardnet's
// caches) and the Northbound through view, a monitor of the whole
// database. podsOnly skips everything invariant (a) does not need.
func readSnapshot(ctx context.Context, kube *harness.Kube, view client.Client, podsOnly bool) (*snapshot, error) {
	s := &snapshot{at: time.Now()}
	pods, err := kube.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	s.pods = pods.Items
	if err := view.List(ctx, &s.ports); err != nil {
		return nil, fmt.Errorf("listing ports: %w", err)
	}
	if podsOnly {
		return s, nil
	}
	if err := view.List(ctx, &s.switches); err != nil {
		return nil, fmt.Errorf("listing switches: %w", err)
	}
	claims, err := kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing claims: %w", err)
	}
	s.claims = claims.Items
	ips, err := kube.Shardnet.KubeovnV1().IPs().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing IP records: %w", err)
	}
	s.ips = ips.Items
	subnets, err := kube.Shardnet.KubeovnV1().Subnets().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing subnets: %w", err)
	}
	s.subnets = subnets.Items
	return s, nil
}

// violations is what one invariant found: how many violations, and a few
// examples.
type violations struct {
	id, title string
	count     int
	examples  []string
}

func (v *violations) add(format string, args ...any) {
	v.count++
	v.examples = append(v.examples, fmt.Sprintf(format, args...))
}

// done sorts the examples and keeps the first few.
func (v violations) done() violations {
	sort.Strings(v.examples)
	if len(v.examples) > maxExamples {
		v.examples = v.examples[:maxExamples]
	}
	return v
}

func (v violations) String() string {
	if v.count == 0 {
		return fmt.Sprintf("(%s) %s: 0", v.id, v.title)
	}
	return fmt.Sprintf("(%s) %s: %d, e.g.\n    %s", v.id, v.title, v.count, strings.Join(v.examples, "\n    "))
}

// live reports whether a pod still needs its network: not terminal
// (docs/contract.md R2) and not past its deletion grace (R3).
func live(p *corev1.Pod, now time.Time) bool {
	if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil &&
		now.After(p.DeletionTimestamp.Add(time.Duration(*p.DeletionGracePeriodSeconds)*time.Second)) {
		return false
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return p.Spec.RestartPolicy == corev1.RestartPolicyAlways
	case corev1.PodFailed:
		return p.Spec.RestartPolicy != corev1.RestartPolicyNever && p.Status.Reason != "Evicted"
	}
	return true
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// annotatedAddrs are the addresses a pod's default network is allocated,
// nil when it is not allocated.
func annotatedAddrs(p *corev1.Pod) []netip.Addr {
	if p.Annotations[annAllocated] != "true" {
		return nil
	}
	var out []netip.Addr
	for part := range strings.SplitSeq(p.Annotations[annIP], ",") {
		if a, err := netip.ParseAddr(strings.TrimSpace(part)); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// portAddrs are the IP addresses a port's addresses column carries
// ("<mac> <ip> [<ip>]", "router", "unknown", ...).
func portAddrs(p nbdb.LogicalSwitchPort) []netip.Addr {
	var out []netip.Addr
	for _, entry := range p.Addresses {
		for f := range strings.FieldsSeq(entry) {
			if a, err := netip.ParseAddr(f); err == nil {
				out = append(out, a)
			}
		}
	}
	return out
}

// checkA: no two live pods are annotated with one address of a subnet, and
// no two Northbound ports carry one address.
func checkA(s *snapshot) violations {
	v := violations{id: "a", title: "addresses held twice"}
	holders := map[string][]string{}
	for i := range s.pods {
		p := &s.pods[i]
		if !live(p, s.at) {
			continue
		}
		for _, a := range annotatedAddrs(p) {
			k := p.Annotations[annSwitch] + "/" + a.String()
			holders[k] = append(holders[k], podKey(p)+" ("+string(p.UID)+")")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(holders)) {
		if h := holders[k]; len(h) > 1 {
			sort.Strings(h)
			v.add("%s annotated on pods %s", k, strings.Join(h, ", "))
		}
	}
	carriers := map[netip.Addr][]string{}
	for _, p := range s.ports {
		for _, a := range portAddrs(p) {
			carriers[a] = append(carriers[a], p.Name)
		}
	}
	for _, a := range slices.SortedFunc(maps.Keys(carriers), func(x, y netip.Addr) int { return x.Compare(y) }) {
		if c := carriers[a]; len(c) > 1 {
			sort.Strings(c)
			v.add("%s carried by ports %s", a, strings.Join(c, ", "))
		}
	}
	return v.done()
}

// checkB: every live pod bound to a node is allocated and routed, has
// exactly one port (named <pod>.<namespace>, docs/contract.md N1) whose
// addresses are exactly its annotated MAC and address, on its annotated
// switch; its claims are exactly the annotated address, owned by this
// incarnation; its IP record carries the same address.
func checkB(s *snapshot) violations {
	v := violations{id: "b", title: "live pods not served as annotated"}
	portsOf := map[string][]nbdb.LogicalSwitchPort{}
	for _, p := range s.ports {
		if k := p.ExternalIDs["pod"]; k != "" {
			portsOf[k] = append(portsOf[k], p)
		}
	}
	switchOf := map[string][]string{}
	for _, sw := range s.switches {
		for _, u := range sw.Ports {
			switchOf[u] = append(switchOf[u], sw.Name)
		}
	}
	claimsOf := map[string][]v1alpha1.AddressClaim{}
	for _, c := range s.claims {
		if c.Spec.Provider != "" && c.Spec.Provider != "ovn" {
			continue
		}
		k := c.Spec.Owner.Namespace + "/" + c.Spec.Owner.Name + "/" + c.Spec.Owner.UID
		claimsOf[k] = append(claimsOf[k], c)
	}
	records := map[string]kubeovnv1.IP{}
	for _, ip := range s.ips {
		records[ip.Name] = ip
	}
	for i := range s.pods {
		p := &s.pods[i]
		if !live(p, s.at) || p.Spec.NodeName == "" {
			continue
		}
		var problems []string
		ann := p.Annotations
		if ann[annAllocated] != "true" || ann[annRouted] != "true" {
			problems = append(problems, fmt.Sprintf("allocated=%q routed=%q", ann[annAllocated], ann[annRouted]))
		}
		ip, mac, sw := ann[annIP], ann[annMAC], ann[annSwitch]
		if ann[annAllocated] == "true" {
			ports := portsOf[podKey(p)]
			switch {
			case len(ports) != 1:
				var names []string
				for _, port := range ports {
					names = append(names, fmt.Sprintf("%s %q", port.Name, port.Addresses))
				}
				problems = append(problems, fmt.Sprintf("%d ports %v", len(ports), names))
			default:
				port := ports[0]
				if want := p.Name + "." + p.Namespace; port.Name != want {
					problems = append(problems, fmt.Sprintf("port named %s, want %s", port.Name, want))
				}
				if want := []string{mac + " " + ip}; !slices.Equal(port.Addresses, want) {
					problems = append(problems, fmt.Sprintf("port %s carries %q, annotations say %q", port.Name, port.Addresses, want))
				}
				if got := switchOf[port.UUID]; !slices.Equal(got, []string{sw}) {
					problems = append(problems, fmt.Sprintf("port %s is on switches %v, annotations say %s", port.Name, got, sw))
				}
			}
			claims := claimsOf[podKey(p)+"/"+string(p.UID)]
			var held []string
			for _, c := range claims {
				held = append(held, c.Spec.Subnet+"/"+c.Spec.Address)
			}
			if want := []string{sw + "/" + ip}; !slices.Equal(held, want) {
				problems = append(problems, fmt.Sprintf("claims %v, annotations say %v", held, want))
			}
			rec, ok := records[p.Name+"."+p.Namespace]
			switch {
			case !ok:
				problems = append(problems, "no IP record")
			case rec.Spec.IPAddress != ip || rec.Spec.Subnet != sw || rec.Spec.MacAddress != mac:
				problems = append(problems, fmt.Sprintf("IP record says %s %s on %s, annotations %s %s on %s",
					rec.Spec.IPAddress, rec.Spec.MacAddress, rec.Spec.Subnet, ip, mac, sw))
			}
		}
		if len(problems) > 0 {
			v.add("%s (%s, node %s): %s", podKey(p), p.UID, p.Spec.NodeName, strings.Join(problems, "; "))
		}
	}
	return v.done()
}

// checkC: no port, claim or IP record names a pod that is gone (a claim:
// a pod incarnation, by UID).
func checkC(s *snapshot) violations {
	v := violations{id: "c", title: "rows of pods that are gone"}
	present := map[string]bool{}
	uids := map[string]bool{}
	for i := range s.pods {
		present[podKey(&s.pods[i])] = true
		uids[string(s.pods[i].UID)] = true
	}
	for _, p := range s.ports {
		if k := p.ExternalIDs["pod"]; k != "" && !present[k] {
			v.add("port %s (pod %s) carries %q", p.Name, k, p.Addresses)
		}
	}
	for _, c := range s.claims {
		o := c.Spec.Owner
		if o.Kind != v1alpha1.OwnerPod {
			continue
		}
		if !present[o.Namespace+"/"+o.Name] || !uids[o.UID] {
			v.add("claim %s of pod %s/%s (%s)", c.Name, o.Namespace, o.Name, o.UID)
		}
	}
	for _, ip := range s.ips {
		if ip.Spec.PodType == "VirtualMachine" || ip.Spec.Namespace == "" {
			continue
		}
		if k := ip.Spec.Namespace + "/" + ip.Spec.PodName; !present[k] {
			v.add("IP record %s (pod %s) of %s", ip.Name, k, ip.Spec.IPAddress)
		}
	}
	return v.done()
}

// checkD: each Subnet's IPv4 counters equal its claims: v4usingIPs is the
// number of claims, v4availableIPs the addresses neither reserved
// (network, broadcast, gateway, excludeIps) nor claimed.
func checkD(s *snapshot) violations {
	v := violations{id: "d", title: "subnet counters off"}
	claimed := map[string][]netip.Addr{}
	for _, c := range s.claims {
		if a, err := netip.ParseAddr(c.Spec.Address); err == nil && a.Is4() {
			claimed[c.Spec.Subnet] = append(claimed[c.Spec.Subnet], a)
		}
	}
	for _, sub := range s.subnets {
		if sub.DeletionTimestamp != nil {
			continue
		}
		prefix, err := netip.ParsePrefix(sub.Spec.CIDRBlock)
		if err != nil || !prefix.Addr().Is4() {
			continue
		}
		reserved, err := reservedOf(prefix, sub.Spec.Gateway, sub.Spec.ExcludeIps)
		if err != nil {
			v.add("subnet %s: %v", sub.Name, err)
			continue
		}
		used := claimed[sub.Name]
		free := int64(1)<<(32-prefix.Bits()) - int64(len(reserved))
		for _, a := range used {
			if !reserved[a] {
				free--
			}
		}
		st := sub.Status
		if st.V4UsingIPs != float64(len(used)) || st.V4AvailableIPs != float64(free) {
			v.add("subnet %s: status says %v using, %v available; its claims say %d using, %d available",
				sub.Name, st.V4UsingIPs, st.V4AvailableIPs, len(used), free)
		}
	}
	return v.done()
}

// reservedOf is the set of addresses of an IPv4 prefix never handed out
// dynamically: network, broadcast, gateway (the first usable address when
// none is given) and every excludeIps entry (an address, a..b, or a CIDR)
// inside the prefix.
func reservedOf(prefix netip.Prefix, gateway string, excludes []string) (map[netip.Addr]bool, error) {
	prefix = prefix.Masked()
	out := map[netip.Addr]bool{}
	first := prefix.Addr()
	last := lastAddr(prefix)
	out[first], out[last] = true, true
	gw := first.Next()
	if gateway != "" {
		g, err := netip.ParseAddr(strings.Split(gateway, ",")[0])
		if err != nil {
			return nil, fmt.Errorf("gateway %q: %w", gateway, err)
		}
		gw = g
	}
	out[gw] = true
	for _, ex := range excludes {
		lo, hi, err := excludeRange(ex)
		if err != nil {
			return nil, err
		}
		for a := lo; a.IsValid() && a.Compare(hi) <= 0; a = a.Next() {
			if prefix.Contains(a) {
				out[a] = true
			}
		}
	}
	return out, nil
}

func excludeRange(ex string) (netip.Addr, netip.Addr, error) {
	if lo, hi, ok := strings.Cut(ex, ".."); ok {
		a, err := netip.ParseAddr(lo)
		if err != nil {
			return netip.Addr{}, netip.Addr{}, fmt.Errorf("excludeIps %q: %w", ex, err)
		}
		b, err := netip.ParseAddr(hi)
		if err != nil {
			return netip.Addr{}, netip.Addr{}, fmt.Errorf("excludeIps %q: %w", ex, err)
		}
		return a, b, nil
	}
	if p, err := netip.ParsePrefix(ex); err == nil {
		return p.Masked().Addr(), lastAddr(p), nil
	}
	a, err := netip.ParseAddr(ex)
	if err != nil {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("excludeIps %q: %w", ex, err)
	}
	return a, a, nil
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

// checkAll runs the four invariants.
func checkAll(s *snapshot) []violations {
	return []violations{checkA(s), checkB(s), checkC(s), checkD(s)}
}

func total(vs []violations) int {
	n := 0
	for _, v := range vs {
		n += v.count
	}
	return n
}

func describe(vs []violations) string {
	var parts []string
	for _, v := range vs {
		parts = append(parts, v.String())
	}
	return strings.Join(parts, "\n")
}
