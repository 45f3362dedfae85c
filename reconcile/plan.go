package reconcile

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn/nbdb"
)

// View is the read-only snapshot a plan is computed from: informer caches,
// the subnet registry and the Northbound cache. Implementations return
// shared objects; the planner never changes them.
type View interface {
	Catalog
	// Allocator is the registered allocator of a subnet (its prefixes and
	// gateways); ErrUnknownSubnet or the subnet's own error otherwise.
	Allocator(subnet string) (*ipam.Subnet, error)
	// HasFree reports whether a subnet still has a free dynamic address.
	HasFree(subnet string) bool
	// PodPorts are the Northbound ports whose external_ids:pod is key.
	PodPorts(key string) []PortInfo
	// NAD is the spec.config of a NetworkAttachmentDefinition; found is
	// false when it does not exist (yet), and err is ErrNADsNotServed
	// when the API server does not serve them at all.
	NAD(namespace, name string) (config string, found bool, err error)
}

// PortInfo is what the planner reads of an existing Northbound port.
type PortInfo struct {
	Name string
	// Switch is the port's external_ids:ls.
	Switch string
	// Row is the cached row the view read, read only; nil from a view
	// without one. The planner does not look at it: the shell builds the
	// port's ops from it (Plan.Port) instead of searching the cache again.
	Row *nbdb.LogicalSwitchPort
}

// Planner decides, from a pod and a View, what each of the pod's networks
// needs (docs/contract.md §3). It does no I/O, starts no goroutine and
// reads no clock: Plan's result depends only on its arguments and the
// View, so scenarios under testdata/ pin every decision without servers.
type Planner struct {
	View View
	// DefaultSubnet is the --default-subnet name; empty means the subnet
	// with spec.default.
	DefaultSubnet string
	// ClusterRouter is the default VPC's router (DefaultClusterRouter).
	ClusterRouter string
	// PodNICType is written as pod_nic_type when the pod has none.
	PodNICType string
	// IPRecords makes every network keep a kubeovn.io IP record.
	IPRecords bool
	// Vips serves the Vips pods name with ovn.kubernetes.io/vip; nil
	// serves none (every such pod then waits, E20).
	Vips VipCatalog
	// Vlans serves the Vlans of underlay subnets; nil serves none (every
	// network on an underlay subnet then fails, E19).
	Vlans VlanCatalog
	// IgnoreEIPSNAT leaves eip and snat unread (--enable-eip-snat=false,
	// docs/contract.md G10): no NAT rule is written or removed for them,
	// and the port stays in its node group.
	IgnoreEIPSNAT bool
	// ExternalGateway serves the next hop of the source routes of pods
	// with eip or snat (docs/contract.md G11); nil serves none (such a
	// pod's routed phase then waits, E25).
	ExternalGateway ExternalGatewayCatalog
}

// PlanInput is one pod's decision input beyond the View.
type PlanInput struct {
	Pod *corev1.Pod
	// Claims are the AddressClaims indexed under the pod's key.
	Claims []*v1alpha1.AddressClaim
	// Recent are allocations this shard term made for the key within the
	// cache-lag tolerance, by provider: the claims exist on the server
	// though the informer may not have delivered them.
	Recent map[string]ipam.Allocation
	Now    time.Time
	// VM is set for a KubeVirt launcher pod whose networks are kept by
	// its VM (docs/contract.md R13): they are named by and owned by it.
	VM *VMHolder
}

// Plan is a live pod's work: what to ensure on each network it asks for,
// what to release on networks it no longer asks for, and the networks
// that cannot be served now.
type Plan struct {
	Key   string
	Owner v1alpha1.ClaimOwner
	// Networks are served in this order: the primary network first, then
	// the attachments as the pod lists them.
	Networks []*NetworkPlan
	// Failed are networks that cannot be served this time; the others
	// still are (docs/contract.md §7).
	Failed []*NetworkFailure
	// Unplug are providers the key holds something on that the pod no
	// longer asks for. Empty whenever any attachment could not be
	// resolved: what it would have named is never released by mistake.
	Unplug []*Unplug
	// Waiting are providers a shared launcher pod may not take from the
	// VM's active one (no allow_live_migration, R14, or nothing held yet):
	// they are served once it is the active pod.
	Waiting []string
	// Ports are the key's Northbound ports as the view served them.
	Ports []PortInfo
}

// Port is the cached row of the port named name among p.Ports; ok is
// false when the plan did not read one (a port of another pod's key, a
// view without rows), and the caller reads the cache itself.
func (p *Plan) Port(name string) (row *nbdb.LogicalSwitchPort, ok bool) {
	for _, pi := range p.Ports {
		if pi.Name == name && pi.Row != nil {
			return pi.Row, true
		}
	}
	return nil, false
}

// NetworkPlan is one network of a pod, decided up to the address: the
// address request is resolved by the shell (claims), and Complete turns
// the resulting allocation into the rows and annotations to write.
type NetworkPlan struct {
	Provider string
	Kind     AttachmentKind
	// Attachment is the NetworkAttachmentDefinition ("namespace/name"),
	// empty for the default network.
	Attachment string
	Subnet     *kubeovnv1.Subnet
	Alloc      *ipam.Subnet
	// Why names the rule that chose the subnet: "annotation", "pool",
	// "namespace", "default", "provider" or "allocated".
	Why  string
	Pool *kubeovnv1.IPPool
	// Request is what the pod's annotations ask for on this network.
	Request Request
	// Address says how the shell gets the network's addresses.
	Address AddressRequest
	// Release are claims of this provider that must go before the
	// allocation: another incarnation's, another subnet's, or an
	// incomplete set.
	Release []*v1alpha1.AddressClaim
	// Port is the Northbound port name; empty for an IPAM-only network.
	Port string
	// IPRecord is the kubeovn.io IP record name; empty when records are off.
	IPRecord string
	// IgnoredSwitch is a logical_switch edit that the plan did not follow
	// because the network is already allocated elsewhere.
	IgnoredSwitch string
	// VM is the VM the network is kept by; nil for other pods.
	VM *VMHolder
	// Vlan is the Vlan of an OVN network on an underlay subnet (A8).
	Vlan *kubeovnv1.Vlan
	// ExternalGateway is the next hop of the network's source routes
	// while its pod has eip or snat (G11).
	ExternalGateway ipam.Addresses
	// RouteWait holds back the routed phase until a cluster setting it
	// needs is there (the external gateway, E25); the network is
	// allocated meanwhile. Unlike Request.RouteErr, no edit of the pod
	// is needed: it is retried.
	RouteWait error
}

// AddressSource says where a network's addresses come from.
type AddressSource string

// Address sources, in the order the planner considers them.
const (
	// FromClaims: the owner's complete set of claims in the subnet.
	FromClaims AddressSource = "claims"
	// FromRecent: this shard term's own allocation, not yet in the cache.
	FromRecent AddressSource = "recent"
	// FromAnnotations: the addresses the pod was annotated with, taken
	// back through their claims (a handoff, a restart).
	FromAnnotations AddressSource = "annotations"
	FromStatic      AddressSource = "static"
	FromList        AddressSource = "list"
	FromPool        AddressSource = "pool"
	FromDynamic     AddressSource = "dynamic"
	// FromVip: the address and MAC a Vip reserved, held by the Vip's
	// claims (docs/contract.md D14).
	FromVip AddressSource = "vip"
)

// AddressRequest is the decided address request of one network.
type AddressRequest struct {
	Source AddressSource
	// Addresses are the addresses to take for FromClaims, FromRecent,
	// FromAnnotations and FromStatic.
	Addresses ipam.Addresses
	// MAC is the MAC to use; zero lets the claim layer derive it.
	MAC ipam.MAC
	// List and Ordinal serve FromList (Ordinal -1 when the pod has none).
	List    []ipam.Addresses
	Ordinal int
	// Pool names the IPPool of FromPool.
	Pool string
	// Vip names the Vip of FromVip.
	Vip string
}

// NetworkFailure is a network that cannot be served now.
type NetworkFailure struct {
	Provider   string
	Attachment string
	// Reason is the Warning Event reason.
	Reason string
	Err    error
}

func (f *NetworkFailure) Error() string {
	what := "default network"
	if f.Attachment != "" {
		what = "attachment " + f.Attachment
	}
	return fmt.Sprintf("%s: %v", what, f.Err)
}

func (f *NetworkFailure) Unwrap() error { return f.Err }

// Unplug is what one provider no longer asked for holds.
type Unplug struct {
	Provider string
	// Ports are the Northbound ports to delete.
	Ports []string
	// IPRecord is the record to delete, "" when records are off.
	IPRecord string
	Claims   []*v1alpha1.AddressClaim
	// Annotations are the pod's keys of the provider to remove.
	Annotations []string
}

// Event reasons of the networks a pod asks for (docs/contract.md §11).
const (
	ReasonNADNotFound         = "NetworkAttachmentNotFound"
	ReasonInvalidNAD          = "InvalidNetworkAttachment"
	ReasonSubnetChangeIgnored = "SubnetChangeIgnored"
)

// ErrUnknownNAD is a NetworkAttachmentDefinition a pod names that does
// not exist (yet).
var ErrUnknownNAD = errors.New("NetworkAttachmentDefinition not found")

// Plan decides in.Pod's networks. It fails only for what makes the whole
// pod unservable (a malformed key); a network that cannot be served is a
// NetworkFailure in the plan, beside the networks that can.
func (pl *Planner) Plan(in PlanInput) (*Plan, error) {
	pod := in.Pod
	key := pod.Namespace + "/" + in.holderName()
	p := &Plan{Key: key, Owner: ClaimOwnerOf(pod)}
	if in.VM != nil {
		p.Owner = in.VM.Owner
	}
	nsObj, _ := pl.View.Namespace(pod.Namespace)

	nets, unresolved := pl.networks(pod, p)
	// One index lookup serves the held subnets and the unplugs.
	ports := pl.View.PodPorts(key)
	p.Ports = ports
	asked := map[string]bool{}
	shared := in.VM != nil && in.VM.Shared
	for _, n := range nets {
		asked[n.provider] = true
		if shared && !shareable(pod, n.provider) {
			p.Waiting = append(p.Waiting, n.provider)
			continue
		}
		np, fail := pl.network(in, nsObj, p.Owner, n, ports)
		if fail != nil {
			p.Failed = append(p.Failed, fail)
			continue
		}
		if shared && np.Address.Source != FromClaims && np.Address.Source != FromRecent {
			if held := heldElsewhere(in.Claims, n.provider, np.Subnet.Name); held != "" {
				// A migration target that asks for another subnet than
				// the one the VM's address is in: it cannot take the
				// address, and a second one would be a second port.
				p.Failed = append(p.Failed, &NetworkFailure{Provider: n.provider, Attachment: n.attachment, Reason: ReasonMigrationSubnet,
					Err: fmt.Errorf("live migration target %s/%s asks for subnet %s, but VM %s holds its address in subnet %s: %w",
						pod.Namespace, pod.Name, np.Subnet.Name, in.VM.Name, held, ErrMigrationSubnet)})
				continue
			}
			// Only what the VM already holds is shared; the active pod
			// allocates.
			p.Waiting = append(p.Waiting, n.provider)
			continue
		}
		p.Networks = append(p.Networks, np)
	}
	if !unresolved && !shared {
		// A shared launcher pod never unplugs: the active one decides.
		p.Unplug = pl.unplugs(in, ports, asked)
	}
	return p, nil
}

// wanted is one network the pod asks for, before its subnet is known.
type wanted struct {
	provider   string
	kind       AttachmentKind
	attachment string
	primary    bool
	// sel is the attachment's selection; nil for the default network.
	sel *NetworkSelection
}

// networks lists the networks the pod asks for (docs/contract.md §6):
// the default network unless v1.multus-cni.io/default-network replaces
// it, then each kube-ovn attachment. unresolved is true when an
// attachment's provider could not be told (its annotation, NAD or config
// is bad or missing); those become failures in p.
func (pl *Planner) networks(pod *corev1.Pod, p *Plan) (out []wanted, unresolved bool) {
	ann := pod.Annotations
	primaryReplaced := false
	if v, ok := ann[AnnotationDefaultNetwork]; ok {
		primaryReplaced = true
		sels, err := ParseNetworkSelections(AnnotationDefaultNetwork, v, pod.Namespace)
		switch {
		case err != nil:
			p.Failed = append(p.Failed, &NetworkFailure{Reason: ReasonInvalidAnnotation, Err: err})
			unresolved = true
		case len(sels) != 1:
			p.Failed = append(p.Failed, &NetworkFailure{Reason: ReasonInvalidAnnotation,
				Err: &InputError{AnnotationDefaultNetwork, v, errors.New("names one network exactly")}})
			unresolved = true
		default:
			w, fail := pl.attachment(sels[0])
			switch {
			case fail != nil:
				p.Failed = append(p.Failed, fail)
				unresolved = true
			case w.kind == AttachmentOVN:
				w.primary = true
				out = append(out, w)
			case w.kind == AttachmentIPAMOnly:
				// Addresses only (docs/contract.md M18); a foreign default
				// network is not shardnet's at all.
				out = append(out, w)
			}
		}
	}
	if !primaryReplaced {
		out = append(out, wanted{provider: DefaultProvider, kind: AttachmentOVN, primary: true})
	}
	v := ann[AnnotationNetworks]
	if v == "" {
		return out, unresolved
	}
	sels, err := ParseNetworkSelections(AnnotationNetworks, v, pod.Namespace)
	if err != nil {
		p.Failed = append(p.Failed, &NetworkFailure{Reason: ReasonInvalidAnnotation, Err: err})
		return out, true
	}
	seen := map[string]bool{}
	for _, o := range out {
		seen[o.provider] = true
	}
	for _, sel := range sels {
		w, fail := pl.attachment(sel)
		switch {
		case fail != nil:
			p.Failed = append(p.Failed, fail)
			unresolved = true
		case w.kind == AttachmentForeign:
		case seen[w.provider]:
			p.Failed = append(p.Failed, &NetworkFailure{Provider: w.provider, Attachment: w.attachment, Reason: ReasonInvalidAnnotation,
				Err: &InputError{AnnotationNetworks, v, fmt.Errorf("provider %s is asked for twice", w.provider)}})
		default:
			seen[w.provider] = true
			out = append(out, w)
		}
	}
	return out, unresolved
}

// attachment resolves one selection to its provider through its NAD.
func (pl *Planner) attachment(sel NetworkSelection) (wanted, *NetworkFailure) {
	// Events and logs name the attachment as the pod does (M5).
	name := sel.Namespace + "/" + sel.Name
	if sel.Interface != "" {
		name += "@" + sel.Interface
	}
	cfg, found, err := pl.View.NAD(sel.Namespace, sel.Name)
	switch {
	case err != nil:
		return wanted{}, &NetworkFailure{Attachment: name, Reason: ReasonNADNotFound, Err: err}
	case !found:
		return wanted{}, &NetworkFailure{Attachment: name, Reason: ReasonNADNotFound, Err: fmt.Errorf("%s: %w", name, ErrUnknownNAD)}
	}
	conf, err := ParseNetConf(cfg)
	if err != nil {
		return wanted{}, &NetworkFailure{Attachment: name, Reason: ReasonInvalidNAD, Err: fmt.Errorf("%s: %w", name, err)}
	}
	return wanted{provider: AttachmentProvider(sel, conf), kind: conf.Kind(), attachment: name, sel: &sel}, nil
}

// network decides one network: its subnet, claims and address request.
func (pl *Planner) network(in PlanInput, nsObj *corev1.Namespace, owner v1alpha1.ClaimOwner, w wanted, ports []PortInfo) (*NetworkPlan, *NetworkFailure) {
	pod := in.Pod
	fail := func(reason string, err error) *NetworkFailure {
		return &NetworkFailure{Provider: w.provider, Attachment: w.attachment, Reason: reason, Err: err}
	}
	req, err := ParseRequestFor(pod, nsObj, w.provider)
	if err == nil && w.sel != nil {
		err = selectionRequest(&req, *w.sel, w.kind)
	}
	if err != nil {
		return nil, fail(ReasonInvalidAnnotation, err)
	}
	if pl.IgnoreEIPSNAT {
		req = req.withoutNAT(w.provider)
	}
	np := &NetworkPlan{Provider: w.provider, Kind: w.kind, Attachment: w.attachment, Request: req, VM: in.VM}

	mine, others := claimsOfProvider(in.Claims, w.provider, owner)
	if name := vipName(pod, w); name != "" && len(mine) == 0 {
		// A network that holds claims of its own keeps them: a vip
		// annotation added after allocation is ignored, as kube-ovn does.
		return pl.vipNetwork(pod, in.holderName(), np, name, others)
	}
	allocated := pod.Annotations[Key(w.provider, KeyAllocated)] == "true"
	if held := pl.heldSubnet(pod, in.holderName(), w.provider, mine, ports, allocated); held != "" {
		// An allocated network keeps its subnet (docs/contract.md S6):
		// following a logical_switch edit would move a running pod.
		s, ok := pl.View.Subnet(held)
		if ok {
			np.Subnet, np.Why = s, "allocated"
			if edit := pod.Annotations[Key(w.provider, KeyLogicalSwitch)]; edit != "" && edit != held {
				np.IgnoredSwitch = edit
			}
		}
	}
	if np.Subnet == nil {
		res, err := pl.resolve(pod, nsObj, w)
		if err != nil {
			var ie *InputError
			if errors.As(err, &ie) || errors.Is(err, ipam.ErrInvalid) {
				return nil, fail(ReasonInvalidAnnotation, err)
			}
			return nil, fail(ReasonSubnet, err)
		}
		np.Subnet, np.Pool, np.Why = res.Subnet, res.Pool, res.Source
	}
	if np.Alloc, err = pl.View.Allocator(np.Subnet.Name); err != nil {
		return nil, fail(ReasonSubnet, err)
	}
	settlePortRequest(np)
	if err := pl.underlay(np); err != nil {
		return nil, fail(ReasonSubnet, err)
	}
	pl.externalGateway(np)
	if w.kind == AttachmentOVN {
		np.Port = PortName(in.holderName(), pod.Namespace, w.provider)
	}
	if pl.IPRecords {
		np.IPRecord = PortName(in.holderName(), pod.Namespace, w.provider)
	}

	// Claims of an earlier incarnation of this name, or of this one in a
	// subnet it no longer uses, are not this network's addresses.
	var inSubnet []*v1alpha1.AddressClaim
	np.Release = append(np.Release, others...)
	for _, c := range mine {
		if c.Spec.Subnet == np.Subnet.Name && claimInRange(np.Alloc, c) {
			inSubnet = append(inSubnet, c)
		} else {
			// Another subnet, or outside this one's CIDR since it was
			// edited (R9): never reused, the network starts over.
			np.Release = append(np.Release, c)
		}
	}
	np.Address = pl.addressRequest(in, np, owner, inSubnet)
	return np, nil
}

// selectionRequest merges the JSON form's ips and mac into the network's
// request (docs/contract.md M4): they mean what the provider's ip_address
// and mac_address annotations mean, and may not contradict them (E18).
func selectionRequest(req *Request, sel NetworkSelection, kind AttachmentKind) error {
	if len(sel.IPs) > 0 {
		var addrs []string
		for _, ip := range sel.IPs {
			a, _, _ := strings.Cut(ip, "/")
			addrs = append(addrs, a)
		}
		v := strings.Join(addrs, ",")
		a, err := ipam.ParseAddresses(v)
		if err != nil {
			return &InputError{AnnotationNetworks, v, err}
		}
		if !req.Static.IsZero() && req.Static != a {
			return &InputError{AnnotationNetworks, v, fmt.Errorf("ips %s of %s/%s contradict its ip_address annotation %s", a, sel.Namespace, sel.Name, req.Static)}
		}
		req.Static = a
	}
	if sel.MAC != "" && kind == AttachmentOVN {
		m, err := ipam.ParseMAC(sel.MAC)
		if err != nil {
			return &InputError{AnnotationNetworks, sel.MAC, err}
		}
		if !req.MAC.IsZero() && req.MAC != m {
			return &InputError{AnnotationNetworks, sel.MAC, fmt.Errorf("mac of %s/%s contradicts its mac_address annotation %s", sel.Namespace, sel.Name, req.MAC)}
		}
		req.MAC = m
	}
	return nil
}

// heldSubnet is the subnet an allocated network is on: the subnet of its
// claims, else of its port, else of its annotation. Empty when the
// network is not allocated on this incarnation.
func (pl *Planner) heldSubnet(pod *corev1.Pod, holder, provider string, mine []*v1alpha1.AddressClaim, ports []PortInfo, allocated bool) string {
	if !allocated {
		return ""
	}
	for _, c := range mine {
		return c.Spec.Subnet
	}
	port := PortName(holder, pod.Namespace, provider)
	for _, pi := range ports {
		if pi.Name == port && pi.Switch != "" {
			return pi.Switch
		}
	}
	// The annotation alone: trust it only when it still holds the
	// annotated address, so an edit is not mistaken for the truth.
	name := pod.Annotations[Key(provider, KeyLogicalSwitch)]
	a, err := ipam.ParseAddresses(pod.Annotations[Key(provider, KeyIPAddress)])
	if s, ok := pl.View.Subnet(name); ok && err == nil && subnetContains(s, a) {
		return name
	}
	return ""
}

// resolve picks the subnet of a network that is not allocated yet.
func (pl *Planner) resolve(pod *corev1.Pod, nsObj *corev1.Namespace, w wanted) (Resolution, error) {
	if w.provider == DefaultProvider {
		r := Resolver{Catalog: pl.View, DefaultSubnet: pl.DefaultSubnet, HasFree: pl.View.HasFree}
		return r.Resolve(pod)
	}
	ann := pod.Annotations
	pool, err := pl.providerPool(pod, w.provider)
	if err != nil {
		return Resolution{}, err
	}
	if w.kind == AttachmentOVN {
		if name := ann[Key(w.provider, KeyLogicalSwitch)]; name != "" {
			s, ok := pl.View.Subnet(name)
			if !ok {
				return Resolution{}, fmt.Errorf("annotation %s=%q: %w", Key(w.provider, KeyLogicalSwitch), name, ErrUnknownSubnet)
			}
			return Resolution{Subnet: s, Pool: pool, Source: "annotation"}, nil
		}
	}
	if pool != nil {
		if s, ok := pl.View.Subnet(pool.Spec.Subnet); ok && s.Spec.Provider == w.provider {
			return Resolution{Subnet: s, Pool: pool, Source: "pool"}, nil
		}
		return Resolution{}, fmt.Errorf("IP pool %s is not on a subnet of provider %s: %w", pool.Name, w.provider, ErrUnknownPool)
	}
	for _, s := range sortedSubnets(pl.View.Subnets()) {
		if s.Spec.Provider == w.provider {
			return Resolution{Subnet: s, Source: "provider"}, nil
		}
	}
	return Resolution{}, fmt.Errorf("no subnet has provider %s: %w", w.provider, ErrUnknownSubnet)
}

// providerPool is the IPPool an attachment's own ip_pool annotation names.
// The namespace's ip_pool serves the default network only.
func (pl *Planner) providerPool(pod *corev1.Pod, provider string) (*kubeovnv1.IPPool, error) {
	key := Key(provider, KeyIPPool)
	v := pod.Annotations[key]
	if v == "" {
		return nil, nil
	}
	ref, err := ipam.ParseIPPoolAnnotation(v)
	if err != nil {
		return nil, &InputError{key, v, err}
	}
	if ref.Pool == "" {
		return nil, nil
	}
	p, ok := pl.View.IPPool(ref.Pool)
	if !ok {
		return nil, fmt.Errorf("annotation %s=%q: %w", key, ref.Pool, ErrUnknownPool)
	}
	return p, nil
}

// addressRequest decides where the network's addresses come from.
func (pl *Planner) addressRequest(in PlanInput, np *NetworkPlan, owner v1alpha1.ClaimOwner, held []*v1alpha1.AddressClaim) AddressRequest {
	pod, req := in.Pod, np.Request
	want := 0
	v4, v6 := np.Alloc.Prefixes()
	if v4.IsValid() {
		want++
	}
	if v6.IsValid() {
		want++
	}
	if len(held) == want {
		// The claims are in the informer, so the bitmap and MAC table have
		// them already: nothing to re-enter.
		if al, ok := allocationFromClaims(np.Subnet.Name, held); ok {
			return AddressRequest{Source: FromClaims, Addresses: al.Addresses, MAC: al.MAC}
		}
	}
	if al, ok := in.Recent[np.Provider]; ok && al.Subnet == np.Subnet.Name {
		if landed, ok := landedElsewhere(pod, np, owner, held, al); ok {
			return landed
		}
		// This term made the claims a moment ago and the informer has not
		// delivered them all: allocating again would leak them. Claims of
		// the owner here that the allocation does not use were left by an
		// attempt whose outcome was lost (another term's, before a
		// handoff): they go.
		for _, c := range held {
			if a, ok := addrOf(c); !ok || (a != al.Addresses.V4 && a != al.Addresses.V6) {
				np.Release = append(np.Release, c)
			}
		}
		return AddressRequest{Source: FromRecent, Addresses: al.Addresses, MAC: al.MAC}
	}
	// An incomplete set (one family of a dual-stack pair): start over.
	np.Release = append(np.Release, held...)
	mac := req.MAC
	if prior, ok := annotatedAllocation(pod, np.Provider, np.Subnet.Name); ok && req.Static.IsZero() {
		// Given before, but the claim cache has not seen it (a handoff, a
		// restart): take exactly those back; the claim decides whether
		// they are still the owner's.
		if mac.IsZero() {
			mac = prior.MAC
		}
		return AddressRequest{Source: FromAnnotations, Addresses: prior.Addresses, MAC: mac}
	}
	switch {
	case !req.Static.IsZero():
		return AddressRequest{Source: FromStatic, Addresses: req.Static, MAC: mac}
	case len(req.PoolList) > 0:
		ordinal := -1
		if _, n, ok := StatefulSetOwner(pod); ok {
			ordinal = n
		}
		return AddressRequest{Source: FromList, List: req.PoolList, Ordinal: ordinal, MAC: mac}
	case np.Pool != nil:
		return AddressRequest{Source: FromPool, Pool: np.Pool.Name, MAC: mac}
	}
	return AddressRequest{Source: FromDynamic, MAC: mac}
}

// claimsOfProvider splits the key's claims into this owner's on provider
// and those of another incarnation of the name on provider.
func claimsOfProvider(claims []*v1alpha1.AddressClaim, provider string, owner v1alpha1.ClaimOwner) (mine, others []*v1alpha1.AddressClaim) {
	for _, c := range claims {
		if claimProvider(c) != provider {
			continue
		}
		if c.Spec.Owner == owner {
			mine = append(mine, c)
		} else {
			others = append(others, c)
		}
	}
	return mine, others
}

// claimProvider is a claim's provider; claims written before providers
// were recorded are the default network's.
func claimProvider(c *v1alpha1.AddressClaim) string {
	if c.Spec.Provider == "" {
		return DefaultProvider
	}
	return c.Spec.Provider
}

// unplugs lists what the key holds on providers the pod no longer asks for.
func (pl *Planner) unplugs(in PlanInput, ports []PortInfo, asked map[string]bool) []*Unplug {
	pod := in.Pod
	by := map[string]*Unplug{}
	get := func(provider string) *Unplug {
		u := by[provider]
		if u == nil {
			u = &Unplug{Provider: provider}
			if pl.IPRecords {
				u.IPRecord = PortName(in.holderName(), pod.Namespace, provider)
			}
			by[provider] = u
		}
		return u
	}
	for _, c := range in.Claims {
		if pr := claimProvider(c); !asked[pr] {
			u := get(pr)
			u.Claims = append(u.Claims, c)
		}
	}
	prefix := in.holderName() + "." + pod.Namespace
	for _, pi := range ports {
		pr := DefaultProvider
		if rest, ok := strings.CutPrefix(pi.Name, prefix+"."); ok {
			pr = rest
		} else if pi.Name != prefix {
			continue
		}
		if !asked[pr] {
			u := get(pr)
			u.Ports = append(u.Ports, pi.Name)
		}
	}
	for k, v := range pod.Annotations {
		pr, rest, ok := strings.Cut(k, ".kubernetes.io/")
		if !ok || rest != KeyAllocated || v != "true" || asked[pr] || pr == DefaultProvider {
			continue
		}
		get(pr)
	}
	var out []*Unplug
	for pr, u := range by {
		if pr != DefaultProvider {
			// The default network's annotations are the user's as much as
			// shardnet's; an attachment's are shardnet's alone.
			u.Annotations = providerAnnotations(pod, pr)
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Provider < out[j].Provider })
	return out
}

// providerAnnotations are the pod's annotation keys of provider.
func providerAnnotations(pod *corev1.Pod, provider string) []string {
	prefix := provider + ".kubernetes.io/"
	var keys []string
	for k := range pod.Annotations {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// ClaimOwnerOf is who a pod's claims belong to: the pod itself, or, for a
// StatefulSet pod, the StatefulSet incarnation, so that a re-created pod
// of the same ordinal takes its addresses back.
func ClaimOwnerOf(pod *corev1.Pod) v1alpha1.ClaimOwner {
	if sts, _, ok := StatefulSetOwner(pod); ok {
		for _, o := range pod.OwnerReferences {
			if o.Kind == "StatefulSet" && o.Name == sts {
				return v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerStatefulSetPod, Namespace: pod.Namespace, Name: pod.Name, UID: string(o.UID)}
			}
		}
	}
	return v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
}

// annotatedAllocation is what the pod's annotations say it was given on
// provider in subnet, when they say it was allocated there.
func annotatedAllocation(pod *corev1.Pod, provider, subnet string) (ipam.Allocation, bool) {
	ann := pod.Annotations
	if ann[Key(provider, KeyAllocated)] != "true" {
		return ipam.Allocation{}, false
	}
	// An IPAM-only network has no logical_switch annotation: the subnet
	// must contain the addresses instead.
	if ls := ann[Key(provider, KeyLogicalSwitch)]; ls != "" && ls != subnet {
		return ipam.Allocation{}, false
	}
	a, err := ipam.ParseAddresses(ann[Key(provider, KeyIPAddress)])
	if err != nil {
		return ipam.Allocation{}, false
	}
	al := ipam.Allocation{Subnet: subnet, Addresses: a}
	if m, err := ipam.ParseMAC(ann[Key(provider, KeyMACAddress)]); err == nil {
		al.MAC = m
	}
	return al, true
}

// landedElsewhere handles a pod annotated, by another writer, with other
// addresses than this term's own recent allocation, all claimed by the
// pod: an earlier owner of the shard allocated too, and its patch landed
// after this term read the pod (a write in flight when that owner stopped).
// The annotation that landed is what the pod uses, so it is kept and this
// term's allocation goes, claims the cache has not shown yet included.
func landedElsewhere(pod *corev1.Pod, np *NetworkPlan, owner v1alpha1.ClaimOwner, held []*v1alpha1.AddressClaim, recent ipam.Allocation) (AddressRequest, bool) {
	prior, ok := annotatedAllocation(pod, np.Provider, np.Subnet.Name)
	if !ok || prior.Addresses == recent.Addresses {
		return AddressRequest{}, false
	}
	var mine, others []*v1alpha1.AddressClaim
	for _, c := range held {
		if a, ok := addrOf(c); ok && a.IsValid() && (a == prior.Addresses.V4 || a == prior.Addresses.V6) {
			mine = append(mine, c)
		} else {
			others = append(others, c)
		}
	}
	got, ok := allocationFromClaims(np.Subnet.Name, mine)
	if !ok || got.Addresses != prior.Addresses {
		// Not claimed by the pod: a user's edit, refused elsewhere.
		return AddressRequest{}, false
	}
	np.Release = append(np.Release, others...)
	for _, a := range recent.Addresses.List() {
		if a == prior.Addresses.V4 || a == prior.Addresses.V6 || slices.ContainsFunc(others, func(c *v1alpha1.AddressClaim) bool { b, _ := addrOf(c); return b == a }) {
			continue
		}
		np.Release = append(np.Release, &v1alpha1.AddressClaim{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClaimName(np.Subnet.Name, a)},
			Spec:       v1alpha1.AddressClaimSpec{Subnet: np.Subnet.Name, Address: a.String(), Owner: owner},
		})
	}
	return AddressRequest{Source: FromClaims, Addresses: got.Addresses, MAC: got.MAC}, true
}

// addrOf parses one claim's address.
func addrOf(c *v1alpha1.AddressClaim) (netip.Addr, bool) {
	a, err := netip.ParseAddr(c.Spec.Address)
	return a.Unmap(), err == nil
}

// allocationFromClaims rebuilds an allocation from a complete set of claims
// of one owner in one subnet.
func allocationFromClaims(subnet string, claims []*v1alpha1.AddressClaim) (ipam.Allocation, bool) {
	al := ipam.Allocation{Subnet: subnet}
	for _, c := range claims {
		a, ok := addrOf(c)
		if !ok {
			return al, false
		}
		if a.Is4() {
			al.Addresses.V4 = a
		} else {
			al.Addresses.V6 = a
		}
		if c.Spec.MAC != "" {
			m, err := ipam.ParseMAC(c.Spec.MAC)
			if err != nil {
				return al, false
			}
			al.MAC = m
		}
	}
	return al, !al.MAC.IsZero()
}

// claimInRange reports whether a claim's address is inside the subnet's
// current CIDR (an edit of the CIDR can leave a claim outside it).
func claimInRange(sub *ipam.Subnet, c *v1alpha1.AddressClaim) bool {
	a, ok := addrOf(c)
	return ok && sub.Contains(a)
}
