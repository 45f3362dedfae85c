package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/metrics"
)

// runController is `shardnet controller`: one replica until SIGTERM or
// SIGINT, then a quick handoff of its shards.
func runController(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts Options
	opts.bind(fs)
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.Var(klogVerbosity{klogFlags}, "v", "log verbosity (klog)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := opts.validate(); err != nil {
		fmt.Fprintf(stderr, "shardnet controller: %v\n", err)
		return 2
	}
	ml, err := resolveMemoryLimit(opts.MemoryLimit, os.Getenv, cgroupMemoryLimit)
	if err != nil {
		fmt.Fprintf(stderr, "shardnet controller: %v\n", err)
		return 2
	}
	ml.apply()
	klog.InfoS("Go soft memory limit", "bytes", ml.bytes, "from", ml.source)
	if applyGCPercent(opts.GCPercent) {
		klog.InfoS("Go collector target", "percent", opts.GCPercent, "from", "--gc-percent")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := serveReplica(ctx, opts); err != nil {
		klog.ErrorS(err, "shardnet controller failed")
		return 1
	}
	return 0
}

// serveReplica runs one replica with its HTTP endpoints until ctx ends.
func serveReplica(ctx context.Context, opts Options) error {
	stopTracing, err := metrics.SetupTracing(ctx, "shardnet")
	if err != nil {
		return err
	}
	defer func() {
		// Spans still buffered go out after the handoff, bounded so that
		// an unreachable collector cannot hold up the exit.
		flush, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(flush); err != nil {
			klog.ErrorS(err, "Flushing traces")
		}
	}()
	s, err := NewServer(ctx, opts, nil)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// healthMux serves /healthz (the process runs its runtime) and /readyz
// (caches synced, membership current, Northbound connected).
func healthMux(r *Replica) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := r.Healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !r.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// klogVerbosity forwards -v to klog's flag set.
type klogVerbosity struct{ fs *flag.FlagSet }

func (k klogVerbosity) String() string { return "0" }
func (k klogVerbosity) Set(v string) error {
	return k.fs.Set("v", v)
}
