package reconcile

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	crdscheme "github.com/shardnet/shardnet/api/client/clientset/versioned/scheme"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/internal/podwire"
)

// KubeWrites are the Kubernetes API writes of the pod path, besides the
// claims the ipam package writes. Errors are the API server's, so callers
// tell a conflict or a missing object with apimachinery's errors package.
type KubeWrites interface {
	// PatchPod applies a merge patch to a pod and returns the result; of
	// it, callers read only the UID and resource version.
	PatchPod(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error)
	CreateIP(ctx context.Context, ip *kubeovnv1.IP) error
	UpdateIP(ctx context.Context, ip *kubeovnv1.IP) error
	// DeleteIP and DeleteClaim delete only the object of that UID.
	DeleteIP(ctx context.Context, name string, uid types.UID) error
	DeleteClaim(ctx context.Context, name string, uid types.UID) error
}

// ClientWrites are KubeWrites through the clientsets. The API server's
// answer to a write is the object as stored, which the pod path does not
// read beyond a pod's UID and resource version: the IP records' answers
// are not decoded, and the pods' are decoded only as far as the pod cache
// keeps them (Pods). With a clientset that has no REST client (a fake)
// or no Pods, the writes go through the typed clients.
type ClientWrites struct {
	Kube     kubernetes.Interface
	Shardnet versioned.Interface
	// Pods patches pods (podwire); nil patches through Kube.
	Pods *podwire.Client
}

var _ KubeWrites = ClientWrites{}

func (w ClientWrites) PatchPod(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error) {
	if w.Pods != nil {
		return w.Pods.Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	return w.Kube.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
}

// restClient is the REST client of a clientset's group; nil for a fake
// clientset's, which has none.
func restClient(i rest.Interface) *rest.RESTClient {
	rc, _ := i.(*rest.RESTClient)
	return rc
}

func (w ClientWrites) CreateIP(ctx context.Context, ip *kubeovnv1.IP) error {
	if rc := restClient(w.Shardnet.KubeovnV1().RESTClient()); rc != nil {
		return rc.Post().Resource("ips").VersionedParams(&metav1.CreateOptions{}, crdscheme.ParameterCodec).
			Body(ip).Do(ctx).Error()
	}
	_, err := w.Shardnet.KubeovnV1().IPs().Create(ctx, ip, metav1.CreateOptions{})
	return err
}

func (w ClientWrites) UpdateIP(ctx context.Context, ip *kubeovnv1.IP) error {
	if rc := restClient(w.Shardnet.KubeovnV1().RESTClient()); rc != nil {
		return rc.Put().Resource("ips").Name(ip.Name).VersionedParams(&metav1.UpdateOptions{}, crdscheme.ParameterCodec).
			Body(ip).Do(ctx).Error()
	}
	_, err := w.Shardnet.KubeovnV1().IPs().Update(ctx, ip, metav1.UpdateOptions{})
	return err
}

func (w ClientWrites) DeleteIP(ctx context.Context, name string, uid types.UID) error {
	return w.Shardnet.KubeovnV1().IPs().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (w ClientWrites) DeleteClaim(ctx context.Context, name string, uid types.UID) error {
	return w.Shardnet.ShardnetV1alpha1().AddressClaims().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}
