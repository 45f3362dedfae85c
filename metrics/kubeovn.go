package metrics

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shardnet/shardnet/ipam"
)

// kubeOVNSubnets exports kube-ovn-controller's subnet gauges under its names
// and labels (kube-ovn pkg/controller/net_metrics.go, set in exporter.go), so
// that alerts written for kube-ovn, such as its chart's
// KubeOvnSubnetIPExhaustion
//
//	(subnet_used_ip_count / (subnet_used_ip_count + subnet_available_ip_count)) > 0.9
//
// keep working once shardnet serves the pods:
//
//	subnet_available_ip_count{subnet_name, protocol, subnet_cidr}
//	subnet_used_ip_count{subnet_name, protocol, subnet_cidr}
//
// They come from the usage snapshot SetUsage receives and are exported only
// while this replica leads. Only the elected kube-ovn-controller runs its
// exporter, and kube-ovn's expression matches the two metrics one to one
// without aggregating: with every replica exporting, each subnet would raise
// one alert per replica. shardnet_ipam_addresses_* keep every replica's view.
type kubeOVNSubnets struct {
	available, used *prometheus.GaugeVec

	mu      sync.Mutex
	leading bool
	// last is the latest usage snapshot, read only, so that a replica that
	// starts leading exports at once rather than at its next status tick.
	last map[string][]ipam.FamilyUsage
}

func newKubeOVNSubnets(reg prometheus.Registerer) (*kubeOVNSubnets, error) {
	labels := []string{"subnet_name", "protocol", "subnet_cidr"}
	k := &kubeOVNSubnets{
		available: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "subnet_available_ip_count",
			Help: "Addresses a dynamic allocation could still return in the subnet, as kube-ovn-controller exports it (the smaller family's for a dual-stack subnet). Only the leader exports it, as in kube-ovn, so there is one series per subnet; shardnet_ipam_addresses_free has every replica's counters.",
		}, labels),
		used: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "subnet_used_ip_count",
			Help: "Addresses held in the subnet, as kube-ovn-controller exports it (the IPv4 family's for a dual-stack subnet). Only the leader exports it, as in kube-ovn, so there is one series per subnet; shardnet_ipam_addresses_used has every replica's counters.",
		}, labels),
	}
	for _, c := range []prometheus.Collector{k.available, k.used} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// setLeading starts or stops the export.
func (k *kubeOVNSubnets) setLeading(leading bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.leading = leading
	k.publish()
}

// setUsage replaces the snapshot; subnets that are gone lose their series.
func (k *kubeOVNSubnets) setUsage(usage map[string][]ipam.FamilyUsage) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.last = usage
	k.publish()
}

func (k *kubeOVNSubnets) publish() {
	k.available.Reset()
	k.used.Reset()
	if !k.leading {
		return
	}
	for subnet, fams := range k.last {
		c, ok := kubeOVNCounters(fams)
		if !ok {
			continue
		}
		k.available.WithLabelValues(subnet, c.protocol, c.cidr).Set(float64(c.available))
		k.used.WithLabelValues(subnet, c.protocol, c.cidr).Set(float64(c.used))
	}
}

// kubeOVNCounter is one subnet's values and labels as kube-ovn-controller
// computes them from the Subnet's status.
type kubeOVNCounter struct {
	protocol, cidr  string
	available, used uint64
}

// kubeOVNCounters maps a subnet's families onto kube-ovn's values: the
// protocol IPv4, IPv6 or Dual; the CIDR block, IPv4 first, comma-separated;
// available addresses of the family (the smaller for Dual); used addresses
// of IPv4, or of IPv6 for an IPv6 subnet.
func kubeOVNCounters(fams []ipam.FamilyUsage) (kubeOVNCounter, bool) {
	var v4, v6 *ipam.FamilyUsage
	cidrs := make([]string, 0, 2)
	for i := range fams {
		switch fams[i].Family {
		case "IPv4":
			v4 = &fams[i]
		case "IPv6":
			v6 = &fams[i]
		default:
			continue
		}
		cidrs = append(cidrs, fams[i].Prefix.String())
	}
	c := kubeOVNCounter{cidr: strings.Join(cidrs, ",")}
	switch {
	case v4 != nil && v6 != nil:
		c.protocol, c.available, c.used = "Dual", min(v4.Available, v6.Available), v4.Used
	case v4 != nil:
		c.protocol, c.available, c.used = "IPv4", v4.Available, v4.Used
	case v6 != nil:
		c.protocol, c.available, c.used = "IPv6", v6.Available, v6.Used
	default:
		return c, false
	}
	return c, true
}
