package controller

import (
	"context"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// informerEvent is one add, update or delete an informer's handlers got,
// as what of made of its object.
type informerEvent[E any] struct {
	kind string
	obj  E
}

// informerEvents records the events of an informer whose objects of
// accepts, in order, for a test to take one at a time (next).
type informerEvents[E any] struct {
	t      *testing.T
	ctx    context.Context
	events chan informerEvent[E]
}

// recordEvents adds a handler to inf that records its events whose
// object (a tombstone's, for a delete) of accepts.
func recordEvents[E any](t *testing.T, ctx context.Context, inf cache.SharedIndexInformer, of func(any) (E, bool)) *informerEvents[E] {
	t.Helper()
	r := &informerEvents[E]{t: t, ctx: ctx, events: make(chan informerEvent[E], 64)}
	note := func(kind string) func(any) {
		return func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if e, ok := of(obj); ok {
				r.events <- informerEvent[E]{kind, e}
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: note("add"), UpdateFunc: func(_, obj any) { note("update")(obj) }, DeleteFunc: note("delete"),
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

// next returns the next recorded event; the test fails when none comes
// before its context ends.
func (r *informerEvents[E]) next() informerEvent[E] {
	r.t.Helper()
	select {
	case e := <-r.events:
		return e
	case <-r.ctx.Done():
		r.t.Fatal("no informer event before the test's deadline")
	}
	return informerEvent[E]{}
}
