package served

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

// Handlers are the change callbacks of a cache of served objects: each is
// called with the namespace and name of every object added, updated or
// deleted. The zero value is ready to use.
type Handlers struct {
	mu  sync.Mutex
	fns []func(namespace, name string)
}

// Add registers fn; it runs on the informer's event goroutine and must
// only queue work.
func (h *Handlers) Add(fn func(namespace, name string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fns = append(h.fns, fn)
}

// Notify calls every handler with obj's namespace and name (obj may be a
// deletion tombstone); kind names the objects in the error of one that
// has no name.
func (h *Handlers) Notify(kind string, obj any) {
	name, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		runtime.HandleError(fmt.Errorf("%s event without a name: %w", kind, err))
		return
	}
	h.mu.Lock()
	fns := h.fns
	h.mu.Unlock()
	for _, fn := range fns {
		fn(name.Namespace, name.Name)
	}
}
