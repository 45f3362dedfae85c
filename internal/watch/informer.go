package watch

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Informer is a shared index informer of obj that lists and watches with
// list and watch (a typed client's List and Watch), as client-go's
// generated informers do, and keeps its watches through an early end
// (Resume). client is the typed client, which client-go asks whether it
// serves watch-lists, as it asks it for its generated informers.
func Informer(client any, resource string, obj runtime.Object, resync time.Duration, indexers cache.Indexers,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	watch func(context.Context, metav1.ListOptions) (apiwatch.Interface, error),
) cache.SharedIndexInformer {
	lw := &cache.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: watch}
	return cache.NewSharedIndexInformer(Resume(cache.ToListWatcherWithWatchListSemantics(lw, client), resource), obj, resync, indexers)
}

// PodInformer is Informer for the pods of namespace (every namespace when
// it is empty): client-go's pod informer, its watches kept through an
// early end.
func PodInformer(c kubernetes.Interface, namespace string, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	pods := c.CoreV1().Pods(namespace)
	return Informer(c, "pods", &corev1.Pod{}, resync, indexers,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) },
		pods.Watch)
}
