package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/test/harness"
)

// TestMain lets the test binary stand for shardnet-bench as freshReload's
// clients: freshReload starts its own executable with ReloadClientCommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ReloadClientCommand {
		os.Exit(ReloadClientMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestFreshReload: the restarts' ceiling in fresh processes loads a real
// API server's pods and IP records in clients of their own, reports their
// CPU and page faults, and fails with the client's own error when a
// client cannot load.
func TestFreshReload(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	kube := harness.StartKube(t)
	ctx := context.Background()
	for i := range 3 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		}
		if _, err := kube.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ip := &kubeovnv1.IP{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d.default", i)}}
		if _, err := kube.Shardnet.KubeovnV1().IPs().Create(ctx, ip, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := freshReload(ctx, kube.Kubeconfig, 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r.Seconds <= 0 || r.CPUSeconds <= 0 || r.MinorFaults <= 0 {
		t.Fatalf("fresh reload %+v: want its time, and its clients' CPU and page faults", r)
	}

	_, err = freshReload(ctx, filepath.Join(t.TempDir(), "missing"), 2, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "reload client") || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("fresh reload with a missing kubeconfig: %v, want each client's error", err)
	}
}
