package app

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
)

// pprofMux serves Go's profiles under /debug/pprof/. It is bound only
// with --enable-pprof, on its own loopback listener (--pprof-addr): never
// beside /metrics, which the cluster scrapes, nor on the health port a
// kubelet probes. `kubectl port-forward pod/NAME 6060` reaches it.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// validateServing checks the flags of the HTTP endpoints beyond their
// addresses.
func (o *Options) validateServing() []error {
	var errs []error
	if o.EnablePprof {
		if err := loopbackAddr(o.PprofAddr); err != nil {
			errs = append(errs, err)
		}
	}
	if o.MetricsCertDir != "" && !o.MetricsSecure {
		errs = append(errs, errors.New("--metrics-cert-dir is read only with --metrics-secure"))
	}
	return errs
}

// loopbackAddr accepts a host:port whose host is localhost or a loopback
// IP: profiles and the command line are for an operator on the node or
// behind a port-forward, never for the pod network.
func loopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err == nil {
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return fmt.Errorf("--pprof-addr %q: pprof is served on a loopback address only, such as 127.0.0.1:6060 or [::1]:6060 (reach it with kubectl port-forward)", addr)
}

// checkLoopback refuses a listener that is not bound to loopback, such as
// one for a "localhost" that resolves elsewhere.
func checkLoopback(l net.Listener) error {
	if a, ok := l.Addr().(*net.TCPAddr); ok && a.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--pprof-addr: bound to %s, which is not a loopback address", l.Addr())
}
