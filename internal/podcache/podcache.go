// Package podcache is the form a pod takes in the pod informer's cache:
// the object metadata and the handful of spec and status fields shardnet
// reads, in a struct of 224 bytes instead of the 1.2 KiB of a corev1.Pod
// whose other fields are all empty. Fields that most pods leave empty, or
// that take one of a few values, are not a field each: a terminating
// pod's deletion time and grace, finalizers, a status reason and values
// outside the usual ones go to a small record that most pods do not have
// (rare), the UID is packed in 16 bytes (internal/uid), the phase and
// restart policy are a byte each, and the pod's and host's first
// addresses are the first of their lists. A running pod of a ReplicaSet
// keeps 472 bytes where it kept 768 with the whole ObjectMeta and its UID
// as a string, about 14 MiB less per replica at 50,000 pods (`go test
// -run '^$' -bench TrimPodRetained ./controller/`).
// Its annotations are kept as their values in the order of their sorted
// keys, the keys shared with every pod that has the same ones
// (Annotations), not a map: 144 bytes of its own for the nine a routed
// pod carries instead of about 630, another 24 MiB at 50,000 pods. A
// reader that needs one value reads it there (Get); the pods built for
// other readers get a map of their own.
//
// Readers keep their *corev1.Pod: Lister is a corelisters.PodLister over
// the informer's indexer that hands out a fresh *corev1.Pod built from
// each cached Pod (Pod.Pod), and Of does the same for the objects an
// event handler or an index function receives. The built pod shares the
// cached one's label map, slices and strings, so, as with any informer's
// objects, readers must not change it; they never did. Through
// metav1.Object, a cached Pod's GetAnnotations builds a map too.
//
// An indexer may also hold plain *corev1.Pod objects (tests fill
// indexers by hand): Lister and Of pass those through.
package podcache

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/internal/uid"
)

// Pod is a cached pod: what Pod.Pod restores, and nothing else. Of the
// metadata, everything but managedFields (which the informer's transform
// drops) and the three fields no reader of a pod uses: generateName,
// selfLink and generation. The annotations are kept as Annotations rather
// than a map. Of the spec and status, only nodeName, hostNetwork,
// restartPolicy, terminationGracePeriodSeconds, phase, reason, podIP(s)
// and hostIP(s).
type Pod struct {
	Name      string
	Namespace string
	// uid is the UID packed (internal/uid); one that could not be is in
	// rare.
	uid             uid.Packed
	ResourceVersion string
	Labels          map[string]string
	OwnerReferences []metav1.OwnerReference
	Annotations     Annotations

	NodeName                      string
	TerminationGracePeriodSeconds *int64
	PodIPs                        []corev1.PodIP
	HostIPs                       []corev1.HostIP

	// created is the creation time in Unix seconds plus createdOffset, 0
	// for none; a time with nanoseconds or another location than the
	// decoder's is in rare instead.
	created int64
	// rare holds the fields most pods leave empty; nil when all are.
	rare *rare

	HostNetwork bool
	// restartPolicy and phase are indexes into restartPolicies and
	// phases; other values are in rare (otherValue).
	restartPolicy uint8
	phase         uint8
	// podIP and hostIP say where status.podIP and status.hostIP are.
	podIP, hostIP ipAt
}

// rare is what a cached pod keeps only when it has it: deletion, a
// reason, values outside the usual ones.
type rare struct {
	UID                        types.UID
	DeletionTimestamp          *metav1.Time
	DeletionGracePeriodSeconds *int64
	Finalizers                 []string
	// CreationTimestamp, when created cannot say it.
	CreationTimestamp metav1.Time
	Reason            string
	// PodIP and HostIP, when not the first of their lists (ipOwn).
	PodIP, HostIP string
	// RestartPolicy and Phase, when not among the usual ones.
	RestartPolicy corev1.RestartPolicy
	Phase         corev1.PodPhase
}

// ipAt is where a pod's podIP or hostIP is kept.
type ipAt uint8

const (
	ipNone  ipAt = iota // empty
	ipFirst             // the first of the list's addresses
	ipOwn               // in rare
)

const (
	// createdOffset keeps a creation time at or before 1970 apart from
	// none.
	createdOffset = 1 << 62
	// otherValue is the index of a restart policy or phase kept in rare.
	otherValue = 255
)

var (
	restartPolicies = []corev1.RestartPolicy{"", corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
	phases          = []corev1.PodPhase{"", corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown}
)

// New returns the cached form of p with meta as its metadata (the
// transform's trimmed copy of p's). It shares p's slices and strings.
func New(p *corev1.Pod, meta metav1.ObjectMeta) *Pod {
	c := &Pod{
		Name: meta.Name, Namespace: meta.Namespace, ResourceVersion: meta.ResourceVersion,
		Labels: meta.Labels, OwnerReferences: meta.OwnerReferences,
		Annotations:                   NewAnnotations(meta.Annotations),
		NodeName:                      p.Spec.NodeName,
		TerminationGracePeriodSeconds: p.Spec.TerminationGracePeriodSeconds,
		PodIPs:                        p.Status.PodIPs,
		HostIPs:                       p.Status.HostIPs,
		HostNetwork:                   p.Spec.HostNetwork,
	}
	c.SetUID(meta.UID)
	c.SetCreationTimestamp(meta.CreationTimestamp)
	c.SetDeletionTimestamp(meta.DeletionTimestamp)
	c.SetDeletionGracePeriodSeconds(meta.DeletionGracePeriodSeconds)
	c.SetFinalizers(meta.Finalizers)
	c.setRestartPolicy(p.Spec.RestartPolicy)
	c.setPhase(p.Status.Phase)
	c.setReason(p.Status.Reason)
	c.setPodIP(p.Status.PodIP)
	c.setHostIP(p.Status.HostIP)
	return c
}

// more returns c's rare record, adding one when c has none.
func (c *Pod) more() *rare {
	if c.rare == nil {
		c.rare = new(rare)
	}
	return c.rare
}

// fewer drops c's rare record when nothing is left in it.
func (c *Pod) fewer() {
	if r := c.rare; r != nil && r.UID == "" && r.DeletionTimestamp == nil && r.DeletionGracePeriodSeconds == nil && r.Finalizers == nil &&
		r.CreationTimestamp.IsZero() && r.Reason == "" && r.PodIP == "" && r.HostIP == "" && r.RestartPolicy == "" && r.Phase == "" {
		c.rare = nil
	}
}

// index returns the index of v in values, or otherValue.
func index[T comparable](values []T, v T) uint8 {
	for i, x := range values {
		if x == v {
			return uint8(i)
		}
	}
	return otherValue
}

func (c *Pod) setRestartPolicy(v corev1.RestartPolicy) {
	if c.restartPolicy = index(restartPolicies, v); c.restartPolicy == otherValue {
		c.more().RestartPolicy = v
	} else if c.rare != nil {
		c.rare.RestartPolicy = ""
		c.fewer()
	}
}

// RestartPolicy is the pod's spec.restartPolicy: whether a Succeeded or
// Failed pod is gone for good.
func (c *Pod) RestartPolicy() corev1.RestartPolicy {
	if c.restartPolicy == otherValue {
		return c.rare.RestartPolicy
	}
	return restartPolicies[c.restartPolicy]
}

func (c *Pod) setPhase(v corev1.PodPhase) {
	if c.phase = index(phases, v); c.phase == otherValue {
		c.more().Phase = v
	} else if c.rare != nil {
		c.rare.Phase = ""
		c.fewer()
	}
}

// Phase is the pod's status.phase.
func (c *Pod) Phase() corev1.PodPhase {
	if c.phase == otherValue {
		return c.rare.Phase
	}
	return phases[c.phase]
}

func (c *Pod) setReason(v string) {
	if v != "" {
		c.more().Reason = v
	} else if c.rare != nil {
		c.rare.Reason = ""
		c.fewer()
	}
}

// Reason is the pod's status.reason.
func (c *Pod) Reason() string {
	if c.rare == nil {
		return ""
	}
	return c.rare.Reason
}

// placeIP keeps ip, an address whose list starts with first ("" for an
// empty list), and says where: nowhere for "", as the first of the list,
// or in rare's field (own) otherwise.
func (c *Pod) placeIP(ip, first string, own func(*rare) *string) ipAt {
	at := ipOwn
	switch {
	case ip == "":
		at = ipNone
	case ip == first:
		at = ipFirst
	default:
		*own(c.more()) = ip
		return at
	}
	if c.rare != nil {
		*own(c.rare) = ""
		c.fewer()
	}
	return at
}

// readIP is the address placeIP kept at at.
func (c *Pod) readIP(at ipAt, first string, own func(*rare) *string) string {
	switch at {
	case ipFirst:
		return first
	case ipOwn:
		return *own(c.rare)
	}
	return ""
}

func rarePodIP(r *rare) *string  { return &r.PodIP }
func rareHostIP(r *rare) *string { return &r.HostIP }

// firstPodIP and firstHostIP are the first addresses of their lists, ""
// for none.
func (c *Pod) firstPodIP() string {
	if len(c.PodIPs) == 0 {
		return ""
	}
	return c.PodIPs[0].IP
}

func (c *Pod) firstHostIP() string {
	if len(c.HostIPs) == 0 {
		return ""
	}
	return c.HostIPs[0].IP
}

func (c *Pod) setPodIP(ip string) { c.podIP = c.placeIP(ip, c.firstPodIP(), rarePodIP) }

// PodIP is the pod's status.podIP.
func (c *Pod) PodIP() string { return c.readIP(c.podIP, c.firstPodIP(), rarePodIP) }

func (c *Pod) setHostIP(ip string) { c.hostIP = c.placeIP(ip, c.firstHostIP(), rareHostIP) }

// HostIP is the pod's status.hostIP.
func (c *Pod) HostIP() string { return c.readIP(c.hostIP, c.firstHostIP(), rareHostIP) }

// SetHostIP sets the pod's status.hostIP to ip: the informer's transform
// gives the host's address a copy shared with the node's other pods.
func (c *Pod) SetHostIP(ip string) { c.setHostIP(ip) }

// ObjectMeta returns the metadata c keeps, its annotations left out
// (Annotations has them).
func (c *Pod) ObjectMeta() metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name: c.Name, Namespace: c.Namespace, UID: c.GetUID(), ResourceVersion: c.ResourceVersion,
		Labels: c.Labels, OwnerReferences: c.OwnerReferences,
		CreationTimestamp: c.GetCreationTimestamp(),
	}
	if r := c.rare; r != nil {
		m.DeletionTimestamp, m.DeletionGracePeriodSeconds, m.Finalizers = r.DeletionTimestamp, r.DeletionGracePeriodSeconds, r.Finalizers
	}
	return m
}

// Pod returns a new *corev1.Pod with c's fields. It shares c's maps,
// slices and strings (its annotations are a new map of c's strings): it
// is read-only, as the cache is.
func (c *Pod) Pod() *corev1.Pod {
	p := new(corev1.Pod)
	c.Into(p)
	return p
}

// Into sets the fields of p that Pod keeps to c's, sharing c's maps,
// slices and strings, and leaves p's other fields as they are: a reader
// of many cached pods, one at a time, can fill one *corev1.Pod again and
// again instead of allocating one each. The annotations go into p's own
// annotation map, emptied first, when it has one: that map must be p's
// alone (one an earlier Into made), never one shared with a cache.
func (c *Pod) Into(p *corev1.Pod) {
	ann := p.Annotations
	p.ObjectMeta = c.ObjectMeta()
	p.Annotations = c.Annotations.Fill(ann)
	p.Spec.NodeName = c.NodeName
	p.Spec.HostNetwork = c.HostNetwork
	p.Spec.RestartPolicy = c.RestartPolicy()
	p.Spec.TerminationGracePeriodSeconds = c.TerminationGracePeriodSeconds
	p.Status.Phase = c.Phase()
	p.Status.Reason = c.Reason()
	p.Status.PodIP = c.PodIP()
	p.Status.PodIPs = c.PodIPs
	p.Status.HostIP = c.HostIP()
	p.Status.HostIPs = c.HostIPs
}

// GetObjectKind makes Pod a runtime.Object, for the parts of client-go
// that look for one. A cached pod carries no kind.
func (c *Pod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns a deep copy of c.
func (c *Pod) DeepCopyObject() runtime.Object {
	out := *c
	m := c.ObjectMeta()
	cp := m.DeepCopy()
	out.Labels, out.OwnerReferences = cp.Labels, cp.OwnerReferences
	out.Annotations = c.Annotations.Clone()
	if c.TerminationGracePeriodSeconds != nil {
		v := *c.TerminationGracePeriodSeconds
		out.TerminationGracePeriodSeconds = &v
	}
	out.PodIPs = append([]corev1.PodIP(nil), c.PodIPs...)
	out.HostIPs = append([]corev1.HostIP(nil), c.HostIPs...)
	if c.rare != nil {
		r := *c.rare
		r.DeletionTimestamp, r.DeletionGracePeriodSeconds, r.Finalizers = cp.DeletionTimestamp, cp.DeletionGracePeriodSeconds, cp.Finalizers
		out.rare = &r
	}
	return &out
}

// The metav1.Object methods, for client-go's key and index functions and
// label selectors (meta.Accessor). The three fields a cached pod does not
// keep read as empty and are not set.
var _ metav1.Object = (*Pod)(nil)

func (c *Pod) GetNamespace() string                          { return c.Namespace }
func (c *Pod) SetNamespace(ns string)                        { c.Namespace = ns }
func (c *Pod) GetName() string                               { return c.Name }
func (c *Pod) SetName(name string)                           { c.Name = name }
func (c *Pod) GetGenerateName() string                       { return "" }
func (c *Pod) SetGenerateName(string)                        {}
func (c *Pod) GetResourceVersion() string                    { return c.ResourceVersion }
func (c *Pod) SetResourceVersion(v string)                   { c.ResourceVersion = v }
func (c *Pod) GetGeneration() int64                          { return 0 }
func (c *Pod) SetGeneration(int64)                           {}
func (c *Pod) GetSelfLink() string                           { return "" }
func (c *Pod) SetSelfLink(string)                            {}
func (c *Pod) GetLabels() map[string]string                  { return c.Labels }
func (c *Pod) SetLabels(l map[string]string)                 { c.Labels = l }
func (c *Pod) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (c *Pod) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

func (c *Pod) GetOwnerReferences() []metav1.OwnerReference  { return c.OwnerReferences }
func (c *Pod) SetOwnerReferences(o []metav1.OwnerReference) { c.OwnerReferences = o }

// GetAnnotations returns a new map of c's annotations (nil when it has
// none), for the parts of client-go that read metadata through
// metav1.Object.
func (c *Pod) GetAnnotations() map[string]string { return c.Annotations.Map() }

// SetAnnotations sets c's annotations to m's.
func (c *Pod) SetAnnotations(m map[string]string) { c.Annotations = NewAnnotations(m) }

// GetUID returns the UID, built from its packed form (a new string).
func (c *Pod) GetUID() types.UID {
	if c.rare != nil && c.rare.UID != "" {
		return c.rare.UID
	}
	return c.uid.UID()
}

// SetUID keeps u packed when it can be, in rare otherwise.
func (c *Pod) SetUID(u types.UID) {
	if p, ok := uid.Pack(u); ok {
		c.uid = p
		if c.rare != nil {
			c.rare.UID = ""
			c.fewer()
		}
		return
	}
	c.uid = uid.Packed{}
	c.more().UID = u
}

func (c *Pod) GetCreationTimestamp() metav1.Time {
	if c.created == 0 {
		if c.rare != nil {
			return c.rare.CreationTimestamp
		}
		return metav1.Time{}
	}
	return metav1.NewTime(time.Unix(c.created-createdOffset, 0))
}

// SetCreationTimestamp keeps t as seconds when the decoder could have
// made it (whole seconds, local time), in rare otherwise.
func (c *Pod) SetCreationTimestamp(t metav1.Time) {
	c.created = 0
	if c.rare != nil {
		c.rare.CreationTimestamp = metav1.Time{}
	}
	switch {
	case t.IsZero():
	case t.Nanosecond() == 0 && t.Location() == time.Local:
		c.created = t.Unix() + createdOffset
	default:
		c.more().CreationTimestamp = t
	}
	c.fewer()
}

func (c *Pod) GetDeletionTimestamp() *metav1.Time {
	if c.rare == nil {
		return nil
	}
	return c.rare.DeletionTimestamp
}

func (c *Pod) SetDeletionTimestamp(t *metav1.Time) {
	if t != nil {
		c.more().DeletionTimestamp = t
	} else if c.rare != nil {
		c.rare.DeletionTimestamp = nil
		c.fewer()
	}
}

func (c *Pod) GetDeletionGracePeriodSeconds() *int64 {
	if c.rare == nil {
		return nil
	}
	return c.rare.DeletionGracePeriodSeconds
}

func (c *Pod) SetDeletionGracePeriodSeconds(s *int64) {
	if s != nil {
		c.more().DeletionGracePeriodSeconds = s
	} else if c.rare != nil {
		c.rare.DeletionGracePeriodSeconds = nil
		c.fewer()
	}
}

func (c *Pod) GetFinalizers() []string {
	if c.rare == nil {
		return nil
	}
	return c.rare.Finalizers
}

func (c *Pod) SetFinalizers(f []string) {
	if f != nil {
		c.more().Finalizers = f
	} else if c.rare != nil {
		c.rare.Finalizers = nil
		c.fewer()
	}
}

// Of returns the pod an informer object stands for: a *corev1.Pod as it
// is, a cached Pod built into one (Pod.Pod). ok is false for anything
// else, tombstones included.
func Of(obj any) (p *corev1.Pod, ok bool) {
	switch o := obj.(type) {
	case *Pod:
		return o.Pod(), true
	case *corev1.Pod:
		return o, true
	}
	return nil, false
}

// Lister is a corelisters.PodLister over a pod informer's indexer (which
// needs the namespace index that informers carry). Every pod it returns
// is built anew from the cache (Of): a List of every pod allocates one
// corev1.Pod each.
type Lister struct{ indexer cache.Indexer }

// NewLister returns the lister of indexer.
func NewLister(indexer cache.Indexer) *Lister { return &Lister{indexer: indexer} }

var _ corelisters.PodLister = (*Lister)(nil)

// List returns the cached pods whose labels selector matches.
func (l *Lister) List(selector labels.Selector) (ret []*corev1.Pod, err error) {
	err = cache.ListAll(l.indexer, selector, func(obj any) {
		if p, ok := Of(obj); ok {
			ret = append(ret, p)
		}
	})
	return ret, err
}

// Pods returns the lister of one namespace.
func (l *Lister) Pods(namespace string) corelisters.PodNamespaceLister {
	return namespaceLister{indexer: l.indexer, namespace: namespace}
}

type namespaceLister struct {
	indexer   cache.Indexer
	namespace string
}

func (n namespaceLister) List(selector labels.Selector) (ret []*corev1.Pod, err error) {
	err = cache.ListAllByNamespace(n.indexer, n.namespace, selector, func(obj any) {
		if p, ok := Of(obj); ok {
			ret = append(ret, p)
		}
	})
	return ret, err
}

func (n namespaceLister) Get(name string) (*corev1.Pod, error) {
	obj, exists, err := n.indexer.GetByKey(n.namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	p, ok := Of(obj)
	if !exists || !ok {
		return nil, errors.NewNotFound(corev1.Resource("pod"), name)
	}
	return p, nil
}
