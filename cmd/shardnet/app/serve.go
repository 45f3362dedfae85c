package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"

	"github.com/shardnet/shardnet/metrics"
)

// Server is a replica with its HTTP endpoints: /metrics on
// Options.MetricsAddr (HTTPS behind the API server's authentication and
// authorisation with --metrics-secure), /healthz and /readyz on
// Options.HealthAddr (an empty address disables its endpoint), and, only
// with --enable-pprof, /debug/pprof/ on the loopback Options.PprofAddr.
// Each replica has a registry of its own, so that tests can run several in
// one process and scrape each.
type Server struct {
	replica   *Replica
	servers   []*http.Server
	listeners []net.Listener // listeners[i] is servers[i]'s
	metrics   net.Listener   // nil when /metrics is disabled
	pprof     net.Listener   // nil without --enable-pprof
}

// NewServer builds the replica and binds its endpoints, so that an address
// in use fails here and a ":0" address has its port chosen by the time
// NewServer returns. rc, when not nil, replaces --kubeconfig.
func NewServer(ctx context.Context, opts Options, rc *rest.Config) (*Server, error) {
	reg, err := newRegistry()
	if err != nil {
		return nil, err
	}
	r, err := NewReplica(ctx, opts, rc, reg)
	if err != nil {
		return nil, err
	}
	s := &Server{replica: r}
	if err := s.bind(opts, rc, reg, healthMux(r)); err != nil {
		return nil, s.abort(err)
	}
	return s, nil
}

// liveHeapMetric is the runtime metric of the heap the last collection
// kept, exported as go_gc_heap_live_bytes.
var liveHeapMetric = regexp.MustCompile(`^/gc/heap/live:bytes$`)

// newRegistry is a replica's registry with the process-wide collectors:
// the Go runtime, the process, the build and client-go's REST client.
func newRegistry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	// Beside the default Go metrics, the live heap (go_gc_heap_live_bytes:
	// what the last collection kept), which --memory-limit is sized from.
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: liveHeapMetric})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := metrics.RegisterBuildInfo(reg, buildInfo()); err != nil {
		return nil, err
	}
	if err := metrics.RegisterClientGo(reg); err != nil {
		return nil, err
	}
	return reg, nil
}

// bind binds the endpoints opts ask for: /metrics of reg, health, and
// pprof. rc is the API server that authenticates and authorises metrics
// requests with --metrics-secure (nil: --kubeconfig or in-cluster). On an
// error, what was bound stays in s.listeners for the caller to close.
func (s *Server) bind(opts Options, rc *rest.Config, reg *prometheus.Registry, health http.Handler) error {
	if opts.MetricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		var h http.Handler = mux
		var tlsConf *tls.Config
		if opts.MetricsSecure {
			var err error
			if h, tlsConf, err = secureMetrics(opts, rc, mux); err != nil {
				return err
			}
		}
		l, err := s.listen(opts.MetricsAddr, h, tlsConf)
		if err != nil {
			return err
		}
		s.metrics = l
	}
	if opts.EnablePprof {
		if err := loopbackAddr(opts.PprofAddr); err != nil {
			return err
		}
		l, err := s.listen(opts.PprofAddr, pprofMux(), nil)
		if err != nil {
			return err
		}
		if err := checkLoopback(l); err != nil {
			return err
		}
		s.pprof = l
	}
	if opts.HealthAddr != "" {
		if _, err := s.listen(opts.HealthAddr, health, nil); err != nil {
			return err
		}
	}
	return nil
}

// listen binds addr for h, over TLS when tlsConf is not nil.
func (s *Server) listen(addr string, h http.Handler, tlsConf *tls.Config) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	if tlsConf != nil {
		l = tls.NewListener(l, tlsConf)
	}
	s.servers = append(s.servers, &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 5 * time.Second})
	s.listeners = append(s.listeners, l)
	return l, nil
}

// abort releases what NewServer took before failing.
func (s *Server) abort(err error) error {
	for _, l := range s.listeners {
		_ = l.Close()
	}
	s.replica.close()
	return err
}

// Replica is the replica the server runs.
func (s *Server) Replica() *Replica { return s.replica }

// MetricsAddr is the address /metrics is bound to, or "" when disabled.
// With --metrics-secure it speaks HTTPS.
func (s *Server) MetricsAddr() string { return addrOf(s.metrics) }

// PprofAddr is the loopback address /debug/pprof/ is bound to, or ""
// without --enable-pprof.
func (s *Server) PprofAddr() string { return addrOf(s.pprof) }

func addrOf(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}

// Run serves the endpoints and runs the replica until ctx ends, then hands
// its shards over and stops the endpoints. An endpoint that fails stops
// the replica the same way: Run never returns with the replica still
// running. It may be called once.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := s.serve()
	ran := make(chan error, 1)
	go func() { ran <- s.replica.Run(ctx) }()
	var err error
	select {
	case err = <-ran:
	case err = <-served:
		cancel()
		<-ran
	}
	s.shutdown()
	return err
}

// serve serves every bound endpoint in the background; the channel
// receives the error of an endpoint that fails.
func (s *Server) serve() <-chan error {
	served := make(chan error, len(s.servers))
	for i, srv := range s.servers {
		l := s.listeners[i]
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				served <- err
			}
		}()
	}
	return served
}

// shutdown stops the endpoints, giving requests in flight 5 s.
func (s *Server) shutdown() {
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	for _, srv := range s.servers {
		_ = srv.Shutdown(ctx)
	}
}
