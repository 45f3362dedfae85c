package harness

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-kubernetes/libovsdb/client"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ovn/nbdb"
)

// TestKubeKwokPods brings up etcd, kube-apiserver, kwok and ovsdb-server,
// creates a kwok node and 100 pods bound to it, waits until every pod is
// Running, checks the CRDs, and writes a port to the Northbound.
func TestKubeKwokPods(t *testing.T) {
	k := StartKube(t)
	k.StartKwok(t)
	nb := StartNB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	node := k.CreateNode(t, "kwok-node-0", "")
	k.WaitNodeReady(t, node.Name, time.Minute)
	ready, err := k.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(node.Status.Addresses) == 0 || len(ready.Status.Addresses) == 0 || ready.Status.Addresses[0] != node.Status.Addresses[0] {
		t.Fatalf("kwok replaced the node's InternalIP: created with %v, now %v", node.Status.Addresses, ready.Status.Addresses)
	}

	const pods = 100
	ns := "harness"
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, pods)
	sem := make(chan struct{}, 16)
	for i := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%03d", i), Namespace: ns},
				Spec: corev1.PodSpec{
					NodeName:   node.Name,
					Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}},
				},
			}
			if _, err := k.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating pod: %v", err)
	}

	for {
		list, err := k.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if len(list.Items) == pods && running == pods {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d pods Running before the deadline", running, pods)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The CRDs are installed: a Subnet can be created and read back, and
	// the CRD's OpenAPI validation rejects a malformed one.
	subnet := &kubeovnv1.Subnet{
		ObjectMeta: metav1.ObjectMeta{Name: "harness-subnet"},
		Spec:       kubeovnv1.SubnetSpec{CIDRBlock: "10.16.0.0/16", Protocol: kubeovnv1.ProtocolIPv4, ExcludeIps: []string{"10.16.0.1..10.16.0.10"}},
	}
	if _, err := k.Shardnet.KubeovnV1().Subnets().Create(ctx, subnet, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating subnet: %v", err)
	}
	got, err := k.Shardnet.KubeovnV1().Subnets().Get(ctx, subnet.Name, metav1.GetOptions{})
	if err != nil || got.Spec.CIDRBlock != subnet.Spec.CIDRBlock || len(got.Spec.ExcludeIps) != 1 {
		t.Fatalf("reading subnet back: %+v, %v", got, err)
	}
	for _, bad := range []kubeovnv1.SubnetSpec{
		{CIDRBlock: "not-a-cidr"},
		{CIDRBlock: "10.17.0.0/16", Protocol: "IPv5"},
	} {
		s := &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"}, Spec: bad}
		_, err := k.Shardnet.KubeovnV1().Subnets().Create(ctx, s, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("subnet %+v: want an Invalid error from CRD validation, got %v", bad, err)
		}
	}

	c := NBView(t, client.WithEndpoint(nb.Endpoint))
	if err := insertPort(ctx, c, "kwok-pod-port"); err != nil {
		t.Fatalf("inserting port: %v", err)
	}
	lsp := &nbdb.LogicalSwitchPort{Name: "kwok-pod-port"}
	waitCache(t, ctx, c, lsp)
	if lsp.ExternalIDs["vendor"] != "shardnet" {
		t.Fatalf("port read back without its external ids: %+v", lsp)
	}
}
