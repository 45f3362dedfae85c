package reconcile

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/cache"
	corev1 "k8s.io/api/core/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// BenchmarkSteadyReconcileAlloc reports the heap one reconcile of a routed
// pod allocates when nothing is left to do, the reconcile a restarted
// replica runs for every pod of its shards at once: what that pass
// allocates while a collection marks counts as live in that collection,
// and lifts the next heap goal. It runs 200 pods on real servers (a
// slice), each reconciled again with the Northbound cache's generic
// search (cache.AsUpstream, the baseline) and with its index lookups
// (RowsByIndexValue, and the shortcut of RowsByCondition for a condition
// one index answers), in the same run.
//
//	go test -run '^$' -bench SteadyReconcileAlloc -benchtime 3x ./reconcile
func BenchmarkSteadyReconcileAlloc(b *testing.B) {
	const n = 200
	s := startSlice(b)
	node := s.kube.CreateNode(b, "node-steady", "")
	s.createSubnet("steady", "10.50.0.0/22", func(sp *kubeovnv1.SubnetSpec) { sp.Namespaces = []string{"steady"} })
	s.createNamespace("steady")
	pods := make([]*corev1.Pod, n)
	keys := make([]string, n)
	for i := range pods {
		pods[i] = newPod("steady", fmt.Sprintf("p-%03d", i), node.Name, nil)
		keys[i] = "steady/" + pods[i].Name
	}
	s.createPods(pods)
	ctx := s.ctx()
	s.waitPods(ctx, "steady", n, routed)
	// Once the cache has every pod as routed, a reconcile has nothing
	// to write; the first round waits for that.
	for _, key := range keys {
		waitView(b, ctx, func() error {
			p, err := s.caches.Pods.Pods("steady").Get(key[len("steady/"):])
			if err != nil {
				return err
			}
			if !routed(p) {
				return fmt.Errorf("%s not routed in the cache", key)
			}
			return nil
		})
	}
	defer func() { cache.AsUpstream = false }()
	perReconcile := func() float64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, key := range keys {
			if err := s.term.Reconcile(ctx, key); err != nil {
				b.Fatalf("%s: %v", key, err)
			}
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / n
	}
	perReconcile() // warm: anything left from routing is done here
	search, shortcut := 0.0, 0.0
	for range b.N {
		cache.AsUpstream = true
		search += perReconcile()
		cache.AsUpstream = false
		shortcut += perReconcile()
	}
	b.ReportMetric(search/float64(b.N), "search-B/reconcile")
	b.ReportMetric(shortcut/float64(b.N), "B/reconcile")
	b.ReportMetric(shortcut/search, "shortcut/search")
}
