package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"

	"github.com/shardnet/shardnet/metrics"
)

// Server is a replica with its HTTP endpoints: /metrics and /debug/pprof/
// on Options.MetricsAddr and /healthz, /readyz on Options.HealthAddr (an
// empty address disables its endpoint), each replica with a registry of
// its own, so that tests can run several in one process and scrape each.
type Server struct {
	replica   *Replica
	servers   []*http.Server
	listeners []net.Listener // listeners[i] is servers[i]'s
	metrics   net.Listener   // nil when /metrics is disabled
}

// NewServer builds the replica and binds its endpoints, so that an address
// in use fails here and a ":0" address has its port chosen by the time
// NewServer returns. rc, when not nil, replaces --kubeconfig.
func NewServer(ctx context.Context, opts Options, rc *rest.Config) (*Server, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := metrics.RegisterClientGo(reg); err != nil {
		return nil, err
	}
	r, err := NewReplica(ctx, opts, rc, reg)
	if err != nil {
		return nil, err
	}
	s := &Server{replica: r}
	if opts.MetricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		// Profiles for finding where a replica's time goes; served beside
		// the metrics, never on the health port a kubelet probes.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		if s.metrics, err = s.listen(opts.MetricsAddr, mux); err != nil {
			return nil, s.abort(err)
		}
	}
	if opts.HealthAddr != "" {
		if _, err = s.listen(opts.HealthAddr, healthMux(r)); err != nil {
			return nil, s.abort(err)
		}
	}
	return s, nil
}

func (s *Server) listen(addr string, h http.Handler) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
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
	s.replica.nb.Close()
	s.replica.events.Shutdown()
	return err
}

// Replica is the replica the server runs.
func (s *Server) Replica() *Replica { return s.replica }

// MetricsAddr is the address /metrics is bound to, or "" when disabled.
func (s *Server) MetricsAddr() string {
	if s.metrics == nil {
		return ""
	}
	return s.metrics.Addr().String()
}

// Run serves the endpoints and runs the replica until ctx ends, then hands
// its shards over and stops the endpoints. An endpoint that fails stops
// the replica the same way: Run never returns with the replica still
// running. It may be called once.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, len(s.servers))
	for i, srv := range s.servers {
		l := s.listeners[i]
		go func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				served <- err
			}
		}()
	}
	ran := make(chan error, 1)
	go func() { ran <- s.replica.Run(ctx) }()
	var err error
	select {
	case err = <-ran:
	case err = <-served:
		cancel()
		<-ran
	}
	shutdown, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	for _, srv := range s.servers {
		_ = srv.Shutdown(shutdown)
	}
	return err
}
