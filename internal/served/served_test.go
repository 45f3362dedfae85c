package served

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/fake"
	kubetesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
)

// TestWaitAsksUntilServed: a failed question and two definite noes, then
// a yes: Run returns true, and NotServed saw both noes.
func TestWaitAsksUntilServed(t *testing.T) {
	answers := []struct {
		ok  bool
		err error
	}{{false, errors.New("discovery down")}, {false, nil}, {false, nil}, {true, nil}}
	asked, noes := 0, 0
	w := Wait{What: "Things", Missing: "nothing installs them", Recheck: time.Millisecond, Logger: klog.Background(),
		NotServed: func() { noes++ },
		Served: func(context.Context) (bool, error) {
			a := answers[asked]
			asked++
			return a.ok, a.err
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !w.Run(ctx) {
		t.Fatal("Run gave up before the resources were served")
	}
	if asked != 4 || noes != 2 {
		t.Errorf("asked %d times with %d noes, want 4 and 2", asked, noes)
	}
}

// TestWaitEndsWithContext: never served, Run returns false once ctx ends.
func TestWaitEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := Wait{What: "Things", Recheck: time.Millisecond, Logger: klog.Background(),
		Served: func(context.Context) (bool, error) { cancel(); return false, nil }}
	if w.Run(ctx) {
		t.Fatal("Run reported served resources that never were")
	}
}

// TestResources: every resource asked for must be in the group version's
// list; a group version discovery does not know is a definite no.
func TestResources(t *testing.T) {
	vm := schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	vmi := vm.GroupVersion().WithResource("virtualmachineinstances")
	disc := &fake.FakeDiscovery{Fake: &kubetesting.Fake{}}
	ctx := context.Background()
	if ok, err := Resources(ctx, disc, vm, vmi); ok || err != nil {
		t.Errorf("unknown group version: %v, %v; want a definite no", ok, err)
	}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "kubevirt.io/v1", APIResources: []metav1.APIResource{{Name: "virtualmachines"}}}}
	if ok, err := Resources(ctx, disc, vm, vmi); ok || err != nil {
		t.Errorf("one of two served: %v, %v; want no", ok, err)
	}
	disc.Resources[0].APIResources = append(disc.Resources[0].APIResources, metav1.APIResource{Name: "virtualmachineinstances"})
	if ok, err := Resources(ctx, disc, vm, vmi); !ok || err != nil {
		t.Errorf("both served: %v, %v; want yes", ok, err)
	}
}
