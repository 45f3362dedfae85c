package harness

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// KwokNodeAnnotation marks the nodes kwok manages.
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	// KwokPodCIDR is where kwok takes pod status IPs from. It is in the
	// benchmarking range 198.18.0.0/15, which no test subnet uses.
	KwokPodCIDR = "198.18.0.0/16"
	// NodeIPPrefix is where CreateNode takes node InternalIPs from when the
	// caller gives none: also in the benchmarking range.
	NodeIPPrefix = "198.19.0.0/16"
)

// nodeSeq numbers auto-assigned node addresses and pod CIDRs.
var nodeSeq atomic.Uint32

// StartKwok runs kwok against the API server, managing the nodes that carry
// the kwok annotation (see CreateNode) and the pods bound to them, with
// kwok's fast node and pod stages. It is stopped at cleanup.
func (k *Kube) StartKwok(t TB) {
	t.Helper()
	bin := testBinary(t, "kwok")
	stages, err := filepath.Glob(filepath.Join(binDir(), "kwok-stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		t.Fatalf("harness: kwok stage files not found in %s: run `make testbin`", filepath.Join(binDir(), "kwok-stages"))
	}
	args := []string{bin,
		"--kubeconfig=" + k.Kubeconfig,
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
		"--cidr=" + KwokPodCIDR,
		"--node-ip=198.19.255.254",
		fmt.Sprintf("--server-address=127.0.0.1:%d", freePort(t)),
		"--node-lease-duration-seconds=40",
	}
	for _, s := range stages {
		args = append(args, "--config="+s)
	}
	p := newProcess("kwok", filepath.Join(k.Dir, "kwok.log"), nil, args...)
	p.cpus = k.cpus
	p.start(t)
	t.Cleanup(p.Stop)
	k.kwok = p
	// kwok has no readiness endpoint that says its informers are synced:
	// a node it manages turning Ready is the proof.
	probe := fmt.Sprintf("kwok-probe-%d", nodeSeq.Add(1))
	k.CreateNode(t, probe, "")
	if err := k.Client.CoreV1().Nodes().Delete(context.Background(), probe, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("harness: deleting kwok probe node: %v", err)
	}
}

// StopKwok stops the kwok StartKwok started, if any: its nodes and pods
// stay as they are and nothing writes their status any more.
func (k *Kube) StopKwok() {
	if k.kwok != nil {
		k.kwok.Stop()
	}
}

// CreateNode creates a node that kwok manages, with a pod CIDR of its own
// (outside every test subnet) and the given InternalIP (an empty ip takes
// the next address of NodeIPPrefix), and returns it once it is Ready with
// that address. kwok must be running.
func (k *Kube) CreateNode(t TB, name, ip string) *corev1.Node {
	t.Helper()
	n := nodeSeq.Add(1)
	if ip == "" {
		base := netip.MustParsePrefix(NodeIPPrefix).Addr().As4()
		ip = netip.AddrFrom4([4]byte{base[0], base[1], byte(n >> 8), byte(n)}).String()
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{KwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("198.18.%d.0/24", n%256)},
	}
	ctx := context.Background()
	if _, err := k.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("harness: creating node %s: %v", name, err)
	}
	// Status is dropped on create, and kwok writes its own InternalIP when
	// it initializes a node that has none (possibly after a patch of ours),
	// so the address goes in once kwok has made the node Ready; kwok's
	// later stages keep an InternalIP they find.
	k.WaitNodeReady(t, name, time.Minute)
	patch := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":%q},{"type":"Hostname","address":%q}]}}`, ip, name)
	patched, err := k.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatalf("harness: setting node %s address: %v", name, err)
	}
	return patched
}

// WaitNodeReady waits until the node reports Ready.
func (k *Kube) WaitNodeReady(t TB, name string, timeout time.Duration) {
	t.Helper()
	waitFor(t, nil, timeout, func(ctx context.Context) error {
		n, err := k.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node %s not Ready (is kwok running? see %s)", name, filepath.Join(k.Dir, "kwok.log"))
	})
}
