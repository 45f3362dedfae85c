package ipcache

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/metawatch"
)

// Reading IP records as their metadata.
//
// An IP record is written by shardnet and, before a takeover or beside
// it, by kube-ovn, and shardnet updates the records it writes. So the
// spec shardnet writes into a record's metadata (the label
// v1alpha1.LabelSpecInMetadata and the annotation v1alpha1.AnnotationSpec,
// EncodeSpec) names the generation it describes: 1 at the create, the
// generation read plus one at a spec update (an update carries the
// resourceVersion it read, so the generation it bumps is that one). A
// reader trusts the metadata only while metadata.generation equals it:
// another writer's spec change moves the generation, and that record is
// read in full until shardnet writes its spec again or the leader marks
// it (MarkOld).

// specFields is the number of space-separated fields after the version
// and the generation in an AnnotationSpec value of a record.
const specFields = 10

// EncodeSpec returns the AnnotationSpec value of a record's spec s at
// generation gen:
//
//	v1 <generation> <pod> <namespace> <subnet> <node> <ipAddress> <v4IpAddress> <v6IpAddress> <macAddress> <containerID> <podType>
//
// with "-" for an empty field (v1alpha1.EncodeFields). ok is false when s
// cannot be written so (an attach list, a field with a space, or one
// that is "-"): such a record is written without the label and the
// annotation, and read in full.
func EncodeSpec(s *kubeovnv1.IPSpec, gen int64) (value string, ok bool) {
	if len(s.AttachSubnets) > 0 || len(s.AttachIPs) > 0 || len(s.AttachMacs) > 0 || gen < 1 {
		return "", false
	}
	return v1alpha1.EncodeFields(strconv.FormatInt(gen, 10), s.PodName, s.Namespace, s.Subnet, s.NodeName, s.IPAddress, s.V4IPAddress, s.V6IPAddress, s.MacAddress, s.ContainerID, s.PodType)
}

// DecodeSpec returns the spec the metadata of a record carries, when its
// labels mark it (v1alpha1.LabelSpecInMetadata) and its annotation
// describes generation gen, the record's. ok is false otherwise; err is
// set for a record marked with a malformed annotation.
func DecodeSpec(gen int64, labels, annotations map[string]string) (spec kubeovnv1.IPSpec, ok bool, err error) {
	var f [specFields + 1]string
	if ok, err := v1alpha1.DecodeFields(labels, annotations, f[:]); !ok || err != nil {
		return spec, false, err
	}
	if g, perr := strconv.ParseInt(f[0], 10, 64); perr != nil || g < 1 {
		return spec, false, fmt.Errorf("%s names no generation: %q", v1alpha1.AnnotationSpec, annotations[v1alpha1.AnnotationSpec])
	} else if g != gen {
		// Written at another generation: the spec changed since.
		return spec, false, nil
	}
	return kubeovnv1.IPSpec{PodName: f[1], Namespace: f[2], Subnet: f[3], NodeName: f[4], IPAddress: f[5],
		V4IPAddress: f[6], V6IPAddress: f[7], MacAddress: f[8], ContainerID: f[9], PodType: f[10]}, true, nil
}

// SetSpecInMetadata writes ip's spec into its metadata at generation
// gen (EncodeSpec), or, where it cannot be, removes the label and the
// annotation a copy of an earlier version may carry. The maps are ip's
// own after it (a cached record's are shared: give it a copy's).
func SetSpecInMetadata(ip *kubeovnv1.IP, gen int64) {
	v, ok := EncodeSpec(&ip.Spec, gen)
	if !ok {
		delete(ip.Labels, v1alpha1.LabelSpecInMetadata)
		delete(ip.Annotations, v1alpha1.AnnotationSpec)
		return
	}
	if ip.Labels == nil {
		ip.Labels = map[string]string{}
	}
	if ip.Annotations == nil {
		ip.Annotations = map[string]string{}
	}
	ip.Labels[v1alpha1.LabelSpecInMetadata] = v1alpha1.SpecInMetadataV1
	ip.Annotations[v1alpha1.AnnotationSpec] = v
}

// NewListWatch returns the ListerWatcher of the IP informer: records
// listed and watched as their metadata (meta), and read in full with
// full where their metadata does not carry their spec. Give it the
// informer's store (SetStore).
func NewListWatch(meta metadata.Interface, full metawatch.FullClient[*kubeovnv1.IP, *kubeovnv1.IPList]) *metawatch.ListWatch {
	return metawatch.New(meta.Resource(kubeovnv1.SchemeGroupVersion.WithResource("ips")), kind{metawatch.Full[*kubeovnv1.IP, *kubeovnv1.IPList]{Client: full}})
}

// kind is the metawatch.Kind of IP records.
type kind struct {
	metawatch.Full[*kubeovnv1.IP, *kubeovnv1.IPList]
}

func (kind) Resource() string { return "ips" }

// dropSpecAnnotation removes from ip the annotation that copies its
// spec into its metadata when it describes ip's spec at ip's
// generation.
func dropSpecAnnotation(ip *kubeovnv1.IP) {
	spec, ok, err := DecodeSpec(ip.Generation, ip.Labels, ip.Annotations)
	if !ok || err != nil || !sameSpec(&spec, &ip.Spec) {
		return
	}
	ip.Annotations = v1alpha1.WithoutSpecAnnotation(ip.Annotations)
}

// sameSpec reports whether a and b, specs without attach lists as
// EncodeSpec writes them, are equal.
func sameSpec(a, b *kubeovnv1.IPSpec) bool {
	return len(b.AttachSubnets) == 0 && len(b.AttachIPs) == 0 && len(b.AttachMacs) == 0 &&
		a.PodName == b.PodName && a.Namespace == b.Namespace && a.Subnet == b.Subnet && a.NodeName == b.NodeName &&
		a.IPAddress == b.IPAddress && a.V4IPAddress == b.V4IPAddress && a.V6IPAddress == b.V6IPAddress &&
		a.MacAddress == b.MacAddress && a.ContainerID == b.ContainerID && a.PodType == b.PodType
}

// FromMetadata returns the record m stands for when its metadata
// carries its spec at m's generation, with m's metadata without the
// spec's annotation.
func (kind) FromMetadata(m *metav1.PartialObjectMetadata) (runtime.Object, bool) {
	spec, ok, err := DecodeSpec(m.Generation, m.Labels, m.Annotations)
	if !ok || err != nil {
		return nil, false
	}
	ip := &kubeovnv1.IP{ObjectMeta: m.ObjectMeta, Spec: spec}
	ip.ManagedFields = nil
	ip.Annotations = v1alpha1.WithoutSpecAnnotation(m.Annotations)
	// The spec's strings are substrings of the annotation's value: the
	// ones the informer's transform does not share get one backing of
	// their own, so that the cache does not keep the whole value.
	sp := &ip.Spec
	own := sp.PodName + sp.IPAddress + sp.V4IPAddress + sp.V6IPAddress + sp.MacAddress + sp.ContainerID
	for _, f := range []*string{&sp.PodName, &sp.IPAddress, &sp.V4IPAddress, &sp.V6IPAddress, &sp.MacAddress, &sp.ContainerID} {
		*f, own = own[:len(*f)], own[len(*f):]
	}
	return ip, true
}

// Cached is what the cache keeps of a record (New).
func (kind) Cached(obj runtime.Object) runtime.Object {
	if ip, ok := obj.(*kubeovnv1.IP); ok {
		if cached, ok := New(ip).(*IP); ok {
			return cached
		}
	}
	return obj
}

// Deleted is the record a delete event of m stands for when m does not
// carry its spec: the cached record, with m's metadata, or m's metadata
// alone.
func (kind) Deleted(m *metav1.PartialObjectMetadata, cached any) runtime.Object {
	ip := &kubeovnv1.IP{ObjectMeta: m.ObjectMeta}
	if c, ok := Of(cached); ok {
		ip.Spec = c.Spec
	}
	return ip
}

// MarkOld writes the spec of at most max cached records whose metadata
// does not carry it (records of kube-ovn, or of an older version, or
// changed by another writer since shardnet wrote them) into
// their metadata at their cached generation, by a merge patch that
// names the cached resourceVersion, so a record changed since is left
// as it is. Records EncodeSpec refuses (attach lists) stay read in
// full. It returns how many it marked and how many remain unmarked.
func MarkOld(ctx context.Context, indexer cache.Indexer, patch metawatch.Patcher, max int) (marked, left int, err error) {
	marks := metawatch.Marks{Max: max}
	Each(indexer, func(ip *kubeovnv1.IP) {
		// A record read from its metadata is cached without the
		// annotation; one labelled and cached with it was read in full,
		// its annotation written at another generation.
		if _, stale := ip.Annotations[v1alpha1.AnnotationSpec]; ip.Labels[v1alpha1.LabelSpecInMetadata] == v1alpha1.SpecInMetadataV1 && !stale {
			return
		}
		v, ok := EncodeSpec(&ip.Spec, ip.Generation)
		marks.Add(ip.Name, metav1.ObjectMeta{ResourceVersion: ip.ResourceVersion}, v, ok)
	})
	return marks.Apply(ctx, patch)
}
