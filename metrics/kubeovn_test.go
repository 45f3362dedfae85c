package metrics

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/shardnet/shardnet/ipam"
)

// TestKubeOVNSubnetGauges: kube-ovn-controller's subnet_available_ip_count
// and subnet_used_ip_count carry its labels and values (the smaller family's
// available count and the IPv4 used count for a dual-stack subnet), only
// while the replica leads, from the latest SetUsage snapshot.
func TestKubeOVNSubnetGauges(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	v4 := func(cidr string, used, avail uint64) ipam.FamilyUsage {
		return ipam.FamilyUsage{Family: "IPv4", Prefix: netip.MustParsePrefix(cidr), Used: used, Available: avail}
	}
	v6 := func(cidr string, used, avail uint64) ipam.FamilyUsage {
		return ipam.FamilyUsage{Family: "IPv6", Prefix: netip.MustParsePrefix(cidr), Used: used, Available: avail}
	}
	usage := map[string][]ipam.FamilyUsage{
		"ovn-default": {v4("10.16.0.0/16", 300, 65232)},
		"dual":        {v4("10.17.0.0/24", 10, 243), v6("fd00:10:17::/120", 12, 241)},
		"v6only":      {v6("fd00:20::/112", 5, 65525)},
	}
	names := []string{"subnet_available_ip_count", "subnet_used_ip_count"}
	const none = ""
	compare := func(what, want string) {
		t.Helper()
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}

	m.SetUsage(usage)
	compare("before leading", none)

	m.SetLeader(true)
	const header = `
# HELP subnet_available_ip_count Addresses a dynamic allocation could still return in the subnet, as kube-ovn-controller exports it (the smaller family's for a dual-stack subnet). Only the leader exports it, as in kube-ovn, so there is one series per subnet; shardnet_ipam_addresses_free has every replica's counters.
# TYPE subnet_available_ip_count gauge
`
	const usedHeader = `# HELP subnet_used_ip_count Addresses held in the subnet, as kube-ovn-controller exports it (the IPv4 family's for a dual-stack subnet). Only the leader exports it, as in kube-ovn, so there is one series per subnet; shardnet_ipam_addresses_used has every replica's counters.
# TYPE subnet_used_ip_count gauge
`
	compare("leading, from the snapshot taken before", header+
		`subnet_available_ip_count{protocol="Dual",subnet_cidr="10.17.0.0/24,fd00:10:17::/120",subnet_name="dual"} 241
subnet_available_ip_count{protocol="IPv4",subnet_cidr="10.16.0.0/16",subnet_name="ovn-default"} 65232
subnet_available_ip_count{protocol="IPv6",subnet_cidr="fd00:20::/112",subnet_name="v6only"} 65525
`+usedHeader+
		`subnet_used_ip_count{protocol="Dual",subnet_cidr="10.17.0.0/24,fd00:10:17::/120",subnet_name="dual"} 10
subnet_used_ip_count{protocol="IPv4",subnet_cidr="10.16.0.0/16",subnet_name="ovn-default"} 300
subnet_used_ip_count{protocol="IPv6",subnet_cidr="fd00:20::/112",subnet_name="v6only"} 5
`)

	m.SetUsage(map[string][]ipam.FamilyUsage{"ovn-default": {v4("10.16.0.0/16", 301, 65231)}})
	compare("a subnet gone", header+
		`subnet_available_ip_count{protocol="IPv4",subnet_cidr="10.16.0.0/16",subnet_name="ovn-default"} 65231
`+usedHeader+
		`subnet_used_ip_count{protocol="IPv4",subnet_cidr="10.16.0.0/16",subnet_name="ovn-default"} 301
`)

	m.SetLeader(false)
	compare("no longer leading", none)
	// The replica's own counters stay, leader or not.
	if n := testutil.CollectAndCount(m.ipamUsed); n != 1 {
		t.Errorf("shardnet_ipam_addresses_used has %d series, want 1", n)
	}
}

func TestSetShards(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.SetShards(64)
	if v := testutil.ToFloat64(m.shards); v != 64 {
		t.Errorf("shardnet_shards = %v, want 64", v)
	}
}
