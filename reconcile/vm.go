package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/podcache"
	"github.com/shardnet/shardnet/kubevirt"
	"github.com/shardnet/shardnet/ovn/nbdb"
)

// KubeVirt VMs (docs/contract.md R13, R14, K12, A9).
//
// With KeepVMIP a launcher pod (owned by a kubevirt.io
// VirtualMachineInstance, whose name is its VM's) is not reconciled under
// its own name: its queue key is the VM's, "<namespace>/<vm>" (PodKey), so
// every launcher pod of one VM lands in one shard and one key, and the term
// looks the VM's current launcher pods up through VMPodIndex. The oldest
// live launcher pod is the active one: it is planned as any pod, under the
// VM's name and owner, and places the port. Any younger live launcher pod
// (a migration target, a replacement started while the old pod
// terminates) is shared: it gets the active pod's addresses in its
// annotations but writes no port, no routed-phase rows and no IP record,
// and only on networks that allow live migration; on the others it waits
// until it is the active one.

// KeyLiveMigration is the per-provider annotation that lets two launcher
// pods of one VM hold its address at once (K12).
const KeyLiveMigration = "allow_live_migration"

// PodTypeVM is the podType of a VM's IP records.
const PodTypeVM = "VirtualMachine"

// ReasonVMNotFound is the Warning reason of a launcher pod whose VM (or
// VMI) is not known (docs/contract.md E22).
const ReasonVMNotFound = "VirtualMachineNotFound"

// ReasonMigrationSubnet is the Warning reason of a live migration target
// pod whose network asks for another subnet than the one the VM's address
// is in.
const ReasonMigrationSubnet = "MigrationSubnetDiffers"

// ErrMigrationSubnet marks that failure: the target waits (with the
// queue's backoff) and is given nothing.
var ErrMigrationSubnet = errors.New("live migration target in another subnet")

// heldElsewhere is the subnet of a claim of provider that is not subnet,
// "" when none is.
func heldElsewhere(claims []*v1alpha1.AddressClaim, provider, subnet string) string {
	for _, c := range claims {
		p := c.Spec.Provider
		if p == "" {
			p = DefaultProvider
		}
		if p == provider && c.Spec.Subnet != subnet {
			return c.Spec.Subnet
		}
	}
	return ""
}

// VMPodIndex is the pod informer index from a VM key ("namespace/vm") to
// the VM's launcher pods.
const VMPodIndex = "shardnet.io/vm"

// ErrVMNotFound: a launcher pod's VM is not in the cache (or its VMI,
// which says whether it has a VM, is not).
var ErrVMNotFound = errors.New("VirtualMachine not found")

// VMSource serves KubeVirt VMs and VMIs (a *kubevirt.Cache in a replica).
// The errors are kubevirt.ErrNotServed and kubevirt.ErrNotSynced.
type VMSource interface {
	VM(namespace, name string) (kubevirt.Object, bool, error)
	VMI(namespace, name string) (kubevirt.Object, bool, error)
}

var _ VMSource = (*kubevirt.Cache)(nil)

// VMHolder is the VM whose name and claims a launcher pod's networks
// take (docs/contract.md R13).
type VMHolder struct {
	// Name is the VM's name (the VMI's, for an ephemeral VMI).
	Name string
	// Owner is the owner of the claims: kind VirtualMachine, the VM's
	// namespace and name, and the UID of the VM (or ephemeral VMI).
	Owner v1alpha1.ClaimOwner
	// Shared is true for a launcher pod that is not the VM's active one:
	// it takes what the VM holds and writes nothing to the Northbound.
	Shared bool
}

// PodKey is the queue key of a pod: "namespace/name", or with keepVMIP,
// for a KubeVirt launcher pod, "namespace/<vm>". It reads only the pod,
// so every replica derives the same key from every event of it.
func PodKey(pod *corev1.Pod, keepVMIP bool) string { return MetaPodKey(&pod.ObjectMeta, keepVMIP) }

// MetaPodKey is PodKey of a pod's metadata, all it reads.
func MetaPodKey(m metav1.Object, keepVMIP bool) string {
	if keepVMIP {
		if vm, ok := ownerVM(m.GetOwnerReferences()); ok {
			return m.GetNamespace() + "/" + vm
		}
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// VMPodIndexers are the indexers to add to the pod informer for KeepVMIP.
func VMPodIndexers() cache.Indexers {
	return cache.Indexers{VMPodIndex: func(obj any) ([]string, error) {
		// The metadata only: a cached pod is not a *corev1.Pod, and
		// building one per event would be garbage.
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil
		}
		if vm, ok := ownerVM(m.GetOwnerReferences()); ok {
			return []string{m.GetNamespace() + "/" + vm}, nil
		}
		return nil, nil
	}}
}

// launcherPods are the cached launcher pods of the VM key.
func launcherPods(idx cache.Indexer, key string) []*corev1.Pod {
	if idx == nil {
		return nil
	}
	objs, err := idx.ByIndex(VMPodIndex, key)
	if err != nil {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := podcache.Of(o); ok {
			out = append(out, p)
		}
	}
	return out
}

// liveLaunchers are the launcher pods that need the VM's networks, the
// active one first: the oldest, then by name.
func liveLaunchers(pods []*corev1.Pod, alive func(*corev1.Pod) bool) []*corev1.Pod {
	var live []*corev1.Pod
	for _, p := range pods {
		if !p.Spec.HostNetwork && alive(p) {
			live = append(live, p)
		}
	}
	slices.SortFunc(live, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return live
}

// VMClaimOwner is the claim owner of the VM namespace/name: the VM, or,
// for an ephemeral VMI (one no VM owns), the VMI, as kube-ovn keeps
// addresses by the VMI's name until the VMI goes
// (docs/decisions/0013-kubevirt-vms.md). ErrVMNotFound when the VMI names
// a VM the cache does not have, or when neither is in the cache.
func VMClaimOwner(src VMSource, namespace, name string) (v1alpha1.ClaimOwner, error) {
	owner := v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerVM, Namespace: namespace, Name: name}
	if src == nil {
		return owner, kubevirt.ErrNotServed
	}
	vm, found, err := src.VM(namespace, name)
	if err != nil {
		return owner, fmt.Errorf("VirtualMachine %s/%s: %w", namespace, name, err)
	}
	if found {
		owner.UID = string(vm.UID)
		return owner, nil
	}
	vmi, found, err := src.VMI(namespace, name)
	switch {
	case err != nil:
		return owner, fmt.Errorf("VirtualMachineInstance %s/%s: %w", namespace, name, err)
	case !found:
		return owner, fmt.Errorf("VirtualMachineInstance %s/%s of the launcher pod is not known: %w", namespace, name, ErrVMNotFound)
	case vmi.VM != "":
		return owner, fmt.Errorf("VirtualMachine %s/%s of VirtualMachineInstance %s/%s is not known: %w", namespace, vmi.VM, namespace, name, ErrVMNotFound)
	}
	owner.UID = string(vmi.UID)
	return owner, nil
}

// vmRetention says whether what the key holds is kept for the VM
// namespace/name when no launcher pod needs it (R13): while the VM (or
// ephemeral VMI) exists, is not being deleted, owns every claim, and the
// claims still fit its subnet. An error means the cache cannot tell yet.
func (p *Pods) vmRetention(key string, claims []*v1alpha1.AddressClaim) (bool, error) {
	if !p.cfg.KeepVMIP {
		return false, nil
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	if p.cfg.VMs == nil {
		return false, nil
	}
	alive, subnet, err := vmAlive(p.cfg.VMs, ns, name)
	if errors.Is(err, kubevirt.ErrNotServed) {
		return false, nil
	}
	if err != nil || alive == "" {
		return false, err
	}
	for _, c := range claims {
		if c.Spec.Owner.Kind != v1alpha1.OwnerVM || c.Spec.Owner.UID != alive {
			// Another owner's, or an earlier VM's of this name.
			return false, nil
		}
		sub, err := p.cfg.Subnets.Get(c.Spec.Subnet)
		if err != nil {
			return false, nil
		}
		if a, ok := addrOf(c); !ok || !sub.Contains(a) {
			return false, nil
		}
		if subnet != "" && claimProvider(c) == DefaultProvider && c.Spec.Subnet != subnet {
			// The VM's template now names another subnet: its next pod
			// allocates there (as kube-ovn's changeVMSubnet does).
			return false, nil
		}
	}
	return true, nil
}

// vmAlive is the UID of the live VM (or live ephemeral VMI) named
// namespace/name, "" when there is none, with the VM template's subnet.
func vmAlive(src VMSource, ns, name string) (uid, subnet string, err error) {
	vm, found, err := src.VM(ns, name)
	if err != nil {
		return "", "", err
	}
	if found {
		if vm.Deleting {
			return "", "", nil
		}
		return string(vm.UID), vm.Subnet, nil
	}
	vmi, found, err := src.VMI(ns, name)
	if err != nil || !found || vmi.VM != "" || vmi.Deleting {
		// A VMI whose VM is gone goes with it.
		return "", "", err
	}
	return string(vmi.UID), "", nil
}

// reconcileVM converges the VM key from its launcher pods: the active one
// first, then the shared ones; with none alive, the key is released unless
// the VM retains it.
func (t *Term) reconcileVM(ctx context.Context, key string, pods []*corev1.Pod) (string, error) {
	now := t.p.cfg.Now()
	for _, p := range pods {
		if end, ok := GraceEnd(p); ok && t.later != nil && now.Before(end) {
			t.later(key, end.Sub(now)+graceMargin)
		}
	}
	live := liveLaunchers(pods, func(p *corev1.Pod) bool { return Alive(p, now) })
	if len(live) == 0 {
		return "release", t.release(ctx, key, nil)
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	owner, err := VMClaimOwner(t.p.cfg.VMs, ns, name)
	if err != nil {
		if live[0].DeletionTimestamp != nil {
			// The VM goes with its pods: nothing to warn about, the key
			// comes back when the pod's grace ends.
			return "noop", nil
		}
		t.warn(live[0], ReasonVMNotFound, err)
		return "allocate", fmt.Errorf("launcher pod %s/%s: %w", live[0].Namespace, live[0].Name, err)
	}
	phase := "noop"
	var errs []error
	for i, pod := range live {
		ph, err := t.ensure(ctx, key, pod, &VMHolder{Name: name, Owner: owner, Shared: i > 0})
		if err != nil {
			errs = append(errs, err)
		}
		if phase == "noop" || ph == "route" {
			phase = ph
		}
	}
	if len(errs) > 0 {
		return phase, joinRetry(errs)
	}
	return phase, nil
}

// launcherOfOtherKey reports whether pod, found under key by name, is
// reconciled under another key (its VM's): nothing is done for it here.
func (t *Term) launcherOfOtherKey(key string, pod *corev1.Pod) bool {
	return pod != nil && PodKey(pod, t.p.cfg.KeepVMIP) != key
}

// holderName is the name the pod's networks are named by: the pod's, or
// its VM's.
func (in PlanInput) holderName() string {
	if in.VM != nil {
		return in.VM.Name
	}
	return in.Pod.Name
}

// shareable reports whether a shared launcher pod may take provider's
// addresses while the active pod holds them (K12, R14).
func shareable(pod *corev1.Pod, provider string) bool {
	return pod.Annotations[Key(provider, KeyLiveMigration)] == "true"
}

// holderKey is the "namespace/name" a network's rows name: the pod's, or
// its VM's.
func holderKey(pod *corev1.Pod, np *NetworkPlan) string {
	if np.VM != nil {
		return pod.Namespace + "/" + np.VM.Name
	}
	return pod.Namespace + "/" + pod.Name
}

// completeVM adjusts a VM network's writes (Complete): the VM's name in
// the IP record and the virtualmachine annotation (A9); a shared launcher
// pod writes annotations only; the active pod's port follows its node.
func completeVM(pod *corev1.Pod, np *NetworkPlan, w *NetworkWrites) {
	if np.VM == nil {
		return
	}
	if w.IPRecord != nil {
		w.IPRecord.Spec.PodName = np.VM.Name
		w.IPRecord.Spec.PodType = PodTypeVM
	}
	if np.Kind == AttachmentOVN {
		w.Annotations[Key(np.Provider, KeyVirtualMachine)] = np.VM.Name
	}
	if np.VM.Shared {
		w.Port, w.Route, w.Reroute, w.IPRecord = nil, nil, nil, nil
		return
	}
	w.FollowNode = w.Port != nil && w.Route == nil && w.Reroute != nil && w.Reroute.PortGroup != ""
}

// portGroups is the Northbound cache's port groups, which ovn.Client
// serves; the Northbound interface does not need it otherwise.
type portGroups interface {
	PortGroup(name string) (*nbdb.PortGroup, bool)
}

// movedRoute is w.Reroute when the VM's port is not in the node group of
// its active launcher pod (the source pod of a migration is gone, the VM
// runs on the target's node now); nil otherwise.
func (t *Term) movedRoute(w NetworkWrites, port *nbdb.LogicalSwitchPort) *RouteWrites {
	if !w.FollowNode || port == nil {
		return nil
	}
	pg, ok := t.p.cfg.NB.(portGroups)
	if !ok {
		return nil
	}
	g, ok := pg.PortGroup(w.Reroute.PortGroup)
	if ok && slices.Contains(g.Ports, port.UUID) {
		return nil
	}
	klog.Background().V(2).Info("VM port follows its launcher pod to another node", "port", port.Name, "group", w.Reroute.PortGroup)
	return w.Reroute
}

// CollectVMs lets the collector hand VM keys (IP records of podType
// VirtualMachine) to the reconcile, which keeps them while the VM exists
// and releases them once it is gone (R13), whenever known reports true:
// with --keep-vm-ip, once the KubeVirt cache runs and has synced.
func (g *GC) CollectVMs(known func() bool) { g.vmsKnown = known }

// hasLauncherPod reports whether a VM key has launcher pods in the cache.
func (g *GC) hasLauncherPod(key string) bool {
	objs, err := g.caches.PodInformer.GetIndexer().ByIndex(VMPodIndex, key)
	return err == nil && len(objs) > 0
}

// HoldVMOwner is HoldInputs.VMOwner with --keep-vm-ip: the claim owner of
// a launcher pod's VM (VMClaimOwner), when the cache knows it; nil without
// keepVMIP, when launcher pods are ordinary pods.
func HoldVMOwner(src VMSource, keepVMIP bool) func(*corev1.Pod) (v1alpha1.ClaimOwner, bool) {
	if !keepVMIP || src == nil {
		return nil
	}
	return func(p *corev1.Pod) (v1alpha1.ClaimOwner, bool) {
		vm, ok := VMOwner(p)
		if !ok {
			return v1alpha1.ClaimOwner{}, false
		}
		o, err := VMClaimOwner(src, p.Namespace, vm)
		return o, err == nil
	}
}
