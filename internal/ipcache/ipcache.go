// Package ipcache is the form a kubeovn.io IP record takes in the IP
// informer's cache. A *kubeovnv1.IP is 496 bytes whatever it holds: the
// object metadata has fifteen fields, the spec three lists, and a record
// shardnet or kube-ovn writes for a pod uses the name, UID, version,
// generation, creation time and labels of the first and none of the
// second. IP keeps those and the spec's strings in 232 bytes (a 240-byte
// allocation). Every replica caches every record, one per pod network: at
// 50,000 pods that is about 13 MB less heap per replica, and fewer
// pointers for the collector to follow. IP is a metav1.Object itself
// (cachemeta.Meta), so the informer's key function, which every record
// passes several times while a replica's caches load, builds nothing.
//
// Nothing a reader uses is dropped. A record with anything else set
// (annotations, finalizers, owner references, a deletion timestamp, the
// attach lists, a creation time finer than a second) is cached as it
// came, a *kubeovnv1.IP (New). Only the kind and API version go, which
// the items of a list response carry and a watch event's object does not,
// so that the informer's cache holds the same whichever way a record came.
//
// Readers keep their *kubeovnv1.IP: Lister is a kubeovnlisters.IPLister
// over the informer's indexer that builds one per read (IP.IP), and Of
// does the same for the objects an event handler receives. A built record
// shares the cached one's label map and strings, so, as with any
// informer's objects, readers must not change it; an update deep-copies
// first, as it always did.
package ipcache

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	kubeovnlisters "github.com/shardnet/shardnet/api/client/listers/kubeovn/v1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/internal/cachemeta"
)

// IP is a cached IP record of the common shape: what IP.IP restores.
type IP struct {
	cachemeta.Meta

	PodName     string
	Namespace   string
	Subnet      string
	NodeName    string
	IPAddress   string
	V4IPAddress string
	V6IPAddress string
	MacAddress  string
	ContainerID string
	PodType     string
}

// New returns what the cache keeps of ip: an *IP when ip has nothing but
// what IP keeps (its kind aside), else ip itself. The annotation that
// copies the spec into the metadata is dropped from ip first when it
// describes ip's spec at ip's generation (a record cached with it was
// read in full, its copy stale: MarkOld looks for those).
// The *IP shares ip's label map and strings.
func New(ip *kubeovnv1.IP) any {
	dropSpecAnnotation(ip)
	if !compactable(ip) {
		return ip
	}
	s := &ip.Spec
	return &IP{
		Meta:    cachemeta.From(&ip.ObjectMeta),
		PodName: s.PodName, Namespace: s.Namespace, Subnet: s.Subnet, NodeName: s.NodeName,
		IPAddress: s.IPAddress, V4IPAddress: s.V4IPAddress, V6IPAddress: s.V6IPAddress,
		MacAddress: s.MacAddress, ContainerID: s.ContainerID, PodType: s.PodType,
	}
}

// ipKind is the kind and API version an IP record may carry.
var ipKind = metav1.TypeMeta{Kind: "IP", APIVersion: kubeovnv1.SchemeGroupVersion.String()}

// compactable reports whether IP keeps everything of ip a reader uses.
func compactable(ip *kubeovnv1.IP) bool {
	s := &ip.Spec
	return (ip.TypeMeta == metav1.TypeMeta{} || ip.TypeMeta == ipKind) && cachemeta.Keeps(&ip.ObjectMeta) &&
		s.AttachSubnets == nil && s.AttachIPs == nil && s.AttachMacs == nil
}

// IP returns a new *kubeovnv1.IP with c's fields. It shares c's label map
// and strings: it is read-only, as the cache is.
func (c *IP) IP() *kubeovnv1.IP {
	ip := new(kubeovnv1.IP)
	c.Into(ip)
	return ip
}

// Into sets every field of ip to c's, sharing c's label map and strings:
// a reader of many cached records, one at a time, can fill one
// *kubeovnv1.IP again and again instead of allocating one each.
func (c *IP) Into(ip *kubeovnv1.IP) {
	*ip = kubeovnv1.IP{
		ObjectMeta: c.ObjectMeta(),
		Spec: kubeovnv1.IPSpec{
			PodName: c.PodName, Namespace: c.Namespace, Subnet: c.Subnet, NodeName: c.NodeName,
			IPAddress: c.IPAddress, V4IPAddress: c.V4IPAddress, V6IPAddress: c.V6IPAddress,
			MacAddress: c.MacAddress, ContainerID: c.ContainerID, PodType: c.PodType,
		},
	}
}

// GetObjectKind makes IP a runtime.Object, for the parts of client-go
// that look for one. A cached record carries no kind.
func (c *IP) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject returns a deep copy of c.
func (c *IP) DeepCopyObject() runtime.Object {
	out := *c
	out.Meta = c.Meta.DeepCopy()
	return &out
}

var _ metav1.Object = (*IP)(nil)

// Of returns the record an informer object stands for: a *kubeovnv1.IP as
// it is, a cached IP built into one (IP.IP). ok is false for anything
// else, tombstones included.
func Of(obj any) (ip *kubeovnv1.IP, ok bool) {
	switch o := obj.(type) {
	case *IP:
		return o.IP(), true
	case *kubeovnv1.IP:
		return o, true
	}
	return nil, false
}

// Each calls f with every record of an IP informer's indexer. A cached IP
// is built into one *kubeovnv1.IP that the next call fills again, so f
// must not keep the record it is given (its strings and label map it
// may).
func Each(indexer cache.Indexer, f func(*kubeovnv1.IP)) {
	var scratch kubeovnv1.IP
	for _, o := range indexer.List() {
		switch r := o.(type) {
		case *IP:
			r.Into(&scratch)
			f(&scratch)
		case *kubeovnv1.IP:
			f(r)
		}
	}
}

// Lister is a kubeovnlisters.IPLister over an IP informer's indexer. Every
// record it returns is built anew from the cache (Of).
type Lister = cachemeta.Lister[*kubeovnv1.IP]

// NewLister returns the lister of indexer.
func NewLister(indexer cache.Indexer) *Lister {
	return cachemeta.NewLister(indexer, Of, kubeovnv1.Resource("ip"))
}

var _ kubeovnlisters.IPLister = (*Lister)(nil)
