package ipam

import (
	"encoding/json"
	goruntime "runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardnet/shardnet/api/client/clientset/versioned/scheme"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/jsoncodec"
)

// BenchmarkClaimCreateAnswer decodes the API server's answer to a claim
// create, the claim as stored with its managedFields entry, as the
// replica's CRD client decodes a whole claim (full) and as clientStore
// reads it, its UID and version only (meta), in turns, and reports
// meta/full of the time and of the bytes allocated in the same run.
func BenchmarkClaimCreateAnswer(b *testing.B) {
	at := metav1.NewTime(time.Unix(1700000000, 0))
	claim := &v1alpha1.AddressClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "AddressClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "ovn-default.10-16-3-7", UID: types.UID("0b6f6c1e-6d2a-4c55-9d3e-000000000001"),
			ResourceVersion: "123456", Generation: 1, CreationTimestamp: at,
			Labels:      map[string]string{"shardnet.io/subnet": "ovn-default", "shardnet.io/spec-in-metadata": "v1"},
			Annotations: map[string]string{"shardnet.io/spec": `{"subnet":"ovn-default","address":"10.16.3.7","owner":{"kind":"Pod","namespace":"bench","name":"pod-000007","uid":"0b6f6c1e-6d2a-4c55-9d3e-000000000007"},"provider":"ovn","nodeName":"node-7","mac":"00:00:00:00:00:07"}`},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "shardnet", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "shardnet.io/v1alpha1", Time: &at, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:shardnet.io/spec":{}},"f:labels":{".":{},"f:shardnet.io/spec-in-metadata":{},"f:shardnet.io/subnet":{}}},"f:spec":{".":{},"f:address":{},"f:mac":{},"f:nodeName":{},"f:owner":{".":{},"f:kind":{},"f:name":{},"f:namespace":{},"f:uid":{}},"f:provider":{},"f:subnet":{}}}`)}}},
		},
		Spec: v1alpha1.AddressClaimSpec{Subnet: "ovn-default", Address: "10.16.3.7", Provider: "ovn", NodeName: "node-7", MAC: "00:00:00:00:00:07",
			Owner: v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "bench", Name: "pod-000007", UID: "0b6f6c1e-6d2a-4c55-9d3e-000000000007"}},
	}
	body, err := json.Marshal(claim)
	if err != nil {
		b.Fatal(err)
	}
	ns := jsoncodec.NegotiatedSerializer(scheme.Scheme, scheme.Codecs)
	info, _ := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeJSON)
	full := ns.DecoderToVersion(info.Serializer, v1alpha1.SchemeGroupVersion)
	const turn = 256
	ways := [2]func() types.UID{
		func() types.UID {
			out := new(v1alpha1.AddressClaim)
			if _, _, err := full.Decode(body, nil, out); err != nil {
				b.Fatal(err)
			}
			return out.UID
		},
		func() types.UID {
			var stored storedMeta
			if err := json.Unmarshal(body, &stored); err != nil {
				b.Fatal(err)
			}
			return stored.Metadata.UID
		},
	}
	var took [2]time.Duration
	var allocated [2]uint64
	n := 0
	for b.Loop() {
		for k, way := range ways {
			ms := readAlloc()
			start := time.Now()
			for range turn {
				if way() != claim.UID {
					b.Fatal("wrong UID decoded")
				}
			}
			took[k] += time.Since(start)
			allocated[k] += readAlloc() - ms
		}
		n += turn
	}
	b.ReportMetric(float64(took[0].Nanoseconds())/float64(n), "full-ns/answer")
	b.ReportMetric(float64(took[1].Nanoseconds())/float64(n), "meta-ns/answer")
	b.ReportMetric(float64(allocated[0])/float64(n), "full-B/answer")
	b.ReportMetric(float64(allocated[1])/float64(n), "meta-B/answer")
	b.ReportMetric(float64(took[1])/float64(took[0]), "meta/full-time")
	b.ReportMetric(float64(allocated[1])/float64(allocated[0]), "meta/full-bytes")
}

// readAlloc is the bytes allocated so far.
func readAlloc() uint64 {
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.TotalAlloc
}
