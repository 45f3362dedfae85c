package reconcile

import (
	"context"

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

func startReconcile(ctx context.Context, shard int, key string) (context.Context, trace.Span) {
	return tracer.Start(ctx, spanReconcile, trace.WithAttributes(attrShard.Int(shard), attrPod.String(key)))
}

// endReconcile records what the reconcile did. An "invalid" result is the
// pod's fault and not retried, but it is still an error to whoever reads
// the trace.
func endReconcile(span trace.Span, phase, result string, err error) {
	span.SetAttributes(attrPhase.String(phase), attrResult.String(result))
	failed(span, err)
	span.End()
}

// inStage runs f in the child span of one reconcile stage.
func inStage(ctx context.Context, name string, f func(context.Context) error) error {
	ctx, span := tracer.Start(ctx, name)
	defer span.End()
	err := f(ctx)
	failed(span, err)
	return err
}

func failed(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}
