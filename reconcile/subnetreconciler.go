package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	kubeovnlisters "github.com/shardnet/shardnet/api/client/listers/kubeovn/v1"
	claimlisters "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/queue"
)

// SubnetFinalizer keeps a Subnet until no claim uses it and its switch is
// gone from the Northbound.
const SubnetFinalizer = "shardnet.io/subnet"

// Condition types and reasons the subnet reconciler writes.
const (
	ConditionReady       = "Ready"
	ReasonInUse          = "InUse"
	ReasonInvalidSpec    = "InvalidSpec"
	ReasonRouterNotFound = "RouterNotFound"
	ReasonReady          = "Ready"
	// ReasonTopologyDiffers is the condition reason and the Warning Event
	// reason of a Subnet whose existing Northbound rows differ from it in
	// a way that matters (docs/decisions/0011-adopt-topology.md).
	ReasonTopologyDiffers = "TopologyDiffers"
)

// topologyRecheck is how often a Subnet whose rows differ is looked at
// again: nothing else tells when someone fixes the Northbound.
const topologyRecheck = 30 * time.Second

// TopologyMetrics counts the differences the subnet reconciler finds
// between a Subnet and the Northbound rows it adopts; object is one of
// ovn.ObjectSwitch, ovn.ObjectRouterPort, ovn.ObjectPortGroup.
type TopologyMetrics interface {
	TopologyDifference(subnet, object string)
}

// SubnetConfig is what the subnet reconciler reads and writes through.
type SubnetConfig struct {
	NB       *ovn.Client
	Shardnet versioned.Interface
	Subnets  kubeovnlisters.SubnetLister
	Nodes    corelisters.NodeLister
	Claims   claimlisters.AddressClaimLister
	Registry *Subnets
	Recorder record.EventRecorder
	// ClusterRouter is the default VPC's router (default "ovn-cluster").
	ClusterRouter string
	// Metrics counts topology differences; nil counts nothing.
	Metrics TopologyMetrics
	// NetworkType (NetworkTypeGeneve, the default, ...) sets the MTU DHCP
	// hands out on overlay subnets without spec.mtu.
	NetworkType string
	// Term, when set, is the leadership term the reconciler writes under,
	// asked for before every write: every Northbound transaction carries
	// it as a fence (ovn.LeaderShard), and no Subnet is patched while it
	// fails. An error wrapping ErrDeposed drops the work (the next leader
	// re-runs every subnet); any other error retries it.
	Term func() (uint64, error)
}

// ErrDeposed reports that this replica may no longer make the leader's
// writes.
var ErrDeposed = errors.New("not the leader any more")

// SubnetReconciler runs on the leader only: it keeps each Subnet's logical
// switch, its router port on the VPC router, the per-node port groups of
// overlay subnets, and its DHCP options rows (docs/decisions/0016); it refuses a Subnet's deletion while addresses are
// claimed in it, and it writes the status counters (RefreshStatus).
//
// Rows that exist are adopted as they are (docs/decisions/0011): it adds
// the rows that are missing and updates only the switches and router ports
// it inserted itself. A difference that matters in any other row is not
// written; it is reported, once per distinct set of differences, as a
// Warning Event and a metric, and the Ready condition says so.
type SubnetReconciler struct {
	cfg SubnetConfig

	// mu guards reported: the differences last reported per subnet.
	mu       sync.Mutex
	reported map[string]string
}

// NewSubnetReconciler checks cfg and returns the reconciler.
func NewSubnetReconciler(cfg SubnetConfig) (*SubnetReconciler, error) {
	if cfg.NB == nil || cfg.Shardnet == nil || cfg.Subnets == nil || cfg.Nodes == nil || cfg.Claims == nil || cfg.Registry == nil || cfg.Recorder == nil {
		return nil, errors.New("reconcile: incomplete subnet reconciler config")
	}
	if cfg.ClusterRouter == "" {
		cfg.ClusterRouter = DefaultClusterRouter
	}
	if cfg.NetworkType == "" {
		cfg.NetworkType = NetworkTypeGeneve
	}
	if !ValidNetworkType(cfg.NetworkType) {
		return nil, fmt.Errorf("reconcile: network type %q: want geneve, vxlan, stt or vlan", cfg.NetworkType)
	}
	return &SubnetReconciler{cfg: cfg, reported: map[string]string{}}, nil
}

// Reconcile converges one Subnet by name.
func (r *SubnetReconciler) Reconcile(ctx context.Context, name string) error {
	s, err := r.cfg.Subnets.Get(name)
	if apierrors.IsNotFound(err) {
		return r.deleteSwitch(ctx, name)
	}
	if err != nil {
		return err
	}
	if s.DeletionTimestamp != nil {
		return r.finalize(ctx, s)
	}
	if !slices.Contains(s.Finalizers, SubnetFinalizer) {
		fins := append(slices.Clone(s.Finalizers), SubnetFinalizer)
		err := r.patchSubnet(ctx, s, map[string]any{"metadata": map[string]any{"finalizers": fins}})
		if apierrors.IsConflict(err) {
			return queue.RetryAfter(200 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("adding finalizer to subnet %s: %w", name, err)
		}
		// The patch comes back as an event; continue with this copy.
	}
	sub, err := r.cfg.Registry.Get(name)
	if err != nil {
		r.cfg.Recorder.Event(s, corev1.EventTypeWarning, ReasonInvalidSpec, err.Error())
		return queue.Permanent(r.setCondition(ctx, s, corev1.ConditionFalse, ReasonInvalidSpec, err.Error()))
	}
	v4, v6 := sub.Prefixes()
	var cidrs []string
	for _, p := range []netip.Prefix{v4, v6} {
		if p.IsValid() {
			cidrs = append(cidrs, p.String())
		}
	}
	ops, _, diffs, err := r.cfg.NB.EnsureSwitch(ovn.SwitchSpec{
		Name: name, CIDRs: cidrs, ExcludeIPs: s.Spec.ExcludeIps,
		ExternalIDs: map[string]string{"subnet": name},
	})
	if err != nil {
		return fmt.Errorf("building switch %s: %w", name, err)
	}
	if err := r.transact(ctx, ops); err != nil {
		return fmt.Errorf("writing switch %s: %w", name, err)
	}
	if _, ok := r.cfg.NB.Switch(name); !ok {
		// The cache catches up with the insert in a moment.
		return queue.RetryAfter(100 * time.Millisecond)
	}
	dhcpProblem, err := r.ensureDHCP(ctx, s, sub)
	if err != nil {
		return err
	}
	if err := r.ensureVirtualPorts(ctx, s, sub); err != nil {
		return err
	}

	overlay := s.Spec.Vlan == "" || s.Spec.LogicalGateway || s.Spec.U2OInterconnection
	router := s.Spec.Vpc
	if router == "" {
		router = r.cfg.ClusterRouter
	}
	if overlay {
		// A router port that differs does not stop the node groups:
		// missing rows are added whatever the existing ones hold.
		d, err := r.ensureRouterPort(ctx, s, sub, router, cidrs)
		if err != nil {
			return err
		}
		diffs = append(diffs, d...)
		if router == r.cfg.ClusterRouter && (s.Spec.Vlan == "" || s.Spec.LogicalGateway) {
			d, err := r.ensureNodeGroups(ctx, s)
			if err != nil {
				return err
			}
			diffs = append(diffs, d...)
		}
	}
	if dhcpProblem != "" {
		// Nothing but a change of the Subnet cures it.
		return r.setCondition(ctx, s, corev1.ConditionFalse, ReasonInvalidDHCPOptions, dhcpProblem)
	}
	if len(diffs) > 0 {
		r.reportDifferences(s, diffs)
		if err := r.setCondition(ctx, s, corev1.ConditionFalse, ReasonTopologyDiffers, differencesMessage(diffs)); err != nil {
			return err
		}
		return queue.RetryAfter(topologyRecheck)
	}
	r.forgetDifferences(name)
	return r.setCondition(ctx, s, corev1.ConditionTrue, ReasonReady, "switch and router port are in the Northbound")
}

// ensureRouterPort adds the router port and its switch port where missing,
// and returns how the existing ones differ from the Subnet.
func (r *SubnetReconciler) ensureRouterPort(ctx context.Context, s *kubeovnv1.Subnet, sub *ipam.Subnet, router string, cidrs []string) ([]ovn.Difference, error) {
	if _, ok := r.cfg.NB.Router(router); !ok {
		if router != r.cfg.ClusterRouter {
			msg := fmt.Sprintf("VPC router %s does not exist", router)
			_ = r.setCondition(ctx, s, corev1.ConditionFalse, ReasonRouterNotFound, msg)
			return nil, queue.RetryAfter(10 * time.Second)
		}
		ops, _, err := r.cfg.NB.EnsureRouter(ovn.RouterSpec{Name: router})
		if err != nil {
			return nil, fmt.Errorf("building router %s: %w", router, err)
		}
		if err := r.transact(ctx, ops); err != nil {
			return nil, fmt.Errorf("creating router %s: %w", router, err)
		}
		return nil, queue.RetryAfter(100 * time.Millisecond)
	}
	gw := sub.Gateways()
	var networks []string
	for i, a := range gw.List() {
		p := netip.MustParsePrefix(cidrs[i])
		networks = append(networks, netip.PrefixFrom(a, p.Bits()).String())
	}
	spec := ovn.RouterPortSpec{
		Router: router, Switch: s.Name,
		RouterPort: router + "-" + s.Name, SwitchPort: s.Name + "-" + router,
		MAC: sub.DerivedMAC(gw).String(), Networks: networks,
	}
	if _, ok := r.cfg.NB.RouterPort(spec.RouterPort); ok {
		// Routers' port sets are not cached: ask the server which router
		// holds it. A port on another router is not this Subnet's link,
		// and nothing of it is written.
		holder, err := r.cfg.NB.RouterOfPort(ctx, spec.RouterPort)
		if err != nil {
			return nil, fmt.Errorf("reading the router of %s: %w", spec.RouterPort, err)
		}
		if holder == "" {
			// Deleted since the cache saw it.
			return nil, queue.RetryAfter(100 * time.Millisecond)
		}
		if holder != router {
			return []ovn.Difference{{Object: ovn.ObjectRouterPort, Table: nbdb.LogicalRouterPortTable, Row: spec.RouterPort,
				Field: "router", Have: holder, Want: router}}, nil
		}
	}
	ops, diffs, err := r.cfg.NB.EnsureRouterPort(spec)
	if errors.Is(err, ovn.ErrNotFound) {
		return nil, queue.RetryAfter(100 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("building router port of %s: %w", s.Name, err)
	}
	if err := r.transact(ctx, ops); err != nil {
		return nil, fmt.Errorf("writing router port of %s: %w", s.Name, err)
	}
	return diffs, nil
}

// ensureNodeGroups creates the port group of the subnet on every node, so
// that pods joining it never race each other to insert it. Existing groups
// (kube-ovn's included) are kept as they are.
func (r *SubnetReconciler) ensureNodeGroups(ctx context.Context, s *kubeovnv1.Subnet) ([]ovn.Difference, error) {
	nodes, err := r.cfg.Nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var (
		ops   []ovsdb.Operation
		diffs []ovn.Difference
	)
	for _, n := range nodes {
		pg := NodePortGroupName(s.Name, n.Name)
		// The external ids of kube-ovn's own node groups since v1.14:
		// subnet and node, and np=<subnet>/<node> as older versions had it.
		gops, _, d, err := r.cfg.NB.EnsurePortGroup(pg, map[string]string{ovn.ExternalIDSubnet: s.Name, "node": n.Name, "np": s.Name + "/" + n.Name})
		if err != nil {
			return nil, fmt.Errorf("building port group %s: %w", pg, err)
		}
		ops = append(ops, gops...)
		diffs = append(diffs, d...)
	}
	if err := r.transact(ctx, ops); err != nil {
		return nil, fmt.Errorf("writing node port groups of %s: %w", s.Name, err)
	}
	return diffs, nil
}

// differenceText is one difference as the Subnet's Event and condition
// say it.
func differenceText(d ovn.Difference) string {
	quote := func(v string) string {
		if v == "" {
			return "unset"
		}
		return strconv.Quote(v)
	}
	return fmt.Sprintf("%s %s: %s is %s, the Subnet says %s", d.Table, d.Row, d.Field, quote(d.Have), quote(d.Want))
}

func differencesMessage(diffs []ovn.Difference) string {
	texts := make([]string, len(diffs))
	for i, d := range diffs {
		texts[i] = differenceText(d)
	}
	return "the Northbound differs from the Subnet and is left as it is: " + strings.Join(texts, "; ")
}

// reportDifferences gives each difference a Warning Event and a count,
// unless this replica reported the same set for the subnet last time: the
// Subnet is reconciled again on every status write and every recheck.
func (r *SubnetReconciler) reportDifferences(s *kubeovnv1.Subnet, diffs []ovn.Difference) {
	key := differencesMessage(diffs)
	r.mu.Lock()
	same := r.reported[s.Name] == key
	r.reported[s.Name] = key
	r.mu.Unlock()
	if same {
		return
	}
	for _, d := range diffs {
		r.cfg.Recorder.Event(s, corev1.EventTypeWarning, ReasonTopologyDiffers, differenceText(d)+"; left as it is")
		if r.cfg.Metrics != nil {
			r.cfg.Metrics.TopologyDifference(s.Name, d.Object)
		}
	}
}

func (r *SubnetReconciler) forgetDifferences(subnet string) {
	r.mu.Lock()
	delete(r.reported, subnet)
	r.mu.Unlock()
}

// finalize deletes a Subnet's Northbound rows once no claim uses it, then
// lets the API server delete it.
func (r *SubnetReconciler) finalize(ctx context.Context, s *kubeovnv1.Subnet) error {
	if !slices.Contains(s.Finalizers, SubnetFinalizer) {
		return nil
	}
	used, err := r.cfg.Claims.List(labels.SelectorFromSet(labels.Set{v1alpha1.LabelSubnet: ipam.SubnetLabelValue(s.Name)}))
	if err != nil {
		return err
	}
	if len(used) > 0 {
		msg := fmt.Sprintf("deletion waits: %d addresses are still claimed (first %s)", len(used), used[0].Name)
		if err := r.setCondition(ctx, s, corev1.ConditionFalse, ReasonInUse, msg); err != nil {
			return err
		}
		return queue.RetryAfter(5 * time.Second)
	}
	if err := r.deleteSwitch(ctx, s.Name); err != nil {
		return err
	}
	fins := slices.DeleteFunc(slices.Clone(s.Finalizers), func(f string) bool { return f == SubnetFinalizer })
	err = r.patchSubnet(ctx, s, map[string]any{"metadata": map[string]any{"finalizers": fins}})
	if apierrors.IsConflict(err) {
		return queue.RetryAfter(200 * time.Millisecond)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer of subnet %s: %w", s.Name, err)
	}
	return nil
}

// patchSubnet writes body onto the Subnet as a JSON merge patch guarded
// by the cached copy's resourceVersion, on the status subresource when
// status is given. shardnet's Subnet type knows a subset of the fields
// kube-ovn's has: a full update would send that subset back and erase
// the rest (MTU, ACLs, kube-ovn's status fields), so every Subnet write
// names only the fields it changes.
func (r *SubnetReconciler) patchSubnet(ctx context.Context, s *kubeovnv1.Subnet, body map[string]any, subresources ...string) error {
	if err := r.mayWrite(); err != nil {
		return err
	}
	meta, _ := body["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		body["metadata"] = meta
	}
	meta["resourceVersion"] = s.ResourceVersion
	if st, ok := body["status"].(map[string]any); ok {
		// kube-ovn's Subnet CRD requires the four counters in a status.
		// A Subnet no controller has written a status for has none, and
		// a patch of its conditions or DHCP options alone, made before
		// the status loop's first pass, was refused until that pass.
		// The cached copy's counters go with such a patch: under its
		// resourceVersion they are the server's own, or zeros where
		// there were none, which the status loop corrects.
		for k, v := range map[string]float64{
			"v4availableIPs": s.Status.V4AvailableIPs, "v4usingIPs": s.Status.V4UsingIPs,
			"v6availableIPs": s.Status.V6AvailableIPs, "v6usingIPs": s.Status.V6UsingIPs,
		} {
			if _, named := st[k]; !named {
				st[k] = v
			}
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = r.cfg.Shardnet.KubeovnV1().Subnets().Patch(ctx, s.Name, types.MergePatchType, b, metav1.PatchOptions{}, subresources...)
	return err
}

func (r *SubnetReconciler) deleteSwitch(ctx context.Context, name string) error {
	r.forgetDifferences(name)
	ops, err := r.cfg.NB.DeleteSwitch(name)
	if err != nil {
		return err
	}
	// DHCP_Options rows are root rows: they outlive the switch unless
	// deleted.
	dops, _, err := r.cfg.NB.DeleteDHCPOptions(name)
	if err != nil {
		return err
	}
	ops = append(ops, dops...)
	// The router port is not a root row: dropping the router's reference
	// deletes it.
	router := r.cfg.ClusterRouter
	if s, err := r.cfg.Subnets.Get(name); err == nil && s.Spec.Vpc != "" {
		router = s.Spec.Vpc
	}
	lr, lrOK := r.cfg.NB.Router(router)
	lrp, lrpOK := r.cfg.NB.RouterPort(router + "-" + name)
	if lrOK && lrpOK {
		ops = append(ops, ovsdb.Operation{
			Op: ovsdb.OperationMutate, Table: nbdb.LogicalRouterTable,
			Where:     []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: lr.UUID}}},
			Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationDelete, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: lrp.UUID}}}}},
		})
	}
	return r.transact(ctx, ops)
}

func (r *SubnetReconciler) transact(ctx context.Context, ops []ovsdb.Operation) error {
	if len(ops) == 0 {
		return nil
	}
	if r.cfg.Term == nil {
		_, err := r.cfg.NB.Transact(ctx, ops...)
		return err
	}
	term, err := r.cfg.Term()
	if err != nil {
		return err
	}
	_, err = r.cfg.NB.TransactFenced(ctx, ovn.Fence{Shard: ovn.LeaderShard, Epoch: term}, ops...)
	if errors.Is(err, ovn.ErrStaleEpoch) {
		return fmt.Errorf("%w: %w", ErrDeposed, err)
	}
	return err
}

// mayWrite is the leader check before a Subnet patch.
func (r *SubnetReconciler) mayWrite() error {
	if r.cfg.Term == nil {
		return nil
	}
	_, err := r.cfg.Term()
	return err
}

// setCondition writes the Ready condition when it changes.
func (r *SubnetReconciler) setCondition(ctx context.Context, s *kubeovnv1.Subnet, status corev1.ConditionStatus, reason, msg string) error {
	for _, c := range s.Status.Conditions {
		if c.Type == ConditionReady && c.Status == status && c.Reason == reason && c.Message == msg {
			return nil
		}
	}
	upd := s.DeepCopy()
	now := metav1.Now()
	cond := kubeovnv1.Condition{Type: ConditionReady, Status: status, Reason: reason, Message: msg,
		LastUpdateTime: now, LastTransitionTime: now, ObservedGeneration: s.Generation}
	replaced := false
	for i, c := range upd.Status.Conditions {
		if c.Type == ConditionReady {
			if c.Status == status {
				cond.LastTransitionTime = c.LastTransitionTime
			}
			upd.Status.Conditions[i] = cond
			replaced = true
		}
	}
	if !replaced {
		upd.Status.Conditions = append(upd.Status.Conditions, cond)
	}
	err := r.patchSubnet(ctx, s, map[string]any{"status": map[string]any{"conditions": upd.Status.Conditions}}, "status")
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return queue.RetryAfter(200 * time.Millisecond)
	}
	return err
}

// RefreshStatus writes every Subnet's address counters, from usage (the
// registry's Refresh), where they changed since the status last written.
// Run it every few seconds, never per pod.
func (r *SubnetReconciler) RefreshStatus(ctx context.Context, usage map[string][]ipam.FamilyUsage) error {
	subnets, err := r.cfg.Subnets.List(labels.Everything())
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range subnets {
		u, ok := usage[s.Name]
		if !ok || s.DeletionTimestamp != nil {
			continue
		}
		st := s.Status
		st.V4AvailableIPs, st.V4UsingIPs, st.V6AvailableIPs, st.V6UsingIPs = 0, 0, 0, 0
		for _, f := range u {
			if f.Family == "IPv4" {
				st.V4AvailableIPs, st.V4UsingIPs = float64(f.Available), float64(f.Used)
			} else {
				st.V6AvailableIPs, st.V6UsingIPs = float64(f.Available), float64(f.Used)
			}
		}
		if st.V4AvailableIPs == s.Status.V4AvailableIPs && st.V4UsingIPs == s.Status.V4UsingIPs &&
			st.V6AvailableIPs == s.Status.V6AvailableIPs && st.V6UsingIPs == s.Status.V6UsingIPs {
			continue
		}
		if err := r.writeCounters(ctx, s, st); err != nil {
			errs = append(errs, fmt.Errorf("subnet %s status: %w", s.Name, err))
		}
	}
	if len(errs) > 0 {
		klog.FromContext(ctx).Error(errors.Join(errs...), "Writing subnet status")
	}
	return errors.Join(errs...)
}

// writeCounters writes the counters of st onto the Subnet. A conflict means
// the cached copy is stale (the condition writer got there first): the
// counters go onto the server's current copy once, rather than waiting for
// a cache that may keep losing the race.
func (r *SubnetReconciler) writeCounters(ctx context.Context, s *kubeovnv1.Subnet, st kubeovnv1.SubnetStatus) error {
	body := func() map[string]any {
		return map[string]any{"status": map[string]any{
			"v4availableIPs": st.V4AvailableIPs, "v4usingIPs": st.V4UsingIPs,
			"v6availableIPs": st.V6AvailableIPs, "v6usingIPs": st.V6UsingIPs,
		}}
	}
	err := r.patchSubnet(ctx, s, body(), "status")
	if !apierrors.IsConflict(err) {
		return err
	}
	cur, err := r.cfg.Shardnet.KubeovnV1().Subnets().Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	err = r.patchSubnet(ctx, cur, body(), "status")
	if apierrors.IsConflict(err) {
		return nil // next round
	}
	return err
}

// ReasonInvalidDHCPOptions is the Warning Event reason of a Subnet whose
// spec.dhcpV4Options or dhcpV6Options cannot be read.
const ReasonInvalidDHCPOptions = "InvalidDHCPOptions"

// ensureDHCP keeps the subnet's DHCP_Options rows (docs/contract.md N4):
// one per family of its block while enableDHCP is set, none otherwise,
// and their UUIDs in the Subnet's status, as kube-ovn records them. A
// port that refers to a deleted row loses the reference with it. Options
// that cannot be read are returned as a problem: a Warning Event is
// recorded, the rows are left as they are, and the rest of the Subnet's
// topology is still kept.
func (r *SubnetReconciler) ensureDHCP(ctx context.Context, s *kubeovnv1.Subnet, sub *ipam.Subnet) (problem string, err error) {
	var ops []ovsdb.Operation
	var keep []string
	if s.Spec.EnableDHCP {
		have := func(family string) map[string]string {
			if row, ok := r.cfg.NB.SubnetDHCPOptions(s.Name, family); ok {
				return row.Options
			}
			return nil
		}
		specs, err := DHCPOptionsSpecs(s, sub, r.cfg.NetworkType, have)
		if err != nil {
			r.cfg.Recorder.Event(s, corev1.EventTypeWarning, ReasonInvalidDHCPOptions, err.Error())
			return err.Error(), nil
		}
		for _, spec := range specs {
			eops, err := r.cfg.NB.EnsureDHCPOptions(spec)
			if err != nil {
				return "", fmt.Errorf("building DHCP options of %s: %w", s.Name, err)
			}
			ops = append(ops, eops...)
			keep = append(keep, dhcpFamily(netip.MustParsePrefix(spec.CIDR)))
		}
	}
	// deleted are the UUIDs of the rows this run deletes.
	var deleted []string
	if len(keep) < 2 {
		dops, uuids, err := r.cfg.NB.DeleteDHCPOptions(s.Name, keep...)
		if err != nil {
			return "", err
		}
		ops, deleted = append(ops, dops...), uuids
	}
	if err := r.transact(ctx, ops); err != nil {
		return "", fmt.Errorf("writing DHCP options of %s: %w", s.Name, err)
	}
	var v4, v6 string
	for _, family := range keep {
		row, ok := r.cfg.NB.SubnetDHCPOptions(s.Name, family)
		if !ok {
			// The cache catches up with the insert in a moment.
			return "", queue.RetryAfter(100 * time.Millisecond)
		}
		if family == ovn.DHCPv4 {
			v4 = row.UUID
		} else {
			v6 = row.UUID
		}
	}
	if !s.Spec.EnableDHCP {
		// Without DHCP the status fields are left as they are (a kube-ovn
		// Subnet taken over may carry its own), except those naming the
		// rows just deleted.
		v4, v6 = s.Status.DHCPv4OptionsUUID, s.Status.DHCPv6OptionsUUID
		if slices.Contains(deleted, v4) {
			v4 = ""
		}
		if slices.Contains(deleted, v6) {
			v6 = ""
		}
	}
	if s.Status.DHCPv4OptionsUUID == v4 && s.Status.DHCPv6OptionsUUID == v6 {
		return "", nil
	}
	// null removes a key in a merge patch.
	uuid := func(u string) any {
		if u == "" {
			return nil
		}
		return u
	}
	err = r.patchSubnet(ctx, s, map[string]any{"status": map[string]any{
		"dhcpV4OptionsUUID": uuid(v4), "dhcpV6OptionsUUID": uuid(v6),
	}}, "status")
	if err != nil && !apierrors.IsConflict(err) {
		return "", fmt.Errorf("recording DHCP options of %s: %w", s.Name, err)
	}
	// The cached Subnet is older than the patch now: the next run goes on
	// from the patched copy.
	return "", queue.RetryAfter(100 * time.Millisecond)
}

// ReasonInvalidVips is the Warning Event reason of a Subnet whose
// spec.vips lists an address outside its block.
const ReasonInvalidVips = "InvalidVips"

// ensureVirtualPorts keeps a virtual port per address of the Subnet's
// spec.vips, whose virtual-parents are the switch's ports that list the
// address in their vips (docs/contract.md N14,
// docs/decisions/0015-virtual-ports.md), and deletes the virtual ports of
// addresses no longer listed. An address outside the block gets a Warning
// and no port.
func (r *SubnetReconciler) ensureVirtualPorts(ctx context.Context, s *kubeovnv1.Subnet, sub *ipam.Subnet) error {
	v4, v6 := sub.Prefixes()
	var vips, bad []string
	for _, v := range s.Spec.Vips {
		a, err := netip.ParseAddr(strings.TrimSpace(v))
		if err != nil || !(v4.IsValid() && v4.Contains(a) || v6.IsValid() && v6.Contains(a)) {
			bad = append(bad, v)
			continue
		}
		if !slices.Contains(vips, a.String()) {
			vips = append(vips, a.String())
		}
	}
	if len(bad) > 0 {
		r.cfg.Recorder.Eventf(s, corev1.EventTypeWarning, ReasonInvalidVips, "spec.vips: %s not addresses of %s; no virtual port for them", strings.Join(bad, ", "), s.Spec.CIDRBlock)
	}
	ops, err := r.cfg.NB.EnsureVirtualPorts(s.Name, vips, r.cfg.NB.VirtualParents(s.Name, vips))
	if err != nil {
		return fmt.Errorf("building virtual ports of %s: %w", s.Name, err)
	}
	if err := r.transact(ctx, ops); err != nil {
		return fmt.Errorf("writing virtual ports of %s: %w", s.Name, err)
	}
	return nil
}
