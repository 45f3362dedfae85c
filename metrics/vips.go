package metrics

import "github.com/prometheus/client_golang/prometheus"

// Vips counts the pods that wait for the Vip their ovn.kubernetes.io/vip
// names (docs/contract.md E20).
type Vips struct {
	waits *prometheus.CounterVec
}

// NewVips creates the Vip collectors and registers them with reg.
func NewVips(reg prometheus.Registerer) (*Vips, error) {
	m := &Vips{waits: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shardnet_vip_waits_total",
		Help: "Reconciles of pods whose Vip could not be given, by reason: not_found, not_reserved, in_use, deleting.",
	}, []string{"reason"})}
	if err := reg.Register(m.waits); err != nil {
		return nil, err
	}
	return m, nil
}

// VipWait counts one reconcile of a pod that waits for its Vip.
func (m *Vips) VipWait(reason string) { m.waits.WithLabelValues(reason).Inc() }
