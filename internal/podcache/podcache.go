// Package podcache is the form a pod takes in the pod informer's cache:
// its object metadata and the handful of spec and status fields shardnet
// reads, in a struct of about 400 bytes instead of the 1.2 KiB of a
// corev1.Pod whose other fields are all empty. At 50,000 pods that is
// about 40 MiB less heap per replica, and less for the collector to scan.
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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Pod is a cached pod: what Pod.Pod restores, and nothing else. The
// metadata is the whole of it (managedFields aside, which the informer's
// transform drops), its annotations kept as Annotations rather than a
// map; of the spec and status, only the fields below.
type Pod struct {
	// ObjectMeta's Annotations stay nil: Annotations holds them.
	metav1.ObjectMeta
	// Annotations shadows ObjectMeta's map, as do GetAnnotations and
	// SetAnnotations.
	Annotations Annotations

	NodeName    string
	HostNetwork bool
	// RestartPolicy says whether a Succeeded or Failed pod is gone for
	// good.
	RestartPolicy                 corev1.RestartPolicy
	TerminationGracePeriodSeconds *int64

	Phase   corev1.PodPhase
	Reason  string
	PodIP   string
	PodIPs  []corev1.PodIP
	HostIP  string
	HostIPs []corev1.HostIP
}

// New returns the cached form of p with meta as its metadata (the
// transform's trimmed copy of p's). It shares p's slices and strings.
func New(p *corev1.Pod, meta metav1.ObjectMeta) *Pod {
	ann := NewAnnotations(meta.Annotations)
	meta.Annotations = nil
	return &Pod{
		ObjectMeta:                    meta,
		Annotations:                   ann,
		NodeName:                      p.Spec.NodeName,
		HostNetwork:                   p.Spec.HostNetwork,
		RestartPolicy:                 p.Spec.RestartPolicy,
		TerminationGracePeriodSeconds: p.Spec.TerminationGracePeriodSeconds,
		Phase:                         p.Status.Phase,
		Reason:                        p.Status.Reason,
		PodIP:                         p.Status.PodIP,
		PodIPs:                        p.Status.PodIPs,
		HostIP:                        p.Status.HostIP,
		HostIPs:                       p.Status.HostIPs,
	}
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
	p.ObjectMeta = c.ObjectMeta
	p.Annotations = c.Annotations.Fill(ann)
	p.Spec.NodeName = c.NodeName
	p.Spec.HostNetwork = c.HostNetwork
	p.Spec.RestartPolicy = c.RestartPolicy
	p.Spec.TerminationGracePeriodSeconds = c.TerminationGracePeriodSeconds
	p.Status.Phase = c.Phase
	p.Status.Reason = c.Reason
	p.Status.PodIP = c.PodIP
	p.Status.PodIPs = c.PodIPs
	p.Status.HostIP = c.HostIP
	p.Status.HostIPs = c.HostIPs
}

// GetObjectKind makes Pod a runtime.Object, for the parts of client-go
// that look for one. A cached pod carries no kind.
func (c *Pod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// GetAnnotations returns a new map of c's annotations (nil when it has
// none), for the parts of client-go that read metadata through
// metav1.Object.
func (c *Pod) GetAnnotations() map[string]string { return c.Annotations.Map() }

// SetAnnotations sets c's annotations to m's.
func (c *Pod) SetAnnotations(m map[string]string) { c.Annotations = NewAnnotations(m) }

// DeepCopyObject returns a deep copy of c.
func (c *Pod) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Annotations = c.Annotations.Clone()
	if c.TerminationGracePeriodSeconds != nil {
		v := *c.TerminationGracePeriodSeconds
		out.TerminationGracePeriodSeconds = &v
	}
	out.PodIPs = append([]corev1.PodIP(nil), c.PodIPs...)
	out.HostIPs = append([]corev1.HostIP(nil), c.HostIPs...)
	return &out
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
