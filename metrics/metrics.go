package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/reconcile"
)

// Metrics holds the shardnet_* collectors of one replica.
type Metrics struct {
	reconcileDuration *prometheus.HistogramVec
	reconciles        *prometheus.CounterVec
	annotated         prometheus.Histogram
	batchRequests     prometheus.Histogram
	batchOps          prometheus.Histogram
	txnLatency        *prometheus.HistogramVec
	txns              *prometheus.CounterVec
	splits            prometheus.Counter
	fenceRejections   prometheus.Counter
	gcRemovals        prometheus.Counter
	ipamUsed          *prometheus.GaugeVec
	ipamFree          *prometheus.GaugeVec
	ipamRepairs       prometheus.Counter
	ipamStrays        prometheus.Counter
	leader            prometheus.Gauge
	// topologyDiffs counts Northbound rows left as they are although they
	// differ from their Subnet (reconcile.TopologyMetrics).
	topologyDiffs *prometheus.CounterVec
	// kubeOVN is kube-ovn-controller's subnet gauges (kubeovn.go).
	kubeOVN *kubeOVNSubnets
	// shards is the configured number of shards (shards.go).
	shards prometheus.Gauge
	// stages is the time of each reconcile stage (reconcile.Stages).
	stages *prometheus.HistogramVec
}

var (
	_ ovn.Metrics            = (*Metrics)(nil)
	_ reconcile.Metrics      = (*Metrics)(nil)
	_ reconcile.StageMetrics = (*Metrics)(nil)
)

// New creates the collectors and registers them with reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	latency := prometheus.ExponentialBuckets(0.0005, 2, 16) // 0.5ms .. 16s
	m := &Metrics{
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shardnet_reconcile_duration_seconds", Help: "Time to reconcile one pod key, by phase and result.", Buckets: latency,
		}, []string{"phase", "result"}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardnet_reconciles_total", Help: "Pod key reconciles, by phase (allocate, route, release, noop) and result (ok, error, invalid).",
		}, []string{"phase", "result"}),
		annotated: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "shardnet_pod_annotated_seconds", Help: "Time from a pod's creation to its allocated annotation.", Buckets: latency,
		}),
		batchRequests: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "shardnet_nb_batch_requests", Help: "Requests (pods) carried by one Northbound transaction.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
		batchOps: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "shardnet_nb_batch_ops", Help: "Operations carried by one Northbound transaction, the fence included.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
		txnLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shardnet_nb_transaction_duration_seconds", Help: "Northbound transaction latency, by outcome.", Buckets: latency,
		}, []string{"outcome"}),
		txns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardnet_nb_transactions_total", Help: "Northbound transactions sent by the batchers, by outcome.",
		}, []string{"outcome"}),
		splits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardnet_nb_batch_splits_total", Help: "Failed batches split in two to isolate a bad request.",
		}),
		fenceRejections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardnet_nb_fence_rejections_total", Help: "Transactions refused because the shard's epoch moved on.",
		}),
		gcRemovals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardnet_gc_keys_total", Help: "Orphaned pod keys the garbage collector handed to their shard.",
		}),
		ipamUsed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardnet_ipam_addresses_used", Help: "Held addresses per subnet and family.",
		}, []string{"subnet", "family"}),
		ipamFree: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardnet_ipam_addresses_free", Help: "Addresses a dynamic allocation could still return, per subnet and family.",
		}, []string{"subnet", "family"}),
		ipamRepairs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardnet_ipam_bitmap_repairs_total", Help: "Claimed addresses found free in this replica's bitmap and marked again.",
		}),
		ipamStrays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardnet_ipam_bitmap_strays_freed_total", Help: "Addresses this replica's bitmap held with no claim, hold or node address behind them, freed again.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardnet_leader", Help: "1 while this replica is the leader.",
		}),
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "shardnet_reconcile_stage_seconds",
			Help: "Time of one stage of a pod reconcile: resolve, ipam (addresses and claims), nb (the Northbound transaction carrying the pod's ops), ip record, patch.",
			// Finer than latency below 10 ms, where most stages end.
			Buckets: prometheus.ExponentialBuckets(0.00025, 1.5, 30), // 0.25ms .. ~32s
		}, []string{"stage"}),
	}
	for _, c := range []prometheus.Collector{m.reconcileDuration, m.reconciles, m.annotated, m.batchRequests, m.batchOps,
		m.txnLatency, m.txns, m.splits, m.fenceRejections, m.gcRemovals, m.ipamUsed, m.ipamFree, m.ipamRepairs, m.ipamStrays, m.leader, m.stages} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.topologyDiffs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardnet_topology_differences_total",
		Help: "Differences found between a Subnet and the existing Northbound rows it adopts, left as they are (each distinct set counted once per leader), by subnet and object (switch, router_port, port_group).",
	}, []string{"subnet", "object"})
	if err := reg.Register(m.topologyDiffs); err != nil {
		return nil, err
	}
	var err error
	if m.kubeOVN, err = newKubeOVNSubnets(reg); err != nil {
		return nil, err
	}
	if m.shards, err = newShardsGauge(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// Reconciled implements reconcile.Metrics.
func (m *Metrics) Reconciled(phase, result string, d time.Duration) {
	m.reconciles.WithLabelValues(phase, result).Inc()
	m.reconcileDuration.WithLabelValues(phase, result).Observe(d.Seconds())
}

// Annotated implements reconcile.Metrics.
func (m *Metrics) Annotated(d time.Duration) { m.annotated.Observe(d.Seconds()) }

// Stage implements reconcile.StageMetrics.
func (m *Metrics) Stage(stage string, d time.Duration) {
	m.stages.WithLabelValues(stage).Observe(d.Seconds())
}

// ObserveTransaction implements ovn.Metrics.
func (m *Metrics) ObserveTransaction(_ int, requests, ops int, latency time.Duration, outcome ovn.Outcome) {
	m.txns.WithLabelValues(string(outcome)).Inc()
	m.txnLatency.WithLabelValues(string(outcome)).Observe(latency.Seconds())
	if outcome == ovn.OutcomeStaleEpoch {
		m.fenceRejections.Inc()
	}
	if outcome == ovn.OutcomeCommitted {
		m.batchRequests.Observe(float64(requests))
		m.batchOps.Observe(float64(ops))
	}
}

// ObserveSplit implements ovn.Metrics.
func (m *Metrics) ObserveSplit(int) { m.splits.Inc() }

// Collected counts keys the garbage collector handed to their shards.
func (m *Metrics) Collected(n int) { m.gcRemovals.Add(float64(n)) }

// BitmapRepaired counts claimed addresses a bitmap had lost and that were
// marked again (reconcile.Subnets.Refresh).
func (m *Metrics) BitmapRepaired(n uint64) { m.ipamRepairs.Add(float64(n)) }

// BitmapStraysFreed counts addresses a bitmap held that nothing claimed or
// held, freed again (reconcile.Subnets.Refresh).
func (m *Metrics) BitmapStraysFreed(n uint64) { m.ipamStrays.Add(float64(n)) }

// SetLeader records whether this replica leads, which also starts or
// stops the export of kube-ovn's subnet gauges.
func (m *Metrics) SetLeader(leader bool) {
	if leader {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
	m.kubeOVN.setLeading(leader)
}

// SetUsage records the address counters of every subnet, replacing those of
// subnets that are gone, and, while this replica leads, kube-ovn's subnet
// gauges from the same snapshot, which they keep: the caller must not
// modify usage afterwards.
func (m *Metrics) SetUsage(usage map[string][]ipam.FamilyUsage) {
	m.ipamUsed.Reset()
	m.ipamFree.Reset()
	for subnet, fams := range usage {
		for _, f := range fams {
			m.ipamUsed.WithLabelValues(subnet, f.Family).Set(float64(f.Used))
			m.ipamFree.WithLabelValues(subnet, f.Family).Set(float64(f.Available))
		}
	}
	m.kubeOVN.setUsage(usage)
}

var _ reconcile.TopologyMetrics = (*Metrics)(nil)

// TopologyDifference implements reconcile.TopologyMetrics.
func (m *Metrics) TopologyDifference(subnet, object string) {
	m.topologyDiffs.WithLabelValues(subnet, object).Inc()
}
