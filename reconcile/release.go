package reconcile

import (
	"context"
	"fmt"
	"strings"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
)

// release frees what a pod key holds when no live pod needs it: its ports,
// routes and NAT rules, its IP records, then its claims, in that order, so
// that an address is free only once nothing in the Northbound carries it.
// Every provider goes (docs/contract.md R1). A StatefulSet pod's addresses
// and ports are kept while its StatefulSet (same UID, not being deleted)
// still counts the ordinal.
func (t *Term) release(ctx context.Context, key string, pod *corev1.Pod) error {
	p := t.p
	claims := claimsOf(p.cfg.ClaimIndex, key)
	if len(claims) > 0 && p.retained(pod, claims) {
		return nil
	}
	if keep, err := p.vmRetention(key, claims); keep || err != nil {
		// A VM's addresses, port and records outlive its launcher pods
		// (R13); a cache that cannot tell yet releases nothing.
		return err
	}
	ports := p.cfg.NB.PortsByPod(key)
	ops, err := p.cfg.NB.DeletePodPorts(key)
	if err != nil {
		return fmt.Errorf("building delete of ports of %s: %w", key, err)
	}
	routes, err := p.cfg.NB.DeletePodRouting(key)
	if err != nil {
		return fmt.Errorf("building delete of routes of %s: %w", key, err)
	}
	foreign, err := t.foreignRoutingOps(ctx, key, claims)
	if err != nil {
		return err
	}
	routes = append(routes, foreign...)
	if ops = append(ops, routes...); len(ops) > 0 {
		if _, err := t.w.Submit(ctx, ops...); err != nil {
			return fmt.Errorf("deleting ports of %s: %w", key, err)
		}
	}
	for _, port := range ports {
		t.written.Delete(port.Name)
	}
	t.forget(key)
	if p.cfg.IPRecords {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		providers := map[string]bool{DefaultProvider: true}
		for _, c := range claims {
			providers[claimProvider(c)] = true
		}
		prefix := name + "." + ns + "."
		for _, port := range ports {
			if rest, ok := strings.CutPrefix(port.Name, prefix); ok {
				providers[rest] = true
			}
		}
		for provider := range providers {
			if err := t.deleteIPRecord(ctx, PortName(name, ns, provider), pod); err != nil {
				return err
			}
		}
	}
	for _, c := range claims {
		if err := t.releaseClaim(ctx, c); err != nil {
			return err
		}
	}
	// A Vip the pod took is free again once its port is gone (D14).
	return t.releaseVipUse(ctx, key)
}

// foreignRoutingOps delete the source routes and NAT rules kube-ovn wrote
// for the key's addresses on the cluster router (docs/contract.md G7): an
// adopted pod whose eip, snat or north_gateway was never edited still has
// them, and they would serve the next pod given the address. Rows on
// another router are left alone.
func (t *Term) foreignRoutingOps(ctx context.Context, key string, claims []*v1alpha1.AddressClaim) ([]ovsdb.Operation, error) {
	pr, ok := t.p.cfg.NB.(podRouting)
	if !ok || len(claims) == 0 {
		return nil, nil
	}
	var addrs []string
	for _, c := range claims {
		addrs = append(addrs, c.Spec.Address)
	}
	rows, err := pr.PodRouting(key, addrs)
	if err != nil {
		return nil, err
	}
	if t.p.cfg.DisableEIPSNAT {
		rows = routesOnly(rows)
	}
	var ops []ovsdb.Operation
	for _, r := range rows {
		if !r.Foreign() {
			// shardnet's own: DeletePodRouting has them.
			continue
		}
		on, err := t.onRouter(ctx, pr, r, t.p.cfg.ClusterRouter)
		if err != nil {
			return nil, err
		}
		if on {
			ops = append(ops, ovn.DeleteRoutingRow(r)...)
		}
	}
	return ops, nil
}

// retained reports whether the claims of a gone (or terminal) StatefulSet
// pod are kept for the pod that will take its place.
func (p *Pods) retained(pod *corev1.Pod, claims []*v1alpha1.AddressClaim) bool {
	owner := claims[0].Spec.Owner
	if owner.Kind != v1alpha1.OwnerStatefulSetPod {
		return false
	}
	fake := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: owner.Name, Namespace: owner.Namespace}}
	if pod != nil {
		fake = pod
	}
	n, ok := ipam.StatefulSetOrdinal(owner.Name)
	if !ok {
		return false
	}
	stsName := ""
	if pod != nil {
		stsName, _, _ = StatefulSetOwner(pod)
	}
	if stsName == "" {
		// The pod is gone: its StatefulSet is the one whose UID the claim
		// records; its name is the pod name without the ordinal.
		stsName = owner.Name[:len(owner.Name)-len(fmt.Sprint(n))-1]
	}
	sts, err := p.cfg.StatefulSets.StatefulSets(fake.Namespace).Get(stsName)
	if err != nil || string(sts.UID) != owner.UID || sts.DeletionTimestamp != nil {
		return false
	}
	replicas := int32(1)
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	if int32(n) >= replicas {
		return false
	}
	return p.stillFits(fake, sts, claims)
}

// stillFits reports whether the retained claims are still where the
// StatefulSet's next pod of this name would be given addresses (R9, as
// kube-ovn's StatefulSet check does): each claim inside its subnet's
// current CIDR, and, for the default network, the claims' subnet still
// the one the pod would be put in: the template's logical_switch when it
// names one, else one of the subnets that select the namespace, else the
// default subnet. Fullness plays no part: the retained address is in the
// subnet it fills.
func (p *Pods) stillFits(pod *corev1.Pod, sts *appsv1.StatefulSet, claims []*v1alpha1.AddressClaim) bool {
	for _, c := range claims {
		sub, err := p.cfg.Subnets.Get(c.Spec.Subnet)
		if err != nil {
			return false
		}
		a, ok := addrOf(c)
		if !ok || !sub.Contains(a) {
			return false
		}
	}
	r := Resolver{Catalog: p.cfg.Catalog, DefaultSubnet: p.cfg.DefaultSubnet}
	for _, c := range claims {
		if claimProvider(c) != DefaultProvider {
			continue
		}
		if ls := sts.Spec.Template.Annotations[DefaultKey(KeyLogicalSwitch)]; ls != "" {
			if ls != c.Spec.Subnet {
				return false
			}
			continue
		}
		ns, _ := p.cfg.Catalog.Namespace(pod.Namespace)
		selected, selects := false, false
		for _, s := range p.cfg.Catalog.Subnets() {
			if isDefaultNetwork(s) && selectsNamespace(s, pod.Namespace, ns) {
				selects = true
				selected = selected || s.Name == c.Spec.Subnet
			}
		}
		if selects {
			if !selected {
				return false
			}
			continue
		}
		if def := r.defaultSubnet(); def != nil && def.Name != c.Spec.Subnet {
			return false
		}
	}
	return true
}

// releaseClaim deletes one claim with its UID as precondition and frees
// its address in the local bitmap.
func (t *Term) releaseClaim(ctx context.Context, c *v1alpha1.AddressClaim) error {
	p := t.p
	a, ok := addrOf(c)
	if !ok {
		// Unreadable: delete it anyway, it can only block a name.
		return p.deleteClaim(ctx, c)
	}
	sub, err := p.cfg.Subnets.Get(c.Spec.Subnet)
	if err != nil {
		// The subnet is gone or invalid: nothing local to free.
		return p.deleteClaim(ctx, c)
	}
	var one ipam.Addresses
	if a.Is4() {
		one.V4 = a
	} else {
		one.V6 = a
	}
	if err := p.cfg.Claims.Release(ctx, sub, one, c.Spec.Owner); err != nil {
		return fmt.Errorf("releasing %s: %w", c.Name, err)
	}
	return nil
}

func (p *Pods) deleteClaim(ctx context.Context, c *v1alpha1.AddressClaim) error {
	err := p.cfg.Writes.DeleteClaim(ctx, c.Name, c.UID)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting claim %s: %w", c.Name, err)
	}
	return nil
}
