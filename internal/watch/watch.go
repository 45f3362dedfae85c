// Package watch holds informer event handling shared by the packages that
// watch the API server, and the informers of the objects watched by the
// thousand (pods, IP records, claims), whose watches outlive an early end
// by the API server (Resume).
package watch

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Changes calls fn for every add, delete and update of an object, except
// the updates a resync delivers: the same version again needs no work.
func Changes(fn func(obj any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: fn,
		UpdateFunc: func(old, obj any) {
			o, okOld := old.(metav1.Object)
			n, okNew := obj.(metav1.Object)
			if !okOld || !okNew || o.GetResourceVersion() != n.GetResourceVersion() {
				fn(obj)
			}
		},
		DeleteFunc: fn,
	}
}
