package jsoncodec

import (
	"bytes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// NegotiatedSerializer is codecs without conversion (what a generated
// clientset uses) with its JSON serializer replaced by this package's.
// scheme must be the scheme codecs was made from.
func NegotiatedSerializer(scheme *runtime.Scheme, codecs k8sserializer.CodecFactory) runtime.NegotiatedSerializer {
	base := codecs.WithoutConversion()
	infos := append([]runtime.SerializerInfo(nil), base.SupportedMediaTypes()...)
	for i := range infos {
		if infos[i].MediaType != runtime.ContentTypeJSON {
			continue
		}
		s := newDecoder(scheme, infos[i].Serializer)
		infos[i].Serializer = s
		if st := infos[i].StreamSerializer; st != nil {
			c := *st
			c.Serializer = &streamSerializer{decoder: s}
			infos[i].StreamSerializer = &c
		}
	}
	return negotiated{NegotiatedSerializer: base, infos: infos}
}

type negotiated struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

func (n negotiated) SupportedMediaTypes() []runtime.SerializerInfo { return n.infos }

// decoder decodes with the cheaper apiVersion and kind reading and
// encodes with client-go's serializer.
type decoder struct {
	runtime.Serializer // client-go's: encoding, runtime.Unknown
	fast               *json.Serializer
	typer              runtime.ObjectTyper
}

func newDecoder(scheme *runtime.Scheme, std runtime.Serializer) *decoder {
	return &decoder{
		Serializer: std,
		fast:       json.NewSerializerWithOptions(metaFactory{}, scheme, scheme, json.SerializerOptions{}),
		typer:      scheme,
	}
}

func (s *decoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if _, ok := into.(*runtime.Unknown); ok {
		// Unknown keeps the bytes undecoded: client-go's reading is
		// the only check they get.
		return s.Serializer.Decode(data, defaults, into)
	}
	return s.fast.Decode(data, defaults, into)
}

// streamSerializer is decoder with watch events split without a decode.
type streamSerializer struct{ *decoder }

func (s *streamSerializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if ev, ok := into.(*metav1.WatchEvent); ok && defaults == nil {
		if typ, obj, ok := splitEvent(data); ok {
			gvk := schema.GroupVersionKind{}
			kinds, _, err := s.typer.ObjectKinds(into)
			switch {
			case err == nil:
				gvk = kinds[0]
			case !runtime.IsNotRegisteredError(err):
				return nil, &gvk, err
			}
			ev.Type = typ
			// As RawExtension's own decoding does: the frame's buffer
			// is the stream's, read into again for the next event.
			ev.Object.Raw = append(ev.Object.Raw[:0], obj...)
			return ev, &gvk, nil
		}
	}
	return s.decoder.Decode(data, defaults, into)
}

// metaFactory reads apiVersion and kind with topLevel, falling back to
// client-go's reading where topLevel cannot tell.
type metaFactory struct{}

func (metaFactory) Interpret(data []byte) (*schema.GroupVersionKind, error) {
	if tm, ok := readTypeMeta(data); ok {
		gv, err := schema.ParseGroupVersion(tm.apiVersion)
		if err != nil {
			return nil, err
		}
		return &schema.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: tm.kind}, nil
	}
	return json.DefaultMetaFactory.Interpret(data)
}

type typeMeta struct{ apiVersion, kind string }

// readTypeMeta reads the apiVersion and kind members of the JSON object
// data as encoding/json would into a struct with those two fields: keys
// compared without regard to ASCII case, the last of a repeated key
// winning, a missing member empty. It reports false when it cannot be
// sure of that answer: data is not an object, a key is escaped or not
// ASCII, or the value of a matching key is not a plain ASCII string.
func readTypeMeta(data []byte) (typeMeta, bool) {
	var tm typeMeta
	ok := members(data, func(key []byte, val []byte) bool {
		var dst *string
		switch {
		case asciiFold(key, "apiVersion"):
			dst = &tm.apiVersion
		case asciiFold(key, "kind"):
			dst = &tm.kind
		default:
			return true
		}
		s, plain := plainString(val)
		if !plain {
			return false
		}
		*dst = s
		return true
	})
	return tm, ok
}

// splitEvent returns the type and the object bytes of a watch event
// envelope whose only members are "type" (a plain string) and "object"
// (an object), each once; false otherwise. data must be one valid JSON
// value (the stream's framer has read it as one).
func splitEvent(data []byte) (typ string, obj []byte, ok bool) {
	seenType, seenObj := false, false
	ok = members(data, func(key []byte, val []byte) bool {
		switch string(key) {
		case "type":
			if seenType {
				return false
			}
			s, plain := plainString(val)
			if !plain {
				return false
			}
			typ, seenType = s, true
		case "object":
			if seenObj || len(val) == 0 || val[0] != '{' {
				return false
			}
			obj, seenObj = val, true
		default:
			return false
		}
		return true
	})
	return typ, obj, ok && seenType && seenObj
}

// members calls f with each key (without its quotes) and raw value of the
// top-level JSON object data, in order, and reports whether data was an
// object whose keys are all plain (see plain) and f returned true for each.
// Values are delimited by following strings and brackets only: for valid
// JSON that is exact, and invalid JSON is caught by the decode that reads
// the values.
func members(data []byte, f func(key, val []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return len(data[skipSpace(data, i+1):]) == 0
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return false
		}
		end := bytes.IndexByte(data[i+1:], '"')
		if end < 0 {
			return false
		}
		key := data[i+1 : i+1+end]
		if !plain(key) {
			return false
		}
		i = skipSpace(data, i+2+end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		vend, ok := skipValue(data, i)
		if !ok || !f(key, data[i:vend]) {
			return false
		}
		i = skipSpace(data, vend)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return len(data[skipSpace(data, i+1):]) == 0
		default:
			return false
		}
	}
}

// skipValue returns the end of the JSON value starting at data[i].
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				end, ok := skipString(data, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default:
		start := i
		for i < len(data) {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i, i > start
			}
			i++
		}
		return i, i > start
	}
}

// skipString returns the end of the JSON string whose opening quote is
// data[i].
func skipString(data []byte, i int) (int, bool) {
	i++
	for {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return 0, false
		}
		i += j
		// The quote closes the string unless an odd number of
		// backslashes precede it.
		n := 0
		for k := i - 1; k >= 0 && data[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i, true
		}
	}
}

// plainString returns the content of the JSON string val when it is
// plain.
func plainString(val []byte) (string, bool) {
	if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' || !plain(val[1:len(val)-1]) {
		return "", false
	}
	return string(val[1 : len(val)-1]), true
}

// plain reports whether the content of a JSON string has no escapes and
// only printable ASCII, so that it decodes to itself.
func plain(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c == '"' || c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// asciiFold reports whether the ASCII key equals name without regard to
// case.
func asciiFold(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range len(key) {
		a, b := key[i], name[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}
