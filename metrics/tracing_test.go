package metrics

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestTracerProviderFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		enabled bool
		wantErr string
	}{
		{name: "unset is off", env: nil},
		{name: "none", env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}},
		{name: "disabled wins", env: map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}},
		{name: "console", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, enabled: true},
		{name: "otlp defaults to http", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, enabled: true},
		{name: "otlp grpc", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, enabled: true},
		{name: "traces protocol wins", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "bogus", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, enabled: true},
		{name: "list", env: map[string]string{"OTEL_TRACES_EXPORTER": "console, otlp"}, enabled: true},
		{name: "unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: `unknown exporter "zipkin"`},
		{name: "unknown protocol", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: `"http/json"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var out bytes.Buffer
			tp, err := newTracerProvider(ctx, "shardnet-test", func(k string) string { return tc.env[k] }, &out)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %s", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatal(err)
			case (tp != nil) != tc.enabled:
				t.Fatalf("provider %v, want enabled=%v", tp, tc.enabled)
			case tp == nil:
				return
			}
			defer func() {
				shutdown, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				_ = tp.Shutdown(shutdown)
			}()
			if tc.env["OTEL_TRACES_EXPORTER"] != "console" {
				return
			}
			_, span := tp.Tracer("test").Start(ctx, "a span")
			span.End()
			if err := tp.ForceFlush(ctx); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); !strings.Contains(got, `"a span"`) || !strings.Contains(got, "shardnet-test") {
				t.Fatalf("console output lacks the span or the service name:\n%s", got)
			}
		})
	}
}

// TestTracerProviderExportsOTLP: with OTEL_TRACES_EXPORTER=otlp the spans
// reach the endpoint OTEL_EXPORTER_OTLP_ENDPOINT names, over HTTP by
// default.
func TestTracerProviderExportsOTLP(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			posts.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tp, err := newTracerProvider(ctx, "shardnet-test", os.Getenv, nil)
	if err != nil || tp == nil {
		t.Fatalf("provider %v, err %v", tp, err)
	}
	_, span := tp.Tracer("test").Start(ctx, "exported")
	span.End()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if posts.Load() == 0 {
		t.Fatal("no OTLP/HTTP export reached the endpoint")
	}
}
