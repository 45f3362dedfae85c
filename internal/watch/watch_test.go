package watch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestChangesSkipsResyncs(t *testing.T) {
	var got []string
	h := Changes(func(obj any) { got = append(got, obj.(*corev1.Pod).ResourceVersion) })
	v := func(rv string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}} }
	h.OnAdd(v("1"), false)
	h.OnUpdate(v("1"), v("1"))
	h.OnUpdate(v("1"), v("2"))
	h.OnDelete(v("2"))
	if want := []string{"1", "2", "2"}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("handled versions %v, want %v (a resync of version 1 skipped)", got, want)
	}
}
