package reconcile

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// KubeWrites are the Kubernetes API writes of the pod path, besides the
// claims the ipam package writes. Errors are the API server's, so callers
// tell a conflict or a missing object with apimachinery's errors package.
type KubeWrites interface {
	// PatchPod applies a merge patch to a pod and returns the result.
	PatchPod(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error)
	CreateIP(ctx context.Context, ip *kubeovnv1.IP) error
	UpdateIP(ctx context.Context, ip *kubeovnv1.IP) error
	// DeleteIP and DeleteClaim delete only the object of that UID.
	DeleteIP(ctx context.Context, name string, uid types.UID) error
	DeleteClaim(ctx context.Context, name string, uid types.UID) error
}

// ClientWrites are KubeWrites through the clientsets.
type ClientWrites struct {
	Kube     kubernetes.Interface
	Shardnet versioned.Interface
}

var _ KubeWrites = ClientWrites{}

func (w ClientWrites) PatchPod(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error) {
	return w.Kube.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
}

func (w ClientWrites) CreateIP(ctx context.Context, ip *kubeovnv1.IP) error {
	_, err := w.Shardnet.KubeovnV1().IPs().Create(ctx, ip, metav1.CreateOptions{})
	return err
}

func (w ClientWrites) UpdateIP(ctx context.Context, ip *kubeovnv1.IP) error {
	_, err := w.Shardnet.KubeovnV1().IPs().Update(ctx, ip, metav1.UpdateOptions{})
	return err
}

func (w ClientWrites) DeleteIP(ctx context.Context, name string, uid types.UID) error {
	return w.Shardnet.KubeovnV1().IPs().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

func (w ClientWrites) DeleteClaim(ctx context.Context, name string, uid types.UID) error {
	return w.Shardnet.ShardnetV1alpha1().AddressClaims().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}
