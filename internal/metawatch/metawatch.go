// Package metawatch lists and watches a custom resource as its object
// metadata, for objects whose metadata carries the rest of what a reader
// uses (their spec, written there by their writer), and reads the others
// in full.
//
// The API server encodes a custom resource's metadata alone
// (PartialObjectMetadata) in protobuf, and a watcher decodes it, for a
// fraction of what the object in full costs them in JSON: at 50,000 pods
// the claims and IP records are most of what a replica's restart loads
// (docs/decisions/0009). Client lists and watches it so, decoding the
// API server's bytes where they lie and leaving out the managed fields,
// which the informers drop.
//
// ListWatch turns each object into the object it stands for (in a list,
// into what the informer's cache keeps of it, Kind.Cached), so the
// informer, its transform and every reader see objects as before. An
// object whose metadata does not carry the rest (one written before its
// writer wrote it there, one another writer changed since) is read in
// full: at a list, with one list of every object not labelled as
// carrying it beside the metadata list (an object it has at another
// version than the metadata list is read again), and a GET of each
// labelled one whose metadata turns out not to; in a watch, by a GET.
// Such reads are counted in FullReads.
//
// What a replica can verify from its cache stays what it was: each
// cached object is the object the API server held at its resource
// version. A claim's spec read from its metadata is its spec, since a
// claim is never updated and the annotation must name the claim itself
// (v1alpha1.DecodeSpec); an IP record's is its spec at its generation,
// since the annotation names the generation it describes and the API
// server moves a custom resource's generation at every change of its
// spec (ipcache.DecodeSpec). Anything else is read in full. The
// resources are cluster-scoped.
package metawatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// FullReads counts the objects ListWatch read in full instead of from
// their metadata, by resource and by how (list or get). Register it with
// the process's registry (metrics.RegisterClientGo does).
var FullReads = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "shardnet_full_reads_total",
	Help: "Objects an informer that watches their metadata read in full because their metadata does not carry their spec (objects of an older version or another writer, or changed by one since), by resource and by how they were read (list, get).",
}, []string{"resource", "how"})

// Kind is what ListWatch knows of one resource.
type Kind interface {
	// Resource is the resource's plural name.
	Resource() string
	// FromMetadata returns the object m stands for, as a watch event
	// delivers it, when m carries the rest of it; ok is false when it
	// does not. It may take m's maps and strings.
	FromMetadata(m *metav1.PartialObjectMetadata) (obj runtime.Object, ok bool)
	// Cached is what the informer's cache keeps of obj, an object
	// FromMetadata returned, or obj itself: a list's item. The
	// informer's transform takes either.
	Cached(obj runtime.Object) runtime.Object
	// ListFull lists in full the objects of opts.
	ListFull(ctx context.Context, opts metav1.ListOptions) ([]runtime.Object, error)
	// Get reads one object in full.
	Get(ctx context.Context, name string) (runtime.Object, error)
	// Deleted returns the object a delete event of m stands for when m
	// does not carry the rest of it: from cached, the informer's object
	// of that name and UID, when there is one (nil otherwise), else as
	// much as m tells. With m a bookmark, the object of the informer's
	// type with m's metadata.
	Deleted(m *metav1.PartialObjectMetadata, cached any) runtime.Object
}

// unmarked selects the objects whose metadata is not labelled as
// carrying the rest of them.
var unmarked = v1alpha1.LabelSpecInMetadata + "!=" + v1alpha1.SpecInMetadataV1

// ListWatch is the ListerWatcher of an informer of kind, which lists and
// watches the metadata of its objects (meta, the resource's metadata
// client).
type ListWatch struct {
	meta metadata.ResourceInterface
	kind Kind

	mu sync.Mutex
	// store is the informer's, once SetStore gave it: a deleted object
	// whose metadata does not carry the rest is delivered as cached.
	store cache.Store
}

// New returns the ListWatch of kind over meta, the metadata client of
// its resource.
func New(meta metadata.ResourceInterface, kind Kind) *ListWatch {
	FullReads.WithLabelValues(kind.Resource(), "list")
	FullReads.WithLabelValues(kind.Resource(), "get")
	return &ListWatch{meta: meta, kind: kind}
}

// SetStore gives l the informer's store, which a deleted object is read
// from when its metadata does not carry the rest of it.
func (l *ListWatch) SetStore(s cache.Store) {
	l.mu.Lock()
	l.store = s
	l.mu.Unlock()
}

// IsWatchListSemanticsUnSupported: the reflector lists, then watches;
// the objects read in full at a list are one list, not one GET each.
func (l *ListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (l *ListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// pageSize is how many objects one page of the metadata list holds. A
// decoded PartialObjectMetadata, its managedFields and maps included, is
// about 1.7 KB: 50,000 of them at once were 85 MB of a replica's heap
// per resource while its caches loaded, 8.5 MB for a page of 5,000 and
// 1.7 MB for one of 1,000, beside the page's body (about 700 bytes an
// object) and the body's copy the protobuf serializer decodes. The two
// resources load at once, beside the pods: at 50,000 pods, pages of
// 1,000 left a restarted replica's peak RSS some 30 MiB lower than pages
// of 5,000, with no more of its CPU (docs/decisions/0009).
var pageSize int64 = 1000

// ListWithContext lists every object: the metadata list, a page at a
// time (pageSize; each page's objects are made what the cache keeps,
// Kind.Cached, before the next is read), and one list in full of the
// objects not labelled as carrying the rest. The result is at the
// metadata list's resource version, whole (opts' limit and continue are
// dropped, as the reflector's pager allows): an object the full list
// missed (created between the two) or has at another version than the
// metadata list (changed between the two), or whose metadata does not
// carry the rest though labelled so, is read by a GET; one the full list
// has and the metadata list has not (deleted in between) is left out.
// The two lists run at once.
//
// The metadata list is a consistent read (resource version ""): the API
// server serves it from its watch cache, pages included, where "0" (any
// version, the reflector's first list) would have it ignore the limit.
func (l *ListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.Limit, opts.Continue = 0, ""
	fullOpts := opts
	fullOpts.LabelSelector = unmarked
	if opts.LabelSelector != "" {
		fullOpts.LabelSelector = opts.LabelSelector + "," + fullOpts.LabelSelector
	}
	// The full list runs beside the metadata list's first page: two
	// round trips at once rather than one after the other, at every
	// restart, where the full list is most often empty.
	type listed struct {
		objs []runtime.Object
		err  error
	}
	fullDone := make(chan listed, 1)
	go func() {
		objs, err := l.kind.ListFull(ctx, fullOpts)
		fullDone <- listed{objs, err}
	}()
	var inFull map[string]fullObject
	out := &metav1.List{}
	pageOpts := opts
	pageOpts.Limit, pageOpts.ResourceVersion, pageOpts.ResourceVersionMatch = pageSize, "", ""
	for page := 0; ; page++ {
		metas, err := l.meta.List(ctx, pageOpts)
		if err != nil {
			return nil, err
		}
		if page == 0 {
			full := <-fullDone
			if full.err != nil {
				return nil, full.err
			}
			inFull = make(map[string]fullObject, len(full.objs))
			for _, o := range full.objs {
				if m, err := meta.Accessor(o); err == nil {
					inFull[m.GetName()] = fullObject{m.GetUID(), m.GetResourceVersion(), o}
				}
			}
			out.ListMeta = metav1.ListMeta{ResourceVersion: metas.ResourceVersion}
			out.Items = make([]runtime.RawExtension, 0, len(metas.Items)+int(ptrValue(metas.RemainingItemCount)))
		}
		for i := range metas.Items {
			m := &metas.Items[i]
			// Nothing reads them, and the transforms drop them too.
			m.ManagedFields = nil
			if obj, ok := l.kind.FromMetadata(m); ok {
				out.Items = append(out.Items, runtime.RawExtension{Object: l.kind.Cached(obj)})
				continue
			}
			// The full list's object is used only at the version the
			// metadata list has: one changed between the two lists is
			// read again, or the cache would keep the older version
			// while the watch goes on from after the change.
			f := inFull[m.Name]
			obj := f.obj
			if obj != nil && f.uid == m.UID && f.version == m.ResourceVersion {
				FullReads.WithLabelValues(l.kind.Resource(), "list").Inc()
			} else if obj, err = l.get(ctx, m); err != nil {
				return nil, err
			} else if obj == nil {
				continue
			}
			out.Items = append(out.Items, runtime.RawExtension{Object: l.kind.Cached(obj)})
		}
		if metas.Continue == "" {
			return out, nil
		}
		pageOpts.Continue = metas.Continue
	}
}

// fullObject is an object of a list in full, with its UID and resource
// version.
type fullObject struct {
	uid     types.UID
	version string
	obj     runtime.Object
}

func ptrValue(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// get reads the object m stands for in full; nil when it is gone, or is
// another object of the same name.
func (l *ListWatch) get(ctx context.Context, m *metav1.PartialObjectMetadata) (runtime.Object, error) {
	obj, err := l.kind.Get(ctx, m.Name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %s in full: %w", l.kind.Resource(), m.Name, err)
	}
	FullReads.WithLabelValues(l.kind.Resource(), "get").Inc()
	if a, err := meta.Accessor(obj); err != nil || a.GetUID() != m.UID {
		return nil, nil
	}
	return obj, nil
}

func (l *ListWatch) Watch(opts metav1.ListOptions) (apiwatch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// WatchWithContext watches the objects' metadata, delivering each
// event's object (see ListWithContext). An added or changed object whose
// metadata does not carry the rest is read by a GET; when that fails the
// watch ends, and the reflector watches again from the last event it
// got, so the event comes again.
func (l *ListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
	inner, err := l.meta.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &objectWatch{inner: inner, result: make(chan apiwatch.Event), cancel: cancel}
	go w.run(ctx, l)
	return w, nil
}

type objectWatch struct {
	inner  apiwatch.Interface
	result chan apiwatch.Event
	cancel context.CancelFunc
}

func (w *objectWatch) ResultChan() <-chan apiwatch.Event { return w.result }

func (w *objectWatch) Stop() { w.cancel() }

func (w *objectWatch) run(ctx context.Context, l *ListWatch) {
	defer close(w.result)
	defer w.inner.Stop()
	for {
		var ev apiwatch.Event
		var open bool
		select {
		case <-ctx.Done():
			return
		case ev, open = <-w.inner.ResultChan():
			if !open {
				return
			}
		}
		out, keep, err := l.convert(ctx, ev)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Ending a watch of metadata: an object could not be read in full; the informer watches again from its last event", "resource", l.kind.Resource())
			return
		}
		if !keep {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case w.result <- out:
		}
	}
}

// convert returns the event ev of the metadata watch stands for; keep is
// false for one to leave out (an object gone before it could be read).
// A bookmark carries only metadata, and is delivered as an object of the
// informer's type with m's metadata (FromMetadata's type is the
// informer's).
func (l *ListWatch) convert(ctx context.Context, ev apiwatch.Event) (out apiwatch.Event, keep bool, err error) {
	m, ok := ev.Object.(*metav1.PartialObjectMetadata)
	if !ok || ev.Type == apiwatch.Error {
		return ev, true, nil
	}
	if ev.Type == apiwatch.Bookmark {
		return apiwatch.Event{Type: ev.Type, Object: l.kind.Deleted(m, nil)}, true, nil
	}
	m.ManagedFields = nil
	if obj, ok := l.kind.FromMetadata(m); ok {
		return apiwatch.Event{Type: ev.Type, Object: obj}, true, nil
	}
	if ev.Type == apiwatch.Deleted {
		return apiwatch.Event{Type: ev.Type, Object: l.kind.Deleted(m, l.cached(m))}, true, nil
	}
	obj, err := l.get(ctx, m)
	if err != nil || obj == nil {
		return ev, false, err
	}
	return apiwatch.Event{Type: ev.Type, Object: obj}, true, nil
}

// cached is the informer's object of m's name and UID, or nil.
func (l *ListWatch) cached(m *metav1.PartialObjectMetadata) any {
	l.mu.Lock()
	store := l.store
	l.mu.Unlock()
	if store == nil {
		return nil
	}
	obj, exists, err := store.GetByKey(m.Name)
	if err != nil || !exists {
		return nil
	}
	if a, err := meta.Accessor(obj); err != nil || a.GetUID() != m.UID {
		return nil
	}
	return obj
}

// Patcher patches one object of a resource with a JSON merge patch.
type Patcher func(ctx context.Context, name string, patch []byte) error

// Marks collects the marks of one pass: merge patches that write the
// spec-in-metadata label and an object's spec annotation into its
// metadata, at most Max of them; the objects beyond, and those whose
// spec has no annotation, are counted as left.
type Marks struct {
	Max   int
	marks []mark
	left  int
}

// mark is one object to mark: its name and its patch (markPatch).
type mark struct {
	name  string
	patch []byte
}

// Add adds the mark of the object named name, whose spec annotation is
// spec (ok false: its spec has none), with precondition pre: the
// object's UID, or its resourceVersion, whichever is set (a patch naming
// another UID is refused as invalid, one naming another resourceVersion
// as a conflict).
func (m *Marks) Add(name string, pre metav1.ObjectMeta, spec string, ok bool) {
	if !ok || len(m.marks) == m.Max {
		m.left++
		return
	}
	body, err := markPatch(pre, spec)
	if err != nil {
		m.left++
		return
	}
	m.marks = append(m.marks, mark{name, body})
}

// markPatch is the merge patch of a mark.
func markPatch(pre metav1.ObjectMeta, spec string) ([]byte, error) {
	md := map[string]any{
		"labels":      map[string]string{v1alpha1.LabelSpecInMetadata: v1alpha1.SpecInMetadataV1},
		"annotations": map[string]string{v1alpha1.AnnotationSpec: spec},
	}
	if pre.UID != "" {
		md["uid"] = pre.UID
	}
	if pre.ResourceVersion != "" {
		md["resourceVersion"] = pre.ResourceVersion
	}
	return json.Marshal(map[string]any{"metadata": md})
}

// Apply applies the marks with patch, in order, until ctx ends. It
// returns how many it applied and how many objects remain unmarked: the
// ones Add left, and the marks that failed. An object gone since, or
// changed since (its precondition refused), counts as neither: it is
// read in full, or marked by its writer, as it is now.
func (m *Marks) Apply(ctx context.Context, patch Patcher) (marked, left int, err error) {
	var errs []error
	failed := 0
	for _, mk := range m.marks {
		if ctx.Err() != nil {
			break
		}
		switch err := patch(ctx, mk.name, mk.patch); {
		case err == nil:
			marked++
		case apierrors.IsNotFound(err), apierrors.IsInvalid(err), apierrors.IsConflict(err):
		default:
			failed++
			errs = append(errs, fmt.Errorf("%s: %w", mk.name, err))
		}
	}
	return marked, m.left + failed, errors.Join(errs...)
}

// Full is the part of a Kind that reads objects in full, through
// Client, the resource's typed client (T its object, L its list).
type Full[T, L runtime.Object] struct {
	Client FullClient[T, L]
}

// ListFull lists the objects of opts in full.
func (f Full[T, L]) ListFull(ctx context.Context, opts metav1.ListOptions) ([]runtime.Object, error) {
	l, err := f.Client.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return meta.ExtractList(l)
}

// Get reads one object in full.
func (f Full[T, L]) Get(ctx context.Context, name string) (runtime.Object, error) {
	obj, err := f.Client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// FullClient is the typed client Full reads with.
type FullClient[T, L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}
