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
// field is "-" itself: names, addresses and MACs cannot be, and
// EncodeFields refuses any other that is.
const emptyField = "-"

// EncodeFields is an AnnotationSpec value of version SpecInMetadataV1
// with fields, space-separated, "-" for an empty one. ok is false when a
// field has a space or is "-" itself: such an object is written without
// the label and the annotation, and read in full.
func EncodeFields(fields ...string) (value string, ok bool) {
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

// DecodeFields reads into fields the fields of an AnnotationSpec value
// that EncodeFields wrote with len(fields) of them. ok is false when
// labels do not mark the object (LabelSpecInMetadata); err is set when
// they do and the annotation is missing, of another version, or has
// another number of fields.
func DecodeFields(labels, annotations map[string]string, fields []string) (ok bool, err error) {
	if labels[LabelSpecInMetadata] != SpecInMetadataV1 {
		return false, nil
	}
	v, found := annotations[AnnotationSpec]
	if !found {
		return false, fmt.Errorf("labelled %s=%s but has no %s annotation", LabelSpecInMetadata, SpecInMetadataV1, AnnotationSpec)
	}
	version, rest, more := strings.Cut(v, " ")
	if version != SpecInMetadataV1 || !more {
		return false, fmt.Errorf("%s is not of version %s: %q", AnnotationSpec, SpecInMetadataV1, v)
	}
	for i := range fields {
		fields[i], rest, more = strings.Cut(rest, " ")
		if more != (i < len(fields)-1) {
			return false, fmt.Errorf("%s has not %d space-separated fields after its version: %q", AnnotationSpec, len(fields), v)
		}
		if fields[i] == emptyField {
			fields[i] = ""
		}
	}
	return true, nil
}

// EncodeSpec returns the AnnotationSpec value of s:
//
//	v1 <subnet> <address> <provider> <mac> <node> <kind> <namespace> <name> <uid>
//
// with "-" for an empty field (EncodeFields).
func EncodeSpec(s *AddressClaimSpec) (value string, ok bool) {
	return EncodeFields(s.Subnet, s.Address, s.Provider, s.MAC, s.NodeName, s.Owner.Kind, s.Owner.Namespace, s.Owner.Name, s.Owner.UID)
}

// DecodeSpec returns the spec the metadata of the claim named name
// carries: the AnnotationSpec value of annotations, if labels mark it
// (LabelSpecInMetadata). ok is false for a claim not so marked; err is
// set for one that is marked and whose annotation is missing, malformed,
// or names another claim (ClaimName of its subnet and address is not
// name). A reader reads either kind in full.
func DecodeSpec(name string, labels, annotations map[string]string) (spec AddressClaimSpec, ok bool, err error) {
	var f [specFields]string
	if ok, err := DecodeFields(labels, annotations, f[:]); !ok || err != nil {
		if err != nil {
			err = fmt.Errorf("claim %s: %w", name, err)
		}
		return spec, false, err
	}
	spec = AddressClaimSpec{Subnet: f[0], Address: f[1], Provider: f[2], MAC: f[3], NodeName: f[4],
		Owner: ClaimOwner{Kind: f[5], Namespace: f[6], Name: f[7], UID: f[8]}}
	a, perr := netip.ParseAddr(spec.Address)
	if perr != nil || spec.Subnet == "" || spec.Owner.Kind == "" || spec.Owner.Name == "" || ClaimName(spec.Subnet, a) != name {
		return AddressClaimSpec{}, false, fmt.Errorf("claim %s: %s does not describe it: %q", name, AnnotationSpec, annotations[AnnotationSpec])
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
