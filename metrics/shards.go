package metrics

import "github.com/prometheus/client_golang/prometheus"

func newShardsGauge(reg prometheus.Registerer) (prometheus.Gauge, error) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "shardnet_shards",
		Help: "Shards the pod keys are hashed over (--shards). Together the replicas' shardnet_shards_owned reach it once every shard has an owner.",
	})
	return g, reg.Register(g)
}

// SetShards records the number of shards (--shards), against which the
// alerts compare the shards the replicas own.
func (m *Metrics) SetShards(n int) { m.shards.Set(float64(n)) }
