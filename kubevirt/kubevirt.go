package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/internal/served"
	"github.com/shardnet/shardnet/internal/watch"
)

// The resources read.
var (
	VirtualMachines         = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	VirtualMachineInstances = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
)

// Kinds as owner references name them.
const (
	KindVM  = "VirtualMachine"
	KindVMI = "VirtualMachineInstance"
)

// SubnetAnnotation is the key of a VM template's annotations that is kept
// in the cache: the subnet the VM's next launcher pod asks for.
const SubnetAnnotation = "ovn.kubernetes.io/logical_switch"

var (
	// ErrNotServed: the API server does not serve kubevirt.io/v1
	// VirtualMachines and VirtualMachineInstances (KubeVirt not installed).
	ErrNotServed = errors.New("KubeVirt VirtualMachines are not served by the API server")
	// ErrNotSynced: it is not known yet whether they are served, or the
	// informers have not listed them yet. A retry later can help.
	ErrNotSynced = errors.New("KubeVirt VirtualMachines are not synced yet")
)

// DefaultRecheckInterval is how often discovery is asked again while the
// resources are not served.
const DefaultRecheckInterval = served.DefaultRecheckInterval

// Object is what the pod path reads of a VM or VMI.
type Object struct {
	Namespace, Name string
	UID             types.UID
	// Deleting is true once the object has a deletion timestamp.
	Deleting bool
	// VM is, for a VMI, the name of the VirtualMachine that owns it; ""
	// for an ephemeral VMI and for a VM.
	VM string
	// Subnet is, for a VM, its template's ovn.kubernetes.io/logical_switch.
	Subnet string
}

// Cache serves VMs and VMIs from dynamic informers that start once
// discovery says both resources are served. Its methods are safe for
// concurrent use.
type Cache struct {
	// RecheckInterval is how often discovery is asked again while the
	// resources are not served; zero means DefaultRecheckInterval. Set it
	// before Start.
	RecheckInterval time.Duration

	disc   discovery.ServerResourcesInterfaceWithContext
	dyn    dynamic.Interface
	resync time.Duration
	logger klog.Logger

	// infs holds the VM and VMI informers once made, just before they run.
	infs atomic.Pointer[[2]cache.SharedIndexInformer]
	// notServed holds discovery's last answer while no informer runs.
	notServed atomic.Bool
	// started makes Start single-use; Shutdown sets it too.
	started atomic.Bool
	wg      sync.WaitGroup

	handlers served.Handlers
}

// New returns a Cache that lists and watches through dyn once disc
// reports the resources. resync is the informers' resync period.
func New(disc discovery.DiscoveryInterface, dyn dynamic.Interface, resync time.Duration, logger klog.Logger) *Cache {
	return &Cache{disc: discovery.ToServerResourcesInterfaceWithContext(disc), dyn: dyn, resync: resync, logger: logger}
}

// Start checks discovery in the background and starts the informers when
// the resources are served, now or later. It never blocks; calls after the
// first do nothing.
func (c *Cache) Start(ctx context.Context) {
	if !c.started.CompareAndSwap(false, true) {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.run(ctx)
	}()
}

// Shutdown waits until the goroutines Start began have returned; the
// context given to Start must be done (or end) for that.
func (c *Cache) Shutdown() {
	c.started.Store(true)
	c.wg.Wait()
}

// HasSynced is true once both informers have synced, or as soon as
// discovery has answered that the resources are not served.
func (c *Cache) HasSynced() bool {
	if infs := c.infs.Load(); infs != nil {
		return infs[0].HasSynced() && infs[1].HasSynced()
	}
	return c.notServed.Load()
}

// Served reports whether the informers run and have synced: only then
// does a missing object mean that it does not exist.
func (c *Cache) Served() bool {
	infs := c.infs.Load()
	return infs != nil && infs[0].HasSynced() && infs[1].HasSynced()
}

// VM returns the VirtualMachine namespace/name; found is false when it is
// not in the cache. err is ErrNotServed or ErrNotSynced when the cache
// cannot say.
func (c *Cache) VM(namespace, name string) (Object, bool, error) { return c.get(0, namespace, name) }

// VMI returns the VirtualMachineInstance namespace/name, as VM does.
func (c *Cache) VMI(namespace, name string) (Object, bool, error) {
	return c.get(1, namespace, name)
}

func (c *Cache) get(i int, namespace, name string) (Object, bool, error) {
	infs := c.infs.Load()
	if infs == nil {
		if c.notServed.Load() {
			return Object{}, false, ErrNotServed
		}
		return Object{}, false, ErrNotSynced
	}
	if !infs[0].HasSynced() || !infs[1].HasSynced() {
		return Object{}, false, ErrNotSynced
	}
	obj, exists, err := infs[i].GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !exists {
		return Object{}, false, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return Object{}, false, fmt.Errorf("%s/%s: unexpected %T in the cache", namespace, name, obj)
	}
	return objectOf(u), true, nil
}

// objectOf reads a trimmed object.
func objectOf(u *unstructured.Unstructured) Object {
	o := Object{Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID(), Deleting: u.GetDeletionTimestamp() != nil}
	for _, r := range u.GetOwnerReferences() {
		if r.Kind == KindVM && isKubeVirt(r.APIVersion) {
			o.VM = r.Name
		}
	}
	o.Subnet, _, _ = unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", SubnetAnnotation)
	return o
}

// isKubeVirt reports whether an owner reference's apiVersion is
// kubevirt.io's, of any version.
func isKubeVirt(apiVersion string) bool { return strings.HasPrefix(apiVersion, "kubevirt.io/") }

// OnChange registers fn, called with the namespace and name of a VM or
// VMI after each add, update and delete. fn runs on an informer's event
// goroutine and must not block. Register before Start.
func (c *Cache) OnChange(fn func(namespace, name string)) {
	c.handlers.Add(fn)
}

func (c *Cache) run(ctx context.Context) {
	w := served.Wait{
		What: "KubeVirt VirtualMachines", Missing: "KubeVirt is not installed; VM launcher pods are ordinary pods until it is",
		Recheck: c.RecheckInterval, Logger: c.logger, NotServed: func() { c.notServed.Store(true) },
		Served: func(ctx context.Context) (bool, error) {
			return served.Resources(ctx, c.disc, VirtualMachines, VirtualMachineInstances)
		},
	}
	if w.Run(ctx) {
		c.runInformers(ctx)
	}
}

// runInformers makes both informers, publishes them and runs them until
// ctx ends.
func (c *Cache) runInformers(ctx context.Context) {
	var infs [2]cache.SharedIndexInformer
	for i, gvr := range []schema.GroupVersionResource{VirtualMachines, VirtualMachineInstances} {
		inf := dynamicinformer.NewFilteredDynamicInformer(c.dyn, gvr, metav1.NamespaceAll, c.resync, cache.Indexers{}, nil).Informer()
		if err := inf.SetTransform(Trim); err != nil {
			runtime.HandleErrorWithContext(ctx, err, "Trimming KubeVirt objects", "resource", gvr.Resource)
		}
		if _, err := inf.AddEventHandler(watch.Changes(c.notify)); err != nil {
			runtime.HandleErrorWithContext(ctx, err, "Watching KubeVirt objects", "resource", gvr.Resource)
		}
		infs[i] = inf
	}
	c.infs.Store(&infs)
	c.notServed.Store(false)
	ctx = klog.NewContext(ctx, c.logger)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); infs[1].RunWithContext(ctx) }()
	infs[0].RunWithContext(ctx)
	wg.Wait()
}

func (c *Cache) notify(obj any) {
	c.handlers.Notify("KubeVirt", obj)
}

// Trim is the informers' transform: it keeps what Object reads. It returns
// a new object and is idempotent; anything other than an
// *unstructured.Unstructured is returned as it is.
func Trim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	meta := map[string]any{
		"name":            u.GetName(),
		"namespace":       u.GetNamespace(),
		"uid":             string(u.GetUID()),
		"resourceVersion": u.GetResourceVersion(),
	}
	if ts := u.GetDeletionTimestamp(); ts != nil {
		meta["deletionTimestamp"] = ts.UTC().Format(time.RFC3339)
	}
	if refs, found, _ := unstructured.NestedSlice(u.Object, "metadata", "ownerReferences"); found {
		meta["ownerReferences"] = refs
	}
	out := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": meta}
	if s, found, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", SubnetAnnotation); found {
		out["spec"] = map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]any{SubnetAnnotation: s}}}}
	}
	return &unstructured.Unstructured{Object: out}, nil
}
