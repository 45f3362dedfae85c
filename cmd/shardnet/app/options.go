package app

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shardnet/shardnet/reconcile"
)

// Options are the controller replica's flags. Defaults are documented on
// the flags themselves (shardnet controller -h).
type Options struct {
	Kubeconfig string
	Identity   string
	Namespace  string

	NBEndpoints  string
	OVNNBAddr    string // kube-ovn-controller's name for NBEndpoints
	NBLeaderOnly bool
	NBCert       string
	NBKey        string
	NBCA         string
	NBTLSDir     string
	NBServerName string

	Shards          int
	WorkersPerShard int
	LeaseDuration   time.Duration
	RenewDeadline   time.Duration
	RetryPeriod     time.Duration

	MetricsAddr string
	HealthAddr  string
	// MetricsSecure serves /metrics over HTTPS to clients the API server
	// authenticates and authorises (securemetrics.go); MetricsCertDir
	// holds its tls.crt and tls.key (empty: self-signed).
	MetricsSecure  bool
	MetricsCertDir string
	// EnablePprof serves /debug/pprof/ on PprofAddr, a loopback address.
	EnablePprof bool
	PprofAddr   string

	DefaultSubnet string
	ClusterRouter string
	// NetworkType is the overlay's encapsulation, for the MTU of DHCP
	// options (kube-ovn's --network-type).
	NetworkType string
	PodNICType  string
	IPRecords   bool
	// DisableEIPSNAT is --enable-eip-snat=false (kube-ovn's flag): eip
	// and snat are not read. The zero value reads them, as the flag's
	// default does.
	DisableEIPSNAT bool
	// ExternalGatewayConfigNS and ExternalGatewaySwitch locate the
	// external gateway of eip/snat pods' source routes, as kube-ovn's
	// flags of these names do (docs/contract.md G11).
	ExternalGatewayConfigNS string
	ExternalGatewaySwitch   string
	// KeepVMIP keys KubeVirt launcher pods by their VM, whose address,
	// MAC and port outlive its launcher pods (kube-ovn's keep-vm-ip).
	KeepVMIP bool

	BatchLinger time.Duration
	BatchMaxOps int
	GCInterval  time.Duration
	GCGrace     time.Duration
	// StatusInterval is how often the leader writes subnet counters.
	StatusInterval time.Duration
	// MemoryLimit is the Go runtime's soft memory limit: auto, none or a
	// quantity (see resolveMemoryLimit).
	MemoryLimit string
	// GCPercent is the collector's target heap growth over the live heap
	// (Go's GOGC); 0 keeps the runtime's (GOGC, else 100).
	GCPercent int
	// BurstGCPercent is the collector's target while the caches load and
	// first passes run in a replica with a large heap
	// (controller.Config.BurstGCPercent); 0 leaves the target alone.
	BurstGCPercent int
	// KubeCompression lets the API server gzip its responses.
	KubeCompression bool
}

// bind registers the flags on fs with their defaults.
func (o *Options) bind(fs *flag.FlagSet) {
	host, _ := os.Hostname()
	identity := envOr("POD_NAME", host)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file; empty means the in-cluster config")
	fs.StringVar(&o.Identity, "identity", identity, "this replica's stable name (the StatefulSet pod name; default $POD_NAME or the hostname)")
	fs.StringVar(&o.Namespace, "namespace", envOr("POD_NAMESPACE", "kube-system"), "namespace of the coordination Leases (default $POD_NAMESPACE or kube-system)")
	fs.StringVar(&o.NBEndpoints, "nb-endpoints", "", nbEndpointsHelp)
	fs.StringVar(&o.OVNNBAddr, "ovn-nb-addr", "", "the same as --nb-endpoints, under kube-ovn-controller's name; giving both is an error unless they list the same remotes")
	fs.BoolVar(&o.NBLeaderOnly, "nb-leader-only", true, "connect only to the RAFT leader")
	fs.StringVar(&o.NBCert, "nb-cert", "", "client certificate for ssl: endpoints (wins over --nb-tls-dir)")
	fs.StringVar(&o.NBKey, "nb-key", "", "client key for ssl: endpoints (wins over --nb-tls-dir)")
	fs.StringVar(&o.NBCA, "nb-ca", "", "CA bundle for ssl: endpoints (wins over --nb-tls-dir)")
	fs.StringVar(&o.NBTLSDir, "nb-tls-dir", "", nbTLSDirHelp)
	fs.StringVar(&o.NBServerName, "nb-server-name", "", nbServerNameHelp)
	fs.IntVar(&o.Shards, "shards", 64, "number of virtual shards S; fixed for a cluster")
	fs.IntVar(&o.WorkersPerShard, "workers-per-shard", 2, "pod keys of one shard reconciled at once")
	fs.DurationVar(&o.LeaseDuration, "lease-duration", 15*time.Second, "member and leader Lease duration: a dead replica's shards move after about this long")
	fs.DurationVar(&o.RenewDeadline, "renew-deadline", 10*time.Second, "leader renew deadline")
	fs.DurationVar(&o.RetryPeriod, "retry-period", 2*time.Second, "leader election retry period")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", ":9402", "address of /metrics; empty disables")
	fs.StringVar(&o.HealthAddr, "health-addr", ":9403", "address of /healthz and /readyz; empty disables")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", false, "serve /metrics over HTTPS, only to clients the API server authenticates (TokenReview) and allows to get /metrics (SubjectAccessReview); turn it on in production (RBAC: deploy/optional/metrics-auth-rbac.yaml)")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for --metrics-secure, read again when they change; empty means a self-signed certificate made in memory at start")
	fs.BoolVar(&o.EnablePprof, "enable-pprof", false, "serve /debug/pprof/ on --pprof-addr")
	fs.StringVar(&o.PprofAddr, "pprof-addr", "127.0.0.1:6060", "loopback address of /debug/pprof/ with --enable-pprof (reach it with kubectl port-forward)")
	fs.StringVar(&o.DefaultSubnet, "default-subnet", "", "subnet of pods nothing else selects one for; empty means the Subnet with spec.default")
	fs.StringVar(&o.ClusterRouter, "cluster-router", "ovn-cluster", "logical router of the default VPC")
	fs.StringVar(&o.NetworkType, "network-type", reconcile.NetworkTypeGeneve, "the overlay's encapsulation as kube-ovn's --network-type names it (geneve, vxlan, stt or vlan): DHCP options hand out 1500 less its header as the MTU of overlay subnets without spec.mtu")
	fs.StringVar(&o.PodNICType, "pod-nic-type", "veth-pair", "pod_nic_type written for pods that have none")
	fs.BoolVar(&o.IPRecords, "ip-records", true, "keep a kubeovn.io IP record per pod (one more API write per pod)")
	fs.Var(inverted{&o.DisableEIPSNAT}, "enable-eip-snat", "write the NAT rules of pods' eip and snat annotations (kube-ovn's --enable-eip-snat); off, both annotations are ignored and NAT rules are left to another controller")
	fs.StringVar(&o.ExternalGatewayConfigNS, "external-gateway-config-ns", reconcile.DefaultExternalGatewayNamespace, "namespace of the ovn-external-gw-config ConfigMap, whose external-gw-addr is the next hop of the source routes of pods with eip or snat (kube-ovn's flag; RBAC: read that ConfigMap in this namespace)")
	fs.StringVar(&o.ExternalGatewaySwitch, "external-gateway-switch", reconcile.DefaultExternalGatewaySwitch, "Subnet whose spec.gateway is that next hop when the ConfigMap has no external-gw-addr (kube-ovn's flag)")
	fs.BoolVar(&o.KeepVMIP, "keep-vm-ip", true, "name KubeVirt launcher pods' ports and IP records after their VM and keep its address, MAC and port until the VM is deleted; off, they are ordinary pods")
	fs.DurationVar(&o.BatchLinger, "batch-linger", time.Millisecond, "how long a Northbound batch waits for more requests")
	fs.IntVar(&o.BatchMaxOps, "batch-max-ops", 600, "operations per Northbound transaction at most")
	fs.DurationVar(&o.GCInterval, "gc-interval", 2*time.Minute, "how often orphaned ports, claims and IP records are looked for")
	fs.DurationVar(&o.GCGrace, "gc-grace", time.Minute, "how long a key must look orphaned before it is collected")
	fs.DurationVar(&o.StatusInterval, "status-interval", 3*time.Second, "how often the leader writes subnet counters")
	fs.BoolVar(&o.KubeCompression, "kube-compression", false, "let the API server gzip responses: saves bandwidth on a slow link, costs both sides CPU on every list and watch (off: a cluster network carries a full resync of 50,000 pods in well under a second)")
	fs.StringVar(&o.MemoryLimit, "memory-limit", "auto", "Go soft memory limit: auto (80% of the container's memory limit, unless GOMEMLIMIT is set), none, or a quantity such as 512Mi")
	fs.IntVar(&o.GCPercent, "gc-percent", 0, "how far the Go heap may grow past the live heap before a collection, in percent (Go's GOGC): lower trades collector CPU for memory; 0 keeps GOGC, else Go's 100")
	fs.IntVar(&o.BurstGCPercent, "burst-gc-percent", 50, "the collector's target (as --gc-percent) while the caches load and while first passes run (a restart, a failover), once the live heap is at least 64 MiB; it lowers a large replica's peak memory then, for some collector CPU; 0 keeps the target")
}

// validate checks the options and reports every problem at once.
func (o *Options) validate() error {
	var errs []error
	if o.Identity == "" {
		errs = append(errs, errors.New("--identity is required"))
	}
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace is required"))
	}
	errs = append(errs, o.validateNB()...)
	errs = append(errs, o.validateServing()...)
	if o.NetworkType != "" && !reconcile.ValidNetworkType(o.NetworkType) {
		errs = append(errs, fmt.Errorf("--network-type %q: want geneve, vxlan, stt or vlan", o.NetworkType))
	}
	if o.Shards < 1 || o.Shards > 4096 {
		errs = append(errs, fmt.Errorf("--shards %d: want 1..4096", o.Shards))
	}
	if o.WorkersPerShard < 1 {
		errs = append(errs, fmt.Errorf("--workers-per-shard %d: want at least 1", o.WorkersPerShard))
	}
	if o.LeaseDuration <= o.RenewDeadline || o.RenewDeadline <= o.RetryPeriod || o.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("want --lease-duration (%v) > --renew-deadline (%v) > --retry-period (%v) > 0", o.LeaseDuration, o.RenewDeadline, o.RetryPeriod))
	}
	if o.BatchLinger < 0 || o.BatchMaxOps < 1 {
		errs = append(errs, fmt.Errorf("--batch-linger %v / --batch-max-ops %d: want >= 0 and >= 1", o.BatchLinger, o.BatchMaxOps))
	}
	if o.GCInterval <= 0 || o.StatusInterval <= 0 {
		errs = append(errs, errors.New("--gc-interval and --status-interval must be positive"))
	}
	if _, err := resolveMemoryLimit(o.MemoryLimit, os.Getenv, func() (int64, bool) { return 0, false }); err != nil {
		errs = append(errs, err)
	}
	if o.GCPercent < 0 {
		errs = append(errs, fmt.Errorf("--gc-percent %d: want a positive percentage, or 0 for GOGC or Go's default", o.GCPercent))
	}
	if o.BurstGCPercent < 0 {
		errs = append(errs, fmt.Errorf("--burst-gc-percent %d: want a positive percentage, or 0 to keep the collector's target during bursts", o.BurstGCPercent))
	}
	return errors.Join(errs...)
}

// endpoints are the Northbound remotes (resolveNBEndpoints); none when
// they cannot be resolved, which validate reports.
func (o *Options) endpoints() []string {
	nb, _ := resolveNBEndpoints(o.NBEndpoints, o.OVNNBAddr, os.Getenv)
	return nb.list
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// usesSSL reports whether any Northbound endpoint is ssl:, the only case
// in which the certificate flags are read.
func (o *Options) usesSSL() bool {
	for _, e := range o.endpoints() {
		if strings.HasPrefix(e, "ssl:") {
			return true
		}
	}
	return false
}

// inverted is a boolean flag stored negated, so that an Options literal's
// zero value means the flag's default, true.
type inverted struct{ p *bool }

func (v inverted) String() string {
	if v.p == nil {
		return "true"
	}
	return strconv.FormatBool(!*v.p)
}

func (v inverted) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*v.p = !b
	return nil
}

func (v inverted) IsBoolFlag() bool { return true }
