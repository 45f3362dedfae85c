package ovn

import (
	"context"
	"sync"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var (
	spansOnce sync.Once
	spans     *tracetest.InMemoryExporter
	testTP    *sdktrace.TracerProvider
)

// recordSpans installs an in-memory exporter as the global provider. The
// package tracer delegates to the first provider ever installed, so it is
// installed once per process and only emptied between tests.
func recordSpans(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	spansOnce.Do(func() {
		spans = tracetest.NewInMemoryExporter()
		testTP = sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		otel.SetTracerProvider(testTP)
	})
	spans.Reset()
	t.Cleanup(spans.Reset)
	return spans
}

func attrOf(s tracetest.SpanStub, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func hasLink(s tracetest.SpanStub, sc trace.SpanContext) bool {
	for _, l := range s.Links {
		if l.SpanContext.TraceID() == sc.TraceID() && l.SpanContext.SpanID() == sc.SpanID() {
			return true
		}
	}
	return false
}

// TestBatcherTracesTransactionAcrossRequests: three callers in three traces
// share one transaction. Each caller's span gets a wait span as its child,
// and the one transaction span is linked to all three waits and they to it.
func TestBatcherTracesTransactionAcrossRequests(t *testing.T) {
	exp := recordSpans(t)
	nb := newFakeNB(7)
	b := newTestBatcher(t, nb, 3, nil) // three one-op requests fill the cap
	caller := testTP.Tracer("test")

	const n = 3
	parents := make([]trace.SpanContext, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		ctx, span := caller.Start(context.Background(), "caller")
		parents[i] = span.SpanContext()
		wg.Go(func() {
			defer span.End()
			_, errs[i] = b.Submit(ctx, insertOp(string(rune('a'+i))))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if got := nb.transactions(); len(got) != 1 {
		t.Fatalf("transactions = %v, want one", got)
	}

	var waits, txns []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case spanWait:
			waits = append(waits, s)
		case spanTransaction:
			txns = append(txns, s)
		}
	}
	if len(waits) != n || len(txns) != 1 {
		t.Fatalf("%d wait spans and %d transaction spans, want %d and 1", len(waits), len(txns), n)
	}
	txn := txns[0]
	for _, want := range []struct {
		key attribute.Key
		val attribute.Value
	}{
		{attrRequests, attribute.IntValue(n)},
		{attrBatchOps, attribute.IntValue(n + 1)}, // the fence
		{attrShard, attribute.IntValue(3)},
		{attrOutcome, attribute.StringValue(string(OutcomeCommitted))},
	} {
		if got, ok := attrOf(txn, want.key); !ok || got != want.val {
			t.Errorf("transaction attribute %s = %v, want %v", want.key, got.Emit(), want.val.Emit())
		}
	}
	if txn.Parent.IsValid() {
		t.Errorf("transaction span has parent %v; it should start its own trace", txn.Parent.SpanID())
	}
	for _, w := range waits {
		found := false
		for _, p := range parents {
			if w.Parent.SpanID() == p.SpanID() && w.SpanContext.TraceID() == p.TraceID() {
				found = true
			}
		}
		if !found {
			t.Errorf("wait span %v is not the child of a caller's span", w.SpanContext.SpanID())
		}
		if !hasLink(txn, w.SpanContext) {
			t.Errorf("transaction span not linked to wait span %v", w.SpanContext.SpanID())
		}
		if !hasLink(w, txn.SpanContext) {
			t.Errorf("wait span %v not linked to the transaction span", w.SpanContext.SpanID())
		}
	}
}

// TestBatcherTracesRequestError: a request refused by the server ends its
// wait span in error and the transaction span records the outcome, while
// the retried transaction of the others commits.
func TestBatcherTracesRequestError(t *testing.T) {
	exp := recordSpans(t)
	nb := newFakeNB(7)
	b := newTestBatcher(t, nb, 2, nil)
	_, errs := submitAll(t, b, [][]ovsdb.Operation{{insertOp("ok")}, {{Op: ovsdb.OperationInsert, Table: "Bad", Row: ovsdb.Row{"name": "x"}}}})
	if errs[0] != nil || errs[1] == nil {
		t.Fatalf("errors = %v, want only the second request to fail", errs)
	}
	var outcomes []string
	failedWaits := 0
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case spanTransaction:
			v, _ := attrOf(s, attrOutcome)
			outcomes = append(outcomes, v.AsString())
		case spanWait:
			if s.Status.Code == codes.Error {
				failedWaits++
			}
		}
	}
	if len(outcomes) != 2 || outcomes[0] != string(OutcomeRequestError) || outcomes[1] != string(OutcomeCommitted) {
		t.Errorf("transaction outcomes = %v, want [request_error committed]", outcomes)
	}
	if failedWaits != 1 {
		t.Errorf("%d wait spans in error, want 1", failedWaits)
	}
}
