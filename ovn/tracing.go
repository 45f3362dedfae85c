package ovn

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracer comes from the global provider, a no-op until the process installs
// one (metrics.SetupTracing), so that tests and benchmarks pay for a span
// no more than a context lookup.
var tracer = otel.Tracer("github.com/shardnet/shardnet/ovn")

// Span names, attribute keys and their meaning are part of what operators
// query; keep them stable.
const (
	spanWait        = "nb batch wait"
	spanTransaction = "nb transaction"

	attrShard    = attribute.Key("shard")
	attrOps      = attribute.Key("ops")
	attrRequests = attribute.Key("batch.requests")
	attrBatchOps = attribute.Key("batch.ops")
	attrOutcome  = attribute.Key("outcome")
)

// startWait starts the span of one request's time inside Submit: queueing,
// lingering for company and the transaction that carries it.
// Its attributes are set only when it records: untraced, they would be
// garbage on every request.
func (b *Batcher) startWait(ctx context.Context, ops int) (context.Context, trace.Span) {
	ctx, span := tracer.Start(ctx, spanWait)
	if span.IsRecording() {
		span.SetAttributes(attrShard.Int(b.shard), attrOps.Int(ops))
	}
	return ctx, span
}

func endWait(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// startTransaction starts the span of one transaction. A transaction
// carries the requests of many reconciles, each in its own trace, so it
// cannot be the child of all of them: it starts a trace of its own, linked
// to every request's wait span, and each wait span is linked back to it so
// that the transaction can be found from either side.
func (b *Batcher) startTransaction(reqs []*request, ops int) trace.Span {
	var links []trace.Link
	for _, r := range reqs {
		if sc := trace.SpanContextFromContext(r.ctx); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	_, span := tracer.Start(context.Background(), spanTransaction,
		trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(links...),
		trace.WithAttributes(attrShard.Int(b.shard), attrRequests.Int(len(reqs)), attrBatchOps.Int(ops)))
	if sc := span.SpanContext(); sc.IsValid() {
		for _, r := range reqs {
			trace.SpanFromContext(r.ctx).AddLink(trace.Link{SpanContext: sc})
		}
	}
	return span
}

// observe reports a transaction that was sent to the metrics and ends its
// span.
func (b *Batcher) observe(span trace.Span, requests, ops int, latency time.Duration, out Outcome) {
	b.cfg.Metrics.ObserveTransaction(b.shard, requests, ops, latency, out)
	span.SetAttributes(attrOutcome.String(string(out)))
	if out != OutcomeCommitted {
		span.SetStatus(codes.Error, string(out))
	}
	span.End()
}
