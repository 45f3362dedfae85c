package reconcile

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
)

// ClaimsByPodIndex is the AddressClaim informer index from a pod key
// ("namespace/name") to the claims held for that pod: by the pod itself,
// retained for it as a StatefulSet pod, or held by a KubeVirt VM, whose
// key is "namespace/<vm>". The index is by a bucket of the pod key
// (claimBuckets of them), not by the key itself: an index value per pod
// is a set per pod, about 220 bytes for its one or two claims (11 MB of
// every replica's heap at 50,000 pods); claimsOf reads the bucket and
// keeps the pod's own.
const ClaimsByPodIndex = "shardnet-pod"

// claimBuckets is how many buckets ClaimsByPodIndex spreads the pod keys
// over: at 50,000 pods a dozen claims to look through per read.
const claimBuckets = 1 << 12

// bucketNames are the index values of the buckets, made once.
var bucketNames = func() []string {
	out := make([]string, claimBuckets)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

// claimBucket is the ClaimsByPodIndex value of a pod key: its 32-bit
// FNV-1a hash, modulo claimBuckets.
func claimBucket(podKey string) string {
	h := uint32(2166136261)
	for i := 0; i < len(podKey); i++ {
		h ^= uint32(podKey[i])
		h *= 16777619
	}
	return bucketNames[h%claimBuckets]
}

// ClaimPodKey is the pod (or VM) key a claim is held for, or "" for
// owners that are neither (Vips).
func ClaimPodKey(c *v1alpha1.AddressClaim) string { return specPodKey(&c.Spec) }

// specPodKey is ClaimPodKey of a claim's spec.
func specPodKey(s *v1alpha1.AddressClaimSpec) string {
	if !heldForPod(s) {
		return ""
	}
	return s.Owner.Namespace + "/" + s.Owner.Name
}

// heldForPod reports whether the claim's owner is a pod (or VM) key's: a
// pod, a StatefulSet pod's retained addresses, a KubeVirt VM.
func heldForPod(s *v1alpha1.AddressClaimSpec) bool {
	switch s.Owner.Kind {
	case v1alpha1.OwnerPod, v1alpha1.OwnerStatefulSetPod, v1alpha1.OwnerVM:
		return true
	}
	return false
}

// ClaimIndexers are the indexers to add to the AddressClaim informer.
func ClaimIndexers() cache.Indexers {
	return cache.Indexers{ClaimsByPodIndex: func(obj any) ([]string, error) {
		s, _, ok := claimcache.SpecOf(obj)
		if !ok {
			return nil, fmt.Errorf("not an AddressClaim: %T", obj)
		}
		if k := specPodKey(s); k != "" {
			return []string{claimBucket(k)}, nil
		}
		return nil, nil
	}}
}

// claimHeldFor reports whether the claim of spec s is held for the pod
// (or VM) key, as ClaimPodKey == key, without building the claim's key.
func claimHeldFor(s *v1alpha1.AddressClaimSpec, key string) bool {
	ns, name, ok := strings.Cut(key, "/")
	return ok && heldForPod(s) && s.Owner.Namespace == ns && s.Owner.Name == name
}

// EachClaimPodKey calls f with the pod (or VM) key of every cached claim
// held for one: once per claim, so a key with two claims comes twice.
func EachClaimPodKey(idx cache.Indexer, f func(key string)) {
	for _, o := range idx.List() {
		if s, _, ok := claimcache.SpecOf(o); ok {
			if k := specPodKey(s); k != "" {
				f(k)
			}
		}
	}
}

// claimsOf returns the claims indexed under a pod key.
func claimsOf(idx cache.Indexer, key string) []*v1alpha1.AddressClaim {
	objs, err := idx.ByIndex(ClaimsByPodIndex, claimBucket(key))
	if err != nil {
		return nil
	}
	var out []*v1alpha1.AddressClaim
	for _, o := range objs {
		if s, _, ok := claimcache.SpecOf(o); ok && claimHeldFor(s, key) {
			if c, ok := claimcache.Of(o); ok {
				out = append(out, c)
			}
		}
	}
	return out
}
