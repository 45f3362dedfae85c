package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the shard ownership metrics; a nil *metrics records nothing.
type metrics struct {
	owned    prometheus.Gauge
	acquires prometheus.Counter
	releases *prometheus.CounterVec
	release  *prometheus.HistogramVec
	// syncedShards counts owned shards whose seeded keys are all done;
	// syncTime is how long that first pass took.
	syncedShards prometheus.Gauge
	syncTime     prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		owned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardnet_shards_owned", Help: "Shards running on this replica.",
		}),
		acquires: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardnet_shard_acquisitions_total", Help: "Shards this replica started.",
		}),
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardnet_shard_releases_total", Help: "Shards this replica stopped, by mode (handoff or abandon).",
		}, []string{"mode"}),
		release: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shardnet_shard_release_duration_seconds", Help: "Time from the order to release a shard to the end of its flush.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"mode"}),
		syncedShards: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardnet_shards_synced", Help: "Owned shards whose seeded pods have all been reconciled since the shard was acquired.",
		}),
		syncTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "shardnet_shard_sync_duration_seconds", Help: "Time from a shard's acquisition to the end of its first pass over the pods it was seeded with.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}),
	}
	for _, c := range []prometheus.Collector{m.owned, m.acquires, m.releases, m.release, m.syncedShards, m.syncTime} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Create both modes' series at zero now: rate() needs a sample before
	// the first release, or a replica's first handoff never shows.
	for _, mode := range []string{"handoff", "abandon"} {
		m.releases.WithLabelValues(mode)
		m.release.WithLabelValues(mode)
	}
	return m, nil
}

func (m *metrics) acquired(int) {
	if m == nil {
		return
	}
	m.owned.Inc()
	m.acquires.Inc()
}

func (m *metrics) synced(took time.Duration) {
	if m == nil {
		return
	}
	m.syncedShards.Inc()
	m.syncTime.Observe(took.Seconds())
}

func (m *metrics) released(_ int, mode string, took time.Duration, wasSynced bool) {
	if m == nil {
		return
	}
	m.owned.Dec()
	if wasSynced {
		m.syncedShards.Dec()
	}
	m.releases.WithLabelValues(mode).Inc()
	m.release.WithLabelValues(mode).Observe(took.Seconds())
}
