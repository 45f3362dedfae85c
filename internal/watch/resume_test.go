package watch

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// scripted is a ListerWatcher whose watches are given in advance: each
// call takes the next one (or its error).
type scripted struct {
	mu      sync.Mutex
	watches []apiwatch.Interface
	errs    []error
	opts    []metav1.ListOptions
	lists   int
}

func (s *scripted) List(opts metav1.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}, nil
}

func (s *scripted) Watch(opts metav1.ListOptions) (apiwatch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts = append(s.opts, opts)
	if len(s.watches) == 0 {
		// What an API server that is going away answers.
		return nil, errors.New("no more watches")
	}
	w, err := s.watches[0], s.errs[0]
	s.watches, s.errs = s.watches[1:], s.errs[1:]
	return w, err
}

// IsWatchListSemanticsUnSupported: the reflector lists, then watches.
func (s *scripted) IsWatchListSemanticsUnSupported() bool { return true }

func (s *scripted) calls() ([]metav1.ListOptions, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]metav1.ListOptions(nil), s.opts...), s.lists
}

// ended is a watch the API server ended before it delivered anything.
func ended() apiwatch.Interface {
	w := apiwatch.NewFake()
	w.Stop()
	return w
}

// delivering is a watch that delivers pods, then ends if end is set.
func delivering(end bool, pods ...*corev1.Pod) apiwatch.Interface {
	w := apiwatch.NewFakeWithChanSize(len(pods), false)
	for _, p := range pods {
		w.Add(p)
	}
	if end {
		w.Stop()
	}
	return w
}

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func script(ws ...apiwatch.Interface) *scripted {
	return &scripted{watches: ws, errs: make([]error, len(ws))}
}

// drain reads w's events until it ends.
func drain(t *testing.T, w apiwatch.Interface) []string {
	t.Helper()
	var names []string
	for ev := range w.ResultChan() {
		names = append(names, ev.Object.(*corev1.Pod).Name)
	}
	return names
}

var from10 = metav1.ListOptions{ResourceVersion: "10", AllowWatchBookmarks: true}

func TestResume(t *testing.T) {
	for _, tc := range []struct {
		name string
		lw   *scripted
		// late: the watch's first end comes after the reflector's second.
		late  bool
		want  []string
		calls int
	}{
		{name: "an early end is opened again", lw: script(ended(), delivering(true, pod("a", "11"))), want: []string{"a"}, calls: 2},
		{name: "twice", lw: script(ended(), ended(), delivering(true, pod("a", "11"))), want: []string{"a"}, calls: 3},
		{name: "a watch that delivered ends", lw: script(delivering(true, pod("a", "11")), delivering(true, pod("b", "12"))), want: []string{"a"}, calls: 1},
		{name: "a watch older than a second ends", lw: script(ended(), delivering(true, pod("a", "11"))), late: true, calls: 1},
		{name: "at most maxResumes times", lw: script(ended(), ended(), ended(), ended(), delivering(true, pod("a", "11"))), calls: 1 + maxResumes},
		{name: "a watch that cannot be opened again ends", lw: script(ended()), calls: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(Resumes.WithLabelValues("pods"))
			r := Resume(tc.lw, "pods").(*resuming)
			t0 := time.Now()
			calls := 0
			r.now = func() time.Time {
				calls++
				if tc.late && calls > 1 {
					return t0.Add(shortWatch)
				}
				return t0
			}
			w, err := r.WatchWithContext(context.Background(), from10)
			if err != nil {
				t.Fatal(err)
			}
			got := drain(t, w)
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Fatalf("delivered %v, want %v", got, tc.want)
			}
			opts, _ := tc.lw.calls()
			if len(opts) != tc.calls {
				t.Fatalf("%d watches opened, want %d", len(opts), tc.calls)
			}
			for i, o := range opts {
				if o.ResourceVersion != "10" || !o.AllowWatchBookmarks {
					t.Fatalf("watch %d opened with %+v, want the options of the first", i, o)
				}
			}
			// The resumes counted: the watches opened again.
			resumed := tc.calls - 1
			if tc.name == "a watch that cannot be opened again ends" {
				resumed = 0
			}
			if got := testutil.ToFloat64(Resumes.WithLabelValues("pods")) - before; got != float64(resumed) {
				t.Fatalf("counted %v resumes, want %d", got, resumed)
			}
		})
	}
}

func TestResumeLeavesWhatCannotBeOpenedAgain(t *testing.T) {
	yes := true
	for _, opts := range []metav1.ListOptions{
		{ResourceVersion: "10", SendInitialEvents: &yes}, // initial events: twice if opened again
		{ResourceVersion: ""},                            // synthetic adds of the current state
		{ResourceVersion: "0"},                           // the same, from the cache
	} {
		inner := ended()
		lw := script(inner, delivering(true, pod("a", "11")))
		w, err := Resume(lw, "pods").(*resuming).WatchWithContext(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if w != inner {
			t.Fatalf("options %+v: the watch was wrapped", opts)
		}
	}
}

func TestResumeStartsItsSeries(t *testing.T) {
	before := testutil.CollectAndCount(Resumes)
	Resume(script(), "series-test")
	if got := testutil.CollectAndCount(Resumes); got != before+1 {
		t.Fatalf("%d series after wrapping a new resource, want %d", got, before+1)
	}
}

func TestResumeStop(t *testing.T) {
	inner := apiwatch.NewFake()
	w, err := Resume(script(inner), "pods").(*resuming).WatchWithContext(context.Background(), from10)
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	w.Stop() // twice: the reflector may
	if got := drain(t, w); len(got) != 0 {
		t.Fatalf("delivered %v after Stop", got)
	}
	if !inner.IsStopped() {
		t.Fatal("the watch it wrapped was not stopped")
	}
}

func TestResumeKeepsWatchListSemantics(t *testing.T) {
	lw := &cache.ListWatch{}
	if got := Resume(cache.ToListWatcherWithWatchListSemantics(lw, nil), "pods").(*resuming).IsWatchListSemanticsUnSupported(); got {
		t.Fatal("a client that serves watch-lists is said not to")
	}
	if got := Resume(script(), "pods").(*resuming).IsWatchListSemanticsUnSupported(); !got {
		t.Fatal("a client that does not serve watch-lists is said to")
	}
}

// signalling is a store that reports every add.
type signalling struct {
	cache.Store
	added chan string
}

func (s signalling) Add(obj any) error {
	if err := s.Store.Add(obj); err != nil {
		return err
	}
	s.added <- obj.(*corev1.Pod).Name
	return nil
}

// TestReflectorKeepsItsWatch runs client-go's reflector over a watch the
// API server ends at once: with Resume it gets the next event from the
// watch opened again, without listing again. Without it the reflector
// would count a very short watch, back off and list a second time before
// any event.
func TestReflectorKeepsItsWatch(t *testing.T) {
	lw := script(ended(), delivering(false, pod("a", "11")))
	store := signalling{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), added: make(chan string, 1)}
	r := cache.NewReflector(Resume(lw, "pods"), &corev1.Pod{}, store, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { r.RunWithContext(ctx); close(done) }()
	if got := <-store.added; got != "a" {
		t.Fatalf("added %q, want a", got)
	}
	opts, lists := lw.calls()
	if lists != 1 {
		t.Fatalf("listed %d times, want once", lists)
	}
	if len(opts) != 2 || opts[1].ResourceVersion != "10" {
		t.Fatalf("watches opened %+v, want two from resource version 10", opts)
	}
	cancel()
	<-done
}
