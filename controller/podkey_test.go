package controller

import (
	metafake "k8s.io/client-go/metadata/fake"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	crdfake "github.com/shardnet/shardnet/api/client/clientset/versioned/fake"
	"github.com/shardnet/shardnet/shard"
)

// TestPodKeyRoutesLaunchersToOneShard: with Config.PodKey, the pods that
// share a key are indexed under the key's shard, seeded once, and their
// events (tombstones too) carry the key.
func TestPodKeyRoutesLaunchersToOneShard(t *testing.T) {
	kube := kubefake.NewSimpleClientset()
	inf, err := newInformers(kube, nil, crdfake.NewSimpleClientset(), metafake.NewSimpleMetadataClient(metafake.NewTestScheme()), kube.Discovery(), dynfake.NewSimpleDynamicClient(runtime.NewScheme()), 16, 0, klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Every pod labelled vm=X has the key ns/X.
	inf.keyOf = func(p metav1.Object) string {
		if vm := p.GetLabels()["vm"]; vm != "" {
			return p.GetNamespace() + "/" + vm
		}
		return p.GetNamespace() + "/" + p.GetName()
	}
	pod := func(name, vm string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"vm": vm}}}
	}
	// Names chosen so that the pods' own keys hash elsewhere than the VM's.
	var pods []*corev1.Pod
	want := shard.Of("ns/vm1", 16)
	for i := 0; len(pods) < 2; i++ {
		name := "virt-launcher-vm1-" + string(rune('a'+i))
		if shard.Of("ns/"+name, 16) != want {
			pods = append(pods, pod(name, "vm1"))
		}
	}
	// As the informer caches them (TrimPod).
	for _, p := range append(pods, pod("web", "")) {
		c, err := TrimPod(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := inf.Pods.GetIndexer().Add(c); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := inf.PodKeys(want)
	if err != nil {
		t.Fatal(err)
	}
	if n := slices.Index(keys, "ns/vm1"); n < 0 || slices.Contains(keys[n+1:], "ns/vm1") {
		t.Fatalf("shard %d seeds %v; want ns/vm1 once", want, keys)
	}
	for _, k := range keys {
		if k != "ns/vm1" && k != "ns/web" {
			t.Errorf("shard %d seeds a launcher pod's own name %s", want, k)
		}
	}
	if k, _ := inf.PodKey(cache.DeletedFinalStateUnknown{Key: "ns/" + pods[0].Name, Obj: pods[0]}); k != "ns/vm1" {
		t.Errorf("a tombstone's key %s, want ns/vm1", k)
	}
}
