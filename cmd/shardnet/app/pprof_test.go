package app

import (
	"bytes"
	"flag"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// flagOptions are the options the flags give with args after the default
// ones, an identity and a Northbound endpoint.
func flagOptions(t *testing.T, args ...string) Options {
	t.Helper()
	var o Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.bind(fs)
	if err := fs.Parse(append([]string{"-identity", "shardnet-0", "-nb-endpoints", "tcp:127.0.0.1:6641"}, args...)); err != nil {
		t.Fatal(err)
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	return o
}

// serveEndpoints binds and serves the HTTP endpoints of opts, with a
// health handler that answers "ok", until the test ends.
func serveEndpoints(t *testing.T, opts Options) *Server {
	t.Helper()
	reg, err := newRegistry()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{}
	health := http.NewServeMux()
	health.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	if err := s.bind(opts, nil, reg, health); err != nil {
		for _, l := range s.listeners {
			_ = l.Close()
		}
		t.Fatal(err)
	}
	served := s.serve()
	t.Cleanup(func() {
		s.shutdown()
		select {
		case err := <-served:
			t.Errorf("serving: %v", err)
		default:
		}
	})
	return s
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// TestPprofOffByDefault: with the default flags (the addresses on
// loopback ports of their own) no endpoint serves profiles.
func TestPprofOffByDefault(t *testing.T) {
	opts := flagOptions(t, "-metrics-addr", "127.0.0.1:0", "-health-addr", "127.0.0.1:0")
	if opts.EnablePprof || opts.PprofAddr != "127.0.0.1:6060" || opts.MetricsSecure {
		t.Fatalf("defaults: enable-pprof %v, pprof-addr %q, metrics-secure %v", opts.EnablePprof, opts.PprofAddr, opts.MetricsSecure)
	}
	s := serveEndpoints(t, opts)
	if s.PprofAddr() != "" {
		t.Errorf("pprof bound to %s without --enable-pprof", s.PprofAddr())
	}
	metrics := "http://" + s.MetricsAddr()
	if code, body := httpGet(t, metrics+"/metrics"); code != http.StatusOK || !strings.Contains(body, "shardnet_build_info{") {
		t.Fatalf("GET /metrics = %d, build info shown: %v", code, strings.Contains(body, "shardnet_build_info{"))
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/profile?seconds=1", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
		if code, _ := httpGet(t, metrics+path); code != http.StatusNotFound {
			t.Errorf("GET %s on the metrics port = %d, want 404", path, code)
		}
	}
	health := "http://" + s.listeners[len(s.listeners)-1].Addr().String()
	if code, _ := httpGet(t, health+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ on the health port = %d, want 404", code)
	}
}

// TestPprofOnLoopbackListener: --enable-pprof serves the profiles on their
// own loopback listener, and still not beside /metrics.
func TestPprofOnLoopbackListener(t *testing.T) {
	s := serveEndpoints(t, flagOptions(t, "-metrics-addr", "127.0.0.1:0", "-health-addr", "",
		"-enable-pprof", "-pprof-addr", "127.0.0.1:0"))
	host, _, err := net.SplitHostPort(s.PprofAddr())
	if err != nil || !net.ParseIP(host).IsLoopback() {
		t.Fatalf("pprof bound to %q (%v), want a loopback address", s.PprofAddr(), err)
	}
	pprof := "http://" + s.PprofAddr()
	if code, body := httpGet(t, pprof+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("GET /debug/pprof/ on the pprof listener = %d, want 200 with the profile index", code)
	}
	if code, body := httpGet(t, pprof+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile:") {
		t.Errorf("GET /debug/pprof/goroutine on the pprof listener = %d", code)
	}
	if code, _ := httpGet(t, pprof+"/metrics"); code != http.StatusNotFound {
		t.Errorf("GET /metrics on the pprof listener = %d, want 404", code)
	}
	if code, _ := httpGet(t, "http://"+s.MetricsAddr()+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ on the metrics port = %d, want 404", code)
	}
}

// TestPprofAddrMustBeLoopback: an address other pods could reach is
// refused, by the flags' validation and by the binding itself.
func TestPprofAddrMustBeLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:6060", "127.0.0.2:0", "[::1]:6060", "localhost:6060"} {
		if err := loopbackAddr(addr); err != nil {
			t.Errorf("loopbackAddr(%q): %v", addr, err)
		}
	}
	for _, addr := range []string{":6060", "0.0.0.0:6060", "[::]:6060", "10.16.0.5:6060", "shardnet-0:6060", "6060", ""} {
		if err := loopbackAddr(addr); err == nil || !strings.Contains(err.Error(), "loopback address only") {
			t.Errorf("loopbackAddr(%q) = %v, want a refusal", addr, err)
		}
	}

	var stdout, stderr bytes.Buffer
	code := Main([]string{"controller", "-identity", "r0", "-nb-endpoints", "tcp:127.0.0.1:6641",
		"-enable-pprof", "-pprof-addr", "0.0.0.0:6060"}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), `--pprof-addr "0.0.0.0:6060"`) {
		t.Errorf("controller -enable-pprof -pprof-addr 0.0.0.0:6060 = %d, %q; want 2 and the refusal", code, stderr.String())
	}
	// Without --enable-pprof the address is not used, nor checked.
	if err := (&Options{PprofAddr: ":6060"}).validateServing(); err != nil {
		t.Errorf("pprof off: %v", err)
	}

	reg, err := newRegistry()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{}
	err = s.bind(Options{EnablePprof: true, PprofAddr: ":0"}, nil, reg, nil)
	for _, l := range s.listeners {
		_ = l.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "loopback address only") || len(s.listeners) != 0 {
		t.Errorf("bind with --pprof-addr :0 = %v with %d listeners; want a refusal before binding", err, len(s.listeners))
	}
}

// TestRegistryExportsLiveHeap: a replica's registry exports the live heap
// the soft limit is sized from, beside the soft limit itself, the
// collector's target in force (the burst target while a burst runs) and
// the default Go metrics.
func TestRegistryExportsLiveHeap(t *testing.T) {
	reg, err := newRegistry()
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if m := mf.GetMetric(); len(m) == 1 && m[0].GetGauge() != nil {
			got[mf.GetName()] = m[0].GetGauge().GetValue()
		}
	}
	for _, name := range []string{"go_gc_heap_live_bytes", "go_gc_gomemlimit_bytes", "go_gc_gogc_percent", "go_memstats_heap_inuse_bytes"} {
		if got[name] <= 0 {
			t.Errorf("%s = %v, want a positive gauge (gathered %d families)", name, got[name], len(mfs))
		}
	}
}
