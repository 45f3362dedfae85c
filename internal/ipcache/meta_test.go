package ipcache

import (
	"math/rand/v2"
	"strings"
	"testing"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// TestSpecInMetadataRoundTrip writes random record specs into metadata
// and reads them back at the same generation: every field comes back as
// it was; at another generation, none does.
func TestSpecInMetadataRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	word := func() string {
		if r.IntN(3) == 0 {
			return ""
		}
		const letters = "abcdefghijklmnopqrstuvwxyz0123456789-.:,"
		b := make([]byte, 1+r.IntN(24))
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		b[0] = 'a' + byte(r.IntN(26))
		return string(b)
	}
	for range 2000 {
		s := kubeovnv1.IPSpec{PodName: word(), Namespace: word(), Subnet: word(), NodeName: word(), IPAddress: word(),
			V4IPAddress: word(), V6IPAddress: word(), MacAddress: word(), ContainerID: word(), PodType: word()}
		gen := 1 + r.Int64N(1000)
		ip := &kubeovnv1.IP{Spec: s}
		SetSpecInMetadata(ip, gen)
		got, ok, err := DecodeSpec(gen, ip.Labels, ip.Annotations)
		if err != nil || !ok || !sameSpec(&got, &s) {
			t.Fatalf("DecodeSpec(EncodeSpec(%+v)) = %+v, %v, %v (value %q)", s, got, ok, err, ip.Annotations[v1alpha1.AnnotationSpec])
		}
		if _, ok, err := DecodeSpec(gen+1, ip.Labels, ip.Annotations); ok || err != nil {
			t.Fatalf("read at generation %d a spec written at %d: ok %v, err %v", gen+1, gen, ok, err)
		}
	}
}

// TestSpecInMetadataRefusals: a spec with attach lists, a space or a
// "-" field is not written (and a copy's label and annotation go); a
// malformed annotation is an error.
func TestSpecInMetadataRefusals(t *testing.T) {
	good := kubeovnv1.IPSpec{PodName: "p", Namespace: "ns", Subnet: "ovn-default", NodeName: "n1", IPAddress: "10.16.0.5", V4IPAddress: "10.16.0.5", MacAddress: "00:00:00:00:00:01"}
	for _, s := range []kubeovnv1.IPSpec{
		func() kubeovnv1.IPSpec { s := good; s.AttachIPs = []string{"10.0.0.1"}; return s }(),
		func() kubeovnv1.IPSpec { s := good; s.PodType = "-"; return s }(),
		func() kubeovnv1.IPSpec { s := good; s.ContainerID = "a b"; return s }(),
	} {
		ip := &kubeovnv1.IP{Spec: good}
		SetSpecInMetadata(ip, 1)
		ip.Spec = s
		SetSpecInMetadata(ip, 2)
		if _, ok := ip.Labels[v1alpha1.LabelSpecInMetadata]; ok {
			t.Errorf("spec %+v: label kept", s)
		}
		if _, ok := ip.Annotations[v1alpha1.AnnotationSpec]; ok {
			t.Errorf("spec %+v: annotation kept", s)
		}
	}
	if _, ok := EncodeSpec(&good, 0); ok {
		t.Error("EncodeSpec at generation 0 accepted")
	}
	v, _ := EncodeSpec(&good, 3)
	if want := "v1 3 p ns ovn-default n1 10.16.0.5 10.16.0.5 - 00:00:00:00:00:01 - -"; v != want {
		t.Errorf("EncodeSpec = %q, want %q", v, want)
	}
	marked := map[string]string{v1alpha1.LabelSpecInMetadata: v1alpha1.SpecInMetadataV1}
	for _, bad := range []map[string]string{
		nil,
		{v1alpha1.AnnotationSpec: strings.TrimSuffix(v, " -")},
		{v1alpha1.AnnotationSpec: v + " -"},
		{v1alpha1.AnnotationSpec: "v2" + v[2:]},
		{v1alpha1.AnnotationSpec: strings.Replace(v, " 3 ", " x ", 1)},
	} {
		if s, ok, err := DecodeSpec(3, marked, bad); ok || err == nil {
			t.Errorf("DecodeSpec(%v) = %+v, %v, %v; want an error", bad, s, ok, err)
		}
	}
	if _, ok, err := DecodeSpec(3, nil, map[string]string{v1alpha1.AnnotationSpec: v}); ok || err != nil {
		t.Errorf("an unlabelled record: ok %v, err %v; want neither", ok, err)
	}
}
