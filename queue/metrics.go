package queue

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Metrics holds the standard workqueue metrics (the names and help texts of
// Kubernetes' component-base) with an extra "shard" label. One Metrics is
// shared by all the queues of a process: a shard that comes back reuses its
// series.
type Metrics struct {
	depth                   *prometheus.GaugeVec
	adds                    *prometheus.CounterVec
	latency                 *prometheus.HistogramVec
	workDuration            *prometheus.HistogramVec
	unfinished              *prometheus.GaugeVec
	longestRunningProcessor *prometheus.GaugeVec
	retries                 *prometheus.CounterVec
	// idleWait is the wait of a key that was neither waiting nor in
	// flight when it was queued, which the workqueue's own latency does
	// not tell apart from a key queued again while in flight (that one
	// waits for its reconcile to end).
	idleWait *prometheus.HistogramVec
}

// NewMetrics registers the workqueue metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	labels := []string{"name", "shard"}
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
	// The wait in the queue is a stage of a pod's way to routed, read
	// in tens of milliseconds (the bench's breakdown, the dashboards'
	// p99): the reconcile stages' finer buckets, not decades.
	waitBuckets := prometheus.ExponentialBuckets(0.00025, 1.5, 30) // 0.25ms .. ~32s
	m := &Metrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "depth",
			Help: "Current depth of workqueue",
		}, labels),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "adds_total",
			Help: "Total number of adds handled by workqueue",
		}, labels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help:    "How long in seconds an item stays in workqueue before being requested.",
			Buckets: waitBuckets,
		}, labels),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "work_duration_seconds",
			Help:    "How long in seconds processing an item from workqueue takes.",
			Buckets: buckets,
		}, labels),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "unfinished_work_seconds",
			Help: "How many seconds of work has done that is in progress and hasn't been observed by work_duration. " +
				"Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
		}, labels),
		longestRunningProcessor: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "longest_running_processor_seconds",
			Help: "How many seconds has the longest running processor for workqueue been running.",
		}, labels),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "retries_total",
			Help: "Total number of retries handled by workqueue",
		}, labels),
		idleWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "shardnet", Subsystem: "queue", Name: "idle_key_wait_seconds",
			Help: "How long a key that was neither waiting nor in flight when an event queued it waited for a worker " +
				"(a new pod's first reconcile, for example); a key queued again while in flight waits for its reconcile to end and is not counted.",
			Buckets: waitBuckets,
		}, labels),
	}
	for _, c := range []prometheus.Collector{m.depth, m.adds, m.latency, m.workDuration, m.unfinished, m.longestRunningProcessor, m.retries, m.idleWait} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering workqueue metrics: %w", err)
		}
	}
	return m, nil
}

// reset zeroes the gauges of a stopped queue, which client-go leaves at
// their last value.
func (m *Metrics) reset(name, shard string) {
	if m == nil || name == "" {
		return
	}
	m.depth.WithLabelValues(name, shard).Set(0)
	m.unfinished.WithLabelValues(name, shard).Set(0)
	m.longestRunningProcessor.WithLabelValues(name, shard).Set(0)
}

func (m *Metrics) provider(shard string) workqueue.MetricsProvider {
	return shardProvider{m: m, shard: shard}
}

// shardProvider is the workqueue.MetricsProvider of one shard's queue.
type shardProvider struct {
	m     *Metrics
	shard string
}

var _ workqueue.MetricsProvider = shardProvider{}

func (p shardProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.m.depth.WithLabelValues(name, p.shard)
}

func (p shardProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.m.adds.WithLabelValues(name, p.shard)
}

func (p shardProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.m.latency.WithLabelValues(name, p.shard)
}

func (p shardProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.m.workDuration.WithLabelValues(name, p.shard)
}

func (p shardProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.m.unfinished.WithLabelValues(name, p.shard)
}

func (p shardProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.m.longestRunningProcessor.WithLabelValues(name, p.shard)
}

func (p shardProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.m.retries.WithLabelValues(name, p.shard)
}
