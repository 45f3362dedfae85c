package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
)

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
}

// SubnetReconciler runs on the leader only: it keeps each Subnet's logical
// switch, its router port on the VPC router, and the per-node port groups
// of overlay subnets; it refuses a Subnet's deletion while addresses are
// claimed in it, and it writes the status counters (RefreshStatus).
type SubnetReconciler struct {
	cfg SubnetConfig
}

// NewSubnetReconciler checks cfg and returns the reconciler.
func NewSubnetReconciler(cfg SubnetConfig) (*SubnetReconciler, error) {
	if cfg.NB == nil || cfg.Shardnet == nil || cfg.Subnets == nil || cfg.Nodes == nil || cfg.Claims == nil || cfg.Registry == nil || cfg.Recorder == nil {
		return nil, errors.New("reconcile: incomplete subnet reconciler config")
	}
	if cfg.ClusterRouter == "" {
		cfg.ClusterRouter = DefaultClusterRouter
	}
	return &SubnetReconciler{cfg: cfg}, nil
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
		upd := s.DeepCopy()
		upd.Finalizers = append(upd.Finalizers, SubnetFinalizer)
		if _, err := r.cfg.Shardnet.KubeovnV1().Subnets().Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("adding finalizer to subnet %s: %w", name, err)
		}
		// The update comes back as an event; continue with this copy.
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
	ops, _, err := r.cfg.NB.EnsureSwitch(ovn.SwitchSpec{
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

	overlay := s.Spec.Vlan == "" || s.Spec.LogicalGateway || s.Spec.U2OInterconnection
	router := s.Spec.Vpc
	if router == "" {
		router = r.cfg.ClusterRouter
	}
	if overlay {
		if err := r.ensureRouterPort(ctx, s, sub, router, cidrs); err != nil {
			return err
		}
		if router == r.cfg.ClusterRouter && (s.Spec.Vlan == "" || s.Spec.LogicalGateway) {
			if err := r.ensureNodeGroups(ctx, s); err != nil {
				return err
			}
		}
	}
	return r.setCondition(ctx, s, corev1.ConditionTrue, ReasonReady, "switch and router port are in the Northbound")
}

func (r *SubnetReconciler) ensureRouterPort(ctx context.Context, s *kubeovnv1.Subnet, sub *ipam.Subnet, router string, cidrs []string) error {
	if _, ok := r.cfg.NB.Router(router); !ok {
		if router != r.cfg.ClusterRouter {
			msg := fmt.Sprintf("VPC router %s does not exist", router)
			_ = r.setCondition(ctx, s, corev1.ConditionFalse, ReasonRouterNotFound, msg)
			return queue.RetryAfter(10 * time.Second)
		}
		ops, _, err := r.cfg.NB.EnsureRouter(ovn.RouterSpec{Name: router})
		if err != nil {
			return fmt.Errorf("building router %s: %w", router, err)
		}
		if err := r.transact(ctx, ops); err != nil {
			return fmt.Errorf("creating router %s: %w", router, err)
		}
		return queue.RetryAfter(100 * time.Millisecond)
	}
	gw := sub.Gateways()
	var networks []string
	for i, a := range gw.List() {
		p := netip.MustParsePrefix(cidrs[i])
		networks = append(networks, netip.PrefixFrom(a, p.Bits()).String())
	}
	ops, err := r.cfg.NB.EnsureRouterPort(ovn.RouterPortSpec{
		Router: router, Switch: s.Name,
		RouterPort: router + "-" + s.Name, SwitchPort: s.Name + "-" + router,
		MAC: sub.DerivedMAC(gw).String(), Networks: networks,
	})
	if errors.Is(err, ovn.ErrNotFound) {
		return queue.RetryAfter(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("building router port of %s: %w", s.Name, err)
	}
	if err := r.transact(ctx, ops); err != nil {
		return fmt.Errorf("writing router port of %s: %w", s.Name, err)
	}
	return nil
}

// ensureNodeGroups creates the port group of the subnet on every node, so
// that pods joining it never race each other to insert it.
func (r *SubnetReconciler) ensureNodeGroups(ctx context.Context, s *kubeovnv1.Subnet) error {
	nodes, err := r.cfg.Nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	var ops []ovsdb.Operation
	for _, n := range nodes {
		pg := NodePortGroupName(s.Name, n.Name)
		gops, _, err := r.cfg.NB.EnsurePortGroup(pg, map[string]string{ovn.ExternalIDSubnet: s.Name, "node": n.Name})
		if err != nil {
			return fmt.Errorf("building port group %s: %w", pg, err)
		}
		ops = append(ops, gops...)
	}
	if err := r.transact(ctx, ops); err != nil {
		return fmt.Errorf("writing node port groups of %s: %w", s.Name, err)
	}
	return nil
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
	upd := s.DeepCopy()
	upd.Finalizers = slices.DeleteFunc(upd.Finalizers, func(f string) bool { return f == SubnetFinalizer })
	if _, err := r.cfg.Shardnet.KubeovnV1().Subnets().Update(ctx, upd, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer of subnet %s: %w", s.Name, err)
	}
	return nil
}

func (r *SubnetReconciler) deleteSwitch(ctx context.Context, name string) error {
	ops, err := r.cfg.NB.DeleteSwitch(name)
	if err != nil {
		return err
	}
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
	_, err := r.cfg.NB.Transact(ctx, ops...)
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
	_, err := r.cfg.Shardnet.KubeovnV1().Subnets().UpdateStatus(ctx, upd, metav1.UpdateOptions{})
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
	client := r.cfg.Shardnet.KubeovnV1().Subnets()
	upd := s.DeepCopy()
	upd.Status = st
	_, err := client.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		return err
	}
	cur, err := client.Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cur.Status.V4AvailableIPs, cur.Status.V4UsingIPs = st.V4AvailableIPs, st.V4UsingIPs
	cur.Status.V6AvailableIPs, cur.Status.V6UsingIPs = st.V6AvailableIPs, st.V6UsingIPs
	_, err = client.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil // next round
	}
	return err
}
