package reconcile

import (
	"cmp"
	"iter"
	"maps"
	"math"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/ipcache"
	"github.com/shardnet/shardnet/internal/podcache"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
)

// HoldInputs are the places an address can be found in use outside the
// claims (docs/contract.md §15): what CollectHolds reads.
type HoldInputs struct {
	Subnets []*kubeovnv1.Subnet
	Pods    []*corev1.Pod
	// Cached are more pods, as the pod informer caches them (HoldSource
	// passes them so, where building a *corev1.Pod of each would be 1.2
	// KB of garbage per pod and pass).
	Cached []*podcache.Pod
	IPs    []*kubeovnv1.IP
	// CachedIPs are more IP records, as the IP informer caches them
	// (ipcache.IP), read through one reused *kubeovnv1.IP.
	CachedIPs []*ipcache.IP
	Vips      []*kubeovnv1.Vip
	Ports     []ovn.PortAddress
	Now       time.Time
	// VMOwner, when set, is the claim owner of a launcher pod whose
	// addresses are kept by its VM (R13): what its annotations name, and
	// the VM-named IP record and port, hold for the VM, so that the VM
	// takes them and two launcher pods of one VM are not a conflict. It
	// must not keep the pod it is given, which may be filled again with
	// the next one (Cached).
	VMOwner func(*corev1.Pod) (v1alpha1.ClaimOwner, bool)
}

// HoldConflict is an address that more than one holder says is theirs.
// The first holder keeps it (Holds); the others are listed.
type HoldConflict struct {
	Subnet string
	Addr   netip.Addr
	Kept   string
	Others []string
}

// Holds are the held addresses of every subnet, by subnet name.
type Holds map[string]map[netip.Addr]ipam.Hold

// CollectHolds finds every address in use in each subnet: the allocated
// annotations of live pods (every provider), IP records, Vips, and the
// fixed addresses of the Northbound ports on the subnet's switch. When
// several holders name one address, the winner is (in order) a live pod
// whose port carries it, a live pod (the older, then by name), a Vip (by
// name), an IP record (by name), a port (by name); the others that may
// claim, or that another claimant disputes, are returned as conflicts.
// Pure: the same inputs, in any order, give the same holds and conflicts
// on every replica.
//
// The holders are visited best first, so the first to name an address
// keeps it and every later one is only compared with the one kept: the
// pass keeps one map of holds and nothing more per address. It runs
// before a replica joins, while the caches' first load has the heap at
// its soft limit, and again every few status intervals, so what it
// allocates beyond the holds it returns is paid in collector time
// (BenchmarkCollectHolds).
func CollectHolds(in HoldInputs) (Holds, []HoldConflict) {
	byName := make(map[string]*kubeovnv1.Subnet, len(in.Subnets))
	var prefixes []subnetPrefixes
	for _, s := range in.Subnets {
		byName[s.Name] = s
		ps, err := parseCIDRBlock(s.Spec.CIDRBlock)
		if err != nil {
			continue
		}
		prefixes = append(prefixes, subnetPrefixes{s, ps})
	}
	sort.Slice(prefixes, func(i, j int) bool { return prefixes[i].s.Name < prefixes[j].s.Name })
	// subnetOf is the named subnet when it contains a, else the subnet
	// (of the provider, if any is) whose CIDR contains a.
	subnetOf := func(name, provider string, a netip.Addr) string {
		if s, ok := byName[name]; ok {
			if contains(prefixesOf(prefixes, s.Name), a) {
				return s.Name
			}
			return ""
		}
		if name != "" {
			return ""
		}
		found := ""
		for _, sp := range prefixes {
			if !contains(sp.p, a) {
				continue
			}
			if subnetProvider(sp.s) == provider {
				return sp.s.Name
			}
			if found == "" {
				found = sp.s.Name
			}
		}
		return found
	}

	// Most addresses have a pod, an IP record and a port: sized for the
	// pods, a subnet's map seldom grows.
	pods := len(in.Pods) + len(in.Cached)
	perSubnet := pods/max(1, len(prefixes)) + 1
	out := make(Holds, len(prefixes))
	// others: the sources that lost an address, by subnet; only addresses
	// in conflict have an entry.
	others := map[string]map[netip.Addr][]string{}
	add := func(subnet string, a netip.Addr, h ipam.Hold) {
		if subnet == "" || !a.IsValid() {
			return
		}
		m := out[subnet]
		if m == nil {
			m = make(map[netip.Addr]ipam.Hold, perSubnet)
			out[subnet] = m
		}
		kept, ok := m[a]
		if !ok {
			m[a] = h
			return
		}
		// Two rows nobody may claim (a node's join port and its record)
		// name one address without a question to ask.
		if !sameHolder(h, kept) && (claimable(h) || claimable(kept)) {
			o := others[subnet]
			if o == nil {
				o = map[netip.Addr][]string{}
				others[subnet] = o
			}
			o[a] = append(o[a], h.Source)
		}
	}

	// Live pods, and the owner key each stands for.
	ownerOf := make(map[string]string, pods)
	// holderOf: the key a launcher pod's port and record are named by
	// (the VM's), when it is not the pod's own.
	holderOf := map[string]string{}
	type livePod struct {
		ann     podAnnotations
		key     string // namespace/name
		created int64
	}
	live := make([]livePod, 0, pods)
	// A cached pod is read through one *corev1.Pod filled again for each;
	// only its annotations, as the cache keeps them, are kept.
	var scratch corev1.Pod
	for i := range pods {
		p := &scratch
		var ann podAnnotations
		if i < len(in.Pods) {
			p = in.Pods[i]
			ann.m = p.Annotations
		} else {
			c := in.Cached[i-len(in.Pods)]
			c.Into(p)
			ann.c = c.Annotations
		}
		if p.Spec.HostNetwork || !holdsAddresses(p, in.Now) {
			continue
		}
		key := p.Namespace + "/" + p.Name
		ownerOf[key] = ipam.OwnerKey(ClaimOwnerOf(p))
		if in.VMOwner != nil {
			if o, ok := in.VMOwner(p); ok {
				vmKey := o.Namespace + "/" + o.Name
				ownerOf[key] = ipam.OwnerKey(o)
				ownerOf[vmKey] = ipam.OwnerKey(o)
				holderOf[key] = vmKey
			}
		}
		// A pod without a creation time counts as the oldest, as
		// time.Time's order has it (UnixNano of the zero time is not
		// defined).
		created := int64(math.MinInt64)
		if !p.CreationTimestamp.IsZero() {
			created = p.CreationTimestamp.UnixNano()
		}
		live = append(live, livePod{ann, key, created})
	}
	// The older pod first, then by name.
	slices.SortFunc(live, func(x, y livePod) int {
		if c := cmp.Compare(x.created, y.created); c != 0 {
			return c
		}
		return strings.Compare(x.key, y.key)
	})
	// portPod: the pod key of the port that carries each address, to find
	// the pod a port confirms.
	portPod := make(map[netip.Addr]string, len(in.Ports))
	for _, pt := range in.Ports {
		if pt.Pod == "" {
			continue
		}
		for _, s := range pt.IPs {
			if a, err := netip.ParseAddr(s); err == nil {
				portPod[a.Unmap()] = pt.Pod
			}
		}
	}

	vipOwners := vipOwnersByAddr(in.Vips)
	// vipUsed: the Vip owner of each address a Vip reserved and who uses
	// it, whose IP record and port hold for the Vip as well.
	vipUsed := vipUsesByAddr(in.Vips)
	// A pod whose port carries an address is added at once; one whose
	// port does not waits until every pod whose port does has been (few
	// do once the pods are routed).
	type podHold struct {
		subnet string
		a      netip.Addr
		h      ipam.Hold
	}
	var later []podHold
	keys := providerKeys{}
	vipKey := DefaultKey(KeyVIP)
	var providers []string
	for _, lp := range live {
		ann, key := lp.ann, lp.key
		source := "pod " + key
		providers = appendAnnotatedProviders(providers[:0], ann)
		for _, provider := range providers {
			k := keys.of(provider)
			addrs, err := ipam.ParseAddresses(ann.get(k.ip))
			if err != nil {
				continue
			}
			mac, _ := ipam.ParseMAC(ann.get(k.mac))
			for _, a := range [2]netip.Addr{addrs.V4, addrs.V6} {
				if !a.IsValid() {
					continue
				}
				owner := ownerOf[key]
				if o, ok := vipOwners[vipAddr{ann.get(vipKey), a}]; ok && provider == DefaultProvider {
					// The pod was given a Vip's address: the Vip's claims
					// hold it, not the pod's (D14).
					u := vipUsed[a]
					u.podOwner = owner
					vipUsed[a] = u
					owner = o
				}
				ph := podHold{subnetOf(ann.get(k.ls), provider, a), a, ipam.Hold{Owner: owner, Source: source, MAC: mac}}
				if portPod[a] == key || (holderOf[key] != "" && portPod[a] == holderOf[key]) {
					add(ph.subnet, ph.a, ph.h)
				} else {
					later = append(later, ph)
				}
			}
		}
	}
	for _, ph := range later {
		add(ph.subnet, ph.a, ph.h)
	}
	for _, i := range byKey(len(in.Vips), func(i int) string { return in.Vips[i].Name }) {
		v := in.Vips[i]
		mac, _ := ipam.ParseMAC(v.Status.Mac)
		for _, s := range [4]string{v.Status.V4ip, v.Status.V6ip, v.Spec.V4ip, v.Spec.V6ip} {
			a, err := netip.ParseAddr(s)
			if err != nil {
				continue
			}
			add(subnetOf(v.Spec.Subnet, "", a.Unmap()), a.Unmap(), ipam.Hold{Owner: ipam.OwnerKey(VipClaimOwner(v)), Source: "Vip " + v.Name, MAC: mac})
		}
	}
	plainIPs := len(in.IPs)
	ipName := func(i int) string {
		if i < plainIPs {
			return in.IPs[i].Name
		}
		return in.CachedIPs[i-plainIPs].Name
	}
	var scratchIP kubeovnv1.IP
	for _, i := range byKey(plainIPs+len(in.CachedIPs), ipName) {
		ip := &scratchIP
		if int(i) < plainIPs {
			ip = in.IPs[i]
		} else {
			in.CachedIPs[int(i)-plainIPs].Into(ip)
		}
		h := ipam.Hold{Source: "IP record " + ip.Name}
		h.MAC, _ = ipam.ParseMAC(ip.Spec.MacAddress)
		if ip.Spec.PodName != "" && ip.Spec.Namespace != "" {
			key := ip.Spec.Namespace + "/" + ip.Spec.PodName
			if o, ok := ownerOf[key]; ok {
				h.Owner = o
			} else {
				h.Name = key
			}
		}
		eachRecordAddr(ip, func(a netip.Addr) {
			add(subnetOf(ip.Spec.Subnet, "", a), a, vipUsed.hold(h, a, ip.Name))
		})
	}
	for _, i := range byKey(len(in.Ports), func(i int) string { return in.Ports[i].Name }) {
		pt := &in.Ports[i]
		h := ipam.Hold{Source: "port " + pt.Name}
		h.MAC, _ = ipam.ParseMAC(pt.MAC)
		if pt.Pod != "" {
			if o, ok := ownerOf[pt.Pod]; ok {
				h.Owner = o
			} else {
				h.Name = pt.Pod
			}
		}
		for _, s := range pt.IPs {
			a, err := netip.ParseAddr(s)
			if err != nil {
				continue
			}
			a = a.Unmap()
			add(subnetOf(pt.Switch, "", a), a, vipUsed.hold(h, a, pt.Name))
		}
	}

	var conflicts []HoldConflict
	for subnet, byAddr := range others {
		for a, srcs := range byAddr {
			sort.Strings(srcs)
			conflicts = append(conflicts, HoldConflict{Subnet: subnet, Addr: a, Kept: out[subnet][a].Source, Others: srcs})
		}
	}
	sort.Slice(conflicts, func(i, j int) bool {
		if conflicts[i].Subnet != conflicts[j].Subnet {
			return conflicts[i].Subnet < conflicts[j].Subnet
		}
		return conflicts[i].Addr.Less(conflicts[j].Addr)
	})
	return out, conflicts
}

// byKey is the indexes 0..n-1 in the order of their keys: the order
// holders of one rank are visited in. Rows of one name (there should be
// none) keep their given order: the index breaks the tie, which sorts as
// a stable sort would at the cost of an unstable one (a stable sort of
// 50,000 names took a third of a pass at restart).
func byKey(n int, key func(int) string) []int32 {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(x, y int32) int {
		if c := strings.Compare(key(int(x)), key(int(y))); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	return idx
}

// sameHolder reports whether two holds let the same owner claim.
func sameHolder(a, b ipam.Hold) bool {
	switch {
	case a.Owner != "" && b.Owner != "":
		return a.Owner == b.Owner
	case a.Owner != "":
		return b.Name != "" && strings.Contains(a.Owner, "/"+b.Name+"/")
	case b.Owner != "":
		return a.Name != "" && strings.Contains(b.Owner, "/"+a.Name+"/")
	}
	return a.Name != "" && a.Name == b.Name
}

// claimable reports whether some owner may claim under h.
func claimable(h ipam.Hold) bool { return h.Owner != "" || h.Name != "" }

// holdsAddresses reports whether a pod's annotated addresses are in use:
// it is alive, or it is a StatefulSet pod (whose addresses outlive it).
func holdsAddresses(p *corev1.Pod, now time.Time) bool {
	if Alive(p, now) {
		return true
	}
	_, _, sts := StatefulSetOwner(p)
	return sts
}

// podAnnotations are a pod's annotations as CollectHolds keeps them: the
// map of a plain pod, or the cache's own form of a cached one (no map is
// built for it). With neither, the pod has none.
type podAnnotations struct {
	m map[string]string
	c podcache.Annotations
}

func (a podAnnotations) get(k string) string {
	if !a.c.IsNil() {
		v, _ := a.c.Get(k)
		return v
	}
	return a.m[k]
}

func (a podAnnotations) all() iter.Seq2[string, string] {
	if !a.c.IsNil() {
		return a.c.All()
	}
	return maps.All(a.m)
}

// appendAnnotatedProviders appends to out the providers a pod's
// annotations say were allocated, sorted.
func appendAnnotatedProviders(out []string, annotations podAnnotations) []string {
	for k, v := range annotations.all() {
		provider, ok := strings.CutSuffix(k, ".kubernetes.io/"+KeyAllocated)
		if v != "true" || !ok || provider == "" {
			continue
		}
		out = append(out, provider)
	}
	sort.Strings(out)
	return out
}

// providerKeys are the annotation keys CollectHolds reads, by provider,
// built once per pass rather than once per pod.
type providerKeys map[string]*annotationKeys

type annotationKeys struct{ ip, mac, ls string }

func (pk providerKeys) of(provider string) *annotationKeys {
	k := pk[provider]
	if k == nil {
		k = &annotationKeys{ip: Key(provider, KeyIPAddress), mac: Key(provider, KeyMACAddress), ls: Key(provider, KeyLogicalSwitch)}
		pk[provider] = k
	}
	return k
}

// eachRecordAddr calls f with every address an IP record names, each
// once: its v4 and v6 fields and the comma-separated list. It allocates
// nothing.
func eachRecordAddr(ip *kubeovnv1.IP, f func(netip.Addr)) {
	var seen [4]netip.Addr
	n := 0
	one := func(s string) {
		s = strings.TrimSpace(s)
		if s == "" {
			return
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return
		}
		a = a.Unmap()
		for _, b := range seen[:n] {
			if a == b {
				return
			}
		}
		if n < len(seen) {
			seen[n] = a
			n++
		}
		f(a)
	}
	one(ip.Spec.V4IPAddress)
	one(ip.Spec.V6IPAddress)
	for rest := ip.Spec.IPAddress; rest != ""; {
		var s string
		s, rest, _ = strings.Cut(rest, ",")
		one(s)
	}
}

type subnetPrefixes struct {
	s *kubeovnv1.Subnet
	p []netip.Prefix
}

func prefixesOf(all []subnetPrefixes, name string) []netip.Prefix {
	for _, sp := range all {
		if sp.s.Name == name {
			return sp.p
		}
	}
	return nil
}

func contains(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// subnetProvider is the provider a subnet serves ("ovn" unless set).
func subnetProvider(s *kubeovnv1.Subnet) string {
	if s.Spec.Provider == "" {
		return DefaultProvider
	}
	return s.Spec.Provider
}
