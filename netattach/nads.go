package netattach

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardnet/shardnet/internal/served"
	"github.com/shardnet/shardnet/internal/watch"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Resource is the NetworkAttachmentDefinition resource.
var Resource = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}

var (
	// ErrNotServed: the API server does not serve NetworkAttachmentDefinitions
	// (multus not installed).
	ErrNotServed = errors.New("NetworkAttachmentDefinitions are not served by the API server")
	// ErrNotSynced: it is not known yet whether the resource is served, or
	// the informer has not listed it yet. A retry later can help.
	ErrNotSynced = errors.New("NetworkAttachmentDefinitions are not synced yet")
)

// DefaultRecheckInterval is how often discovery is asked again while the
// resource is not served.
const DefaultRecheckInterval = served.DefaultRecheckInterval

// NADs serves NetworkAttachmentDefinitions from a dynamic informer that
// starts once discovery says the resource is served. Its methods are safe
// for concurrent use.
type NADs struct {
	// RecheckInterval is how often discovery is asked again while the
	// resource is not served; zero means DefaultRecheckInterval. Set it
	// before Start.
	RecheckInterval time.Duration

	disc   discovery.ServerResourcesInterfaceWithContext
	dyn    dynamic.Interface
	resync time.Duration
	logger klog.Logger

	// inf is set when the informer is made, just before it runs.
	inf atomic.Pointer[cache.SharedIndexInformer]
	// notServed holds discovery's last answer while no informer runs.
	notServed atomic.Bool
	// started makes Start single-use; Shutdown sets it too.
	started atomic.Bool
	wg      sync.WaitGroup

	handlers served.Handlers
}

// New returns NADs that list and watch through dyn once disc reports the
// resource. resync is the informer's resync period (0: none); a resync does
// not fire OnChange.
func New(disc discovery.DiscoveryInterface, dyn dynamic.Interface, resync time.Duration, logger klog.Logger) *NADs {
	return &NADs{
		disc:   discovery.ToServerResourcesInterfaceWithContext(disc),
		dyn:    dyn,
		resync: resync,
		logger: logger,
	}
}

// Start checks discovery in the background: when the resource is served it
// starts the informer; when it is not, it logs that once and asks again
// every RecheckInterval until ctx ends, starting the informer when the CRD
// appears. A failed discovery request is retried with backoff. Start never
// blocks; calls after the first do nothing.
func (n *NADs) Start(ctx context.Context) {
	if !n.started.CompareAndSwap(false, true) {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.run(ctx)
	}()
}

// Shutdown waits until the goroutines Start began have returned; the
// context given to Start must be done (or end) for that. A Start after
// Shutdown does nothing.
func (n *NADs) Shutdown() {
	n.started.Store(true)
	n.wg.Wait()
}

// HasSynced is true once the informer has synced, or as soon as discovery
// has answered that the resource is not served: a cluster without multus
// must not wait for it. It is false before the first answer, and again for
// the moment between the CRD appearing and the informer's first list.
func (n *NADs) HasSynced() bool {
	if inf := n.inf.Load(); inf != nil {
		return (*inf).HasSynced()
	}
	return n.notServed.Load()
}

// Config returns spec.config of the NetworkAttachmentDefinition
// namespace/name ("" when the object has none). found=false with a nil
// error means it is not there (yet); OnChange reports when it comes. The
// error is ErrNotServed when the resource is not served, and ErrNotSynced
// before that is known or while the informer has not synced.
func (n *NADs) Config(namespace, name string) (config string, found bool, err error) {
	inf := n.inf.Load()
	if inf == nil {
		if n.notServed.Load() {
			return "", false, ErrNotServed
		}
		return "", false, ErrNotSynced
	}
	if !(*inf).HasSynced() {
		return "", false, ErrNotSynced
	}
	obj, exists, err := (*inf).GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !exists {
		return "", false, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return "", false, fmt.Errorf("NetworkAttachmentDefinition %s/%s: unexpected %T in the cache", namespace, name, obj)
	}
	config, _, _ = unstructured.NestedString(u.Object, "spec", "config")
	return config, true, nil
}

// OnChange registers fn, called with the namespace and name of a
// NetworkAttachmentDefinition after each add, update and delete, so the pod
// path can requeue pods that wait for it. fn runs on the informer's event
// goroutine and must not block. Register before Start so no event is
// missed.
func (n *NADs) OnChange(fn func(namespace, name string)) {
	n.handlers.Add(fn)
}

func (n *NADs) run(ctx context.Context) {
	w := served.Wait{
		What: "NetworkAttachmentDefinitions", Missing: "multus is not installed; attachments will not be served",
		Recheck: n.RecheckInterval, Logger: n.logger, NotServed: func() { n.notServed.Store(true) },
		Served: func(ctx context.Context) (bool, error) { return served.Resources(ctx, n.disc, Resource) },
	}
	if w.Run(ctx) {
		n.runInformer(ctx)
	}
}

// runInformer makes the informer, publishes it and runs it until ctx ends.
func (n *NADs) runInformer(ctx context.Context) {
	inf := dynamicinformer.NewFilteredDynamicInformer(n.dyn, Resource, metav1.NamespaceAll, n.resync, cache.Indexers{}, nil).Informer()
	// Neither call fails on an informer that has not started.
	if err := inf.SetTransform(Trim); err != nil {
		runtime.HandleErrorWithContext(ctx, err, "Trimming NetworkAttachmentDefinitions")
	}
	if _, err := inf.AddEventHandler(watch.Changes(n.notify)); err != nil {
		runtime.HandleErrorWithContext(ctx, err, "Watching NetworkAttachmentDefinitions")
	}
	// Publish before clearing notServed, so HasSynced never reads true
	// from a stale "not served" once the informer exists.
	n.inf.Store(&inf)
	n.notServed.Store(false)
	inf.RunWithContext(klog.NewContext(ctx, n.logger))
}

func (n *NADs) notify(obj any) {
	n.handlers.Notify("NetworkAttachmentDefinition", obj)
}

// Trim is the informer's transform: it keeps metadata.name, namespace and
// resourceVersion and spec.config, which is all Config and the event
// handlers read. It returns a new object and is idempotent; anything other
// than an *unstructured.Unstructured is returned as it is.
func Trim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := map[string]any{
		"metadata": map[string]any{
			"name":            u.GetName(),
			"namespace":       u.GetNamespace(),
			"resourceVersion": u.GetResourceVersion(),
		},
	}
	if config, found, err := unstructured.NestedString(u.Object, "spec", "config"); found && err == nil {
		out["spec"] = map[string]any{"config": config}
	}
	return &unstructured.Unstructured{Object: out}, nil
}
