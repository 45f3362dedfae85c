package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
)

// Leader election metrics under the names and help texts of component-base's
// client-go provider (k8s.io/component-base/metrics/prometheus/clientgo/
// leaderelection), so that alerts written for Kubernetes components work on
// shardnet: leader_election_master_status{name} and
// leader_election_slowpath_total{name}, name being the Lease's name.
//
// The provider is installed with client-go at init, as component-base's is,
// since client-go reads it without a lock each time a LeaderElector is built;
// RegisterClientGo adds the collectors to a registry. Like the REST client
// metrics they are process-wide.
var (
	leaderStatus = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "leader_election_master_status",
		Help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
	}, []string{"name"})
	leaderSlowpath = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "leader_election_slowpath_total",
		Help: "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.",
	}, []string{"name"})

	leaders = &leaderProvider{holding: map[string]int{}}
)

func init() { leaderelection.SetProvider(leaders) }

// leaderProvider is the leaderelection.MetricsProvider. client-go builds one
// LeaderMetric per LeaderElector and calls Off when it builds it, On when it
// acquires the lease and Off when it loses it. component-base's provider sets
// one gauge from every elector, so a new elector's Off would zero the gauge
// while another elector of the process holds the same lease; this one counts
// the electors holding each lease instead, and reports 1 while any does. With
// one replica per process, as deployed, the two agree.
type leaderProvider struct {
	mu sync.Mutex
	// holding counts, by lease name, the electors that hold it.
	holding map[string]int
}

var _ leaderelection.MetricsProvider = (*leaderProvider)(nil)

// NewLeaderMetric implements leaderelection.MetricsProvider.
func (p *leaderProvider) NewLeaderMetric() leaderelection.LeaderMetric {
	return &leaderMetric{p: p, on: map[string]bool{}}
}

// set records whether one elector holds the lease name and updates the gauge.
func (p *leaderProvider) set(on map[string]bool, name string, leading bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on[name] != leading {
		on[name] = leading
		if leading {
			p.holding[name]++
		} else {
			p.holding[name]--
		}
	}
	v := 0.0
	if p.holding[name] > 0 {
		v = 1
	}
	leaderStatus.WithLabelValues(name).Set(v)
}

// leaderMetric is one LeaderElector's.
type leaderMetric struct {
	p *leaderProvider
	// on is the leases this elector holds; guarded by p.mu.
	on map[string]bool
}

func (m *leaderMetric) On(name string)  { m.p.set(m.on, name, true) }
func (m *leaderMetric) Off(name string) { m.p.set(m.on, name, false) }

func (m *leaderMetric) SlowpathExercised(name string) { leaderSlowpath.WithLabelValues(name).Inc() }
