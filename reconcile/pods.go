package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	kubeovnlisters "github.com/shardnet/shardnet/api/client/listers/kubeovn/v1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/queue"
)

// ShardWriter is the Northbound writer of one owned shard: its fenced
// batcher. A write from a shard this replica no longer owns fails.
type ShardWriter interface {
	Submit(ctx context.Context, ops ...ovsdb.Operation) (ovn.Result, error)
}

var _ ShardWriter = (*ovn.Batcher)(nil)

// Metrics receives what the pod reconciler measures. Implementations must
// be safe for concurrent use and cheap.
type Metrics interface {
	// Reconciled is one reconcile of a pod key: its phase ("allocate",
	// "route", "release", "noop"), its result ("ok", "error", "invalid")
	// and how long it took.
	Reconciled(phase, result string, d time.Duration)
	// Annotated is the time from a pod's creation to its allocated
	// annotation being written.
	Annotated(d time.Duration)
}

// NopMetrics discards everything.
type NopMetrics struct{}

func (NopMetrics) Reconciled(string, string, time.Duration) {}
func (NopMetrics) Annotated(time.Duration)                  {}

// Event reasons of the Warning Events the pod reconciler records.
const (
	ReasonInvalidAnnotation = "InvalidNetworkAnnotation"
	ReasonSubnet            = "SubnetUnavailable"
	ReasonAddress           = "AcquireAddressFailed"
	ReasonPort              = "CreateOVNPortFailed"
)

// Retry delays for failures that only a change elsewhere cures.
const (
	retryUnknownSubnet = 15 * time.Second
	retryFull          = 5 * time.Second
)

// PodConfig is what the pod reconciler reads and writes through.
type PodConfig struct {
	Kube     kubernetes.Interface
	Shardnet versioned.Interface
	NB       *ovn.Client

	Pods         corelisters.PodLister
	Nodes        corelisters.NodeLister
	StatefulSets appslisters.StatefulSetLister
	// IPs is the kubeovn.io IP lister; needed when IPRecords is set.
	IPs kubeovnlisters.IPLister
	// ClaimIndex is the AddressClaim informer's indexer, with
	// ClaimIndexers added.
	ClaimIndex cache.Indexer
	Catalog    Catalog
	Subnets    *Subnets
	Claims     *ipam.Claims
	Recorder   record.EventRecorder

	// DefaultSubnet is the --default-subnet name (empty: the Subnet with
	// spec.default).
	DefaultSubnet string
	// ClusterRouter is the default VPC's router (default "ovn-cluster").
	ClusterRouter string
	// PodNICType is written as pod_nic_type when the pod has none
	// (default "veth-pair").
	PodNICType string
	// IPRecords makes the reconciler keep a kubeovn.io IP per pod.
	IPRecords bool
	Metrics   Metrics
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Pods reconciles pod keys: it gives a live pod its addresses, port and
// annotations, and releases what a gone pod held. One key is never
// reconciled by two goroutines at once (the queue guarantees it), and
// every step is idempotent, so a retry after any failure converges.
type Pods struct {
	cfg      PodConfig
	resolver *Resolver
	// written maps a pod key to the port this replica last committed for
	// it (writtenPort), so that a reconcile running before the cache has
	// the port does not write it again. Entries go on release.
	written sync.Map
	// allocs maps a pod key to the allocation this replica last made for
	// it (allocatedClaims), for the moment before the claim informer has
	// delivered the claims. Entries go on release.
	allocs sync.Map
	// patched maps a pod key to the version this replica's last annotation
	// patch of it created (patchedVersion), so that a reconcile reading a
	// cache older than that write leaves the work to the event the write
	// is bound to bring. Entries go on release.
	patched sync.Map
}

// patchedVersion is the pod version an annotation patch returned.
type patchedVersion struct {
	uid     types.UID
	version string
	at      time.Time
}

// behindOwnPatch reports whether the cached pod is older than the version
// this replica's last patch of it created: everything the reconcile would
// do from that pod was done for it, and the informer has yet to deliver
// the patch, whose event queues the key again. Versions that do not
// compare (an API server that is not etcd-backed) are never behind.
func (p *Pods) behindOwnPatch(key string, pod *corev1.Pod) bool {
	v, ok := p.patched.Load(key)
	if !ok {
		return false
	}
	pv := v.(patchedVersion)
	if pv.uid != pod.UID || p.cfg.Now().Sub(pv.at) >= cacheLagTolerance {
		p.patched.CompareAndDelete(key, v)
		return false
	}
	c, err := resourceversion.CompareResourceVersion(pod.ResourceVersion, pv.version)
	return err == nil && c < 0
}

// allocatedClaims is an allocation this replica made, with its owner.
type allocatedClaims struct {
	owner v1alpha1.ClaimOwner
	alloc ipam.Allocation
	at    time.Time
}

// allocatedHere returns the allocation this replica made for the pod's
// owner in subnet within the cache-lag tolerance, if any.
func (p *Pods) allocatedHere(pod *corev1.Pod, owner v1alpha1.ClaimOwner, subnet string) (ipam.Allocation, bool) {
	v, ok := p.allocs.Load(pod.Namespace + "/" + pod.Name)
	if !ok {
		return ipam.Allocation{}, false
	}
	a := v.(allocatedClaims)
	if a.owner != owner || a.alloc.Subnet != subnet || p.cfg.Now().Sub(a.at) >= cacheLagTolerance {
		return ipam.Allocation{}, false
	}
	return a.alloc, true
}

// writtenPort is a committed port: what it carried and when.
type writtenPort struct {
	fingerprint string
	at          time.Time
}

// cacheLagTolerance is how long a committed port may be missing from the
// cache before it is taken for gone and written again.
const cacheLagTolerance = 30 * time.Second

func (p *Pods) recentlyWritten(key, fingerprint string) bool {
	v, ok := p.written.Load(key)
	if !ok {
		return false
	}
	w := v.(writtenPort)
	return w.fingerprint == fingerprint && p.cfg.Now().Sub(w.at) < cacheLagTolerance
}

// portFingerprint is what a pod's port and routed phase were written from.
func portFingerprint(subnet string, al ipam.Allocation, req Request, node string) string {
	return fmt.Sprintf("%s|%s|%s|%v|%v|%v|%s|%s|%s|%s", subnet, al.Addresses, al.MAC, req.PortSecurity, req.Layer2Forward,
		req.PortVIPs, req.NorthGateway, req.EIP, req.SNAT, node)
}

// alreadyRouted reports whether the pod's annotations say the routed phase
// is done for these addresses on this subnet.
func alreadyRouted(pod *corev1.Pod, subnet string, al ipam.Allocation) bool {
	ann := pod.Annotations
	return ann[DefaultKey(KeyRouted)] == "true" && ann[DefaultKey(KeyLogicalSwitch)] == subnet &&
		ann[DefaultKey(KeyIPAddress)] == al.Addresses.String()
}

// NewPods checks cfg and returns the reconciler.
func NewPods(cfg PodConfig) (*Pods, error) {
	switch {
	case cfg.Kube == nil || cfg.Shardnet == nil || cfg.NB == nil:
		return nil, errors.New("reconcile: Kube, Shardnet and NB clients are required")
	case cfg.Pods == nil || cfg.Nodes == nil || cfg.StatefulSets == nil || cfg.ClaimIndex == nil || cfg.Catalog == nil:
		return nil, errors.New("reconcile: pod, node, StatefulSet listers, the claim index and the catalog are required")
	case cfg.Subnets == nil || cfg.Claims == nil || cfg.Recorder == nil:
		return nil, errors.New("reconcile: Subnets, Claims and Recorder are required")
	case cfg.IPRecords && cfg.IPs == nil:
		return nil, errors.New("reconcile: IPRecords needs the IP lister")
	}
	if cfg.ClusterRouter == "" {
		cfg.ClusterRouter = DefaultClusterRouter
	}
	if cfg.PodNICType == "" {
		cfg.PodNICType = DefaultPodNICType
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NopMetrics{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &Pods{cfg: cfg}
	p.resolver = &Resolver{Catalog: cfg.Catalog, DefaultSubnet: cfg.DefaultSubnet, HasFree: cfg.Subnets.HasFree}
	return p, nil
}

// DefaultClusterRouter is the router of the default VPC.
const DefaultClusterRouter = "ovn-cluster"

// Reconcile converges the pod key on shard, writing the Northbound through
// w. Input errors come back as queue.Permanent (the pod's next update
// retries), failures a retry can cure as plain errors or queue.RetryAfter.
func (p *Pods) Reconcile(ctx context.Context, w ShardWriter, shard int, key string) error {
	start := p.cfg.Now()
	ctx, span := startReconcile(ctx, shard, key)
	phase, err := p.reconcile(ctx, w, shard, key)
	result := "ok"
	switch {
	case err == nil:
	case queue.IsPermanent(err):
		result = "invalid"
	default:
		result = "error"
	}
	p.cfg.Metrics.Reconciled(phase, result, p.cfg.Now().Sub(start))
	endReconcile(span, phase, result, err)
	return err
}

func (p *Pods) reconcile(ctx context.Context, w ShardWriter, shard int, key string) (string, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return "noop", queue.Permanent(fmt.Errorf("bad pod key %q: %w", key, err))
	}
	pod, err := p.cfg.Pods.Pods(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return "noop", err
	}
	if pod == nil || pod.Spec.HostNetwork || !Alive(pod, p.cfg.Now()) {
		return "release", p.release(ctx, w, key, pod)
	}
	return p.ensure(ctx, w, shard, key, pod)
}

// owner is who a pod's claims belong to: the pod itself, or, for a
// StatefulSet pod, the StatefulSet incarnation, so that a re-created pod
// of the same ordinal takes its addresses back.
func (p *Pods) owner(pod *corev1.Pod) v1alpha1.ClaimOwner {
	if sts, _, ok := StatefulSetOwner(pod); ok {
		for _, o := range pod.OwnerReferences {
			if o.Kind == "StatefulSet" && o.Name == sts {
				return v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerStatefulSetPod, Namespace: pod.Namespace, Name: pod.Name, UID: string(o.UID)}
			}
		}
	}
	return v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
}

func (p *Pods) warn(pod *corev1.Pod, reason string, err error) {
	p.cfg.Recorder.Event(pod, corev1.EventTypeWarning, reason, err.Error())
}

// ensure gives a live pod its addresses, port, IP record and annotations.
func (p *Pods) ensure(ctx context.Context, w ShardWriter, shard int, key string, pod *corev1.Pod) (string, error) {
	log := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	if p.behindOwnPatch(key, pod) {
		// An event of the pod from before this replica's patch (kwok's or
		// the kubelet's status update racing it): redoing the routed phase
		// and the patch from it would cost a transaction and a write.
		log.V(5).Info("Cache behind this replica's own patch; waiting for its event", "version", pod.ResourceVersion)
		return "noop", nil
	}
	nsObj, _ := p.cfg.Catalog.Namespace(pod.Namespace)
	req, err := ParseRequest(pod, nsObj)
	if err != nil {
		p.warn(pod, ReasonInvalidAnnotation, err)
		return "allocate", queue.Permanent(err)
	}
	var (
		res Resolution
		sub *ipam.Subnet
	)
	if err := inStage(ctx, stageResolve, func(context.Context) error {
		var err error
		if res, err = p.resolver.Resolve(pod); err != nil {
			return p.subnetError(pod, err)
		}
		if sub, err = p.cfg.Subnets.Get(res.Subnet.Name); err != nil {
			return p.subnetError(pod, err)
		}
		return nil
	}); err != nil {
		return "allocate", err
	}
	owner := p.owner(pod)

	var alloc ipam.Allocation
	if err := inStage(ctx, stageIPAM, func(ctx context.Context) error {
		// Claims of an earlier incarnation of this name, or of this one in
		// a subnet it no longer uses, go first: their addresses are not ours.
		held := claimsOf(p.cfg.ClaimIndex, key)
		var mine []*v1alpha1.AddressClaim
		for _, c := range held {
			if c.Spec.Owner == owner && c.Spec.Subnet == sub.Name() {
				mine = append(mine, c)
				continue
			}
			if err := p.releaseClaim(ctx, c); err != nil {
				return err
			}
		}
		var err error
		if alloc, err = p.allocation(ctx, sub, shard, pod, owner, req, res, mine); err != nil {
			return p.addressError(pod, err)
		}
		p.allocs.Store(key, allocatedClaims{owner: owner, alloc: alloc, at: p.cfg.Now()})
		// Claims of this owner in this subnet that the allocation does not
		// use (left by an attempt whose outcome was lost) go now.
		for _, c := range mine {
			if a, perr := netip.ParseAddr(c.Spec.Address); perr == nil && a.Unmap() != alloc.Addresses.V4 && a.Unmap() != alloc.Addresses.V6 {
				if err := p.releaseClaim(ctx, c); err != nil {
					return err
				}
			}
		}
		if err := p.checkStaticMatches(req, alloc); err != nil {
			p.warn(pod, ReasonAddress, err)
			return queue.Permanent(err)
		}
		return nil
	}); err != nil {
		return "allocate", err
	}

	portName := PortName(pod.Name, pod.Namespace, DefaultProvider)
	ops, ref, err := p.cfg.NB.EnsurePort(ovn.PortSpec{
		Name:          portName,
		Switch:        sub.Name(),
		Pod:           key,
		MAC:           alloc.MAC.String(),
		IPs:           addrStrings(alloc.Addresses),
		PortSecurity:  req.PortSecurity,
		VIPs:          addrList(req.PortVIPs),
		Layer2Forward: req.Layer2Forward,
	})
	if err != nil {
		if errors.Is(err, ovn.ErrNotFound) {
			// The subnet reconciler has not created the switch yet.
			return "allocate", queue.RetryAfter(time.Second)
		}
		return "allocate", fmt.Errorf("building port %s: %w", portName, err)
	}
	routed := pod.Spec.NodeName != ""
	// The routed phase runs once per address and node: its port group
	// membership is a set mutation the trimmed cache cannot see, so
	// redoing it on every pod event would cost a transaction each time.
	if routed && !alreadyRouted(pod, sub.Name(), alloc) {
		rops, err := p.routeOps(res.Subnet, pod, req, ref, alloc)
		if err != nil {
			return "allocate", err
		}
		ops = append(ops, rops...)
	}
	written := portFingerprint(sub.Name(), alloc, req, pod.Spec.NodeName)
	if _, cached := p.cfg.NB.Port(portName); !cached && p.recentlyWritten(key, written) {
		// This replica committed exactly this port a moment ago and the
		// cache has not caught up with it yet: writing it again would
		// fail on the port name's unique index.
		ops = nil
	}
	if len(ops) > 0 {
		if _, err := w.Submit(ctx, ops...); err != nil {
			p.written.Delete(key)
			if !errors.Is(err, ovn.ErrStaleEpoch) {
				p.warn(pod, ReasonPort, err)
			}
			return "allocate", fmt.Errorf("writing port %s: %w", portName, err)
		}
		p.written.Store(key, writtenPort{fingerprint: written, at: p.cfg.Now()})
	}

	if p.cfg.IPRecords {
		if err := inStage(ctx, stageIPRecord, func(ctx context.Context) error {
			return p.ensureIPRecord(ctx, pod, portName, sub.Name(), alloc)
		}); err != nil {
			return "allocate", err
		}
	}

	want := p.annotations(pod, res.Subnet, sub, alloc, routed)
	patch := annotationPatch(pod, want)
	if patch == nil {
		return "noop", nil
	}
	wasAllocated := pod.Annotations[DefaultKey(KeyAllocated)] == "true"
	err = inStage(ctx, stagePatch, func(ctx context.Context) error {
		out, err := p.cfg.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil && out != nil {
			p.patched.Store(key, patchedVersion{uid: out.UID, version: out.ResourceVersion, at: p.cfg.Now()})
		}
		return err
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsInvalid(err):
		// Gone, or replaced by a pod of another UID (the patch carries the
		// UID as a precondition): the next reconcile of the key sees which.
		log.V(4).Info("Pod changed under the patch; retrying", "err", err)
		return "allocate", queue.RetryAfter(100 * time.Millisecond)
	case err != nil:
		return "allocate", fmt.Errorf("patching pod %s: %w", key, err)
	}
	if !wasAllocated {
		p.cfg.Metrics.Annotated(p.cfg.Now().Sub(pod.CreationTimestamp.Time))
	}
	if routed {
		return "route", nil
	}
	return "allocate", nil
}

// allocation returns what the pod holds in sub: the claims it already has
// there (a retry, a restart, a retained StatefulSet address), or a new
// allocation of the kind its annotations ask for.
func (p *Pods) allocation(ctx context.Context, sub *ipam.Subnet, shard int, pod *corev1.Pod, owner v1alpha1.ClaimOwner,
	req Request, res Resolution, mine []*v1alpha1.AddressClaim) (ipam.Allocation, error) {
	want := 0
	v4, v6 := sub.Prefixes()
	if v4.IsValid() {
		want++
	}
	if v6.IsValid() {
		want++
	}
	if len(mine) == want {
		// The claims are in the informer, so the bitmap and MAC table have
		// them already (restore and claim events): nothing to re-enter.
		if al, ok := allocationFromClaims(sub.Name(), mine); ok {
			return al, nil
		}
	}
	if al, ok := p.allocatedHere(pod, owner, sub.Name()); ok {
		// This replica made the claims a moment ago and the informer has
		// not delivered them all yet (the reconcile failed after claiming,
		// at the port or the patch): allocating again would leak them.
		return al, nil
	}
	for _, c := range mine {
		// An incomplete set (one family of a dual-stack pair): start over.
		if err := p.releaseClaim(ctx, c); err != nil {
			return ipam.Allocation{}, err
		}
	}

	r := p.request(pod, owner, req.MAC)
	if prior, ok := annotatedAllocation(pod, sub.Name()); ok && req.Static.IsZero() {
		// The pod was given addresses before, but this replica's claim
		// cache has not seen them yet (a handoff, a restart): take exactly
		// those back. The claim decides whether they are still the owner's.
		if r.MAC.IsZero() {
			r.MAC = prior.MAC
		}
		return p.cfg.Claims.AllocateStatic(ctx, sub, prior.Addresses, shard, r)
	}
	switch {
	case !req.Static.IsZero():
		return p.cfg.Claims.AllocateStatic(ctx, sub, req.Static, shard, r)
	case len(req.PoolList) > 0:
		ordinal := -1
		if _, n, ok := StatefulSetOwner(pod); ok {
			ordinal = n
		}
		return p.cfg.Claims.AllocateFromList(ctx, sub, req.PoolList, ordinal, shard, r)
	case res.Pool != nil:
		return p.cfg.Claims.AllocateFromPool(ctx, sub, res.Pool.Name, shard, r)
	default:
		return p.cfg.Claims.Allocate(ctx, sub, shard, r)
	}
}

func (p *Pods) request(pod *corev1.Pod, owner v1alpha1.ClaimOwner, mac ipam.MAC) ipam.Request {
	return ipam.Request{Owner: owner, Provider: DefaultProvider, NodeName: pod.Spec.NodeName, MAC: mac}
}

// checkStaticMatches refuses a held allocation that no longer matches a
// static address the user has since written: the address of a running pod
// is not changed under it.
func (p *Pods) checkStaticMatches(req Request, al ipam.Allocation) error {
	if req.Static.IsZero() {
		return nil
	}
	for _, a := range req.Static.List() {
		if a != al.Addresses.V4 && a != al.Addresses.V6 {
			return fmt.Errorf("pod already holds %s; a running pod's address is not changed to %s", al.Addresses, req.Static)
		}
	}
	return nil
}

// annotatedAllocation is what the pod's annotations say it was given in
// subnet, when they say it was allocated there.
func annotatedAllocation(pod *corev1.Pod, subnet string) (ipam.Allocation, bool) {
	ann := pod.Annotations
	if ann[DefaultKey(KeyAllocated)] != "true" || ann[DefaultKey(KeyLogicalSwitch)] != subnet {
		return ipam.Allocation{}, false
	}
	a, err := ipam.ParseAddresses(ann[DefaultKey(KeyIPAddress)])
	if err != nil {
		return ipam.Allocation{}, false
	}
	al := ipam.Allocation{Subnet: subnet, Addresses: a}
	if m, err := ipam.ParseMAC(ann[DefaultKey(KeyMACAddress)]); err == nil {
		al.MAC = m
	}
	return al, true
}

// allocationFromClaims rebuilds an allocation from a complete set of claims
// of one owner in one subnet.
func allocationFromClaims(subnet string, claims []*v1alpha1.AddressClaim) (ipam.Allocation, bool) {
	al := ipam.Allocation{Subnet: subnet}
	for _, c := range claims {
		a, err := ipam.ParseAddresses(c.Spec.Address)
		if err != nil {
			return al, false
		}
		if a.V4.IsValid() {
			al.Addresses.V4 = a.V4
		} else {
			al.Addresses.V6 = a.V6
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

// routeOps are the routed-phase ops for a pod with a node.
func (p *Pods) routeOps(s *kubeovnv1.Subnet, pod *corev1.Pod, req Request, port ovn.Ref, al ipam.Allocation) ([]ovsdb.Operation, error) {
	vpc := s.Spec.Vpc
	if vpc == "" {
		vpc = p.cfg.ClusterRouter
	}
	overlay := s.Spec.Vlan == "" || s.Spec.LogicalGateway
	if !overlay || vpc != p.cfg.ClusterRouter {
		return nil, nil
	}
	var ops []ovsdb.Operation
	key := pod.Namespace + "/" + pod.Name
	if !req.NorthGateway.IsValid() && s.Spec.GatewayType != kubeovnv1.GatewayTypeCentralized && !req.EIP.IsValid() && !req.SNAT.IsValid() {
		// The subnet reconciler creates each node's group; until it has,
		// the pod waits rather than racing other pods to insert it.
		pg := NodePortGroupName(s.Name, pod.Spec.NodeName)
		aops, err := p.cfg.NB.AddToPortGroup(pg, port)
		if errors.Is(err, ovn.ErrNotFound) {
			return nil, queue.RetryAfter(time.Second)
		}
		if err != nil {
			return nil, fmt.Errorf("building port group %s membership: %w", pg, err)
		}
		ops = append(ops, aops...)
	}
	for _, a := range al.Addresses.List() {
		if req.NorthGateway.IsValid() && req.NorthGateway.Is4() == a.Is4() {
			rops, err := p.cfg.NB.EnsureStaticRoute(ovn.RouteSpec{Router: vpc, Prefix: a.String(), Nexthop: req.NorthGateway.String(), Policy: "src-ip", Pod: key})
			if err != nil {
				return nil, err
			}
			ops = append(ops, rops...)
		}
		if req.EIP.IsValid() && req.EIP.Is4() == a.Is4() {
			nops, err := p.cfg.NB.EnsureNAT(ovn.NATSpec{Router: vpc, Type: "dnat_and_snat", ExternalIP: req.EIP.String(), LogicalIP: a.String(), Pod: key})
			if err != nil {
				return nil, err
			}
			ops = append(ops, nops...)
		}
		if req.SNAT.IsValid() && req.SNAT.Is4() == a.Is4() {
			nops, err := p.cfg.NB.EnsureNAT(ovn.NATSpec{Router: vpc, Type: "snat", ExternalIP: req.SNAT.String(), LogicalIP: a.String(), Pod: key})
			if err != nil {
				return nil, err
			}
			ops = append(ops, nops...)
		}
	}
	return ops, nil
}

// NodePortGroupName is the port group of a subnet's ports on one node, as
// kube-ovn names it (dashes become dots, port group names allow neither
// dashes at the start nor most punctuation).
func NodePortGroupName(subnet, node string) string {
	return strings.ReplaceAll(subnet+"."+node, "-", ".")
}

// annotations are the values shardnet owns on the pod's default network.
func (p *Pods) annotations(pod *corev1.Pod, s *kubeovnv1.Subnet, sub *ipam.Subnet, al ipam.Allocation, routed bool) map[string]string {
	want := map[string]string{
		DefaultKey(KeyIPAddress):     al.Addresses.String(),
		DefaultKey(KeyMACAddress):    al.MAC.String(),
		DefaultKey(KeyCIDR):          s.Spec.CIDRBlock,
		DefaultKey(KeyGateway):       sub.Gateways().String(),
		DefaultKey(KeyLogicalSwitch): s.Name,
		DefaultKey(KeyAllocated):     "true",
	}
	if pod.Annotations[DefaultKey(KeyPodNICType)] == "" {
		want[DefaultKey(KeyPodNICType)] = p.cfg.PodNICType
	}
	if s.Spec.Vlan == "" || s.Spec.LogicalGateway || s.Spec.U2OInterconnection {
		vpc := s.Spec.Vpc
		if vpc == "" {
			vpc = p.cfg.ClusterRouter
		}
		want[DefaultKey(KeyLogicalRouter)] = vpc
	}
	if routed {
		want[DefaultKey(KeyRouted)] = "true"
	}
	return want
}

// annotationPatch is the merge patch that sets want on pod, carrying the
// pod's UID so that it cannot land on a re-created pod of the same name;
// nil when nothing changes.
func annotationPatch(pod *corev1.Pod, want map[string]string) []byte {
	changed := map[string]string{}
	for k, v := range want {
		if pod.Annotations[k] != v {
			changed[k] = v
		}
	}
	if len(changed) == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": pod.UID, "annotations": changed}})
	return b
}

func addrStrings(a ipam.Addresses) []string { return addrList(a.List()) }

func addrList(as []netip.Addr) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}
