package controller

import (
	"context"
	"fmt"
	metafake "k8s.io/client-go/metadata/fake"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	dynfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	crdfake "github.com/shardnet/shardnet/api/client/clientset/versioned/fake"
	"github.com/shardnet/shardnet/internal/podcache"
)

// TestPerPodInformersHaveNoNamespaceIndex: the informers with an object
// per pod (pods, IP records, claims), whoever asks the factories for them,
// are the ones newInformers made: without the factories' namespace index,
// the pods with their shard index and trimmed, and a lister of one
// namespace still lists it.
func TestPerPodInformersHaveNoNamespaceIndex(t *testing.T) {
	kube := kubefake.NewSimpleClientset()
	inf, err := newInformers(kube, nil, crdfake.NewSimpleClientset(), metafake.NewSimpleMetadataClient(metafake.NewTestScheme()), kube.Discovery(), dynfake.NewSimpleDynamicClient(kruntime.NewScheme()), 16, 0, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	for name, i := range map[string]cache.SharedIndexInformer{
		"pods":   inf.Kube.Core().V1().Pods().Informer(),
		"ips":    inf.CRDs.Kubeovn().V1().IPs().Informer(),
		"claims": inf.CRDs.Shardnet().V1alpha1().AddressClaims().Informer(),
	} {
		if _, ok := i.GetIndexer().GetIndexers()[cache.NamespaceIndex]; ok {
			t.Errorf("%s: the informer indexes by namespace", name)
		}
	}
	if inf.Kube.Core().V1().Pods().Informer().GetIndexer() != inf.Pods.GetIndexer() {
		t.Fatal("the factory's pod informer is not Informers.Pods")
	}
	if _, ok := inf.Pods.GetIndexer().GetIndexers()[ShardIndex]; !ok {
		t.Error("the pod informer lost its shard index")
	}

	// The factory's transform still applies: the cache holds podcache.Pod.
	for _, p := range []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p1"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "p2"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p3"}},
	} {
		if _, err := kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	inf.Kube.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.Pods.HasSynced) {
		t.Fatal("pod informer not synced")
	}
	for _, o := range inf.Pods.GetStore().List() {
		if _, ok := o.(*podcache.Pod); !ok {
			t.Fatalf("cached %T, want *podcache.Pod", o)
		}
	}
	got, err := podcache.NewLister(inf.Pods.GetIndexer()).Pods("a").List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Namespace != "a" || got[1].Namespace != "a" {
		t.Errorf("namespace a lists %d pods, want its 2", len(got))
	}
}

// BenchmarkNamespaceIndexRetained reports what the factories' namespace
// index kept per object, 20,000 pods in ten namespaces, against the same
// indexer without it, in one run:
// go test -run '^$' -bench NamespaceIndexRetained ./controller/
func BenchmarkNamespaceIndexRetained(b *testing.B) {
	const n = 20000
	objs := make([]*metav1.ObjectMeta, n)
	for i := range objs {
		objs[i] = &metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i), Namespace: fmt.Sprintf("ns-%d", i%10)}
	}
	retained := func(indexers cache.Indexers) float64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := cache.NewIndexer(cache.MetaNamespaceKeyFunc, indexers)
		for _, o := range objs {
			if err := s.Add(o); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(s)
		return float64(after.HeapAlloc-before.HeapAlloc) / n
	}
	var with, without float64
	for range b.N {
		with = retained(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		without = retained(cache.Indexers{})
	}
	b.ReportMetric(with-without, "index-B/object")
	b.ReportMetric(without, "store-B/object")
}
