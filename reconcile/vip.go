package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kubeovnlisters "github.com/shardnet/shardnet/api/client/listers/kubeovn/v1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/queue"
)

// kube-ovn's names on Vip objects (docs/contract.md D14, K9).
const (
	// LabelIPReserved is kube-ovn's label on a Vip: empty while the Vip is
	// free, the port name of the pod that took it otherwise. Writing it
	// with the Vip's resourceVersion as a precondition is how two pods
	// asking for one Vip are told apart: only one write lands.
	LabelIPReserved = "ovn.kubernetes.io/ip_reserved"
	// LabelSubnetName is kube-ovn's label naming a Vip's (or an IP
	// record's) subnet.
	LabelSubnetName = "ovn.kubernetes.io/subnet"
	// FinalizerVip is kube-ovn-controller's finalizer, which shardnet
	// keeps on the Vips it reserves so that a handback to kube-ovn finds
	// what kube-ovn itself would have left.
	FinalizerVip = "kubeovn.io/kube-ovn-controller"
)

// Errors of a pod whose vip annotation cannot be served now
// (docs/contract.md E20). All wrap ErrVipUnavailable.
var (
	ErrVipUnavailable = errors.New("Vip unavailable")
	// ErrUnknownVip: the Vip does not exist (yet).
	ErrUnknownVip = fmt.Errorf("%w: not found", ErrVipUnavailable)
	// ErrVipNotReserved: the Vip has no reserved address yet.
	ErrVipNotReserved = fmt.Errorf("%w: no address reserved yet", ErrVipUnavailable)
	// ErrVipInUse: another pod has taken the Vip.
	ErrVipInUse = fmt.Errorf("%w: in use", ErrVipUnavailable)
	// ErrVipDeleting: the Vip is being deleted and is not given to a new pod.
	ErrVipDeleting = fmt.Errorf("%w: being deleted", ErrVipUnavailable)
)

// ErrVipNotApplied is a vip annotation on a pod whose default network is
// already allocated with other addresses: they are not changed.
var ErrVipNotApplied = errors.New("the vip annotation is not applied to an allocated network")

// VipCatalog serves Vips by name; the Planner reads it for pods with
// ovn.kubernetes.io/vip.
type VipCatalog interface {
	Vip(name string) (*kubeovnv1.Vip, bool)
}

// VipLister is a VipCatalog over the Vip informer's lister.
type VipLister struct{ Lister kubeovnlisters.VipLister }

// Vip implements VipCatalog.
func (l VipLister) Vip(name string) (*kubeovnv1.Vip, bool) {
	v, err := l.Lister.Get(name)
	return v, err == nil
}

// VipWrites are the Vip writes of the pod path and the Vip reconciler.
// Merge patches only: the Vip types do not model every field kube-ovn
// writes, and a patch leaves the others alone where an update would drop
// them.
type VipWrites interface {
	// PatchVip applies a merge patch to a Vip.
	PatchVip(ctx context.Context, name string, patch []byte) (*kubeovnv1.Vip, error)
	// PatchVipStatus applies a merge patch to a Vip's status subresource
	// (for a CRD that has one; kube-ovn's has none, and PatchVip writes
	// the status there).
	PatchVipStatus(ctx context.Context, name string, patch []byte) (*kubeovnv1.Vip, error)
}

var _ VipWrites = ClientWrites{}

func (w ClientWrites) PatchVip(ctx context.Context, name string, patch []byte) (*kubeovnv1.Vip, error) {
	return w.Shardnet.KubeovnV1().Vips().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
}

func (w ClientWrites) PatchVipStatus(ctx context.Context, name string, patch []byte) (*kubeovnv1.Vip, error) {
	return w.Shardnet.KubeovnV1().Vips().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
}

// VipMetrics counts pods that wait for a Vip.
type VipMetrics interface {
	// VipWait is one reconcile of a pod whose Vip could not be given:
	// reason is "not_found", "not_reserved", "in_use" or "deleting".
	VipWait(reason string)
}

// VipClaimOwner is the owner of a Vip's claims.
func VipClaimOwner(v *kubeovnv1.Vip) v1alpha1.ClaimOwner {
	return v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerVip, Name: v.Name, UID: string(v.UID)}
}

// VipReservation is the address and MAC a Vip's status records as
// reserved: ErrVipNotReserved when it records none (or no MAC), an error
// wrapping ipam.ErrInvalid when they do not parse.
func VipReservation(v *kubeovnv1.Vip) (ipam.Addresses, ipam.MAC, error) {
	var a ipam.Addresses
	for _, s := range []string{v.Status.V4ip, v.Status.V6ip} {
		if s == "" {
			continue
		}
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return ipam.Addresses{}, ipam.MAC{}, fmt.Errorf("Vip %s: status address %q: %w", v.Name, s, ipam.ErrInvalid)
		}
		if ip = ip.Unmap(); ip.Is4() {
			a.V4 = ip
		} else {
			a.V6 = ip
		}
	}
	if a.IsZero() || v.Status.Mac == "" {
		return ipam.Addresses{}, ipam.MAC{}, fmt.Errorf("Vip %s: %w", v.Name, ErrVipNotReserved)
	}
	m, err := ipam.ParseMAC(v.Status.Mac)
	if err != nil {
		return ipam.Addresses{}, ipam.MAC{}, fmt.Errorf("Vip %s: status mac %q: %w", v.Name, v.Status.Mac, ipam.ErrInvalid)
	}
	return a, m, nil
}

// vipName is the Vip a wanted network asks for: only the pod's default
// network on provider ovn reads ovn.kubernetes.io/vip.
func vipName(pod *corev1.Pod, w wanted) string {
	if w.provider != DefaultProvider || !w.primary {
		return ""
	}
	return pod.Annotations[DefaultKey(KeyVIP)]
}

// vipNetwork decides the default network of a pod whose
// ovn.kubernetes.io/vip names a Vip (docs/contract.md D14): the Vip's
// subnet, and the address and MAC its status records, which the Vip's own
// claims hold. The pod takes no claim of its own; the shell marks the Vip
// taken (LabelIPReserved) before the port is written. A Vip that is
// missing, not reserved yet, taken by another pod or being deleted fails
// the network with AcquireAddressFailed (E20); the pod's other networks
// are still served.
//
// holder names the port: the pod, or the VM that keeps its networks (R13).
func (pl *Planner) vipNetwork(pod *corev1.Pod, holder string, np *NetworkPlan, name string, others []*v1alpha1.AddressClaim) (*NetworkPlan, *NetworkFailure) {
	fail := func(reason string, err error) *NetworkFailure {
		return &NetworkFailure{Provider: np.Provider, Reason: reason, Err: err}
	}
	var v *kubeovnv1.Vip
	if pl.Vips != nil {
		v, _ = pl.Vips.Vip(name)
	}
	if v == nil {
		return nil, fail(ReasonAddress, fmt.Errorf("annotation %s=%q: Vip %s: %w", DefaultKey(KeyVIP), name, name, ErrUnknownVip))
	}
	port := PortName(holder, pod.Namespace, DefaultProvider)
	user := v.Labels[LabelIPReserved]
	switch {
	case user != "" && user != port:
		return nil, fail(ReasonAddress, fmt.Errorf("Vip %s is used by port %s: %w", name, user, ErrVipInUse))
	case user == "" && v.DeletionTimestamp != nil:
		return nil, fail(ReasonAddress, fmt.Errorf("Vip %s: %w", name, ErrVipDeleting))
	}
	addrs, mac, err := VipReservation(v)
	if err != nil {
		return nil, fail(ReasonAddress, err)
	}
	if prior, ok := annotatedAllocation(pod, DefaultProvider, v.Spec.Subnet); ok && prior.Addresses != addrs ||
		!ok && pod.Annotations[DefaultKey(KeyAllocated)] == "true" {
		// Allocated with other addresses (the annotation was edited, or
		// names another Vip now): a running pod's address is not changed
		// under it (U2); what it holds stays.
		return nil, fail(ReasonAddress, fmt.Errorf("annotation %s=%q: the pod already holds %s; %w",
			DefaultKey(KeyVIP), name, pod.Annotations[DefaultKey(KeyIPAddress)], ErrVipNotApplied))
	}
	s, ok := pl.View.Subnet(v.Spec.Subnet)
	if !ok {
		return nil, fail(ReasonSubnet, fmt.Errorf("Vip %s: subnet %q: %w", name, v.Spec.Subnet, ErrUnknownSubnet))
	}
	if ls := pod.Annotations[DefaultKey(KeyLogicalSwitch)]; ls != "" && ls != s.Name {
		return nil, fail(ReasonAddress, &InputError{DefaultKey(KeyLogicalSwitch), ls,
			fmt.Errorf("the pod's Vip %s is on subnet %s", name, s.Name)})
	}
	if np.Alloc, err = pl.View.Allocator(s.Name); err != nil {
		return nil, fail(ReasonSubnet, err)
	}
	for _, a := range addrs.List() {
		if !np.Alloc.Contains(a) {
			return nil, fail(ReasonAddress, fmt.Errorf("Vip %s: address %s is outside subnet %s: %w", name, a, s.Name, ipam.ErrNotInRange))
		}
	}
	np.Subnet, np.Why = s, "vip"
	np.Port = port
	if pl.IPRecords {
		np.IPRecord = port
	}
	// The Vip decides the address and MAC (D8: vip comes first); a static
	// request beside it is not this network's.
	np.Request.Static, np.Request.MAC, np.Request.PoolList = ipam.Addresses{}, ipam.MAC{}, nil
	np.Release = append(np.Release, others...)
	np.Address = AddressRequest{Source: FromVip, Vip: name, Addresses: addrs, MAC: mac}
	return np, nil
}

// vipWaitReason is the metric label of a Vip failure, "" for others.
func vipWaitReason(err error) string {
	switch {
	case errors.Is(err, ErrUnknownVip):
		return "not_found"
	case errors.Is(err, ErrVipNotReserved):
		return "not_reserved"
	case errors.Is(err, ErrVipInUse):
		return "in_use"
	case errors.Is(err, ErrVipDeleting):
		return "deleting"
	}
	return ""
}

// countVipWait records a network failure that waits for a Vip.
func (t *Term) countVipWait(f *NetworkFailure) {
	if r := vipWaitReason(f); r != "" && t.p.cfg.VipMetrics != nil {
		t.p.cfg.VipMetrics.VipWait(r)
	}
}

// takeVip gives the pod the Vip its plan names: it checks that the Vip's
// claims exist (the address is held by the Vip, so no other owner can
// claim it), then marks the Vip taken by the pod's port with a patch
// that carries the Vip's resourceVersion, so that of two pods racing for
// one Vip only one gets it.
func (t *Term) takeVip(ctx context.Context, pod *corev1.Pod, np *NetworkPlan) (ipam.Allocation, error) {
	a := np.Address
	al := ipam.Allocation{Subnet: np.Subnet.Name, Addresses: a.Addresses, MAC: a.MAC}
	var v *kubeovnv1.Vip
	if t.p.cfg.Vips != nil {
		v, _ = t.p.cfg.Vips.Get(a.Vip)
	}
	if v == nil {
		return al, fmt.Errorf("Vip %s: %w", a.Vip, ErrUnknownVip)
	}
	owner := VipClaimOwner(v)
	for _, addr := range a.Addresses.List() {
		obj, ok, _ := t.p.cfg.ClaimIndex.GetByKey(v1alpha1.ClaimName(np.Subnet.Name, addr))
		c, _, isClaim := claimcache.SpecOf(obj)
		if !ok || !isClaim || c.Owner != owner {
			// Status written by another controller before shardnet's
			// Vip reconciler claimed it, or the claim is not in the
			// cache yet: the Vip's reconcile brings it and queues the pod.
			if prior, ok := annotatedAllocation(pod, DefaultProvider, np.Subnet.Name); ok && prior.Addresses == a.Addresses {
				// A running pod (kube-ovn served it) waits for the
				// leader to adopt its Vip, quietly: nothing is wrong.
				return al, queue.Waiting(queue.RetryAfter(time.Second))
			}
			return al, fmt.Errorf("Vip %s: address %s has no claim of the Vip yet: %w", a.Vip, addr, ErrVipNotReserved)
		}
	}
	port := np.Port
	switch user := v.Labels[LabelIPReserved]; {
	case user == port:
		return al, nil
	case user != "":
		return al, fmt.Errorf("Vip %s is used by port %s: %w", a.Vip, user, ErrVipInUse)
	case v.DeletionTimestamp != nil:
		return al, fmt.Errorf("Vip %s: %w", a.Vip, ErrVipDeleting)
	}
	if t.p.cfg.VipWrites == nil {
		return al, errors.New("reconcile: no Vip writer configured")
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": v.ResourceVersion,
		"labels":          map[string]string{LabelIPReserved: port},
	}})
	if _, err := t.p.cfg.VipWrites.PatchVip(ctx, v.Name, body); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// Changed since the cache read (another pod may have taken
			// it): the next reconcile reads it again.
			return al, queue.RetryAfter(vipRetry)
		}
		return al, fmt.Errorf("marking Vip %s used by %s: %w", v.Name, port, err)
	}
	klog.FromContext(ctx).V(2).Info("Pod takes Vip", "pod", klog.KObj(pod), "vip", v.Name, "addresses", a.Addresses.String())
	return al, nil
}

// vipRetry is how soon a lost race for a Vip's label is retried.
const vipRetry = 200 * time.Millisecond

// releaseVipUse gives back the Vips the key's default port has taken: their
// LabelIPReserved goes back to empty, as kube-ovn leaves a Vip whose pod
// is gone. Called once the pod's ports are deleted.
func (t *Term) releaseVipUse(ctx context.Context, key string) error {
	if t.p.cfg.Vips == nil || t.p.cfg.VipWrites == nil {
		return nil
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	port := PortName(name, ns, DefaultProvider)
	sel := labels.SelectorFromSet(labels.Set{LabelIPReserved: port})
	vips, err := t.p.cfg.Vips.List(sel)
	if err != nil {
		return err
	}
	for _, v := range vips {
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": v.ResourceVersion,
			"labels":          map[string]string{LabelIPReserved: ""},
		}})
		if _, err := t.p.cfg.VipWrites.PatchVip(ctx, v.Name, body); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			if apierrors.IsConflict(err) {
				return queue.RetryAfter(vipRetry)
			}
			return fmt.Errorf("giving back Vip %s used by %s: %w", v.Name, port, err)
		}
		klog.FromContext(ctx).V(2).Info("Pod gives back Vip", "pod", key, "vip", v.Name)
	}
	return nil
}

// vipError reports a failure to take a Vip in the shell (the cache moved
// since the plan): a Warning and a retry, like the planner's E20.
func (t *Term) vipError(pod *corev1.Pod, err error) error {
	if errors.Is(err, ErrVipUnavailable) {
		t.countVipWait(&NetworkFailure{Provider: DefaultProvider, Reason: ReasonAddress, Err: err})
		t.warn(pod, ReasonAddress, err)
		return queue.Waiting(err)
	}
	return err
}

// vipAddr is one address a Vip names.
type vipAddr struct {
	vip  string
	addr netip.Addr
}

// vipOwnersByAddr maps each address a Vip names (status or spec) to the
// owner key of the Vip's claims, so that a pod annotated with a Vip's
// address holds it for the Vip (CollectHolds).
func vipOwnersByAddr(vips []*kubeovnv1.Vip) map[vipAddr]string {
	out := make(map[vipAddr]string, len(vips))
	for _, v := range vips {
		for _, s := range []string{v.Status.V4ip, v.Status.V6ip, v.Spec.V4ip, v.Spec.V6ip} {
			if a, err := netip.ParseAddr(s); err == nil {
				out[vipAddr{v.Name, a.Unmap()}] = ipam.OwnerKey(VipClaimOwner(v))
			}
		}
	}
	return out
}

// vipUse is who uses the address a Vip reserved.
type vipUse struct {
	// vipOwner is the owner key of the Vip's claims.
	vipOwner string
	// port is the port (and IP record) name the Vip's LabelIPReserved
	// names; podOwner the owner key of the live pod given the address.
	port, podOwner string
}

// vipUses maps each address a Vip reserved to its use.
type vipUses map[netip.Addr]vipUse

// vipUsesByAddr are the uses of every address a Vip names in its status.
func vipUsesByAddr(vips []*kubeovnv1.Vip) vipUses {
	out := vipUses{}
	for _, v := range vips {
		for _, s := range []string{v.Status.V4ip, v.Status.V6ip} {
			if a, err := netip.ParseAddr(s); err == nil {
				out[a.Unmap()] = vipUse{vipOwner: ipam.OwnerKey(VipClaimOwner(v)), port: v.Labels[LabelIPReserved]}
			}
		}
	}
	return out
}

// hold is h, held for the Vip instead when the row named row (an IP
// record, a port) carries a Vip's address for the pod using the Vip: the
// live pod given it, or the port the Vip names (its pod may be gone, the
// row not yet).
func (u vipUses) hold(h ipam.Hold, a netip.Addr, row string) ipam.Hold {
	o, ok := u[a]
	if !ok || o.vipOwner == "" {
		return h
	}
	if (o.podOwner != "" && h.Owner == o.podOwner) || (o.port != "" && row == o.port) {
		h.Owner, h.Name = o.vipOwner, ""
	}
	return h
}
