package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	kubeovnlisters "github.com/shardnet/shardnet/api/client/listers/kubeovn/v1"
	claimlisters "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/queue"
)

// Event reasons on Vips.
const (
	// ReasonVipInvalid: the Vip's spec cannot be served (no subnet, an
	// address or MAC that does not parse); not retried until it changes.
	ReasonVipInvalid = "InvalidSpec"
	// ReasonVipReserveFailed: no address could be reserved (the subnet
	// is full, the static address is taken); retried.
	ReasonVipReserveFailed = "ReserveAddressFailed"
	// ReasonVipInUse: the Vip is being deleted while a pod still uses its
	// address; the deletion waits for the pod.
	ReasonVipInUse = "InUse"
)

// Retry delays of the Vip reconciler.
const (
	vipRetryInUse = 5 * time.Second
	vipRetryFull  = 5 * time.Second
)

// deprecatedVipFinalizer is the finalizer older kube-ovn releases put on
// Vips; kube-ovn replaces it with FinalizerVip, and so does shardnet.
const deprecatedVipFinalizer = "kube-ovn-controller"

// VipConfig is what the Vip reconciler reads and writes through.
type VipConfig struct {
	Writes      VipWrites
	Vips        kubeovnlisters.VipLister
	Pods        corelisters.PodLister
	ClaimLister claimlisters.AddressClaimLister
	Claims      *ipam.Claims
	Registry    *Subnets
	Catalog     Catalog
	Recorder    record.EventRecorder
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// VipReconciler reserves the address of each Vip (docs/contract.md D14):
// it claims it (owner kind Vip), records it in the Vip's spec and status
// with kube-ovn's labels and finalizer, and releases it when the Vip is
// deleted and no live pod uses it any more. It runs on the leader only:
// Vips are few, and one writer per Vip keeps the reservation simple.
type VipReconciler struct {
	cfg VipConfig
}

// NewVipReconciler checks cfg and returns the reconciler.
func NewVipReconciler(cfg VipConfig) (*VipReconciler, error) {
	if cfg.Writes == nil || cfg.Vips == nil || cfg.Pods == nil || cfg.ClaimLister == nil ||
		cfg.Claims == nil || cfg.Registry == nil || cfg.Catalog == nil || cfg.Recorder == nil {
		return nil, errors.New("reconcile: every VipConfig field but Now is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &VipReconciler{cfg: cfg}, nil
}

// Reconcile converges one Vip. Errors follow the queue's conventions
// (queue.Permanent, queue.RetryAfter).
func (r *VipReconciler) Reconcile(ctx context.Context, name string) error {
	v, err := r.cfg.Vips.Get(name)
	if apierrors.IsNotFound(err) {
		return r.releaseOrphan(ctx, name)
	}
	if err != nil {
		return err
	}
	if v.DeletionTimestamp != nil {
		return r.finish(ctx, v)
	}
	return r.reserve(ctx, v)
}

// VipUsers are the live pods whose ovn.kubernetes.io/vip names the Vip and
// that hold its address: taken it (LabelIPReserved names their port) or
// were annotated with it. Pure.
func VipUsers(v *kubeovnv1.Vip, pods []*corev1.Pod, now time.Time) []*corev1.Pod {
	addrs, _, _ := VipReservation(v)
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Annotations[DefaultKey(KeyVIP)] != v.Name || p.Spec.HostNetwork || !Alive(p, now) {
			continue
		}
		taken := v.Labels[LabelIPReserved] == PortName(p.Name, p.Namespace, DefaultProvider)
		annotated := false
		if a, err := ipam.ParseAddresses(p.Annotations[DefaultKey(KeyIPAddress)]); err == nil && !addrs.IsZero() {
			annotated = a == addrs
		}
		if taken || annotated {
			out = append(out, p)
		}
	}
	return out
}

// vipClaims are the claims the Vip's owner holds.
func (r *VipReconciler) vipClaims(owner v1alpha1.ClaimOwner) ([]*v1alpha1.AddressClaim, error) {
	var out []*v1alpha1.AddressClaim
	err := claimcache.Each(r.cfg.ClaimLister, labels.Everything(), func(c *v1alpha1.AddressClaim) {
		if c.Spec.Owner == owner {
			out = append(out, c.DeepCopy())
		}
	})
	return out, err
}

// releaseOrphan releases the claims of a Vip that is gone without its
// finalizer having run (removed by hand), unless a live pod still uses the
// address: then they go with the pod's next Vip pass.
func (r *VipReconciler) releaseOrphan(ctx context.Context, name string) error {
	var mine []*v1alpha1.AddressClaim
	if err := claimcache.Each(r.cfg.ClaimLister, labels.Everything(), func(c *v1alpha1.AddressClaim) {
		if c.Spec.Owner.Kind == v1alpha1.OwnerVip && c.Spec.Owner.Name == name {
			mine = append(mine, c.DeepCopy())
		}
	}); err != nil {
		return err
	}
	if len(mine) == 0 {
		return nil
	}
	pods, err := r.cfg.Pods.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, p := range pods {
		if p.Annotations[DefaultKey(KeyVIP)] == name && Alive(p, r.cfg.Now()) {
			return queue.RetryAfter(vipRetryInUse)
		}
	}
	return r.releaseClaims(ctx, mine)
}

// finish releases a deleted Vip's address and removes its finalizer once
// no live pod uses it. A pod that runs with the Vip's address keeps it,
// and the Vip's claims with it, until the pod goes (docs/decisions/0014-vips.md).
func (r *VipReconciler) finish(ctx context.Context, v *kubeovnv1.Vip) error {
	if !slices.Contains(v.Finalizers, FinalizerVip) && !slices.Contains(v.Finalizers, deprecatedVipFinalizer) {
		return nil
	}
	pods, err := r.cfg.Pods.List(labels.Everything())
	if err != nil {
		return err
	}
	if users := VipUsers(v, pods, r.cfg.Now()); len(users) > 0 {
		klog.FromContext(ctx).V(2).Info("Vip deletion waits for its pod", "vip", v.Name, "pod", klog.KObj(users[0]))
		r.cfg.Recorder.Eventf(vipRef(v), corev1.EventTypeNormal, ReasonVipInUse, "pod %s/%s uses the address; the Vip is deleted once it is gone", users[0].Namespace, users[0].Name)
		return queue.RetryAfter(vipRetryInUse)
	}
	claims, err := r.vipClaims(VipClaimOwner(v))
	if err != nil {
		return err
	}
	if err := r.releaseClaims(ctx, claims); err != nil {
		return err
	}
	var keep []string
	for _, f := range v.Finalizers {
		if f != FinalizerVip && f != deprecatedVipFinalizer {
			keep = append(keep, f)
		}
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": v.ResourceVersion, "finalizers": keep}})
	if _, err := r.cfg.Writes.PatchVip(ctx, v.Name, body); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the finalizer of Vip %s: %w", v.Name, err)
	}
	klog.FromContext(ctx).Info("Vip released", "vip", v.Name)
	return nil
}

// releaseClaims deletes claims through the claim layer, which frees their
// bits.
func (r *VipReconciler) releaseClaims(ctx context.Context, claims []*v1alpha1.AddressClaim) error {
	for _, c := range claims {
		a, ok := addrOf(c)
		if !ok {
			continue
		}
		sub, err := r.cfg.Registry.Get(c.Spec.Subnet)
		if err != nil {
			// A subnet with claims is not deleted (R10); it may be
			// invalid for a moment.
			return retryWith(fmt.Errorf("releasing %s: %w", c.Name, err), retryUnknownSubnet)
		}
		var addrs ipam.Addresses
		if a.Is4() {
			addrs.V4 = a
		} else {
			addrs.V6 = a
		}
		if err := r.cfg.Claims.Release(ctx, sub, addrs, c.Spec.Owner); err != nil {
			return fmt.Errorf("releasing %s: %w", c.Name, err)
		}
	}
	return nil
}

// VipRequest is what a Vip asks to reserve, decided from its spec and
// status (pure): the address its status already records (taken back
// through its claims), else the spec's static address and MAC, else a
// dynamic one.
type VipRequest struct {
	Subnet string
	// Static is the address to claim; zero for a dynamic one.
	Static ipam.Addresses
	MAC    ipam.MAC
}

// DecideVipRequest reads a Vip's request; errors are *InputError.
func DecideVipRequest(v *kubeovnv1.Vip) (VipRequest, error) {
	req := VipRequest{Subnet: v.Spec.Subnet}
	if req.Subnet == "" {
		return req, &InputError{"spec.subnet", "", errors.New("a Vip needs a subnet")}
	}
	if a, m, err := VipReservation(v); err == nil {
		req.Static, req.MAC = a, m
		return req, nil
	}
	for _, f := range []struct {
		field, value string
		is4          bool
	}{{"spec.v4ip", v.Spec.V4ip, true}, {"spec.v6ip", v.Spec.V6ip, false}} {
		if f.value == "" {
			continue
		}
		a, err := netip.ParseAddr(f.value)
		if err != nil || a.Unmap().Is4() != f.is4 {
			return req, &InputError{f.field, f.value, errors.New("not an address of its family")}
		}
		if f.is4 {
			req.Static.V4 = a.Unmap()
		} else {
			req.Static.V6 = a
		}
	}
	if v.Spec.MacAddress != "" {
		m, err := ipam.ParseMAC(v.Spec.MacAddress)
		if err != nil {
			return req, &InputError{"spec.macAddress", v.Spec.MacAddress, err}
		}
		req.MAC = m
	}
	return req, nil
}

// VipPatch is the merge patch that records al on v as kube-ovn does:
// kube-ovn's finalizer (replacing the deprecated one), the labels
// ovn.kubernetes.io/subnet and ovn.kubernetes.io/ip_reserved (empty
// unless a pod has taken it), spec.v4ip/v6ip/macAddress filled in, and
// status.v4ip/v6ip/mac. nil when v already says all of it. Pure.
func VipPatch(v *kubeovnv1.Vip, al ipam.Allocation) (patch []byte, status map[string]any) {
	meta := map[string]any{}
	lbls := map[string]any{}
	if v.Labels[LabelSubnetName] != al.Subnet {
		lbls[LabelSubnetName] = al.Subnet
	}
	if _, ok := v.Labels[LabelIPReserved]; !ok {
		lbls[LabelIPReserved] = ""
	}
	if len(lbls) > 0 {
		meta["labels"] = lbls
	}
	fins := slices.DeleteFunc(slices.Clone(v.Finalizers), func(f string) bool { return f == deprecatedVipFinalizer })
	if !slices.Contains(fins, FinalizerVip) {
		fins = append(fins, FinalizerVip)
	}
	if !reflect.DeepEqual(fins, v.Finalizers) {
		meta["finalizers"] = fins
	}
	text := func(a ipam.Addresses, is4 bool) string {
		if is4 && a.V4.IsValid() {
			return a.V4.String()
		}
		if !is4 && a.V6.IsValid() {
			return a.V6.String()
		}
		return ""
	}
	v4, v6, mac := text(al.Addresses, true), text(al.Addresses, false), al.MAC.String()
	spec := map[string]any{}
	if v.Spec.V4ip == "" && v4 != "" {
		spec["v4ip"] = v4
	}
	if v.Spec.V6ip == "" && v6 != "" {
		spec["v6ip"] = v6
	}
	if v.Spec.MacAddress == "" {
		spec["macAddress"] = mac
	}
	status = map[string]any{}
	if !sameText(v.Status.V4ip, v4) {
		status["v4ip"] = v4
	}
	if !sameText(v.Status.V6ip, v6) {
		status["v6ip"] = v6
	}
	if m, err := ipam.ParseMAC(v.Status.Mac); err != nil || m != al.MAC {
		status["mac"] = mac
	}
	body := map[string]any{}
	if len(meta) > 0 {
		body["metadata"] = meta
	}
	if len(spec) > 0 {
		body["spec"] = spec
	}
	if len(status) > 0 {
		body["status"] = status
	}
	if len(body) == 0 {
		return nil, nil
	}
	meta["resourceVersion"] = v.ResourceVersion
	body["metadata"] = meta
	patch, _ = json.Marshal(body)
	if len(status) == 0 {
		status = nil
	}
	return patch, status
}

// sameText reports whether two address texts name one address.
func sameText(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := ipam.ParseAddresses(a)
	y, err2 := ipam.ParseAddresses(b)
	return err1 == nil && err2 == nil && x == y
}

// reserve claims the Vip's address and records it on the Vip.
func (r *VipReconciler) reserve(ctx context.Context, v *kubeovnv1.Vip) error {
	req, err := DecideVipRequest(v)
	if err != nil {
		r.cfg.Recorder.Event(vipRef(v), corev1.EventTypeWarning, ReasonVipInvalid, err.Error())
		return queue.Permanent(err)
	}
	s, ok := r.cfg.Catalog.Subnet(req.Subnet)
	if !ok {
		err := fmt.Errorf("Vip %s: subnet %q: %w", v.Name, req.Subnet, ErrUnknownSubnet)
		r.cfg.Recorder.Event(vipRef(v), corev1.EventTypeWarning, ReasonVipReserveFailed, err.Error())
		return retryWith(err, retryUnknownSubnet)
	}
	sub, err := r.cfg.Registry.Get(req.Subnet)
	if err != nil {
		return retryWith(fmt.Errorf("Vip %s: %w", v.Name, err), retryUnknownSubnet)
	}
	owner := VipClaimOwner(v)
	ireq := ipam.Request{Owner: owner, Provider: subnetProvider(s), MAC: req.MAC}
	all, err := r.vipClaims(owner)
	if err != nil {
		return err
	}
	var held []*v1alpha1.AddressClaim
	for _, c := range all {
		if c.Spec.Subnet == req.Subnet {
			held = append(held, c)
		}
	}
	var al ipam.Allocation
	if prior, ok := allocationFromClaims(req.Subnet, held); ok && len(held) > 0 && (req.Static.IsZero() || prior.Addresses == req.Static) {
		// Claimed before; the status write was lost or is on its way.
		al = prior
	} else if !req.Static.IsZero() {
		al, err = r.cfg.Claims.AllocateStatic(ctx, sub, req.Static, 0, ireq)
	} else {
		al, err = r.cfg.Claims.Allocate(ctx, sub, 0, ireq)
	}
	if err != nil {
		err = fmt.Errorf("Vip %s: %w", v.Name, err)
		r.cfg.Recorder.Event(vipRef(v), corev1.EventTypeWarning, ReasonVipReserveFailed, err.Error())
		if errors.Is(err, ipam.ErrInvalid) || errors.Is(err, ipam.ErrNotInRange) || errors.Is(err, ipam.ErrReserved) {
			return queue.Permanent(err)
		}
		return retryWith(err, vipRetryFull)
	}
	patch, status := VipPatch(v, al)
	if patch == nil {
		return nil
	}
	out, err := r.cfg.Writes.PatchVip(ctx, v.Name, patch)
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return queue.RetryAfter(vipRetry)
		}
		return fmt.Errorf("recording the address of Vip %s: %w", v.Name, err)
	}
	if status != nil {
		if _, again := VipPatch(out, al); again != nil {
			// The CRD has a status subresource, which ignored the status
			// of the patch above.
			body, _ := json.Marshal(map[string]any{"status": status})
			if _, err := r.cfg.Writes.PatchVipStatus(ctx, v.Name, body); err != nil {
				return fmt.Errorf("recording the status of Vip %s: %w", v.Name, err)
			}
		}
	}
	klog.FromContext(ctx).Info("Vip reserved", "vip", v.Name, "subnet", al.Subnet, "addresses", al.Addresses.String(), "mac", al.MAC.String())
	return nil
}

// vipRef is the Event reference of a Vip: the recorder's scheme does not
// know the kubeovn.io types.
func vipRef(v *kubeovnv1.Vip) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: kubeovnv1.SchemeGroupVersion.String(), Kind: "Vip",
		Name: v.Name, UID: v.UID, ResourceVersion: v.ResourceVersion}
}
