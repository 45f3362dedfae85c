package ipam

import (
	"fmt"
	"net/netip"

	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// OwnerIndex is the informer index, added by ClaimIndexers, that files
// claims under OwnerKey of their owner.
const OwnerIndex = "shardnet.io/owner"

// ClaimIndexers are the indexes to add to the AddressClaim informer
// (Informer().AddIndexers) so that Held can find an owner's claims
// without a scan.
func ClaimIndexers() cache.Indexers {
	return cache.Indexers{OwnerIndex: func(obj any) ([]string, error) {
		c, ok := obj.(*v1alpha1.AddressClaim)
		if !ok {
			return nil, nil
		}
		return []string{OwnerKey(c.Spec.Owner)}, nil
	}}
}

// Held is what owner holds in subnet according to an informer's indexer
// with ClaimIndexers: its addresses and MAC. A reconciler asks it before
// allocating, so that a retry after a crash between claiming and recording
// reuses the claims instead of taking more. It reads a cache: a claim made
// a moment ago may not be in it yet.
func Held(idx cache.Indexer, subnet string, owner v1alpha1.ClaimOwner) (Addresses, MAC, error) {
	objs, err := idx.ByIndex(OwnerIndex, OwnerKey(owner))
	if err != nil {
		return Addresses{}, MAC{}, fmt.Errorf("reading claims of %s: %w", OwnerKey(owner), err)
	}
	var a Addresses
	var mac MAC
	for _, o := range objs {
		c, ok := o.(*v1alpha1.AddressClaim)
		if !ok || c.Spec.Subnet != subnet {
			continue
		}
		ip, err := netip.ParseAddr(c.Spec.Address)
		if err != nil {
			continue
		}
		ip = ip.Unmap()
		if ip.Is4() {
			a.V4 = ip
		} else {
			a.V6 = ip
		}
		if m, err := ParseMAC(c.Spec.MAC); err == nil {
			mac = m
		}
	}
	return a, mac, nil
}
