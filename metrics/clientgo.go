package metrics

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"

	"github.com/shardnet/shardnet/internal/ipcache"
	"github.com/shardnet/shardnet/internal/metawatch"
	"github.com/shardnet/shardnet/internal/watch"
)

var (
	restLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "rest_client_request_duration_seconds", Help: "API server request latency, by verb and host.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"verb", "host"})
	restResults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total", Help: "API server requests, by status code, method and host.",
	}, []string{"code", "method", "host"})
	registerOnce sync.Once
)

type latencyAdapter struct{}

func (latencyAdapter) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	restLatency.WithLabelValues(verb, u.Host).Observe(d.Seconds())
}

type resultAdapter struct{}

func (resultAdapter) Increment(_ context.Context, code, method, host string) {
	restResults.WithLabelValues(code, method, host).Inc()
}

// RegisterClientGo routes client-go's REST client metrics and its leader
// election metrics (leaderelection.go), both process-wide, to reg, with
// the count of watches the informers kept through an early end
// (watch.Resumes) and of the claims and IP records read in full
// (metawatch.FullReads), and of the IP record creates a replica awaited
// instead of sending again (ipcache.CreatesAwaited). client-go accepts one registration per process;
// later calls only register the collectors with reg.
func RegisterClientGo(reg prometheus.Registerer) error {
	registerOnce.Do(func() {
		clientmetrics.Register(clientmetrics.RegisterOpts{RequestLatency: latencyAdapter{}, RequestResult: resultAdapter{}})
	})
	for _, c := range []prometheus.Collector{restLatency, restResults, leaderStatus, leaderSlowpath, watch.Resumes, metawatch.FullReads, ipcache.CreatesAwaited} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return nil
}
