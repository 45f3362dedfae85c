package reconcile

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// ClaimsByPodIndex is the AddressClaim informer index from a pod key
// ("namespace/name") to the claims held for that pod: by the pod itself,
// retained for it as a StatefulSet pod, or held by a KubeVirt VM, whose
// key is "namespace/<vm>".
const ClaimsByPodIndex = "shardnet-pod"

// ClaimPodKey is the pod (or VM) key a claim is held for, or "" for
// owners that are neither (Vips).
func ClaimPodKey(c *v1alpha1.AddressClaim) string {
	switch c.Spec.Owner.Kind {
	case v1alpha1.OwnerPod, v1alpha1.OwnerStatefulSetPod, v1alpha1.OwnerVM:
		return c.Spec.Owner.Namespace + "/" + c.Spec.Owner.Name
	}
	return ""
}

// ClaimIndexers are the indexers to add to the AddressClaim informer.
func ClaimIndexers() cache.Indexers {
	return cache.Indexers{ClaimsByPodIndex: func(obj any) ([]string, error) {
		c, ok := obj.(*v1alpha1.AddressClaim)
		if !ok {
			return nil, fmt.Errorf("not an AddressClaim: %T", obj)
		}
		if k := ClaimPodKey(c); k != "" {
			return []string{k}, nil
		}
		return nil, nil
	}}
}

// claimsOf returns the claims indexed under a pod key.
func claimsOf(idx cache.Indexer, key string) []*v1alpha1.AddressClaim {
	objs, err := idx.ByIndex(ClaimsByPodIndex, key)
	if err != nil {
		return nil
	}
	out := make([]*v1alpha1.AddressClaim, 0, len(objs))
	for _, o := range objs {
		if c, ok := o.(*v1alpha1.AddressClaim); ok {
			out = append(out, c)
		}
	}
	return out
}
