package reconcile

import (
	"net/netip"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
)

// HoldInputs are the places an address can be found in use outside the
// claims (docs/contract.md §15): what CollectHolds reads.
type HoldInputs struct {
	Subnets []*kubeovnv1.Subnet
	Pods    []*corev1.Pod
	IPs     []*kubeovnv1.IP
	Vips    []*kubeovnv1.Vip
	Ports   []ovn.PortAddress
	Now     time.Time
	// VMOwner, when set, is the claim owner of a launcher pod whose
	// addresses are kept by its VM (R13): what its annotations name, and
	// the VM-named IP record and port, hold for the VM, so that the VM
	// takes them and two launcher pods of one VM are not a conflict.
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

// claimant is one place that says an address is in use.
type claimant struct {
	hold ipam.Hold
	// rank orders claimants of one address: lower wins.
	rank int
	// created and key break ties between live pods.
	created time.Time
	key     string
}

const (
	rankPodWithPort = iota // a live pod whose port carries the address
	rankPod                // a live pod's annotations
	rankVip                // a Vip's reserved address
	rankIPRecord           // an IP record
	rankPort               // a Northbound port
)

// CollectHolds finds every address in use in each subnet: the allocated
// annotations of live pods (every provider), IP records, Vips, and the
// fixed addresses of the Northbound ports on the subnet's switch. When
// several holders name one address, the winner is (in order) a live pod
// whose port carries it, a live pod (the older, then by name), a Vip, an
// IP record, a port; the rest are returned as conflicts. Pure: the same
// inputs give the same holds on every replica.
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

	// slot is one address: its best claimant so far and the sources of
	// other holders that name it.
	type slot struct {
		best   claimant
		others []string
	}
	all := map[string]map[netip.Addr]*slot{}
	add := func(subnet string, a netip.Addr, c claimant) {
		if subnet == "" || !a.IsValid() {
			return
		}
		m := all[subnet]
		if m == nil {
			m = map[netip.Addr]*slot{}
			all[subnet] = m
		}
		sl := m[a]
		if sl == nil {
			m[a] = &slot{best: c}
			return
		}
		win, lose := sl.best, c
		if before(c, sl.best) {
			win, lose = c, sl.best
		}
		sl.best = win
		// Two rows nobody may claim (a node's join port and its record)
		// name one address without a question to ask.
		if !sameHolder(lose.hold, win.hold) && (claimable(lose.hold) || claimable(win.hold)) {
			sl.others = append(sl.others, lose.hold.Source)
		}
	}

	// Live pods, and the owner key each stands for.
	ownerOf := make(map[string]string, len(in.Pods))
	// holderOf: the key a launcher pod's port and record are named by
	// (the VM's), when it is not the pod's own.
	holderOf := map[string]string{}
	live := make([]*corev1.Pod, 0, len(in.Pods))
	for _, p := range in.Pods {
		if p.Spec.HostNetwork || !holdsAddresses(p, in.Now) {
			continue
		}
		ownerOf[p.Namespace+"/"+p.Name] = ipam.OwnerKey(ClaimOwnerOf(p))
		if in.VMOwner != nil {
			if o, ok := in.VMOwner(p); ok {
				vmKey := o.Namespace + "/" + o.Name
				ownerOf[p.Namespace+"/"+p.Name] = ipam.OwnerKey(o)
				ownerOf[vmKey] = ipam.OwnerKey(o)
				holderOf[p.Namespace+"/"+p.Name] = vmKey
			}
		}
		live = append(live, p)
	}
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
	for _, p := range live {
		key := p.Namespace + "/" + p.Name
		source := "pod " + key
		for _, provider := range annotatedProviders(p) {
			ann := p.Annotations
			addrs, err := ipam.ParseAddresses(ann[Key(provider, KeyIPAddress)])
			if err != nil {
				continue
			}
			mac, _ := ipam.ParseMAC(ann[Key(provider, KeyMACAddress)])
			for _, a := range addrs.List() {
				owner := ownerOf[key]
				if o, ok := vipOwners[vipAddr{ann[DefaultKey(KeyVIP)], a}]; ok && provider == DefaultProvider {
					// The pod was given a Vip's address: the Vip's claims
					// hold it, not the pod's (D14).
					u := vipUsed[a]
					u.podOwner = owner
					vipUsed[a] = u
					owner = o
				}
				rank := rankPod
				if portPod[a] == key || (holderOf[key] != "" && portPod[a] == holderOf[key]) {
					rank = rankPodWithPort
				}
				add(subnetOf(ann[Key(provider, KeyLogicalSwitch)], provider, a), a, claimant{
					hold: ipam.Hold{Owner: owner, Source: source, MAC: mac},
					rank: rank, created: p.CreationTimestamp.Time, key: key,
				})
			}
		}
	}
	for _, v := range in.Vips {
		mac, _ := ipam.ParseMAC(v.Status.Mac)
		for _, s := range []string{v.Status.V4ip, v.Status.V6ip, v.Spec.V4ip, v.Spec.V6ip} {
			a, err := netip.ParseAddr(s)
			if err != nil {
				continue
			}
			add(subnetOf(v.Spec.Subnet, "", a.Unmap()), a.Unmap(), claimant{
				hold: ipam.Hold{Owner: ipam.OwnerKey(VipClaimOwner(v)), Source: "Vip " + v.Name, MAC: mac}, rank: rankVip, key: v.Name,
			})
		}
	}
	for _, ip := range in.IPs {
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
		for _, a := range recordAddrs(ip) {
			add(subnetOf(ip.Spec.Subnet, "", a), a, claimant{hold: vipUsed.hold(h, a, ip.Name), rank: rankIPRecord, key: ip.Name})
		}
	}
	for _, pt := range in.Ports {
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
			add(subnetOf(pt.Switch, "", a), a, claimant{hold: vipUsed.hold(h, a, pt.Name), rank: rankPort, key: pt.Name})
		}
	}

	out := make(Holds, len(all))
	var conflicts []HoldConflict
	for subnet, addrs := range all {
		m := make(map[netip.Addr]ipam.Hold, len(addrs))
		for a, sl := range addrs {
			m[a] = sl.best.hold
			if len(sl.others) > 0 {
				sort.Strings(sl.others)
				conflicts = append(conflicts, HoldConflict{Subnet: subnet, Addr: a, Kept: sl.best.hold.Source, Others: sl.others})
			}
		}
		out[subnet] = m
	}
	sort.Slice(conflicts, func(i, j int) bool {
		if conflicts[i].Subnet != conflicts[j].Subnet {
			return conflicts[i].Subnet < conflicts[j].Subnet
		}
		return conflicts[i].Addr.Less(conflicts[j].Addr)
	})
	return out, conflicts
}

// before orders two claimants of one address: the winner first.
func before(a, b claimant) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	if !a.created.Equal(b.created) {
		return a.created.Before(b.created)
	}
	return a.key < b.key
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

// annotatedProviders are the providers the pod's annotations say were
// allocated, sorted.
func annotatedProviders(p *corev1.Pod) []string {
	var out []string
	for k, v := range p.Annotations {
		provider, ok := strings.CutSuffix(k, ".kubernetes.io/"+KeyAllocated)
		if v != "true" || !ok || provider == "" {
			continue
		}
		out = append(out, provider)
	}
	sort.Strings(out)
	return out
}

// recordAddrs are the addresses an IP record names.
func recordAddrs(ip *kubeovnv1.IP) []netip.Addr {
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, s := range append([]string{ip.Spec.V4IPAddress, ip.Spec.V6IPAddress}, strings.Split(ip.Spec.IPAddress, ",")...) {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil || seen[a.Unmap()] {
			continue
		}
		seen[a.Unmap()] = true
		out = append(out, a.Unmap())
	}
	return out
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
