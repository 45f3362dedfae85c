package jsoncodec

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shardnet/shardnet/api/client/clientset/versioned/scheme"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// codecs are client-go's JSON path and this package's, as a generated
// clientset negotiates them.
type codecs struct {
	object runtime.Decoder // the decoder of a response or a watch event's object
	stream runtime.Decoder // the decoder of a watch stream's frames (the envelope)
}

func jsonCodecs(t testing.TB, ns runtime.NegotiatedSerializer) codecs {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok || info.StreamSerializer == nil {
		t.Fatal("no JSON serializer with a stream serializer")
	}
	gv := v1alpha1.SchemeGroupVersion
	return codecs{object: ns.DecoderToVersion(info.Serializer, gv), stream: info.StreamSerializer.Serializer}
}

func both(t testing.TB) (std, fast codecs) {
	return jsonCodecs(t, scheme.Codecs.WithoutConversion()), jsonCodecs(t, NegotiatedSerializer(scheme.Scheme, scheme.Codecs))
}

// claimJSON is an AddressClaim as the API server writes a custom resource:
// its keys sorted, apiVersion first.
func claimJSON(t testing.TB, i int) []byte {
	t.Helper()
	m := map[string]any{
		"apiVersion": "shardnet.io/v1alpha1",
		"kind":       "AddressClaim",
		"metadata": map[string]any{
			"name": fmt.Sprintf("ovn-default.10.16.%d.%d", i/250, i%250+1), "uid": fmt.Sprintf("0b9a6f2e-%08d", i),
			"resourceVersion": fmt.Sprint(1000 + i), "creationTimestamp": "2026-12-05T01:00:00Z",
			"labels": map[string]any{v1alpha1.LabelSubnet: "ovn-default", v1alpha1.LabelFamily: "IPv4"},
		},
		"spec": map[string]any{
			"subnet": "ovn-default", "address": fmt.Sprintf("10.16.%d.%d", i/250, i%250+1), "provider": "ovn",
			"mac": "00:00:00:12:34:56", "nodeName": "kwok-node-3",
			"owner": map[string]any{"kind": "Pod", "namespace": "bench", "name": fmt.Sprintf("pod-%d", i), "uid": "8c0f"},
		},
	}
	b, err := stdjson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func event(typ string, obj []byte) []byte {
	return []byte(`{"type":"` + typ + `","object":` + string(obj) + "}\n")
}

// objectInputs are documents every decode must read as client-go does.
func objectInputs(t testing.TB) map[string][]byte {
	claim := claimJSON(t, 7)
	ip, err := stdjson.Marshal(&kubeovnv1.IP{
		TypeMeta:   metav1.TypeMeta{Kind: "IP", APIVersion: "kubeovn.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "pod-7.bench", CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0))},
		Spec:       kubeovnv1.IPSpec{PodName: "pod-7", Namespace: "bench", Subnet: "ovn-default", IPAddress: "10.16.0.8"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"claim, apiVersion first": claim,
		"ip, kind first":          ip,
		"spaces":                  []byte(" {\n \"kind\" : \"AddressClaim\" ,\t\"apiVersion\":\"shardnet.io/v1alpha1\", \"spec\": {\"subnet\": \"a\"} }\n"),
		"keys in other case":      []byte(`{"KIND":"AddressClaim","ApiVersion":"shardnet.io/v1alpha1","spec":{"subnet":"a"}}`),
		"repeated kind":           []byte(`{"kind":"IP","apiVersion":"shardnet.io/v1alpha1","kind":"AddressClaim","spec":{"subnet":"a"}}`),
		"kind not a string":       []byte(`{"kind":3,"apiVersion":"shardnet.io/v1alpha1"}`),
		"kind null":               []byte(`{"kind":"AddressClaim","apiVersion":"shardnet.io/v1alpha1","kind":null}`),
		"escaped key":             []byte(`{"\u006bind":"IP","apiVersion":"shardnet.io/v1alpha1","kind":"AddressClaim"}`),
		"escaped value":           []byte(`{"kind":"Address\u0043laim","apiVersion":"shardnet.io/v1alpha1"}`),
		"nested kind":             []byte(`{"spec":{"kind":"IP"},"apiVersion":"shardnet.io/v1alpha1","kind":"AddressClaim"}`),
		"braces in strings":       []byte(`{"metadata":{"name":"a\"}{[","labels":{"x":"]\\"}},"apiVersion":"shardnet.io/v1alpha1","kind":"AddressClaim"}`),
		"no kind":                 []byte(`{"apiVersion":"shardnet.io/v1alpha1","spec":{}}`),
		"bad apiVersion":          []byte(`{"apiVersion":"a/b/c","kind":"AddressClaim"}`),
		"unknown kind":            []byte(`{"apiVersion":"shardnet.io/v1alpha1","kind":"Nope"}`),
		"status":                  []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"gone","reason":"NotFound","code":404}`),
		"list":                    []byte(`{"apiVersion":"shardnet.io/v1alpha1","items":[` + string(claim) + `],"kind":"AddressClaimList","metadata":{"resourceVersion":"9"}}`),
		"empty object":            []byte(`{}`),
		"null":                    []byte(`null`),
		"array":                   []byte(`[1,2]`),
		"truncated":               claim[:len(claim)/2],
		"trailing garbage":        append(append([]byte(nil), claim...), '}'),
		"invalid inside":          []byte(`{"apiVersion":"shardnet.io/v1alpha1","kind":"AddressClaim","spec":{"subnet":tru}}`),
	}
}

// same fails unless both decodes failed, or both gave equal objects and
// kinds.
func same(t *testing.T, what string, stdObj runtime.Object, stdGVK *schema.GroupVersionKind, stdErr error, obj runtime.Object, gvk *schema.GroupVersionKind, err error) {
	t.Helper()
	if (stdErr != nil) != (err != nil) {
		t.Fatalf("%s: client-go's error %v, this package's %v", what, stdErr, err)
	}
	if stdErr != nil {
		return
	}
	if !reflect.DeepEqual(stdObj, obj) {
		t.Fatalf("%s: client-go decoded %#v, this package %#v", what, stdObj, obj)
	}
	if !reflect.DeepEqual(stdGVK, gvk) {
		t.Fatalf("%s: client-go's kind %v, this package's %v", what, stdGVK, gvk)
	}
}

func checkObject(t *testing.T, std, fast codecs, name string, data []byte) {
	t.Helper()
	for _, into := range []func() runtime.Object{
		func() runtime.Object { return nil },
		func() runtime.Object { return &v1alpha1.AddressClaim{} },
		func() runtime.Object { return &kubeovnv1.IP{} },
		func() runtime.Object { return &runtime.Unknown{} },
	} {
		so, sg, se := std.object.Decode(bytes.Clone(data), nil, into())
		fo, fg, fe := fast.object.Decode(bytes.Clone(data), nil, into())
		same(t, fmt.Sprintf("%s into %T", name, into()), so, sg, se, fo, fg, fe)
	}
}

func TestDecodeAsClientGo(t *testing.T) {
	std, fast := both(t)
	for name, data := range objectInputs(t) {
		t.Run(name, func(t *testing.T) { checkObject(t, std, fast, name, data) })
	}
}

// decodeEvent reads one watch event frame as client-go's watch decoder
// does: the envelope, then its object.
func decodeEvent(c codecs, frame []byte) (string, runtime.Object, error) {
	var ev metav1.WatchEvent
	res, _, err := c.stream.Decode(frame, nil, &ev)
	if err != nil {
		return "", nil, err
	}
	if res != &ev {
		return "", nil, fmt.Errorf("decoded into %T, not the event", res)
	}
	obj, err := runtime.Decode(c.object, ev.Object.Raw)
	return ev.Type, obj, err
}

func checkEvent(t *testing.T, std, fast codecs, name string, frame []byte) {
	t.Helper()
	var sev, fev metav1.WatchEvent
	so, sg, se := std.stream.Decode(bytes.Clone(frame), nil, &sev)
	fo, fg, fe := fast.stream.Decode(bytes.Clone(frame), nil, &fev)
	same(t, name+": envelope", so, sg, se, fo, fg, fe)
	st, sobj, se := decodeEvent(std, bytes.Clone(frame))
	ft, fobj, fe := decodeEvent(fast, bytes.Clone(frame))
	if st != ft {
		t.Fatalf("%s: client-go read type %q, this package %q", name, st, ft)
	}
	same(t, name+": event", sobj, nil, se, fobj, nil, fe)
}

func TestWatchEventAsClientGo(t *testing.T) {
	std, fast := both(t)
	claim := claimJSON(t, 3)
	frames := map[string][]byte{
		"added":            event("ADDED", claim),
		"deleted":          event("DELETED", claim),
		"bookmark":         event("BOOKMARK", []byte(`{"kind":"AddressClaim","apiVersion":"shardnet.io/v1alpha1","metadata":{"resourceVersion":"12"}}`)),
		"error":            event("ERROR", []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old","reason":"Expired","code":410}`)),
		"object first":     []byte(`{"object":` + string(claim) + `,"type":"MODIFIED"}`),
		"spaces":           []byte(" { \"type\" : \"ADDED\" ,\n\"object\" :\t" + string(claim) + " }\r\n"),
		"other member":     []byte(`{"type":"ADDED","object":` + string(claim) + `,"x":{}}`),
		"repeated object":  []byte(`{"type":"ADDED","object":{"kind":"IP","apiVersion":"kubeovn.io/v1"},"object":` + string(claim) + `}`),
		"repeated type":    []byte(`{"type":"ADDED","type":"DELETED","object":` + string(claim) + `}`),
		"object null":      []byte(`{"type":"ADDED","object":null}`),
		"escaped type":     []byte(`{"type":"ADD\u0045D","object":` + string(claim) + `}`),
		"no object":        []byte(`{"type":"ADDED"}`),
		"kind in envelope": []byte(`{"kind":"WatchEvent","apiVersion":"meta.k8s.io/v1","type":"ADDED","object":` + string(claim) + `}`),
		"unknown kind":     event("ADDED", []byte(`{"kind":"Nope","apiVersion":"shardnet.io/v1alpha1"}`)),
	}
	for name, frame := range frames {
		if !stdjson.Valid(frame) {
			t.Fatalf("%s: the frame is not valid JSON", name)
		}
		t.Run(name, func(t *testing.T) { checkEvent(t, std, fast, name, frame) })
	}
	// The fast split is taken for the API server's envelope, and only
	// there: a wrong split would still pass the comparisons above if
	// both fell back.
	if _, _, ok := splitEvent(frames["added"]); !ok {
		t.Error("the API server's envelope is not split")
	}
	for _, name := range []string{"other member", "repeated object", "repeated type", "object null", "escaped type", "no object", "kind in envelope"} {
		if _, _, ok := splitEvent(frames[name]); ok {
			t.Errorf("%s: split, want the fallback", name)
		}
	}
	if _, ok := readTypeMeta(claim); !ok {
		t.Error("the API server's apiVersion and kind are not read by the walk")
	}
}

// A watch event's object does not share the frame's bytes, which the
// stream reads the next frame into.
func TestWatchEventCopiesObject(t *testing.T) {
	_, fast := both(t)
	frame := event("ADDED", claimJSON(t, 1))
	var ev metav1.WatchEvent
	if _, _, err := fast.stream.Decode(frame, nil, &ev); err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(ev.Object.Raw)
	for i := range frame {
		frame[i] = 'x'
	}
	if !bytes.Equal(ev.Object.Raw, want) {
		t.Fatal("the event's object changed with the frame's buffer")
	}
}

func FuzzDecode(f *testing.F) {
	for _, data := range objectInputs(f) {
		f.Add(data)
		f.Add(event("ADDED", data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		std, fast := both(t)
		checkObject(t, std, fast, "object", data)
		// Frames come from client-go's framer, which reads one whole
		// valid JSON value.
		if stdjson.Valid(data) {
			checkEvent(t, std, fast, "event", data)
		}
	})
}

// BenchmarkDecodeEvent reads claim watch events as a replica's claim
// informer does, through client-go's JSON path (the baseline) and this
// package's, in the same run.
func BenchmarkDecodeEvent(b *testing.B) {
	std, fast := both(b)
	const n = 512
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = event("ADDED", claimJSON(b, i))
	}
	run := func(c codecs) time.Duration {
		start := time.Now()
		for _, f := range frames {
			if _, _, err := decodeEvent(c, f); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var tStd, tFast time.Duration
	for range b.N {
		tStd += run(std)
		tFast += run(fast)
	}
	events := float64(b.N * n)
	b.ReportMetric(float64(tFast.Nanoseconds())/events, "ns/event")
	b.ReportMetric(float64(tStd.Nanoseconds())/events, "client-go-ns/event")
	b.ReportMetric(float64(tFast)/float64(tStd), "ratio")
}
