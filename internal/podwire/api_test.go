package podwire_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/shardnet/shardnet/controller"
	"github.com/shardnet/shardnet/internal/podwire"
	"github.com/shardnet/shardnet/test/harness"
)

// TestPodsAgainstAPIServer: on a real API server, Pods lists, watches and
// patches pods in protobuf; what it decodes is the stored pod's kept
// fields, the patch's answer carries the stored UID and version, and the
// API server's refusals come back as its errors.
func TestPodsAgainstAPIServer(t *testing.T) {
	k := harness.StartKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wire"}}
	if _, err := k.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rc := controller.Protobuf(k.Config)
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := podwire.NewClient(rc, hc)
	if err != nil {
		t.Fatal(err)
	}
	pods := c.Pods("wire")
	w, err := pods.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 3 {
		p := routedPod(i)
		p.Namespace, p.ResourceVersion, p.UID, p.ManagedFields = "wire", "", "", nil
		p.Status = corev1.PodStatus{}
		if _, err := k.Client.CoreV1().Pods("wire").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The stored pods, in full, beside what Pods decodes of them.
	stored, err := k.Client.CoreV1().Pods("wire").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := obj.(*corev1.PodList)
	if len(list.Items) != 3 || list.ResourceVersion == "" {
		t.Fatalf("listed %d pods at version %q", len(list.Items), list.ResourceVersion)
	}
	for i := range list.Items {
		want := kept(&stored.Items[i])
		if got := &list.Items[i]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("listed\n%v\nstored\n%v", got, want)
		}
		if list.Items[i].Spec.Containers != nil || list.Items[i].ManagedFields != nil {
			t.Fatalf("listed a pod with its containers or managedFields decoded")
		}
	}
	for range 3 {
		select {
		case ev := <-w.ResultChan():
			p, ok := ev.Object.(*corev1.Pod)
			if ev.Type != watch.Added || !ok || p.UID == "" || p.Spec.Containers != nil {
				t.Fatalf("watched %s %#v", ev.Type, ev.Object)
			}
		case <-ctx.Done():
			t.Fatal("no watch event")
		}
	}

	first := stored.Items[0]
	patch := fmt.Appendf(nil, `{"metadata":{"uid":%q,"annotations":{"wire":"yes"}}}`, first.UID)
	out, err := pods.Patch(ctx, first.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now, err := k.Client.CoreV1().Pods("wire").Get(ctx, first.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.UID != now.UID || out.ResourceVersion != now.ResourceVersion || out.Annotations["wire"] != "yes" || now.Annotations["wire"] != "yes" {
		t.Fatalf("patch answered UID %q version %q, stored %q %q", out.UID, out.ResourceVersion, now.UID, now.ResourceVersion)
	}
	stale := fmt.Appendf(nil, `{"metadata":{"uid":"not-the-uid","annotations":{"wire":"no"}}}`)
	if _, err := pods.Patch(ctx, first.Name, types.MergePatchType, stale, metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("patch with another UID: %v, want Invalid (the UID is immutable)", err)
	}
	if _, err := pods.Patch(ctx, "missing", types.MergePatchType, patch, metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("patch of a missing pod: %v, want NotFound", err)
	}
}
