package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Adoption holds the collectors of the addresses a replica found in use
// outside the claims (reconcile.Subnets.Adopt).
type Adoption struct {
	pending   *prometheus.GaugeVec
	held      *prometheus.GaugeVec
	conflicts prometheus.Gauge
	seconds   prometheus.Gauge
}

// NewAdoption creates the adoption collectors and registers them with reg.
func NewAdoption(reg prometheus.Registerer) (*Adoption, error) {
	m := &Adoption{
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardnet_adoption_pending_addresses",
			Help: "Addresses live pods hold (annotations, IP records, ports) that no AddressClaim covers yet, by subnet: what adoption still has to claim.",
		}, []string{"subnet"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardnet_held_addresses",
			Help: "Addresses found in use outside the claims (pod annotations, IP records, Vips, Northbound ports) and held from allocation, by subnet.",
		}, []string{"subnet"}),
		conflicts: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardnet_address_conflicts",
			Help: "Addresses that more than one holder (two pods, a pod and a foreign record) says are theirs; only one keeps each.",
		}),
		seconds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardnet_adoption_seconds",
			Help: "Time the replica took, after its caches synced, to hold every address found in use before joining the shard membership.",
		}),
	}
	for _, c := range []prometheus.Collector{m.pending, m.held, m.conflicts, m.seconds} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Set records one adoption pass: held and pending addresses by subnet and
// the number of conflicting addresses.
func (m *Adoption) Set(held, pending map[string]int, conflicts int) {
	m.held.Reset()
	m.pending.Reset()
	for s, n := range held {
		m.held.WithLabelValues(s).Set(float64(n))
	}
	for s, n := range pending {
		m.pending.WithLabelValues(s).Set(float64(n))
	}
	m.conflicts.Set(float64(conflicts))
}

// Took records how long the first adoption took.
func (m *Adoption) Took(d time.Duration) { m.seconds.Set(d.Seconds()) }
