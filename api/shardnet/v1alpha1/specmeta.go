package v1alpha1

import (
	"fmt"
	"net/netip"
	"strings"
)

// A claim is never updated once written, so what its spec says can be
// written into its metadata too, and a reader that watches only the
// metadata of claims (PartialObjectMetadata, over protobuf) still learns
// every field: at 50,000 pods the API server encodes, and every replica
// decodes, a fraction of what the full objects cost (docs/decisions/0009).
//
// A claim whose metadata carries its spec has the label
// LabelSpecInMetadata with the value SpecInMetadataV1 and the annotation
// AnnotationSpec with the spec in one line (EncodeSpec). Claims written
// before there was such a label have neither; a reader takes their spec
// from the object itself.
const (
	LabelSpecInMetadata = "shardnet.io/spec-in-metadata"
	SpecInMetadataV1    = "v1"
	AnnotationSpec      = "shardnet.io/spec"
)

// specFields is the number of space-separated fields after the version
// in an AnnotationSpec value: subnet, address, provider, MAC, node, and
// the owner's kind, namespace, name and UID.
const specFields = 9

// emptyField stands for an empty field in an AnnotationSpec value. No
// field is "-" itself: names, addresses and MACs cannot be, and EncodeSpec
// refuses a provider that is.
const emptyField = "-"

// EncodeSpec returns the AnnotationSpec value of s:
//
//	v1 <subnet> <address> <provider> <mac> <node> <kind> <namespace> <name> <uid>
//
// with "-" for an empty field. ok is false when s cannot be written so
// (a field with a space, or one that is "-"): such a claim is written
// without the label and the annotation, and read in full.
func EncodeSpec(s *AddressClaimSpec) (value string, ok bool) {
	fields := [specFields]string{s.Subnet, s.Address, s.Provider, s.MAC, s.NodeName, s.Owner.Kind, s.Owner.Namespace, s.Owner.Name, s.Owner.UID}
	var b strings.Builder
	b.WriteString(SpecInMetadataV1)
	for _, f := range fields {
		if f == emptyField || strings.ContainsAny(f, " \t\n\r") {
			return "", false
		}
		if f == "" {
			f = emptyField
		}
		b.WriteByte(' ')
		b.WriteString(f)
	}
	return b.String(), true
}

// DecodeSpec returns the spec the metadata of the claim named name
// carries: the AnnotationSpec value of annotations, if labels mark it
// (LabelSpecInMetadata). ok is false for a claim not so marked; err is
// set for one that is marked and whose annotation is missing, malformed,
// or names another claim (ClaimName of its subnet and address is not
// name). A reader reads either kind in full.
func DecodeSpec(name string, labels, annotations map[string]string) (spec AddressClaimSpec, ok bool, err error) {
	if labels[LabelSpecInMetadata] != SpecInMetadataV1 {
		return spec, false, nil
	}
	v, found := annotations[AnnotationSpec]
	if !found {
		return spec, false, fmt.Errorf("claim %s is labelled %s=%s but has no %s annotation", name, LabelSpecInMetadata, SpecInMetadataV1, AnnotationSpec)
	}
	var f [specFields + 1]string
	rest := v
	for i := range f {
		var more bool
		f[i], rest, more = strings.Cut(rest, " ")
		if more != (i < specFields) {
			return spec, false, fmt.Errorf("claim %s: %s has not %d space-separated fields: %q", name, AnnotationSpec, specFields+1, v)
		}
		if f[i] == emptyField {
			f[i] = ""
		}
	}
	if f[0] != SpecInMetadataV1 {
		return spec, false, fmt.Errorf("claim %s: %s is not of version %s: %q", name, AnnotationSpec, SpecInMetadataV1, v)
	}
	spec = AddressClaimSpec{Subnet: f[1], Address: f[2], Provider: f[3], MAC: f[4], NodeName: f[5],
		Owner: ClaimOwner{Kind: f[6], Namespace: f[7], Name: f[8], UID: f[9]}}
	a, perr := netip.ParseAddr(spec.Address)
	if perr != nil || spec.Subnet == "" || spec.Owner.Kind == "" || spec.Owner.Name == "" || ClaimName(spec.Subnet, a) != name {
		return AddressClaimSpec{}, false, fmt.Errorf("claim %s: %s does not describe it: %q", name, AnnotationSpec, v)
	}
	return spec, true, nil
}

// WithoutSpecAnnotation is annotations without AnnotationSpec: nil when
// nothing else is left, else a copy (annotations itself is not changed).
func WithoutSpecAnnotation(annotations map[string]string) map[string]string {
	_, has := annotations[AnnotationSpec]
	if len(annotations) == 0 || (has && len(annotations) == 1) {
		return nil
	}
	out := make(map[string]string, len(annotations))
	for k, v := range annotations {
		if k != AnnotationSpec {
			out[k] = v
		}
	}
	return out
}
