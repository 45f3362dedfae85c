package v1alpha1

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

// TestSpecInMetadataRoundTrip writes random specs into metadata and
// reads them back: every field comes back as it was, empty ones too.
func TestSpecInMetadataRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func(empty bool) string {
		if empty && r.IntN(3) == 0 {
			return ""
		}
		const letters = "abcdefghijklmnopqrstuvwxyz0123456789-."
		b := make([]byte, 1+r.IntN(20))
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		b[0] = 'a' + byte(r.IntN(26))
		return string(b)
	}
	for range 2000 {
		var a netip.Addr
		if r.IntN(2) == 0 {
			a = netip.AddrFrom4([4]byte{10, byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
		} else {
			var b [16]byte
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			b[0] = 0xfd
			a = netip.AddrFrom16(b)
		}
		s := AddressClaimSpec{Subnet: word(false), Address: a.String(), Provider: word(true), MAC: word(true), NodeName: word(true),
			Owner: ClaimOwner{Kind: []string{OwnerPod, OwnerStatefulSetPod, OwnerVM, OwnerVip}[r.IntN(4)], Namespace: word(true), Name: word(false), UID: word(true)}}
		v, ok := EncodeSpec(&s)
		if !ok {
			t.Fatalf("EncodeSpec(%+v) refused", s)
		}
		name := ClaimName(s.Subnet, a)
		got, ok, err := DecodeSpec(name, map[string]string{LabelSpecInMetadata: SpecInMetadataV1}, map[string]string{AnnotationSpec: v})
		if err != nil || !ok || got != s {
			t.Fatalf("DecodeSpec(EncodeSpec(%+v)) = %+v, %v, %v (value %q)", s, got, ok, err, v)
		}
	}
}

// TestSpecInMetadataRefusals: what cannot be written so is refused, and
// what is marked but does not describe its claim is an error.
func TestSpecInMetadataRefusals(t *testing.T) {
	good := AddressClaimSpec{Subnet: "ovn-default", Address: "10.16.0.5", Provider: "ovn", Owner: ClaimOwner{Kind: OwnerPod, Namespace: "ns", Name: "p", UID: "u"}}
	for _, s := range []AddressClaimSpec{
		func() AddressClaimSpec { s := good; s.Provider = "-"; return s }(),
		func() AddressClaimSpec { s := good; s.NodeName = "a b"; return s }(),
		func() AddressClaimSpec { s := good; s.Owner.Name = "a\tb"; return s }(),
	} {
		if v, ok := EncodeSpec(&s); ok {
			t.Errorf("EncodeSpec(%+v) = %q, want a refusal", s, v)
		}
	}
	v, _ := EncodeSpec(&good)
	if !strings.HasPrefix(v, "v1 ovn-default 10.16.0.5 ovn - - Pod ns p u") {
		t.Errorf("EncodeSpec = %q", v)
	}
	name := ClaimName(good.Subnet, netip.MustParseAddr(good.Address))
	marked := map[string]string{LabelSpecInMetadata: SpecInMetadataV1}
	if _, ok, err := DecodeSpec(name, nil, map[string]string{AnnotationSpec: v}); ok || err != nil {
		t.Errorf("an unmarked claim: ok %v, err %v; want neither", ok, err)
	}
	for _, bad := range []map[string]string{
		nil,
		{AnnotationSpec: "v1 ovn-default 10.16.0.5 ovn - - Pod ns p"},
		{AnnotationSpec: v + " extra"},
		{AnnotationSpec: "v2" + v[2:]},
		{AnnotationSpec: strings.Replace(v, "10.16.0.5", "10.16.0.6", 1)},
		{AnnotationSpec: strings.Replace(v, "10.16.0.5", "nonsense", 1)},
		{AnnotationSpec: strings.Replace(v, "Pod", "-", 1)},
	} {
		if s, ok, err := DecodeSpec(name, marked, bad); ok || err == nil {
			t.Errorf("DecodeSpec(%v) = %+v, %v, %v; want an error", bad, s, ok, err)
		}
	}
}
