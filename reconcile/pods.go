package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/shardnet/shardnet/ovn/nbdb"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	kubeovnlisters "github.com/shardnet/shardnet/api/client/listers/kubeovn/v1"
	"github.com/shardnet/shardnet/internal/ipcache"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
)

// ShardWriter is the Northbound writer of one owned shard: its fenced
// batcher. A write from a shard this replica no longer owns fails.
type ShardWriter interface {
	Submit(ctx context.Context, ops ...ovsdb.Operation) (ovn.Result, error)
}

var _ ShardWriter = (*ovn.Batcher)(nil)

// Metrics receives what the pod reconciler measures. Implementations must
// be safe for concurrent use and cheap.
type Metrics interface {
	// Reconciled is one reconcile of a pod key: its phase ("allocate",
	// "route", "release", "noop"), its result ("ok", "error", "invalid")
	// and how long it took.
	Reconciled(phase, result string, d time.Duration)
	// Annotated is the time from a pod's creation to its allocated
	// annotation being written.
	Annotated(d time.Duration)
}

// NopMetrics discards everything.
type NopMetrics struct{}

func (NopMetrics) Reconciled(string, string, time.Duration) {}
func (NopMetrics) Annotated(time.Duration)                  {}

// Event reasons of the Warning Events the pod reconciler records.
const (
	ReasonInvalidAnnotation = "InvalidNetworkAnnotation"
	ReasonSubnet            = "SubnetUnavailable"
	ReasonAddress           = "AcquireAddressFailed"
	// ReasonAddressConflict: the address the pod asks for (its
	// annotation, a static address) is in use by another holder found
	// outside the claims.
	ReasonAddressConflict = "AddressConflict"
	ReasonPort            = "CreateOVNPortFailed"
)

// Retry delays for failures that only a change elsewhere cures.
const (
	retryUnknownSubnet = 15 * time.Second
	retryFull          = 5 * time.Second
)

// Northbound is what the pod path reads from the Northbound cache and the
// ops it builds; the writes themselves go through the term's ShardWriter.
type Northbound interface {
	Port(name string) (*nbdb.LogicalSwitchPort, bool)
	PortsByPod(pod string) []*nbdb.LogicalSwitchPort
	EnsurePortFrom(spec ovn.PortSpec, cur *nbdb.LogicalSwitchPort) ([]ovsdb.Operation, ovn.Ref, error)
	DeletePort(name string) ([]ovsdb.Operation, error)
	DeletePodPorts(pod string) ([]ovsdb.Operation, error)
	DeletePodRouting(pod string) ([]ovsdb.Operation, error)
	AddToPortGroup(group string, ports ...ovn.Ref) ([]ovsdb.Operation, error)
	PortGroup(name string) (*nbdb.PortGroup, bool)
	LeaveNodePortGroups(subnet string, port ovn.Ref) []ovsdb.Operation
	EnsureStaticRoute(spec ovn.RouteSpec) ([]ovsdb.Operation, error)
	EnsureNAT(spec ovn.NATSpec) ([]ovsdb.Operation, error)
	SubnetDHCPOptions(sw, family string) (*nbdb.DHCPOptions, bool)
}

var _ Northbound = (*ovn.Client)(nil)

// NADSource serves NetworkAttachmentDefinition configs (see NADs).
type NADSource interface {
	Config(namespace, name string) (config string, found bool, err error)
}

// PodConfig is what the pod reconciler reads and writes through.
type PodConfig struct {
	// Writes are the Kubernetes writes (ClientWrites in a replica).
	Writes KubeWrites
	NB     Northbound

	Pods         corelisters.PodLister
	StatefulSets appslisters.StatefulSetLister
	// IPs is the kubeovn.io IP lister; needed when IPRecords is set.
	IPs kubeovnlisters.IPLister
	// ClaimIndex is the AddressClaim informer's indexer, with
	// ClaimIndexers added. It holds claimcache.Claim objects (and
	// *v1alpha1.AddressClaim ones of uncommon shape): read them with
	// claimcache.SpecOf or claimcache.Of.
	ClaimIndex cache.Indexer
	Catalog    Catalog
	Subnets    *Subnets
	Claims     *ipam.Claims
	// NADs serves the attachments' definitions; nil serves none (every
	// attachment then fails with ErrNADsNotServed).
	NADs     NADSource
	Recorder record.EventRecorder
	// Vips is the Vip lister, for pods with ovn.kubernetes.io/vip; nil
	// serves no Vip (such pods wait, docs/contract.md E20). VipWrites
	// marks a Vip taken and given back; VipMetrics, when set, counts the
	// pods that wait for one.
	Vips       kubeovnlisters.VipLister
	VipWrites  VipWrites
	VipMetrics VipMetrics
	// Vlans is the Vlan lister, for the annotations of pods on underlay
	// subnets (docs/contract.md A8); nil serves no Vlan (such networks
	// wait, E19).
	Vlans kubeovnlisters.VlanLister
	// ExternalGateway serves the next hop of the source routes of pods
	// with eip or snat (docs/contract.md G11); nil serves none (their
	// routed phase waits, E25). Unused with DisableEIPSNAT.
	ExternalGateway ExternalGatewayCatalog

	// DefaultSubnet is the --default-subnet name (empty: the Subnet with
	// spec.default).
	DefaultSubnet string
	// ClusterRouter is the default VPC's router (default "ovn-cluster").
	ClusterRouter string
	// PodNICType is written as pod_nic_type when the pod has none
	// (default "veth-pair").
	PodNICType string
	// IPRecords makes the reconciler keep a kubeovn.io IP per network.
	IPRecords bool
	// DisableEIPSNAT (--enable-eip-snat=false) leaves eip and snat
	// annotations and NAT rules alone (docs/contract.md G10).
	DisableEIPSNAT bool
	// KeepVMIP (--keep-vm-ip) keys KubeVirt launcher pods by their VM and
	// keeps the VM's addresses and ports across launcher pods (R13). It
	// needs PodIndex (the pod informer's indexer with VMPodIndexers) and
	// VMs; without KubeVirt served, launcher pods wait with a Warning.
	KeepVMIP bool
	PodIndex cache.Indexer
	VMs      VMSource
	Metrics  Metrics
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Pods is the pod reconciler's configuration shared by every shard term
// of a replica: clients, caches and the Planner. The work of one shard
// term is a Term (NewTerm), which owns the term's Northbound writer and
// its per-key memory.
type Pods struct {
	cfg     PodConfig
	planner *Planner
	// ipCreated are the IP records this replica created that its
	// informer may not have delivered yet.
	ipCreated *ipcache.Created
}

// NewPods checks cfg and returns the reconciler.
func NewPods(cfg PodConfig) (*Pods, error) {
	switch {
	case cfg.Writes == nil || cfg.NB == nil:
		return nil, errors.New("reconcile: Writes and NB are required")
	case cfg.Pods == nil || cfg.StatefulSets == nil || cfg.ClaimIndex == nil || cfg.Catalog == nil:
		return nil, errors.New("reconcile: pod and StatefulSet listers, the claim index and the catalog are required")
	case cfg.Subnets == nil || cfg.Claims == nil || cfg.Recorder == nil:
		return nil, errors.New("reconcile: Subnets, Claims and Recorder are required")
	case cfg.IPRecords && cfg.IPs == nil:
		return nil, errors.New("reconcile: IPRecords needs the IP lister")
	case cfg.KeepVMIP && cfg.PodIndex == nil:
		return nil, errors.New("reconcile: KeepVMIP needs the pod index")
	}
	if cfg.ClusterRouter == "" {
		cfg.ClusterRouter = DefaultClusterRouter
	}
	if cfg.PodNICType == "" {
		cfg.PodNICType = DefaultPodNICType
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NopMetrics{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &Pods{cfg: cfg, ipCreated: ipcache.NewCreated(cfg.Now)}
	p.planner = &Planner{
		View:          &cacheView{Catalog: cfg.Catalog, cfg: &p.cfg},
		DefaultSubnet: cfg.DefaultSubnet,
		ClusterRouter: cfg.ClusterRouter,
		PodNICType:    cfg.PodNICType,
		IPRecords:     cfg.IPRecords,
		IgnoreEIPSNAT: cfg.DisableEIPSNAT,
		// docs/contract.md G11.
		ExternalGateway: cfg.ExternalGateway,
	}
	if cfg.Vips != nil {
		p.planner.Vips = VipLister{Lister: cfg.Vips}
	}
	if cfg.Vlans != nil {
		p.planner.Vlans = VlanLister{Lister: cfg.Vlans}
	}
	return p, nil
}

// DefaultClusterRouter is the router of the default VPC.
const DefaultClusterRouter = "ovn-cluster"
