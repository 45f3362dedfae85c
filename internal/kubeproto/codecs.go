package kubeproto

import (
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A Decoder decodes the raw object of an envelope into into, or into a
// new object when into is nil; ok is false when into is of a type it
// does not decode.
type Decoder func(raw []byte, into runtime.Object) (obj runtime.Object, ok bool, err error)

// As is the Decoder of unmarshal, which decodes into a *T (and resets
// it first, as proto.Unmarshal does).
func As[T any, P interface {
	*T
	runtime.Object
}](unmarshal func([]byte, P) error) Decoder {
	return func(raw []byte, into runtime.Object) (runtime.Object, bool, error) {
		obj, ok := into.(P)
		if into == nil {
			obj, ok = P(new(T)), true
		}
		if !ok {
			return nil, false, nil
		}
		return obj, true, unmarshal(raw, obj)
	}
}

// Codecs is base whose protobuf serializer decodes the kinds of decoders
// with them, and everything else (Status errors, other kinds, an into
// of another type) as base does. The watch events' envelopes keep
// base's stream decoder; their objects come through the serializer.
func Codecs(base runtime.NegotiatedSerializer, decoders map[schema.GroupVersionKind]Decoder) runtime.NegotiatedSerializer {
	infos := slices.Clone(base.SupportedMediaTypes())
	for i := range infos {
		if infos[i].MediaType == runtime.ContentTypeProtobuf {
			infos[i].Serializer = serializer{infos[i].Serializer, decoders}
		}
	}
	return codecs{base, infos}
}

type codecs struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

func (c codecs) SupportedMediaTypes() []runtime.SerializerInfo { return c.infos }

type serializer struct {
	runtime.Serializer
	decoders map[schema.GroupVersionKind]Decoder
}

func (s serializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if gvk, raw, ok := Envelope(data); ok {
		if d, found := s.decoders[gvk]; found {
			obj, ok, err := d(raw, into)
			switch {
			case err != nil:
				return nil, &gvk, err
			case ok:
				obj.GetObjectKind().SetGroupVersionKind(gvk)
				return obj, &gvk, nil
			}
		}
	}
	return s.Serializer.Decode(data, defaults, into)
}

// Count is how many length-delimited fields numbered num the message b
// has: the items of a list, to size its slice before decoding them.
func Count(b []byte, num protowire.Number) (int, error) {
	n := 0
	err := Fields(b, func(got protowire.Number, typ protowire.Type, _ []byte, _ uint64) error {
		if got == num && typ == protowire.BytesType {
			n++
		}
		return nil
	})
	return n, err
}

// List sets meta and items from the list message in b (a Kubernetes
// list: its ListMeta in field 1, its items in field 2), each item as item
// decodes it into a zero T; items holds exactly them (nil for none, as
// the generated code leaves it).
func List[T any](b []byte, meta *metav1.ListMeta, items *[]T, item func(v []byte, it *T) error) error {
	n, err := Count(b, 2)
	if err != nil {
		return err
	}
	*meta, *items = metav1.ListMeta{}, nil
	if n > 0 {
		*items = make([]T, 0, n)
	}
	return Fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			return meta.Unmarshal(v)
		case 2:
			var zero T
			*items = append(*items, zero)
			return item(v, &(*items)[len(*items)-1])
		}
		return nil
	})
}
