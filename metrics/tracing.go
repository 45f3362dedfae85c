package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// SetupTracing installs the process's OpenTelemetry tracer provider, with
// the exporters the standard environment names:
//
//   - OTEL_TRACES_EXPORTER: a comma-separated list of "otlp", "console"
//     (spans as JSON on stdout) and "none". Unset or empty means "none":
//     unlike the specification's default of "otlp", tracing is off unless
//     asked for, so that a replica never dials a collector nobody runs;
//   - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
//     "grpc" or "http/protobuf" (the default);
//   - OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
//     _HEADERS, _TIMEOUT, _INSECURE, _CERTIFICATE...: read by the OTLP
//     exporters themselves;
//   - OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG: read by the SDK
//     (default parentbased_always_on);
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES: override serviceName
//     and add resource attributes;
//   - OTEL_SDK_DISABLED=true: off, whatever else is set.
//
// When tracing is off the global provider stays the no-op one and shutdown
// does nothing. Otherwise shutdown flushes the spans still buffered; call
// it once the replica has stopped.
func SetupTracing(ctx context.Context, serviceName string) (shutdown func(context.Context) error, err error) {
	tp, err := newTracerProvider(ctx, serviceName, os.Getenv, os.Stdout)
	if err != nil || tp == nil {
		return func(context.Context) error { return nil }, err
	}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return tp.Shutdown, nil
}

// newTracerProvider builds the provider SetupTracing installs, or nil when
// tracing is off. getenv reads the environment; console receives the
// console exporter's output.
func newTracerProvider(ctx context.Context, serviceName string, getenv func(string) string, console io.Writer) (*sdktrace.TracerProvider, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	var exporters []sdktrace.SpanExporter
	closeAll := func() {
		for _, e := range exporters {
			_ = e.Shutdown(ctx)
		}
	}
	for _, name := range strings.Split(getenv("OTEL_TRACES_EXPORTER"), ",") {
		var exp sdktrace.SpanExporter
		var err error
		switch name = strings.TrimSpace(name); name {
		case "", "none":
			continue
		case "otlp":
			exp, err = otlpExporter(ctx, getenv)
		case "console":
			exp, err = stdouttrace.New(stdouttrace.WithWriter(console))
		default:
			err = fmt.Errorf("OTEL_TRACES_EXPORTER: unknown exporter %q (want otlp, console or none)", name)
		}
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("setting up tracing: %w", err)
		}
		exporters = append(exporters, exp)
	}
	if len(exporters) == 0 {
		return nil, nil
	}
	// WithFromEnv comes last so that OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override the built-in name.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(serviceName)),
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		closeAll()
		return nil, fmt.Errorf("setting up tracing: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, e := range exporters {
		opts = append(opts, sdktrace.WithBatcher(e))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

// otlpExporter picks the OTLP transport. Neither exporter dials until it
// has spans to send, so a collector that is down delays nothing at start.
func otlpExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch strings.TrimSpace(proto) {
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	case "grpc":
		return otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTLP protocol %q: want grpc or http/protobuf", proto)
	}
}
