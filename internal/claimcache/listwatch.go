package claimcache

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// Reading claims as their metadata.
//
// A claim written by this version carries its spec in its metadata too
// (v1alpha1.EncodeSpec), so the claim informer watches claims as their
// metadata only: PartialObjectMetadata over protobuf, which the API
// server encodes, and a replica decodes, for a fraction of what a claim
// in full costs them in JSON. At 50,000 pods that is most of what a
// replica's restart loads (docs/decisions/0009).
//
// ListWatch turns each into the *v1alpha1.AddressClaim it stands for,
// so the informer, its transform and every reader see claims as before.
// A claim whose metadata does not carry its spec (one written before
// the label existed, or one whose annotation was edited so that it no
// longer describes its claim) is read in full: at a list, with one list
// of every claim not so labelled beside the metadata list; in a watch,
// by a GET of that claim. A claim is never updated after its create, so
// its spec read a moment later is the spec it had. Such reads are
// counted (FullReads) and logged nowhere else: they are expected while
// claims of an older version remain.

// FullReads counts the claims ListWatch read in full instead of from
// their metadata, by how (list or get). Register it with the process's
// registry (metrics.RegisterClientGo does).
var FullReads = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "shardnet_claim_full_reads_total",
	Help: "AddressClaims the claim informer read in full because their metadata does not carry their spec (claims of an older version, or an edited annotation), by how they were read (list, get).",
}, []string{"how"})

func init() {
	FullReads.WithLabelValues("list")
	FullReads.WithLabelValues("get")
}

// FullClient reads claims in full: the typed client's AddressClaims().
type FullClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*v1alpha1.AddressClaimList, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.AddressClaim, error)
}

// ListWatch is the ListerWatcher of the claim informer: it lists and
// watches claims as their metadata (meta, the metadata client of
// addressclaims) and reads in full, with full, those whose metadata does
// not carry their spec.
type ListWatch struct {
	meta metadata.ResourceInterface
	full FullClient

	mu sync.Mutex
	// store is the informer's, once SetStore gave it: a deleted claim
	// whose metadata does not carry its spec is delivered as cached.
	store cache.Store
}

// NewListWatch returns the ListWatch of meta and full.
func NewListWatch(meta metadata.Interface, full FullClient) *ListWatch {
	return &ListWatch{meta: meta.Resource(v1alpha1.SchemeGroupVersion.WithResource("addressclaims")), full: full}
}

// SetStore gives l the informer's store, which a deleted claim is read
// from when its metadata does not carry its spec.
func (l *ListWatch) SetStore(s cache.Store) {
	l.mu.Lock()
	l.store = s
	l.mu.Unlock()
}

// IsWatchListSemanticsUnSupported: the reflector lists, then watches;
// a claim read in full at a list is one list, not one GET per claim.
func (l *ListWatch) IsWatchListSemanticsUnSupported() bool { return true }

// unmarked selects the claims whose metadata does not say it carries
// their spec.
var unmarked = v1alpha1.LabelSpecInMetadata + "!=" + v1alpha1.SpecInMetadataV1

func (l *ListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// ListWithContext lists every claim: one metadata list, whole (opts'
// limit and continue are dropped, as the reflector's pager allows), and
// one list in full of the claims not labelled as carrying their spec.
// The result is at the metadata list's resource version: a claim the
// full list missed (created between the two) is read by a GET, one it
// has and the metadata list has not (deleted in between) is left out.
func (l *ListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.Limit, opts.Continue = 0, ""
	fullOpts := opts
	fullOpts.LabelSelector = unmarked
	if opts.LabelSelector != "" {
		fullOpts.LabelSelector = opts.LabelSelector + "," + unmarked
	}
	full, err := l.full.List(ctx, fullOpts)
	if err != nil {
		return nil, err
	}
	metas, err := l.meta.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	inFull := make(map[string]*v1alpha1.AddressClaim, len(full.Items))
	for i := range full.Items {
		inFull[full.Items[i].Name] = &full.Items[i]
	}
	out := &v1alpha1.AddressClaimList{ListMeta: metas.ListMeta, Items: make([]v1alpha1.AddressClaim, 0, len(metas.Items))}
	for i := range metas.Items {
		m := &metas.Items[i]
		if c, ok := fromMetadata(m); ok {
			out.Items = append(out.Items, *c)
			continue
		}
		c := inFull[m.Name]
		if c != nil && c.UID == m.UID {
			FullReads.WithLabelValues("list").Inc()
		} else if c, err = l.get(ctx, m); err != nil {
			return nil, err
		} else if c == nil {
			continue
		}
		out.Items = append(out.Items, *c)
	}
	return out, nil
}

// get reads the claim m stands for in full; nil when it is gone, or is
// another claim of the same name.
func (l *ListWatch) get(ctx context.Context, m *metav1.PartialObjectMetadata) (*v1alpha1.AddressClaim, error) {
	c, err := l.full.Get(ctx, m.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading claim %s in full: %w", m.Name, err)
	}
	FullReads.WithLabelValues("get").Inc()
	if c.UID != m.UID {
		return nil, nil
	}
	return c, nil
}

// fromMetadata returns the claim m stands for when its metadata carries
// its spec. The claim has m's metadata without the spec's annotation.
func fromMetadata(m *metav1.PartialObjectMetadata) (*v1alpha1.AddressClaim, bool) {
	spec, ok, err := v1alpha1.DecodeSpec(m.Name, m.Labels, m.Annotations)
	if !ok || err != nil {
		return nil, false
	}
	c := &v1alpha1.AddressClaim{ObjectMeta: m.ObjectMeta, Spec: spec}
	c.Annotations = withoutSpec(m.Annotations)
	return c, true
}

// withoutSpec is a without its AnnotationSpec entry: nil when that was
// its only one, else a copy.
func withoutSpec(a map[string]string) map[string]string {
	if len(a) == 1 {
		return nil
	}
	out := make(map[string]string, len(a)-1)
	for k, v := range a {
		if k != v1alpha1.AnnotationSpec {
			out[k] = v
		}
	}
	return out
}

func (l *ListWatch) Watch(opts metav1.ListOptions) (apiwatch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// WatchWithContext watches claims as their metadata, delivering each
// event's claim (see ListWithContext). An added or changed claim whose
// metadata does not carry its spec is read by a GET; when that fails
// the watch ends, and the reflector watches again from the last event
// it got, so the event comes again.
func (l *ListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
	inner, err := l.meta.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &claimWatch{inner: inner, result: make(chan apiwatch.Event), cancel: cancel}
	go w.run(ctx, l)
	return w, nil
}

type claimWatch struct {
	inner  apiwatch.Interface
	result chan apiwatch.Event
	cancel context.CancelFunc
}

func (w *claimWatch) ResultChan() <-chan apiwatch.Event { return w.result }

func (w *claimWatch) Stop() { w.cancel() }

func (w *claimWatch) run(ctx context.Context, l *ListWatch) {
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
// false for one to leave out (a claim gone before it could be read).
func (l *ListWatch) convert(ctx context.Context, ev apiwatch.Event) (out apiwatch.Event, keep bool, err error) {
	m, ok := ev.Object.(*metav1.PartialObjectMetadata)
	if !ok || ev.Type == apiwatch.Error {
		return ev, true, nil
	}
	if ev.Type == apiwatch.Bookmark {
		return apiwatch.Event{Type: ev.Type, Object: &v1alpha1.AddressClaim{ObjectMeta: m.ObjectMeta}}, true, nil
	}
	if c, ok := fromMetadata(m); ok {
		return apiwatch.Event{Type: ev.Type, Object: c}, true, nil
	}
	if ev.Type == apiwatch.Deleted {
		return apiwatch.Event{Type: ev.Type, Object: l.deleted(m)}, true, nil
	}
	c, err := l.get(ctx, m)
	if err != nil || c == nil {
		return ev, false, err
	}
	return apiwatch.Event{Type: ev.Type, Object: c}, true, nil
}

// deleted is the claim a delete event of m stands for when m does not
// carry its spec: the cached claim of that UID, with m's metadata, or,
// when the informer has not cached it yet, the subnet and address its
// name and labels tell (v1alpha1.ClaimName), and no more.
func (l *ListWatch) deleted(m *metav1.PartialObjectMetadata) *v1alpha1.AddressClaim {
	l.mu.Lock()
	store := l.store
	l.mu.Unlock()
	c := &v1alpha1.AddressClaim{ObjectMeta: m.ObjectMeta}
	if store != nil {
		if obj, exists, err := store.GetByKey(m.Name); err == nil && exists {
			spec, _, ok := SpecOf(obj)
			if mo, isMeta := obj.(metav1.Object); ok && isMeta && mo.GetUID() == m.UID {
				c.Spec = *spec
				return c
			}
		}
	}
	if subnet := m.Labels[v1alpha1.LabelSubnet]; subnet != "" && strings.HasPrefix(m.Name, subnet+".") {
		rest := m.Name[len(subnet)+1:]
		a, err := netip.ParseAddr(rest)
		if b, herr := hex.DecodeString(rest); err != nil && herr == nil && len(b) == 16 {
			a, err = netip.AddrFrom16([16]byte(b)), nil
		}
		if err == nil && v1alpha1.ClaimName(subnet, a) == m.Name {
			c.Spec.Subnet, c.Spec.Address = subnet, a.String()
		}
	}
	return c
}
