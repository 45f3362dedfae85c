package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/shardnet/shardnet/internal/podcache"
	"github.com/shardnet/shardnet/shard"
)

func baseConfig(f NewReconciler) Config {
	return Config{
		// Never contacted: these tests do not call Run.
		RESTConfig:    &rest.Config{Host: "https://127.0.0.1:1"},
		Identity:      "shardnet-0",
		Namespace:     "kube-system",
		Shards:        8,
		NewReconciler: f,
	}
}

func TestConfigValidation(t *testing.T) {
	ok := func(ShardContext) (Reconciler, error) { return nil, nil }
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no identity", func(c *Config) { c.Identity = "" }, "identity"},
		{"no namespace", func(c *Config) { c.Namespace = "" }, "namespace"},
		{"no factory", func(c *Config) { c.NewReconciler = nil }, "factory"},
		{"negative shards", func(c *Config) { c.Shards = -1 }, "shards"},
		{"negative workers", func(c *Config) { c.WorkersPerShard = -3 }, "workers"},
		{"lease not above renew deadline", func(c *Config) { c.LeaseDuration, c.RenewDeadline = time.Second, 2*time.Second }, "lease duration"},
		{"renew deadline too close to retry", func(c *Config) { c.RenewDeadline, c.RetryPeriod = time.Second, time.Second }, "retry period"},
		{"missing kubeconfig", func(c *Config) { c.RESTConfig, c.Kubeconfig = nil, "/nonexistent/kubeconfig" }, "kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(ok)
			tc.mutate(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: got %v, want an error about %q", err, tc.want)
			}
		})
	}
	c, err := New(baseConfig(ok))
	if err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	if c.cfg.WorkersPerShard != 2 || c.cfg.DrainTimeout != 5*time.Second || c.cfg.LeaseName != "shardnet" {
		t.Fatalf("defaults not filled in: %+v", c.cfg)
	}
	if c.Ready() || c.Healthy() == nil {
		t.Fatal("a controller that never ran reports ready or healthy")
	}
}

func TestTrimPod(t *testing.T) {
	now := metav1.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "u1", ResourceVersion: "42",
			Labels:            map[string]string{"app": "x"},
			Annotations:       map[string]string{"ovn.kubernetes.io/ip_address": "10.0.0.5", corev1.LastAppliedConfigAnnotation: `{"kind":"Pod"}`},
			OwnerReferences:   []metav1.OwnerReference{{Kind: "StatefulSet", Name: "db", UID: "s1"}},
			DeletionTimestamp: &now,
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-1", HostNetwork: true,
			Containers: []corev1.Container{{Name: "c", Image: "img", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.5", PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}}, HostIP: "192.0.2.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady}},
		},
	}
	out, err := TrimPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := out.(*podcache.Pod)
	if !ok {
		t.Fatalf("TrimPod returned %T, want the cache's own *podcache.Pod", out)
	}
	p := c.Pod()
	if p.Name != "p" || p.UID != "u1" || p.ResourceVersion != "42" || p.Labels["app"] != "x" ||
		p.Annotations["ovn.kubernetes.io/ip_address"] != "10.0.0.5" || len(p.OwnerReferences) != 1 || p.DeletionTimestamp == nil {
		t.Errorf("metadata the reconciler reads was lost: %+v", p.ObjectMeta)
	}
	if p.Spec.NodeName != "node-1" || !p.Spec.HostNetwork || p.Status.Phase != corev1.PodRunning || p.Status.PodIP != "10.0.0.5" || p.Status.HostIP != "192.0.2.1" {
		t.Errorf("spec or status fields the reconciler reads were lost: %+v %+v", p.Spec, p.Status)
	}
	if p.ManagedFields != nil || p.Spec.Containers != nil || p.Status.Conditions != nil {
		t.Error("fields the reconciler does not read were kept")
	}
	if _, ok := p.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		t.Error("kubectl's last-applied-configuration was kept")
	}
	if len(pod.ManagedFields) != 1 || len(pod.Spec.Containers) != 1 || len(pod.Annotations) != 2 {
		t.Error("TrimPod changed its input")
	}
}

// fakeRec records calls and hooks in order for one shard term.
type fakeRec struct {
	mu         sync.Mutex // guards the fields below
	keys       []string
	events     []string
	releaseCtx error
	acquireErr error
	block      chan struct{} // when set, Reconcile waits on it
}

func (f *fakeRec) Reconcile(ctx context.Context, key string) error {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, key)
	f.events = append(f.events, "reconcile")
	return nil
}

func (f *fakeRec) OnAcquire(_ context.Context, s int, epoch uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, fmt.Sprintf("acquire %d@%d", s, epoch))
	return f.acquireErr
}

func (f *fakeRec) OnRelease(ctx context.Context, s int, epoch uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, fmt.Sprintf("release %d@%d", s, epoch))
	f.releaseCtx = ctx.Err()
	return nil
}

func (f *fakeRec) snapshot() ([]string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.keys...), append([]string(nil), f.events...)
}

func addPods(t *testing.T, c *Controller, n int) map[int][]string {
	t.Helper()
	byShard := map[int][]string{}
	for i := range n {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i), ResourceVersion: "1"}}
		if err := c.informers.Pods.GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
		key := "ns/" + p.Name
		s := shard.Of(key, c.cfg.Shards)
		byShard[s] = append(byShard[s], key)
	}
	return byShard
}

// TestShardTerm drives the Holder side directly: seeding from the shard
// index, routing, hook order on release, and abandon.
func TestShardTerm(t *testing.T) {
	recs := map[uint64]*fakeRec{}
	var mu sync.Mutex
	c, err := New(baseConfig(func(sc ShardContext) (Reconciler, error) {
		mu.Lock()
		defer mu.Unlock()
		r := recs[sc.Epoch]
		if r == nil {
			return nil, errors.New("no reconciler for this epoch")
		}
		return r, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	byShard := addPods(t, c, 200)
	// Any shard with pods but the one the foreign key below hashes to.
	const foreign = "other/key-of-another-shard"
	s := -1
	for k := range byShard {
		if k != shard.Of(foreign, 8) {
			s = k
			break
		}
	}
	if s < 0 {
		t.Fatal("no shard with pods other than the foreign key's")
	}
	h := (*holder)(c)
	ctx := context.Background()

	// Epoch 3: seeded with exactly the shard's pods; release after the last
	// reconcile, with a live context.
	r3 := &fakeRec{}
	recs[3] = r3
	if err := h.Acquire(ctx, s, 3); err != nil {
		t.Fatal(err)
	}
	if c.Enqueue(foreign) {
		t.Fatal("Enqueue accepted a key of a shard that is not running")
	}
	h.Release(ctx, s, 3)
	keys, events := r3.snapshot()
	if len(keys) != len(byShard[s]) {
		t.Fatalf("reconciled %d keys, the shard has %d pods", len(keys), len(byShard[s]))
	}
	for _, k := range keys {
		if shard.Of(k, 8) != s {
			t.Fatalf("key %s of another shard was seeded", k)
		}
	}
	if events[0] != fmt.Sprintf("acquire %d@3", s) || events[len(events)-1] != fmt.Sprintf("release %d@3", s) {
		t.Fatalf("hooks out of order: first %q, last %q", events[0], events[len(events)-1])
	}
	if r3.releaseCtx != nil {
		t.Fatalf("a handoff release got a cancelled context: %v", r3.releaseCtx)
	}
	if c.Enqueue(byShard[s][0]) {
		t.Fatal("a released shard still takes keys")
	}

	// A failing OnAcquire leaves nothing running.
	recs[4] = &fakeRec{acquireErr: errors.New("northbound down")}
	if err := h.Acquire(ctx, s, 4); err == nil {
		t.Fatal("Acquire succeeded although OnAcquire failed")
	}
	if c.Enqueue(byShard[s][0]) {
		t.Fatal("a shard whose OnAcquire failed takes keys")
	}

	// Epoch 5, abandoned while a key is in flight: the reconciler's context
	// is cancelled and OnRelease sees a cancelled context.
	r5 := &fakeRec{block: make(chan struct{})}
	recs[5] = r5
	if err := h.Acquire(ctx, s, 5); err != nil {
		t.Fatal(err)
	}
	h.Abandon(s, 5)
	_, events = r5.snapshot()
	if events[len(events)-1] != fmt.Sprintf("release %d@5", s) || r5.releaseCtx == nil {
		t.Fatalf("abandon: last event %q, release context error %v; want a release with a cancelled context", events[len(events)-1], r5.releaseCtx)
	}
}
