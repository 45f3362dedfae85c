package metawatch

import (
	"bytes"
	"fmt"
	"reflect"
	goruntime "runtime"
	"testing"
	"time"

	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/randfill"
)

// partialFiller fills object metadata at random, every field of it, with
// the values the generated protobuf code can encode.
func partialFiller(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.NewTime(time.Unix(c.Int63n(1<<33), c.Int63n(1e9)))
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte(`{"f:metadata":{"f:labels":{}}}`)
		},
	)
}

// protobufOf is the API server's protobuf body of obj (a meta.k8s.io/v1
// object).
func protobufOf(t testing.TB, obj runtime.Object) []byte {
	codecs := metainternalversionscheme.Codecs
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	var buf bytes.Buffer
	if err := codecs.EncoderForVersion(info.Serializer, metav1.SchemeGroupVersion).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decoders are client-go's metadata client's protobuf decoder and
// Client's.
func decoders(t testing.TB) (upstream, ours runtime.Decoder) {
	for i, ns := range []runtime.NegotiatedSerializer{metainternalversionscheme.Codecs.WithoutConversion(), codecs()} {
		info, ok := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		if !ok {
			t.Fatal("no protobuf serializer")
		}
		d := ns.DecoderToVersion(info.Serializer, metav1.SchemeGroupVersion)
		if i == 0 {
			upstream = d
		} else {
			ours = d
		}
	}
	return upstream, ours
}

// TestDecodeAsClientGoButManagedFields: on random objects' metadata,
// alone and in lists, with every field set, Client's decoder makes what
// client-go's does, but for the managed fields, which it leaves out;
// into a given object as into a new one.
func TestDecodeAsClientGoButManagedFields(t *testing.T) {
	upstream, ours := decoders(t)
	managed := 0
	for seed := range int64(300) {
		f := partialFiller(seed)
		var list metav1.PartialObjectMetadataList
		f.Fill(&list.ListMeta)
		for range seed % 4 {
			var p metav1.PartialObjectMetadata
			f.Fill(&p.ObjectMeta)
			list.Items = append(list.Items, p)
		}
		objs := []runtime.Object{&list}
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
		for _, obj := range objs {
			b := protobufOf(t, obj)
			want, err := runtime.Decode(upstream, b)
			if err != nil {
				t.Fatalf("seed %d: client-go: %v", seed, err)
			}
			switch w := want.(type) {
			case *metav1.PartialObjectMetadata:
				managed += len(w.ManagedFields)
				w.ManagedFields = nil
			case *metav1.PartialObjectMetadataList:
				for i := range w.Items {
					w.Items[i].ManagedFields = nil
				}
			}
			got, err := runtime.Decode(ours, b)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: decoded\n%#v\nwant\n%#v", seed, got, want)
			}
			// Into an object that held another: nothing of it is left.
			into := reflect.New(reflect.TypeOf(want).Elem()).Interface().(runtime.Object)
			if p, ok := into.(*metav1.PartialObjectMetadata); ok {
				partialFiller(seed + 1000).Fill(&p.ObjectMeta)
			}
			got, _, err = ours.Decode(b, nil, into)
			if err != nil {
				t.Fatalf("seed %d, into: %v", seed, err)
			}
			if got != into || !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: decoded into\n%#v\nwant\n%#v", seed, got, want)
			}
		}
	}
	if managed == 0 {
		t.Fatal("no object had managed fields: the test checks nothing")
	}
}

// TestDecodeRejectsTruncated: a body cut short is an error, never the
// objects before the cut.
func TestDecodeRejectsTruncated(t *testing.T) {
	_, ours := decoders(t)
	var list metav1.PartialObjectMetadataList
	for range 3 {
		var p metav1.PartialObjectMetadata
		partialFiller(7).Fill(&p.ObjectMeta)
		list.Items = append(list.Items, p)
	}
	b := protobufOf(t, &list)
	for _, n := range []int{len(b) / 3, len(b) / 2, len(b) - 1} {
		if obj, err := runtime.Decode(ours, b[:n]); err == nil {
			t.Errorf("%d of %d bytes decoded without an error: %T", n, len(b), obj)
		}
	}
}

// ipRecordMeta is the metadata of a routed pod's IP record as the API
// server lists it: its labels, the spec it carries and the managed
// fields of its create and of the update that marked it.
func ipRecordMeta(i int) metav1.PartialObjectMetadata {
	at := metav1.NewTime(time.Unix(1_800_000_000+int64(i), 0))
	fields := []byte(`{"f:metadata":{"f:annotations":{".":{},"f:shardnet.io/spec":{}},"f:labels":{".":{},"f:ovn.kubernetes.io/subnet":{},"f:ovn.kubernetes.io/node-name":{},"shardnet.io/spec-in-metadata":{}}},"f:spec":{".":{},"f:attachIps":{},"f:attachMacs":{},"f:attachSubnets":{},"f:containerID":{},"f:ipAddress":{},"f:macAddress":{},"f:namespace":{},"f:nodeName":{},"f:podName":{},"f:podType":{},"f:subnet":{},"f:v4IpAddress":{},"f:v6IpAddress":{}}}`)
	name := fmt.Sprintf("pod-%d.bench", i)
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: name, UID: types.UID(fmt.Sprintf("5b0c9f5e-3c1e-4c51-9d0a-%012d", i)), ResourceVersion: "123456", Generation: 1,
		CreationTimestamp: at,
		Labels:            map[string]string{"ovn.kubernetes.io/subnet": "ovn-default", "ovn.kubernetes.io/node-name": "kwok-node-1", "shardnet.io/spec-in-metadata": "v1"},
		Annotations:       map[string]string{"shardnet.io/spec": `{"g":1,"podName":"` + name + `","namespace":"bench","subnet":"ovn-default","nodeName":"kwok-node-1","ipAddress":"10.16.0.9","v4IpAddress":"10.16.0.9","macAddress":"00:00:00:aa:bb:cc","podType":""}`},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "shardnet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "kubeovn.io/v1", Time: &at, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: fields}},
			{Manager: "shardnet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "kubeovn.io/v1", Time: &at, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: fields[:120]}},
		},
	}}
}

// BenchmarkDecodeMetadataPage decodes a page of 1,000 IP records'
// metadata with client-go's decoder and with Client's, alternating, and
// reports Client's time and bytes allocated over client-go's
// (ours/upstream-time, ours/upstream-bytes): a restarted replica decodes
// 50 such pages of claims and 50 of IP records at 50,000 pods.
func BenchmarkDecodeMetadataPage(b *testing.B) {
	var list metav1.PartialObjectMetadataList
	for i := range 1000 {
		list.Items = append(list.Items, ipRecordMeta(i))
	}
	page := protobufOf(b, &list)
	upstream, ours := decoders(b)
	decode := func(d runtime.Decoder) func() {
		return func() {
			if _, err := runtime.Decode(d, page); err != nil {
				b.Fatal(err)
			}
		}
	}
	t0 := time.Now()
	compareAlternating(b, "time", "page", func() time.Duration { return time.Since(t0) }, decode(upstream), decode(ours))
}

// compareAlternating runs upstream and ours in turn until b is done and
// reports ours' clock (named what) and bytes allocated over upstream's,
// and each one's MiB allocated per run (named per).
func compareAlternating(b *testing.B, what, per string, clock func() time.Duration, upstream, ours func()) {
	var took [2]time.Duration
	var allocs [2]uint64
	for b.Loop() {
		for i, run := range []func(){upstream, ours} {
			var m0, m1 goruntime.MemStats
			goruntime.ReadMemStats(&m0)
			start := clock()
			run()
			took[i] += clock() - start
			goruntime.ReadMemStats(&m1)
			allocs[i] += m1.TotalAlloc - m0.TotalAlloc
		}
	}
	b.ReportMetric(float64(took[1])/float64(took[0]), "ours/upstream-"+what)
	b.ReportMetric(float64(allocs[1])/float64(allocs[0]), "ours/upstream-bytes")
	b.ReportMetric(float64(allocs[1])/float64(b.N)/(1<<20), "ours-MiB/"+per)
	b.ReportMetric(float64(allocs[0])/float64(b.N)/(1<<20), "upstream-MiB/"+per)
}
