package metawatch

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/shardnet/shardnet/internal/kubeproto"
)

// A Client is a metadata.Interface whose lists and watches decode the
// API server's protobuf PartialObjectMetadata where it lies, leaving out
// each object's managedFields, which every informer of shardnet drops
// (controller's transforms): client-go's metadata client copies each
// body into a runtime.Unknown and decodes every managed field entry
// (their fieldsV1 a copy of their own), most of the garbage of a list of
// claims or IP records and, at 50,000 pods, the peak of a restarted
// replica's heap (docs/decisions/0009). Everything else the objects'
// metadata holds is decoded as the generated code decodes it. Get,
// Patch and the deletes are client-go's.
type Client struct {
	rest rest.Interface
	base metadata.Interface
}

// parameterCodec encodes ListOptions as client-go's metadata client does.
var parameterCodec = func() runtime.ParameterCodec {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, versionV1)
	return runtime.NewParameterCodec(s)
}()

var versionV1 = schema.GroupVersion{Version: "v1"}

var (
	partialKind     = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata")
	partialListKind = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList")
)

// The Accept headers of client-go's metadata client.
const (
	acceptObject = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	acceptList   = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)

// NewClient returns a Client on rc and httpClient (nil: one of rc's
// own), which may be shared with the caller's other clients.
func NewClient(rc *rest.Config, httpClient *http.Client) (*Client, error) {
	rc = metadata.ConfigFor(rc)
	if httpClient == nil {
		var err error
		if httpClient, err = rest.HTTPClientFor(rc); err != nil {
			return nil, err
		}
	}
	base, err := metadata.NewForConfigAndClient(rc, httpClient)
	if err != nil {
		return nil, err
	}
	rc.NegotiatedSerializer = codecs()
	rc.GroupVersion = &schema.GroupVersion{}
	rc.APIPath = "/this-value-should-never-be-sent"
	c, err := rest.RESTClientForConfigAndClient(rc, httpClient)
	if err != nil {
		return nil, err
	}
	return &Client{rest: c, base: base}, nil
}

// Resource returns the objects of resource.
func (c *Client) Resource(resource schema.GroupVersionResource) metadata.Getter {
	return &resourceClient{ResourceInterface: c.base.Resource(resource), c: c, resource: resource}
}

type resourceClient struct {
	metadata.ResourceInterface
	c         *Client
	resource  schema.GroupVersionResource
	namespace string
}

func (r *resourceClient) Namespace(ns string) metadata.ResourceInterface {
	return &resourceClient{ResourceInterface: r.c.base.Resource(r.resource).Namespace(ns), c: r.c, resource: r.resource, namespace: ns}
}

func (r *resourceClient) path() []string {
	p := []string{"apis", r.resource.Group}
	if r.resource.Group == "" {
		p = []string{"api"}
	}
	p = append(p, r.resource.Version)
	if r.namespace != "" {
		p = append(p, "namespaces", r.namespace)
	}
	return append(p, r.resource.Resource)
}

// List lists the objects' metadata, as client-go's metadata client does,
// without their managed fields.
func (r *resourceClient) List(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	out := new(metav1.PartialObjectMetadataList)
	err := r.c.rest.Get().AbsPath(r.path()...).SetHeader("Accept", acceptList).
		SpecificallyVersionedParams(&opts, parameterCodec, versionV1).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	out.TypeMeta = metav1.TypeMeta{}
	return out, nil
}

// Watch watches the objects' metadata, as client-go's metadata client
// does, without their managed fields.
func (r *resourceClient) Watch(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	opts.Watch = true
	return r.c.rest.Get().AbsPath(r.path()...).SetHeader("Accept", acceptObject).
		SpecificallyVersionedParams(&opts, parameterCodec, versionV1).Timeout(timeout).Watch(ctx)
}

// codecs is the metadata client's codecs, but PartialObjectMetadata and
// its lists in protobuf decode without the managed fields.
func codecs() runtime.NegotiatedSerializer {
	return kubeproto.Codecs(metainternalversionscheme.Codecs.WithoutConversion(), map[schema.GroupVersionKind]kubeproto.Decoder{
		partialKind:     kubeproto.As(unmarshalPartialObject),
		partialListKind: kubeproto.As(unmarshalPartialList),
	})
}

// managedFieldsNumber is ObjectMeta's field of its managed fields.
const managedFieldsNumber = 17

// unmarshalPartial sets p's metadata from the PartialObjectMetadata in b
// as the generated code does, but for its managed fields, which are left
// out. buf, when given, is a scratch buffer for the metadata's other
// fields, grown as needed and returned for the next call.
func unmarshalPartial(b []byte, p *metav1.PartialObjectMetadata, buf []byte) ([]byte, error) {
	err := kubeproto.Fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		// Every field but the managed fields, decoded as the generated
		// code does (its strings do not share buf).
		var err error
		if buf, err = kubeproto.AppendWithout(buf[:0], v, managedFieldsNumber); err != nil {
			return fmt.Errorf("metawatch: object metadata: %w", err)
		}
		return p.ObjectMeta.Unmarshal(buf)
	})
	return buf, err
}

// unmarshalPartialObject sets p to the PartialObjectMetadata in b, as
// unmarshalPartial decodes it.
func unmarshalPartialObject(b []byte, p *metav1.PartialObjectMetadata) error {
	*p = metav1.PartialObjectMetadata{}
	_, err := unmarshalPartial(b, p, nil)
	return err
}

// unmarshalPartialList sets l to the PartialObjectMetadataList in b, its
// items as unmarshalPartial decodes them.
func unmarshalPartialList(b []byte, l *metav1.PartialObjectMetadataList) error {
	*l = metav1.PartialObjectMetadataList{}
	var buf []byte
	return kubeproto.List(b, &l.ListMeta, &l.Items, func(v []byte, p *metav1.PartialObjectMetadata) (err error) {
		buf, err = unmarshalPartial(v, p, buf)
		return err
	})
}
