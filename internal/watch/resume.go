package watch

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"

	"github.com/prometheus/client_golang/prometheus"
)

// A watch the API server ends within a second of its start, before it
// delivered anything, is what client-go's reflector calls a "very short
// watch": it treats it as a failure, waits its backoff (0.8 to 1.6 s at
// first) and lists again. The API server's watch cache ends a watch that
// way when its client does not keep up with its buffer, and a watch opened
// just before a burst of writes (a replica started as pods are created
// by the thousand) gets a buffer of a few dozen events: on a busy API
// server it is ended before its first event reaches the client, and the
// informer stands still for the backoff while the events keep coming.
//
// Resume makes such a watch a moment in the informer's life instead: the
// watch is opened again from the same resource version (nothing was
// delivered, so the informer is where it was), at most maxResumes times
// and only within that first second. A watch that delivered something, or
// lived longer, ends as before, and the reflector watches again at once,
// from where it got to; one the API server will not open again (an error,
// a resource version it no longer has) ends as before too, and the
// reflector does what it does with it. Initial-event streams (the
// reflector's watch-list) are left alone: opened again they would deliver
// their initial events twice.

// shortWatch is the age under which the reflector counts a watch that
// delivered nothing as failed (client-go's handleWatch).
const shortWatch = time.Second

// maxResumes bounds how often one watch is opened again.
const maxResumes = 3

// Resumes counts the watches Resume opened again, by resource. Register
// it with the process's registry (metrics.RegisterClientGo does).
var Resumes = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "shardnet_watch_resumes_total",
	Help: "Watches the API server ended before they delivered anything, within a second of their start, opened again from the same resource version instead of ending the informer's watch (client-go would back off and list again), by resource.",
}, []string{"resource"})

// Resume wraps lw, the ListerWatcher of an informer of resource, so that
// its watches outlive an early end by the API server (see above). What
// lw says about the watch-list semantics of its client is kept. The
// resource's series of Resumes starts at 0 here, so that rate() sees its
// first resume.
func Resume(lw cache.ListerWatcher, resource string) cache.ListerWatcher {
	Resumes.WithLabelValues(resource)
	return &resuming{
		inner:       cache.ToListerWatcherWithContext(lw),
		unsupported: watchlist.DoesClientNotSupportWatchListSemantics(lw),
		resource:    resource,
		now:         time.Now,
	}
}

type resuming struct {
	inner       cache.ListerWatcherWithContext
	unsupported bool
	resource    string
	// now is time.Now but in tests.
	now func() time.Time
}

func (r *resuming) List(opts metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), opts)
}

func (r *resuming) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return r.inner.ListWithContext(ctx, opts)
}

func (r *resuming) Watch(opts metav1.ListOptions) (apiwatch.Interface, error) {
	return r.WatchWithContext(context.Background(), opts)
}

// IsWatchListSemanticsUnSupported passes on what the wrapped
// ListerWatcher says (client-go's watchlist package asks it).
func (r *resuming) IsWatchListSemanticsUnSupported() bool { return r.unsupported }

func (r *resuming) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
	start := r.now()
	w, err := r.inner.WatchWithContext(ctx, opts)
	if err != nil || !resumable(opts) {
		return w, err
	}
	rw := &resumingWatch{result: make(chan apiwatch.Event), stop: make(chan struct{})}
	go rw.run(ctx, r, opts, start, w)
	return rw, nil
}

// resumable reports whether a watch of opts can be opened again as it
// was: from a resource version, with no initial events.
func resumable(opts metav1.ListOptions) bool {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return false
	}
	return opts.ResourceVersion != "" && opts.ResourceVersion != "0"
}

// resumingWatch forwards the events of the current watch and opens it
// again when it ends early.
type resumingWatch struct {
	result   chan apiwatch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *resumingWatch) ResultChan() <-chan apiwatch.Event { return w.result }

func (w *resumingWatch) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

func (w *resumingWatch) run(ctx context.Context, r *resuming, opts metav1.ListOptions, start time.Time, cur apiwatch.Interface) {
	defer close(w.result)
	delivered := false
	for resumes := 0; ; resumes++ {
		if !w.forward(cur, &delivered) {
			return
		}
		if delivered || resumes == maxResumes || r.now().Sub(start) >= shortWatch || ctx.Err() != nil {
			return
		}
		next, err := r.inner.WatchWithContext(ctx, opts)
		if err != nil {
			// The reflector sees a short watch and handles it as it
			// would have: a backoff, then a list.
			klog.FromContext(ctx).V(2).Info("Watch ended early and could not be opened again", "resource", r.resource, "resourceVersion", opts.ResourceVersion, "err", err)
			return
		}
		Resumes.WithLabelValues(r.resource).Inc()
		klog.FromContext(ctx).V(2).Info("Watch ended by the API server before it delivered anything; opened again from the same resource version", "resource", r.resource, "resourceVersion", opts.ResourceVersion, "resumes", resumes+1)
		cur = next
	}
}

// forward passes cur's events on until it ends (true) or the watch is
// stopped (false). cur is stopped either way.
func (w *resumingWatch) forward(cur apiwatch.Interface, delivered *bool) bool {
	defer cur.Stop()
	for {
		select {
		case <-w.stop:
			return false
		case ev, ok := <-cur.ResultChan():
			if !ok {
				return true
			}
			select {
			case w.result <- ev:
				*delivered = true
			case <-w.stop:
				return false
			}
		}
	}
}
