package controller

import (
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	"github.com/shardnet/shardnet/api/client/informers/externalversions"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
	"github.com/shardnet/shardnet/internal/ipcache"
	"github.com/shardnet/shardnet/internal/podcache"
	"github.com/shardnet/shardnet/internal/podwire"
	"github.com/shardnet/shardnet/internal/shareset"
	"github.com/shardnet/shardnet/internal/watch"
	"github.com/shardnet/shardnet/kubevirt"
	"github.com/shardnet/shardnet/netattach"
	"github.com/shardnet/shardnet/shard"
)

// ShardIndex is the pod indexer that maps a shard number (decimal) to its
// pods, so seeding a queue does not scan every pod.
const ShardIndex = "shardnet.io/shard"

// Informers are the caches every shard shares. All replicas watch all
// objects, so a replica takes any shard over warm.
type Informers struct {
	// Kube and CRDs are the factories; more informers may be requested from
	// them in Config.Setup.
	Kube informers.SharedInformerFactory
	CRDs externalversions.SharedInformerFactory

	// Pods is the pod informer, indexed by shard. The other informers are
	// requested from the factories by those who read them (Config.Setup),
	// so a replica watches nothing it does not read.
	Pods cache.SharedIndexInformer
	// NADs are multus NetworkAttachmentDefinitions. Run starts them with
	// the factories; on a cluster without multus they count as synced at
	// once and their informer starts if the CRD appears later. Register
	// OnChange handlers in Config.Setup, before Run.
	NADs *netattach.NADs
	// VMs are KubeVirt VirtualMachines and VirtualMachineInstances,
	// started and waited for like NADs: on a cluster without KubeVirt
	// they count as synced at once.
	VMs *kubevirt.Cache

	shards int
	// keyOf is the queue key of a pod (Config.PodKey).
	keyOf func(metav1.Object) string
}

func newInformers(kube kubernetes.Interface, pods *podwire.Pods, crds versioned.Interface, meta metadata.Interface, disc discovery.DiscoveryInterface, dyn dynamic.Interface, shards int, resync time.Duration, logger klog.Logger) (*Informers, error) {
	inf := &Informers{shards: shards}
	inf.NADs = netattach.New(disc, dyn, resync, logger.WithName("nads"))
	inf.VMs = kubevirt.New(disc, dyn, resync, logger.WithName("kubevirt"))
	inf.Kube = informers.NewSharedInformerFactoryWithOptions(kube, resync, informers.WithTransform(TrimPod))
	inf.CRDs = externalversions.NewSharedInformerFactoryWithOptions(crds, resync, externalversions.WithTransform(trimCRD))
	// The factories' informers index every object by namespace. No reader
	// of the three with an object per pod lists by namespace (IP records
	// and claims are cluster-scoped, pods are read by key), and each such
	// index keeps 55 bytes per object, 2.7 MB per replica at 50,000 pods:
	// they are made here without it, before anything asks the factories
	// for them. Their watches outlive an early end by the API server
	// (watch.Resume), which client-go would answer with a backoff and a
	// new list while the events kept coming.
	//
	// Pods are decoded only as far as TrimPod reads them (podwire); with
	// no pods given (tests on fake clients), by the typed client.
	inf.Kube.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		if pods == nil {
			return watch.PodInformer(c, metav1.NamespaceAll, resync, cache.Indexers{})
		}
		return watch.Informer(c, "pods", &corev1.Pod{}, resync, cache.Indexers{}, pods.List, pods.Watch)
	})
	// IP records and claims are listed and watched as their metadata,
	// which carries their spec where shardnet wrote it (metawatch).
	inf.CRDs.InformerFor(&kubeovnv1.IP{}, func(c versioned.Interface, resync time.Duration) cache.SharedIndexInformer {
		return ipInformer(c, meta, resync)
	})
	inf.CRDs.InformerFor(&v1alpha1.AddressClaim{}, func(c versioned.Interface, resync time.Duration) cache.SharedIndexInformer {
		return claimInformer(c, meta, resync)
	})
	inf.Pods = inf.Kube.Core().V1().Pods().Informer()
	if err := inf.Pods.AddIndexers(cache.Indexers{ShardIndex: func(obj any) ([]string, error) {
		key, err := inf.PodKey(obj)
		if err != nil {
			return nil, err
		}
		return []string{strconv.Itoa(shard.Of(key, shards))}, nil
	}}); err != nil {
		return nil, fmt.Errorf("adding the shard index: %w", err)
	}
	return inf, nil
}

// claimInformer is the claim informer of a replica: claims listed and
// watched as their metadata (claimcache.NewListWatch), its watches kept
// through an early end, and no namespace index.
func claimInformer(c versioned.Interface, meta metadata.Interface, resync time.Duration) cache.SharedIndexInformer {
	lw := claimcache.NewListWatch(meta, c.ShardnetV1alpha1().AddressClaims())
	i := cache.NewSharedIndexInformer(watch.Resume(lw, "addressclaims"), &v1alpha1.AddressClaim{}, resync, cache.Indexers{})
	lw.SetStore(i.GetStore())
	return i
}

// ipInformer is the IP record informer of a replica: records listed and
// watched as their metadata (ipcache.NewListWatch), its watches kept
// through an early end, and no namespace index.
func ipInformer(c versioned.Interface, meta metadata.Interface, resync time.Duration) cache.SharedIndexInformer {
	lw := ipcache.NewListWatch(meta, c.KubeovnV1().IPs())
	i := cache.NewSharedIndexInformer(watch.Resume(lw, "ips"), &kubeovnv1.IP{}, resync, cache.Indexers{})
	lw.SetStore(i.GetStore())
	return i
}

// PodKeys returns the queue keys of the cached pods of one shard, each
// once (the launcher pods of one VM share a key, see Config.PodKey).
func (inf *Informers) PodKeys(s int) ([]string, error) {
	if inf.keyOf == nil {
		return inf.Pods.GetIndexer().IndexKeys(ShardIndex, strconv.Itoa(s))
	}
	objs, err := inf.Pods.GetIndexer().ByIndex(ShardIndex, strconv.Itoa(s))
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(objs))
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		if k, err := inf.PodKey(o); err == nil && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// PodKey is the queue key of a pod object (or of its tombstone): its
// "namespace/name", or what Config.PodKey makes of it.
func (inf *Informers) PodKey(obj any) (string, error) {
	if inf.keyOf != nil {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, err := meta.Accessor(obj); err == nil {
			return inf.keyOf(m), nil
		}
	}
	return cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
}

// Shards is S.
func (inf *Informers) Shards() int { return inf.shards }

// TrimPod is the pod informer's transform: it keeps only what reconcilers
// read, which is most of the memory of 100k cached pods, in the cache's
// own pod type (podcache.Pod; the listers build a *corev1.Pod from it).
// Kept: the object metadata without managedFields, generateName, selfLink
// and generation (labels, annotations, owner references, UID,
// resourceVersion, creation and deletion timestamps, finalizers),
// spec.nodeName, spec.hostNetwork, spec.restartPolicy,
// spec.terminationGracePeriodSeconds, and status.phase, reason, podIP(s)
// and hostIP(s). kubectl's last-applied-configuration annotation, a copy
// of the whole manifest, is dropped too. Other objects only lose their
// managedFields.
//
// Annotation and label keys, the namespace and the node name are shared
// with every other cached pod that has the same ones (podKeys): decoded,
// each pod had its own copy of the same dozen kube-ovn keys. Pods with the
// same labels share one label map (labelSets), and pods with the same
// owners one owner reference list (ownerSets).
//
// The input is not changed, but the result shares its slices and strings:
// an informer hands the transform an object it just decoded and drops it
// afterwards, so copying them would only make garbage.
func TrimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return dropManagedFields(obj)
	}
	om := p.ObjectMeta
	om.ManagedFields = nil
	ann := om.Annotations
	om.Annotations = nil
	om.Labels = labelSets.share(om.Labels, func(m map[string]string) map[string]string { return internMap(m, "", sharedValue) })
	om.Namespace = podKeys.intern(om.Namespace)
	om.OwnerReferences = ownerSets.share(om.OwnerReferences)
	c := podcache.New(p, om)
	c.Annotations = podcache.NewAnnotationsFunc(ann, func(k, v string) (string, string, bool) {
		if k == corev1.LastAppliedConfigAnnotation {
			return "", "", false
		}
		if sharedValue(k) {
			v = podKeys.intern(v)
		}
		return podKeys.intern(k), v, true
	})
	c.NodeName = podKeys.intern(c.NodeName)
	// The pods of a node have its addresses: decoded, each pod had the
	// node's list, a slice of its own. A pod's address and its node's,
	// when the first of their lists, the cache keeps as that
	// (podcache.Pod).
	c.HostIPs = hostIPSets.share(c.HostIPs)
	if ip := c.HostIP(); ip != "" && (len(c.HostIPs) == 0 || c.HostIPs[0].IP != ip) {
		c.SetHostIP(podKeys.intern(ip))
	}
	return c, nil
}

// trimCRD is the transform of the custom resources' informers: they lose
// their managedFields, and IP records and AddressClaims, one of each per
// pod, share their label maps (labelSets) and the spec values most of them
// have in common (subnet, node, namespace, kinds) with the others, through
// podKeys.
// Nothing else is dropped: an IP record is written back from its cached
// copy. IP records of the common shape are then cached as ipcache.IP (240
// bytes instead of 512; the listers build a *kubeovnv1.IP from it), and
// claims as claimcache.Claim (224 instead of 416).
func trimCRD(obj any) (any, error) {
	switch o := obj.(type) {
	case *kubeovnv1.IP:
		o.ManagedFields = nil
		o.Labels = labelSets.share(o.Labels, internEvery)
		sp := &o.Spec
		sp.Namespace, sp.Subnet, sp.NodeName, sp.PodType = podKeys.intern(sp.Namespace), podKeys.intern(sp.Subnet), podKeys.intern(sp.NodeName), podKeys.intern(sp.PodType)
		// The family's address is the address of a single-stack record,
		// and the record is named after its pod ("<pod>.<namespace>[.<provider>]"):
		// decoded, each was a string of its own.
		if sp.V4IPAddress == sp.IPAddress {
			sp.V4IPAddress = sp.IPAddress
		} else if sp.V6IPAddress == sp.IPAddress {
			sp.V6IPAddress = sp.IPAddress
		}
		if n := len(sp.PodName); n > 0 && len(o.Name) > n && o.Name[n] == '.' && o.Name[:n] == sp.PodName {
			sp.PodName = o.Name[:n]
		}
		return ipcache.New(o), nil
	case *ipcache.IP:
		// Built by the IP informer's list from the record's metadata
		// (ipcache.NewListWatch): shared as a decoded record's fields are.
		return trimCRD(o.IP())
	case *v1alpha1.AddressClaim:
		o.ManagedFields = nil
		shareClaim(&o.Labels, &o.Spec)
		return claimcache.New(o), nil
	case *claimcache.Claim:
		// Built by the claim informer's list from the claim's metadata
		// (claimcache.ListWatch): shared as a decoded claim's fields are.
		shareClaim(&o.Labels, &o.Spec)
		return o, nil
	}
	return dropManagedFields(obj)
}

// shareClaim shares a claim's label map and the spec values most claims
// have in common.
func shareClaim(labels *map[string]string, sp *v1alpha1.AddressClaimSpec) {
	*labels = labelSets.share(*labels, internEvery)
	sp.Subnet, sp.Provider, sp.NodeName = podKeys.intern(sp.Subnet), podKeys.intern(sp.Provider), podKeys.intern(sp.NodeName)
	sp.Owner.Kind, sp.Owner.Namespace = podKeys.intern(sp.Owner.Kind), podKeys.intern(sp.Owner.Namespace)
}

func dropManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// internMap returns m with its keys shared through podKeys, the values
// too where shareValue(key) says so, and without the key drop (when not
// empty); m itself is not changed.
func internMap(m map[string]string, drop string, shareValue func(key string) bool) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if drop != "" && k == drop {
			continue
		}
		if shareValue(k) {
			v = podKeys.intern(v)
		}
		out[podKeys.intern(k)] = v
	}
	return out
}

// internEvery is internMap sharing every key and value.
func internEvery(m map[string]string) map[string]string { return internMap(m, "", everyValue) }

// everyValue shares every value: the labels of IP records and claims name
// subnets, families and nodes.
func everyValue(string) bool { return true }

// sharedValues are the kube-ovn annotation names (after the provider's
// "<provider>.kubernetes.io/") whose values most pods share: a subnet's
// name, CIDR and gateway, "true", the NIC type (docs/contract.md).
var sharedValues = []string{"/allocated", "/routed", "/logical_switch", "/cidr", "/gateway", "/pod_nic_type",
	"/logical_router", "/provider_network", "/vlan_id", "/ip_pool", "/security_groups", "/north_gateway"}

// sharedValue reports whether the value of annotation k is worth sharing.
func sharedValue(k string) bool {
	if !strings.Contains(k, ".kubernetes.io/") {
		return false
	}
	for _, s := range sharedValues {
		if strings.HasSuffix(k, s) {
			return true
		}
	}
	return false
}

// labelSets holds one copy of each label map that cached objects have in
// common (internal/shareset: the bound, the start over, why sharing is
// safe): every claim and IP record of a subnet has the same labels, and so
// do the pods of one ReplicaSet. A map costs about 300 bytes, a third of a
// claim; at 50,000 pods the claims and IP records alone kept 25 MB of
// identical maps. Pods with labels of their own (a StatefulSet's pod
// name) are why it is bounded.
var labelSets = mapInterner{shareset.New[map[string]string](1 << 12)}

// mapInterner shares label maps with the same content. Maps of more than
// maxSharedLabels entries are never shared.
type mapInterner struct {
	*shareset.Set[map[string]string]
}

const maxSharedLabels = 16

// shareSeed seeds the hashes of labelSets, ownerSets and hostIPSets.
var shareSeed = maphash.MakeSeed()

// share returns the shared map equal to m, or build(m) stored as the
// shared one when there is none yet (build makes the copy that is kept; m
// itself is never stored, nor changed). A map build dropped a key from is
// not equal to m, and so not shared.
func (in mapInterner) share(m map[string]string, build func(map[string]string) map[string]string) map[string]string {
	if len(m) == 0 || len(m) > maxSharedLabels {
		return build(m)
	}
	// The sum of each pair's hash: the same for any iteration order.
	var h uint64
	for k, v := range m {
		var d maphash.Hash
		d.SetSeed(shareSeed)
		d.WriteString(k)
		d.WriteByte(0)
		d.WriteString(v)
		h += d.Sum64()
	}
	// Share checks build's map with the same function: one that build
	// dropped a key from is returned unshared.
	return in.Share(h,
		func(cur map[string]string) bool { return maps.Equal(cur, m) },
		func() map[string]string { return build(m) })
}

// ownerSets holds one copy of each owner reference list that cached pods
// have in common (internal/shareset): the pods of one ReplicaSet,
// StatefulSet, DaemonSet or Job have the same one, about 200 bytes per pod
// as decoded (the slice, four strings and two *bool).
var ownerSets = ownersInterner{shareset.New[[]metav1.OwnerReference](1 << 12)}

// maxSharedOwners is the longest owner reference list shared: a pod has one.
const maxSharedOwners = 2

// ownersInterner shares owner reference lists with the same content.
type ownersInterner struct {
	*shareset.Set[[]metav1.OwnerReference]
}

// share returns the shared list equal to refs, or refs itself (clipped),
// kept as the shared one when there is none yet: the transform's input is
// dropped by the informer afterwards, and cached objects are read-only.
func (in ownersInterner) share(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 || len(refs) > maxSharedOwners {
		return refs
	}
	var d maphash.Hash
	d.SetSeed(shareSeed)
	for i := range refs {
		r := &refs[i]
		for _, s := range []string{r.APIVersion, r.Kind, r.Name, string(r.UID)} {
			d.WriteString(s)
			d.WriteByte(0)
		}
		d.WriteByte(boolCode(r.Controller))
		d.WriteByte(boolCode(r.BlockOwnerDeletion))
	}
	return in.Share(d.Sum64(),
		func(cur []metav1.OwnerReference) bool { return ownersEqual(cur, refs) },
		func() []metav1.OwnerReference { return slices.Clip(refs) })
}

// boolCode tells a nil, false and true *bool apart.
func boolCode(b *bool) byte {
	switch {
	case b == nil:
		return 0
	case *b:
		return 2
	}
	return 1
}

func ownersEqual(a, b []metav1.OwnerReference) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.OwnerReference) bool {
		return x.APIVersion == y.APIVersion && x.Kind == y.Kind && x.Name == y.Name && x.UID == y.UID &&
			boolCode(x.Controller) == boolCode(y.Controller) && boolCode(x.BlockOwnerDeletion) == boolCode(y.BlockOwnerDeletion)
	})
}

// hostIPSets holds one copy of each node's host address list, which every
// pod of the node carries (internal/shareset).
var hostIPSets = hostIPsInterner{shareset.New[[]corev1.HostIP](1 << 14)}

// hostIPsInterner shares host address lists with the same addresses.
// Lists of more than two addresses (one per family) are never shared.
type hostIPsInterner struct {
	*shareset.Set[[]corev1.HostIP]
}

// share returns the shared list equal to ips, or a copy of ips kept as the
// shared one when there is none yet (its addresses shared through podKeys).
func (in hostIPsInterner) share(ips []corev1.HostIP) []corev1.HostIP {
	if len(ips) == 0 || len(ips) > 2 {
		return ips
	}
	var d maphash.Hash
	d.SetSeed(shareSeed)
	for i := range ips {
		d.WriteString(ips[i].IP)
		d.WriteByte(0)
	}
	return in.Share(d.Sum64(),
		func(cur []corev1.HostIP) bool {
			return slices.EqualFunc(cur, ips, func(x, y corev1.HostIP) bool { return x.IP == y.IP })
		},
		func() []corev1.HostIP {
			c := slices.Clone(ips) // the input is not changed
			for i := range c {
				c[i].IP = podKeys.intern(c[i].IP)
			}
			return c
		})
}

// podKeys holds one copy of each string TrimPod shares between pods.
var podKeys = interner{max: 1 << 14}

// interner maps a string to its one shared copy. It keeps at most max
// strings, so pods with keys of their own (a label value per pod) cannot
// grow it without bound: when it holds max, it forgets them all and starts
// over, as a shareset.Set does.
type interner struct {
	m   sync.Map // string -> string
	n   atomic.Int64
	max int64
}

func (in *interner) intern(s string) string {
	if s == "" {
		return s
	}
	if v, ok := in.m.Load(s); ok {
		return v.(string)
	}
	if in.n.Load() >= in.max {
		// Concurrent callers may clear it twice, or count a string
		// stored before the clear: the bound holds within a few strings.
		in.m.Clear()
		in.n.Store(0)
	}
	// A copy of its own: s may share memory with the rest of a decoded
	// object that would otherwise stay alive for it.
	c := strings.Clone(s)
	v, loaded := in.m.LoadOrStore(c, c)
	if !loaded {
		in.n.Add(1)
	}
	return v.(string)
}
