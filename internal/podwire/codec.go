package podwire

import (
	"context"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/shardnet/shardnet/internal/kubeproto"
)

var (
	podKind     = corev1.SchemeGroupVersion.WithKind("Pod")
	podListKind = corev1.SchemeGroupVersion.WithKind("PodList")
)

// unmarshalList sets l to the PodList in b, its pods as Unmarshal
// decodes them.
func unmarshalList(b []byte, l *corev1.PodList) error {
	*l = corev1.PodList{}
	return kubeproto.List(b, &l.ListMeta, &l.Items, Unmarshal)
}

// Codecs is the runtime.NegotiatedSerializer of client-go's typed
// clients, but pods and pod lists in protobuf decode through Unmarshal.
func Codecs() runtime.NegotiatedSerializer {
	return kubeproto.Codecs(scheme.Codecs.WithoutConversion(), map[schema.GroupVersionKind]kubeproto.Decoder{
		podKind:     kubeproto.As(Unmarshal),
		podListKind: kubeproto.As(unmarshalList),
	})
}

// Client is a REST client of pods whose answers decode through Codecs.
type Client struct{ rest rest.Interface }

// NewClient returns a Client on rc (its content type should ask for
// protobuf) and httpClient, which may be shared with the caller's other
// clients.
func NewClient(rc *rest.Config, httpClient *http.Client) (*Client, error) {
	rc = rest.CopyConfig(rc)
	rc.GroupVersion = &corev1.SchemeGroupVersion
	rc.APIPath = "/api"
	rc.NegotiatedSerializer = Codecs()
	if rc.UserAgent == "" {
		rc.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	c, err := rest.RESTClientForConfigAndClient(rc, httpClient)
	if err != nil {
		return nil, err
	}
	return &Client{rest: c}, nil
}

// Pods are the pods of a namespace (every namespace when empty).
type Pods struct {
	c         *Client
	namespace string
}

// Pods returns the pods of namespace.
func (c *Client) Pods(namespace string) Pods { return Pods{c, namespace} }

// timeoutOf is the request timeout a typed client sets for opts.
func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds != nil {
		return time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return 0
}

// List lists the pods, as the typed client's List does.
func (p Pods) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	out := new(corev1.PodList)
	err := p.c.rest.Get().Namespace(p.namespace).Resource("pods").
		VersionedParams(&opts, scheme.ParameterCodec).Timeout(timeoutOf(opts)).Do(ctx).Into(out)
	return out, err
}

// Watch watches the pods, as the typed client's Watch does.
func (p Pods) Watch(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
	opts.Watch = true
	return p.c.rest.Get().Namespace(p.namespace).Resource("pods").
		VersionedParams(&opts, scheme.ParameterCodec).Timeout(timeoutOf(opts)).Watch(ctx)
}

// Patch patches the named pod, as the typed client's Patch does, and
// returns the patched pod as far as Unmarshal decodes it.
func (p Pods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (*corev1.Pod, error) {
	out := new(corev1.Pod)
	err := p.c.rest.Patch(pt).Namespace(p.namespace).Resource("pods").Name(name).
		VersionedParams(&opts, scheme.ParameterCodec).Body(data).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}
