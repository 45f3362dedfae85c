package reconcile

import (
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
)

// cacheView is the Planner's View over a replica's caches: informers,
// the subnet registry, the Northbound cache and the NAD informer.
type cacheView struct {
	Catalog
	cfg *PodConfig
}

var _ View = (*cacheView)(nil)

func (v *cacheView) Allocator(subnet string) (*ipam.Subnet, error) { return v.cfg.Subnets.Get(subnet) }

func (v *cacheView) HasFree(subnet string) bool { return v.cfg.Subnets.HasFree(subnet) }

func (v *cacheView) PodPorts(key string) []PortInfo {
	ports := v.cfg.NB.PortsByPod(key)
	if len(ports) == 0 {
		return nil
	}
	out := make([]PortInfo, 0, len(ports))
	for _, p := range ports {
		out = append(out, PortInfo{Name: p.Name, Switch: p.ExternalIDs[ovn.ExternalIDSwitch], Row: p})
	}
	return out
}

func (v *cacheView) NAD(namespace, name string) (string, bool, error) {
	if v.cfg.NADs == nil {
		return "", false, ErrNADsNotServed
	}
	return v.cfg.NADs.Config(namespace, name)
}
