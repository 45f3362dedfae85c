package reconcile

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracer comes from the global provider, a no-op until the process installs
// one (metrics.SetupTracing): an untraced reconcile pays a few context
// lookups per stage.
var tracer = otel.Tracer("github.com/shardnet/shardnet/reconcile")

// Span names of a pod reconcile and its stages. The Northbound wait
// ("nb batch wait") is the batcher's own span, a child of the reconcile
// span through the context passed to Submit.
const (
	spanReconcile = "reconcile pod"
	stageResolve  = "resolve"
	stageIPAM     = "ipam"
	stageIPRecord = "ip record"
	stagePatch    = "patch"
)

// The pod key is a span attribute only: spans are sampled and stored per
// request, so it costs nothing like a metric label would.
const (
	attrShard  = attribute.Key("shard")
	attrPod    = attribute.Key("pod")
	attrPhase  = attribute.Key("phase")
	attrResult = attribute.Key("result")
)

// startReconcile starts a reconcile's span. Its attributes are set only
// when the span records: untraced (the no-op provider, or a trace not
// sampled), building them would be garbage on every reconcile.
func startReconcile(ctx context.Context, shard int, key string) (context.Context, trace.Span) {
	ctx, span := tracer.Start(ctx, spanReconcile)
	if span.IsRecording() {
		span.SetAttributes(attrShard.Int(shard), attrPod.String(key))
	}
	return ctx, span
}

// endReconcile records what the reconcile did. An "invalid" result is the
// pod's fault and not retried, but it is still an error to whoever reads
// the trace.
func endReconcile(span trace.Span, phase, result string, err error) {
	if span.IsRecording() {
		span.SetAttributes(attrPhase.String(phase), attrResult.String(result))
		failed(span, err)
	}
	span.End()
}

// StageNB is the stage name of the wait for the Northbound transaction
// that carries the pod's ops (the batcher's "nb batch wait" span).
const StageNB = "nb"

// Stages are the stage names StageMetrics receives, in the order of a
// pod's allocation.
var Stages = []string{stageResolve, stageIPAM, StageNB, stageIPRecord, stagePatch}

// StageMetrics, when the pod reconciler's Metrics implement it, receives
// the duration of every reconcile stage (Stages), traced or not: the
// breakdown of a pod's time that the bench reports.
type StageMetrics interface {
	Stage(stage string, d time.Duration)
}

type stageMetricsKey struct{}

// withStageMetrics makes inStage report to m, when m is a StageMetrics.
func withStageMetrics(ctx context.Context, m any) context.Context {
	if sm, ok := m.(StageMetrics); ok {
		return context.WithValue(ctx, stageMetricsKey{}, sm)
	}
	return ctx
}

// inStage runs f in the child span of one reconcile stage, when the
// reconcile's span records. A child of a span that does not record would
// not be sampled either (the default sampler follows the parent), and
// starting it would cost a context and a span for nothing.
func inStage(ctx context.Context, name string, f func(context.Context) error) error {
	start := time.Now()
	if !trace.SpanFromContext(ctx).IsRecording() {
		err := f(ctx)
		observeStage(ctx, name, start)
		return err
	}
	ctx, span := tracer.Start(ctx, name)
	defer span.End()
	err := f(ctx)
	failed(span, err)
	observeStage(ctx, name, start)
	return err
}

// timed runs f as a stage that has a span of its own elsewhere (the
// batcher's wait span, for StageNB): only its duration is reported.
func timed(ctx context.Context, name string, f func(context.Context) error) error {
	start := time.Now()
	err := f(ctx)
	observeStage(ctx, name, start)
	return err
}

func observeStage(ctx context.Context, name string, start time.Time) {
	if sm, ok := ctx.Value(stageMetricsKey{}).(StageMetrics); ok {
		sm.Stage(name, time.Since(start))
	}
}

func failed(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}
