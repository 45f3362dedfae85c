package reconcile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/netattach"
	"github.com/shardnet/shardnet/test/harness"
)

// nadChanges records OnChange calls per "namespace/name".
type nadChanges struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *nadChanges) record(ns, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[ns+"/"+name]++
}

func (c *nadChanges) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[key]
}

// waitNAD polls cond until it returns nil or timeout passes.
func waitNAD(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wantConfig is a condition: Config(ns, name) answers config, found, nil.
func wantConfig(n *NADs, ns, name, config string, found bool) func() error {
	return func() error {
		got, ok, err := n.Config(ns, name)
		if err != nil || ok != found || got != config {
			return fmt.Errorf("Config(%s, %s) = %q, %v, %v; want %q, %v, nil", ns, name, got, ok, err, config, found)
		}
		return nil
	}
}

func startNADs(t *testing.T, n *NADs) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		n.Shutdown()
	})
	n.Start(ctx)
}

func newNAD(ns, name, config string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1",
		"kind":       "NetworkAttachmentDefinition",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"config": config},
	}}
	return u
}

func createNADNamespace(t *testing.T, kube *harness.Kube, name string) {
	t.Helper()
	if _, err := kube.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Without multus a replica must not wait for NetworkAttachmentDefinitions;
// when the CRD is installed later, the re-check picks it up and the objects
// already there are reported through OnChange.
func TestNADsNotServedThenInstalled(t *testing.T) {
	kube := harness.StartKube(t)
	dyn := dynamic.NewForConfigOrDie(kube.Config)

	// slow re-checks only once an hour: it shows that picking the CRD up
	// is the re-check's doing.
	slow := NewNADs(kube.Client.Discovery(), dyn, 0, klog.Background().WithName("slow"))
	slow.RecheckInterval = time.Hour
	fast := NewNADs(kube.Client.Discovery(), dyn, 0, klog.Background().WithName("fast"))
	fast.RecheckInterval = 200 * time.Millisecond
	var changes nadChanges
	fast.OnChange(changes.record)

	if fast.HasSynced() {
		t.Fatal("HasSynced before Start")
	}
	if _, _, err := fast.Config("default", "x"); !errors.Is(err, ErrNADsNotSynced) {
		t.Fatalf("Config before Start: %v, want ErrNADsNotSynced", err)
	}
	startNADs(t, slow)
	startNADs(t, fast)
	for _, n := range []*NADs{slow, fast} {
		// One discovery request, no informer: far less than a re-check.
		waitNAD(t, 10*time.Second, "HasSynced without the CRD", func() error {
			if !n.HasSynced() {
				return errors.New("not synced")
			}
			return nil
		})
		if _, found, err := n.Config("default", "x"); found || !errors.Is(err, ErrNADsNotServed) {
			t.Fatalf("Config without the CRD: found %v, err %v; want ErrNADsNotServed", found, err)
		}
	}

	kube.InstallNADCRD(t)
	createNADNamespace(t, kube, "nad-late")
	const cfg = `{"cniVersion":"0.3.1","type":"kube-ovn","provider":"late.nad-late.ovn"}`
	if _, err := dyn.Resource(harness.NADResource).Namespace("nad-late").Create(context.Background(), newNAD("nad-late", "late", cfg), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNAD(t, 30*time.Second, "the fast re-check serves the NAD", wantConfig(fast, "nad-late", "late", cfg, true))
	if !fast.HasSynced() {
		t.Error("HasSynced false after the informer served an object")
	}
	waitNAD(t, 10*time.Second, "OnChange for the NAD found at start", func() error {
		if changes.count("nad-late/late") == 0 {
			return errors.New("no call")
		}
		return nil
	})
	if _, _, err := slow.Config("nad-late", "late"); !errors.Is(err, ErrNADsNotServed) {
		t.Errorf("slow: Config before its re-check = %v, want ErrNADsNotServed still", err)
	}
}

// With the CRD installed, Config follows creates, updates and deletes, and
// OnChange reports each of them.
func TestNADsServed(t *testing.T) {
	kube := harness.StartKube(t)
	kube.InstallNADCRD(t)
	dyn := dynamic.NewForConfigOrDie(kube.Config)
	ctx := context.Background()
	createNADNamespace(t, kube, "nad-a")
	nads := dyn.Resource(harness.NADResource).Namespace("nad-a")
	const before = `{"cniVersion":"0.3.1","type":"kube-ovn","provider":"before.nad-a.ovn"}`
	if _, err := nads.Create(ctx, newNAD("nad-a", "before", before), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	n := NewNADs(kube.Client.Discovery(), dyn, 0, klog.Background())
	var changes nadChanges
	n.OnChange(changes.record)
	startNADs(t, n)
	waitNAD(t, 30*time.Second, "HasSynced", func() error {
		if !n.HasSynced() {
			return errors.New("not synced")
		}
		return nil
	})
	// Synced means listed: the object that was there before is served at
	// once, without waiting.
	if err := wantConfig(n, "nad-a", "before", before, true)(); err != nil {
		t.Fatal(err)
	}
	if err := wantConfig(n, "nad-a", "missing", "", false)(); err != nil {
		t.Fatal(err)
	}
	if err := wantConfig(n, "other", "before", "", false)(); err != nil {
		t.Fatal(err)
	}
	waitNAD(t, 10*time.Second, "OnChange for the listed NAD", func() error {
		if changes.count("nad-a/before") != 1 {
			return fmt.Errorf("%d calls, want 1", changes.count("nad-a/before"))
		}
		return nil
	})

	const v1 = `{"cniVersion":"0.3.1","type":"kube-ovn","provider":"net1.nad-a.ovn"}`
	if _, err := nads.Create(ctx, newNAD("nad-a", "net1", v1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNAD(t, 10*time.Second, "created NAD served", wantConfig(n, "nad-a", "net1", v1, true))
	waitOnChange := func(what string, atLeast int) {
		t.Helper()
		waitNAD(t, 10*time.Second, what, func() error {
			if got := changes.count("nad-a/net1"); got < atLeast {
				return fmt.Errorf("%d OnChange calls for nad-a/net1, want %d", got, atLeast)
			}
			return nil
		})
	}
	waitOnChange("OnChange after the create", 1)

	const v2 = `{"cniVersion":"0.3.1","type":"kube-ovn","provider":"net1.nad-a.ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock"}`
	u, err := nads.Get(ctx, "net1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, v2, "spec", "config"); err != nil {
		t.Fatal(err)
	}
	if _, err := nads.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNAD(t, 10*time.Second, "updated NAD served", wantConfig(n, "nad-a", "net1", v2, true))
	waitOnChange("OnChange after the update", 2)

	if err := nads.Delete(ctx, "net1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNAD(t, 10*time.Second, "deleted NAD gone", wantConfig(n, "nad-a", "net1", "", false))
	waitOnChange("OnChange after the delete", 3)
	if err := wantConfig(n, "nad-a", "before", before, true)(); err != nil {
		t.Errorf("the other NAD after the delete: %v", err)
	}
}

// A failed discovery request is no answer: the NADs must not count as
// synced (a replica would then miss attachments of a cluster with multus),
// and discovery is asked again before the re-check interval.
func TestNADsDiscoveryErrorIsNoAnswer(t *testing.T) {
	fake := &clienttesting.Fake{}
	var failing atomic.Bool
	var calls atomic.Int32
	failing.Store(true)
	fake.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		calls.Add(1)
		if failing.Load() {
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	n := NewNADs(&fakediscovery.FakeDiscovery{Fake: fake}, nil, 0, klog.Background())
	n.RecheckInterval = time.Hour
	startNADs(t, n)
	waitNAD(t, 10*time.Second, "discovery asked again after a failure", func() error {
		if c := calls.Load(); c < 2 {
			return fmt.Errorf("%d discovery requests", c)
		}
		return nil
	})
	if n.HasSynced() {
		t.Fatal("HasSynced after failed discovery requests only")
	}
	if _, _, err := n.Config("default", "x"); !errors.Is(err, ErrNADsNotSynced) {
		t.Fatalf("Config after failed discovery: %v, want ErrNADsNotSynced", err)
	}
	failing.Store(false)
	waitNAD(t, 10*time.Second, "HasSynced once discovery answers not served", func() error {
		if !n.HasSynced() {
			return errors.New("not synced")
		}
		return nil
	})
	if _, _, err := n.Config("default", "x"); !errors.Is(err, ErrNADsNotServed) {
		t.Fatalf("Config: %v, want ErrNADsNotServed", err)
	}
}

// The cache keeps only what Config and OnChange read.
func TestNADTrim(t *testing.T) {
	full := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k8s.cni.cncf.io/v1",
		"kind":       "NetworkAttachmentDefinition",
		"metadata": map[string]any{
			"name": "net1", "namespace": "ns", "resourceVersion": "42", "uid": "u-1",
			"labels":        map[string]any{"a": "b"},
			"annotations":   map[string]any{"k8s.v1.cni.cncf.io/resourceName": "intel.com/sriov"},
			"managedFields": []any{map[string]any{"manager": "kubectl"}},
		},
		"spec":   map[string]any{"config": `{"type":"kube-ovn"}`, "extra": "x"},
		"status": map[string]any{"state": "ok"},
	}}
	want := map[string]any{
		"metadata": map[string]any{"name": "net1", "namespace": "ns", "resourceVersion": "42"},
		"spec":     map[string]any{"config": `{"type":"kube-ovn"}`},
	}
	got, err := netattach.Trim(full)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.(*unstructured.Unstructured).Object, want) {
		t.Fatalf("Trim = %v\nwant %v", got.(*unstructured.Unstructured).Object, want)
	}
	if _, ok := full.Object["status"]; !ok {
		t.Error("Trim changed its input")
	}
	again, err := netattach.Trim(got)
	if err != nil || !reflect.DeepEqual(again.(*unstructured.Unstructured).Object, want) {
		t.Fatalf("Trim is not idempotent: %v, %v", again, err)
	}
	noConfig := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "n", "namespace": "ns"}}}
	got, _ = netattach.Trim(noConfig)
	if _, ok := got.(*unstructured.Unstructured).Object["spec"]; ok {
		t.Errorf("Trim invented a spec: %v", got)
	}
	tomb := "not an object"
	if got, _ := netattach.Trim(tomb); got != tomb {
		t.Errorf("Trim(%T) = %v", tomb, got)
	}
}
