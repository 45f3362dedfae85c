package reconcile

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ovn/nbdb"
)

var (
	spansOnce sync.Once
	spans     *tracetest.InMemoryExporter
)

// recordSpans installs an in-memory exporter as the global provider. The
// package tracers delegate to the first provider ever installed, so it is
// installed once per process and only emptied between tests.
func recordSpans(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	spansOnce.Do(func() {
		spans = tracetest.NewInMemoryExporter()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)))
	})
	spans.Reset()
	t.Cleanup(spans.Reset)
	return spans
}

func spanAttr(s tracetest.SpanStub, key attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func linkedTo(s tracetest.SpanStub, sc trace.SpanContext) bool {
	for _, l := range s.Links {
		if l.SpanContext.TraceID() == sc.TraceID() && l.SpanContext.SpanID() == sc.SpanID() {
			return true
		}
	}
	return false
}

// TestPodReconcileSpans: the reconcile that routes a pod is one trace, its
// stages are children of the "reconcile pod" span, and the Northbound
// transaction that carried its ops (a trace of its own, shared with other
// pods) is linked to the pod's wait for it.
func TestPodReconcileSpans(t *testing.T) {
	exp := recordSpans(t)
	s := startSlice(t)
	ctx := s.ctx()
	node := s.kube.CreateNode(t, "node-t", "10.40.0.9")
	s.kube.WaitNodeReady(t, node.Name, time.Minute)
	s.createSubnet("traced", "10.40.1.0/24", func(sp *kubeovnv1.SubnetSpec) { sp.Default = true })
	s.createNamespace("team-t")
	// Only a pod whose first reconcile finds its switch and port group
	// ready writes the Northbound in the reconcile that routes it; wait so
	// that that reconcile is the one the test inspects.
	waitView(t, ctx, func() error {
		return s.view.Get(ctx, &nbdb.PortGroup{Name: NodePortGroupName("traced", node.Name)})
	})
	s.createPods([]*corev1.Pod{newPod("team-t", "p-0", node.Name, nil)})
	s.waitPods(ctx, "team-t", 1, routed)

	// The span ends just after the patch returns, so it may follow the
	// annotations by a moment.
	var root tracetest.SpanStub
	waitView(t, ctx, func() error {
		for _, sp := range exp.GetSpans() {
			if sp.Name == spanReconcile && spanAttr(sp, attrPod).AsString() == "team-t/p-0" &&
				spanAttr(sp, attrPhase).AsString() == "route" && spanAttr(sp, attrResult).AsString() == "ok" {
				root = sp
				return nil
			}
		}
		return fmt.Errorf("no ok route reconcile span for team-t/p-0 among %d spans", len(exp.GetSpans()))
	})
	if root.Parent.IsValid() {
		t.Errorf("reconcile span has a parent %v", root.Parent.SpanID())
	}
	if got := spanAttr(root, attrShard); got != attribute.IntValue(0) {
		t.Errorf("reconcile span shard = %v, want 0", got.Emit())
	}

	all := exp.GetSpans()
	children := map[string]tracetest.SpanStub{}
	for _, sp := range all {
		if sp.Parent.SpanID() == root.SpanContext.SpanID() && sp.SpanContext.TraceID() == root.SpanContext.TraceID() {
			if _, dup := children[sp.Name]; dup {
				t.Errorf("two %q children", sp.Name)
			}
			children[sp.Name] = sp
		}
	}
	for _, name := range []string{stageResolve, stageIPAM, "nb batch wait", stageIPRecord, stagePatch} {
		c, ok := children[name]
		if !ok {
			t.Errorf("no %q child of the reconcile span; children: %v", name, keys(children))
			continue
		}
		if c.StartTime.Before(root.StartTime) || c.EndTime.After(root.EndTime) {
			t.Errorf("%q span [%v, %v] is outside its parent [%v, %v]", name, c.StartTime, c.EndTime, root.StartTime, root.EndTime)
		}
	}
	// The same stages reach the metrics, traced or not.
	for _, stage := range Stages {
		if s.stages.count(stage) == 0 {
			t.Errorf("stage %q never reported to the metrics", stage)
		}
	}
	wait, ok := children["nb batch wait"]
	if !ok {
		t.FailNow()
	}
	var txn *tracetest.SpanStub
	for i, sp := range all {
		if sp.Name == "nb transaction" && linkedTo(sp, wait.SpanContext) {
			txn = &all[i]
		}
	}
	switch {
	case txn == nil:
		t.Fatal("no nb transaction span linked to the pod's nb batch wait span")
	case !linkedTo(wait, txn.SpanContext):
		t.Error("the nb batch wait span is not linked back to its transaction")
	case spanAttr(*txn, "batch.requests").AsInt64() < 1 || spanAttr(*txn, "batch.ops").AsInt64() < 2:
		t.Errorf("transaction span attributes %v: want at least one request and the fence plus an op", txn.Attributes)
	case spanAttr(*txn, "outcome").AsString() != "committed":
		t.Errorf("transaction outcome %q, want committed", spanAttr(*txn, "outcome").AsString())
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// stageCounts is pod reconciler Metrics that counts the stages reported.
type stageCounts struct {
	NopMetrics
	mu sync.Mutex
	n  map[string]int
}

func (c *stageCounts) Stage(stage string, _ time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[stage]++
}

func (c *stageCounts) count(stage string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[stage]
}

// BenchmarkUntracedSpans measures what the spans of one reconcile (the
// reconcile's and its four stages') cost when nothing traces, the default:
// beside the same spans started the way they were before, with their
// attributes built and every stage's span started whatever the parent.
// go test -run '^$' -bench UntracedSpans ./reconcile/
func BenchmarkUntracedSpans(b *testing.B) {
	ctx := context.Background()
	if _, span := startReconcile(ctx, 0, "ns/p"); span.IsRecording() {
		b.Skip("a tracer provider is installed in this process (run with -run '^$')")
	}
	nop := func(context.Context) error { return nil }
	stages := []string{stageResolve, stageIPAM, stageIPRecord, stagePatch}
	current := func() {
		ctx, span := startReconcile(ctx, 3, "ns/pod-1")
		for _, s := range stages {
			_ = inStage(ctx, s, nop)
		}
		endReconcile(span, "routed", "ok", nil)
	}
	before := func() {
		ctx, span := tracer.Start(ctx, spanReconcile, trace.WithAttributes(attrShard.Int(3), attrPod.String("ns/pod-1")))
		for _, s := range stages {
			sctx, ss := tracer.Start(ctx, s)
			_ = nop(sctx)
			failed(ss, nil)
			ss.End()
		}
		span.SetAttributes(attrPhase.String("routed"), attrResult.String("ok"))
		span.End()
	}
	measure := func(f func()) (ns, allocBytes float64) {
		var m0, m1 runtime.MemStats
		const n = 20000
		runtime.ReadMemStats(&m0)
		start := time.Now()
		for range n {
			f()
		}
		el := time.Since(start)
		runtime.ReadMemStats(&m1)
		return float64(el.Nanoseconds()) / n, float64(m1.TotalAlloc-m0.TotalAlloc) / n
	}
	var cur, old, curB, oldB float64
	for range b.N {
		cur, curB = measure(current)
		old, oldB = measure(before)
	}
	b.ReportMetric(curB, "B/reconcile")
	b.ReportMetric(oldB, "before-B/reconcile")
	b.ReportMetric(cur/old, "time-ratio")
}
