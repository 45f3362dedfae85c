package reconcile

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ipam"
)

// TestLandedElsewhere: a shard term allocated for a pod while the earlier
// owner's allocation for it was in flight; the earlier one's annotation
// landed last. What landed is kept when the pod's claims hold it, and the
// term's own allocation is released, claim in the cache or not; a user's
// edit of the address (no claim of the pod) is not taken for it.
func TestLandedElsewhere(t *testing.T) {
	const subnet = "ovn-default"
	owner := v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "ns", Name: "p", UID: "u1"}
	claim := func(addr, mac string) *v1alpha1.AddressClaim {
		a := netip.MustParseAddr(addr)
		return &v1alpha1.AddressClaim{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClaimName(subnet, a), UID: types.UID("c-" + addr)},
			Spec:       v1alpha1.AddressClaimSpec{Subnet: subnet, Address: addr, MAC: mac, Owner: owner},
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1", Annotations: map[string]string{
		DefaultKey(KeyAllocated): "true", DefaultKey(KeyLogicalSwitch): subnet,
		DefaultKey(KeyIPAddress): "10.16.0.12", DefaultKey(KeyMACAddress): "00:00:00:aa:00:12",
	}}}
	recent := ipam.Allocation{Subnet: subnet, Addresses: ipam.Addresses{V4: netip.MustParseAddr("10.16.0.14")}, MAC: mustMAC(t, "00:00:00:aa:00:14")}
	np := func() *NetworkPlan {
		return &NetworkPlan{Provider: DefaultProvider, Subnet: &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: subnet}}}
	}

	t.Run("kept, own claim not in the cache yet", func(t *testing.T) {
		n := np()
		got, ok := landedElsewhere(pod, n, owner, []*v1alpha1.AddressClaim{claim("10.16.0.12", "00:00:00:aa:00:12")}, recent)
		if !ok || got.Source != FromClaims || got.Addresses.V4.String() != "10.16.0.12" || got.MAC.String() != "00:00:00:aa:00:12" {
			t.Fatalf("got %+v, %v; want the landed 10.16.0.12 from the claims", got, ok)
		}
		if len(n.Release) != 1 || n.Release[0].Spec.Address != "10.16.0.14" || n.Release[0].Spec.Owner != owner {
			t.Fatalf("release %v, want this term's 10.16.0.14 of the pod", n.Release)
		}
	})
	t.Run("kept, own claim in the cache", func(t *testing.T) {
		n := np()
		own := claim("10.16.0.14", "00:00:00:aa:00:14")
		_, ok := landedElsewhere(pod, n, owner, []*v1alpha1.AddressClaim{claim("10.16.0.12", "00:00:00:aa:00:12"), own}, recent)
		if !ok || len(n.Release) != 1 || n.Release[0] != own {
			t.Fatalf("ok %v, release %v: want the cached claim of 10.16.0.14 released once", ok, n.Release)
		}
	})
	t.Run("annotation not claimed: a user's edit", func(t *testing.T) {
		n := np()
		if got, ok := landedElsewhere(pod, n, owner, nil, recent); ok || len(n.Release) != 0 {
			t.Fatalf("got %+v, release %v: a user's edit must not replace the allocation", got, n.Release)
		}
	})
	t.Run("annotation equals the recent allocation", func(t *testing.T) {
		same := pod.DeepCopy()
		same.Annotations[DefaultKey(KeyIPAddress)] = "10.16.0.14"
		if _, ok := landedElsewhere(same, np(), owner, []*v1alpha1.AddressClaim{claim("10.16.0.14", "00:00:00:aa:00:14")}, recent); ok {
			t.Fatal("nothing landed elsewhere")
		}
	})
}
