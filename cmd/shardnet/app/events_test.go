package app

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/reference"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// TestEventSchemeKnowsEveryKind: the recorder's scheme resolves the kinds
// shardnet records Events on, typed objects from the informers (no
// TypeMeta) included; a kind it does not know loses its Events.
func TestEventSchemeKnowsEveryKind(t *testing.T) {
	s, err := eventScheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}},
		&kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: "s"}},
		&kubeovnv1.Vip{ObjectMeta: metav1.ObjectMeta{Name: "v"}},
	} {
		ref, err := reference.GetReference(s, obj)
		if err != nil {
			t.Errorf("%T: %v", obj, err)
			continue
		}
		if ref.Kind == "" || ref.APIVersion == "" {
			t.Errorf("%T: reference %+v without kind or API version", obj, ref)
		}
	}
}
