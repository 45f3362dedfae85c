package kubeproto_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/shardnet/shardnet/internal/kubeproto"
)

// TestEnvelopeAndCount: the envelope of a body the API server's
// serializer wrote gives its kind and its object's bytes, which Count
// reads the items of and AppendWithout copies without a field; a body
// without the magic, or cut short, is not one.
func TestEnvelopeAndCount(t *testing.T) {
	list := &corev1.ConfigMapList{Items: []corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}, {ObjectMeta: metav1.ObjectMeta{Name: "c"}},
	}}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	var buf bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(list, &buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	gvk, raw, ok := kubeproto.Envelope(b)
	if !ok || gvk != corev1.SchemeGroupVersion.WithKind("ConfigMapList") {
		t.Fatalf("envelope: %v %v", gvk, ok)
	}
	want, err := list.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, want) {
		t.Fatal("the envelope's object is not the list's protobuf")
	}
	if n, err := kubeproto.Count(raw, protowire.Number(2)); n != 3 || err != nil {
		t.Fatalf("Count = %d, %v; want 3 items", n, err)
	}
	// Without its metadata (field 1) the list keeps its three items.
	without, err := kubeproto.AppendWithout([]byte("x"), raw, 1)
	if err != nil || without[0] != 'x' {
		t.Fatalf("AppendWithout: %v", err)
	}
	meta, _ := kubeproto.Count(raw, 1)
	if n, _ := kubeproto.Count(without[1:], 1); n != 0 || meta != 1 {
		t.Errorf("AppendWithout kept %d of the list's %d metadata fields", n, meta)
	}
	if n, _ := kubeproto.Count(without[1:], 2); n != 3 {
		t.Errorf("AppendWithout kept %d of the 3 items", n)
	}
	if _, err := kubeproto.AppendWithout(nil, raw[:len(raw)-1], 1); err == nil {
		t.Error("AppendWithout of a cut message: no error")
	}
	if _, err := kubeproto.Count(raw[:len(raw)-1], 2); err == nil {
		t.Error("Count of a cut message: no error")
	}
	if _, _, ok := kubeproto.Envelope(b[1:]); ok {
		t.Error("a body without the magic read as an envelope")
	}
	if _, _, ok := kubeproto.Envelope(b[:len(b)-1]); ok {
		t.Error("a cut body read as an envelope")
	}
}
