// Package kubeproto reads the API server's protobuf where lies its
// bytes: the fields of a message one by one, and the runtime.Unknown
// envelope of a body, without the copies the generated code and the
// serializer make. podwire decodes pods with it, metawatch the objects'
// metadata.
package kubeproto

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Magic opens every protobuf body of the API server, before its
// runtime.Unknown envelope.
var Magic = []byte{0x6b, 0x38, 0x73, 0x00}

// Fields calls f with each field of the message in b: its number, wire
// type and value (the bytes of a length-delimited field, the number of a
// varint; nil and 0 for the other types, which it skips). v shares b.
func Fields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return fmt.Errorf("kubeproto: %w", protowire.ParseError(l))
		}
		b = b[l:]
		var v []byte
		var n uint64
		switch typ {
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			n, l = protowire.ConsumeVarint(b)
		default:
			l = protowire.ConsumeFieldValue(num, typ, b)
		}
		if l < 0 {
			return fmt.Errorf("kubeproto: field %d: %w", num, protowire.ParseError(l))
		}
		b = b[l:]
		if err := f(num, typ, v, n); err != nil {
			return err
		}
	}
	return nil
}

// AppendWithout appends to buf the fields of the message in b but those
// numbered num, each as it lies in b, and returns the extended buf: the
// message without them, for the generated code to decode.
func AppendWithout(buf, b []byte, num protowire.Number) ([]byte, error) {
	for len(b) > 0 {
		got, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return buf, fmt.Errorf("kubeproto: %w", protowire.ParseError(l))
		}
		m := protowire.ConsumeFieldValue(got, typ, b[l:])
		if m < 0 {
			return buf, fmt.Errorf("kubeproto: field %d: %w", got, protowire.ParseError(m))
		}
		if got != num {
			buf = append(buf, b[:l+m]...)
		}
		b = b[l+m:]
	}
	return buf, nil
}

// Envelope returns the kind and the raw object of an API server protobuf
// body (raw shares data); ok is false when data is not one, or its
// object is encoded in a way this package does not read.
func Envelope(data []byte) (gvk schema.GroupVersionKind, raw []byte, ok bool) {
	if !bytes.HasPrefix(data, Magic) {
		return gvk, nil, false
	}
	var apiVersion, encoding, contentType string
	err := Fields(data[len(Magic):], func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1: // typeMeta
			return Fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if typ == protowire.BytesType {
					switch num {
					case 1:
						apiVersion = string(v)
					case 2:
						gvk.Kind = string(v)
					}
				}
				return nil
			})
		case 2:
			raw = v
		case 3:
			encoding = string(v)
		case 4:
			contentType = string(v)
		}
		return nil
	})
	if err != nil || encoding != "" || (contentType != "" && contentType != runtime.ContentTypeProtobuf) {
		return gvk, nil, false
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return gvk, nil, false
	}
	gvk.Group, gvk.Version = gv.Group, gv.Version
	return gvk, raw, true
}
