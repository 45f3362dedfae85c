package reconcile

import (
	"errors"
	"fmt"
	"strconv"

	kubeovnlisters "github.com/shardnet/shardnet/api/client/listers/kubeovn/v1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// VlanCatalog serves the Vlans that underlay subnets name
// (docs/contract.md A8).
type VlanCatalog interface {
	Vlan(name string) (*kubeovnv1.Vlan, bool)
}

// VlanLister is a VlanCatalog over the Vlan informer's lister.
type VlanLister struct{ Lister kubeovnlisters.VlanLister }

var _ VlanCatalog = VlanLister{}

// Vlan implements VlanCatalog.
func (l VlanLister) Vlan(name string) (*kubeovnv1.Vlan, bool) {
	v, err := l.Lister.Get(name)
	return v, err == nil
}

// ErrUnknownVlan is a subnet's spec.vlan that names no Vlan
// (docs/contract.md E19). It is retried: the Vlan may still be created.
var ErrUnknownVlan = errors.New("Vlan not found")

// underlay records the Vlan of an OVN network whose subnet is underlay
// (spec.vlan set): its id and provider network are annotated on the pod
// (A8). IPAM-only networks have no such annotations (A11). A Vlan that
// is not there fails the network (E19), since the CNI daemon cannot wire
// an underlay interface without it.
func (pl *Planner) underlay(np *NetworkPlan) error {
	name := np.Subnet.Spec.Vlan
	if np.Kind != AttachmentOVN || name == "" {
		return nil
	}
	var (
		v  *kubeovnv1.Vlan
		ok bool
	)
	if pl.Vlans != nil {
		v, ok = pl.Vlans.Vlan(name)
	}
	if !ok {
		return fmt.Errorf("subnet %s: spec.vlan %s: %w", np.Subnet.Name, name, ErrUnknownVlan)
	}
	np.Vlan = v
	return nil
}

// vlanAnnotations adds the underlay keys of A8 to want.
func vlanAnnotations(np *NetworkPlan, want map[string]string) {
	if np.Vlan == nil {
		return
	}
	want[Key(np.Provider, KeyVlanID)] = strconv.Itoa(np.Vlan.Spec.ID)
	want[Key(np.Provider, KeyProviderNetwork)] = np.Vlan.Spec.Provider
}
