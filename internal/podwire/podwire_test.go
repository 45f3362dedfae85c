package podwire_test

import (
	"bytes"
	"fmt"
	"reflect"
	goruntime "runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/shardnet/shardnet/controller"
	"github.com/shardnet/shardnet/internal/podcache"
	"github.com/shardnet/shardnet/internal/podwire"
)

// kept is p with only the fields the package doc says Unmarshal keeps.
func kept(p *corev1.Pod) *corev1.Pod {
	m := p.ObjectMeta
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
			DeletionGracePeriodSeconds: m.DeletionGracePeriodSeconds, Labels: m.Labels, Annotations: m.Annotations,
			OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers,
		},
		Spec: corev1.PodSpec{RestartPolicy: p.Spec.RestartPolicy, TerminationGracePeriodSeconds: p.Spec.TerminationGracePeriodSeconds,
			NodeName: p.Spec.NodeName, HostNetwork: p.Spec.HostNetwork},
		Status: corev1.PodStatus{Phase: p.Status.Phase, Reason: p.Status.Reason, HostIP: p.Status.HostIP, HostIPs: p.Status.HostIPs,
			PodIP: p.Status.PodIP, PodIPs: p.Status.PodIPs},
	}
}

// filler fills pods at random, every field of them, with the values the
// generated protobuf code can encode.
func filler(seed uint64) *randfill.Filler {
	return randfill.NewWithSeed(int64(seed)).NilChance(0.2).NumElements(0, 3).MaxDepth(8).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1000), resource.DecimalSI)
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			*v = intstr.FromInt32(c.Int31())
		},
		func(t *metav1.Time, c randfill.Continue) {
			// What the wire carries: seconds and nanoseconds.
			*t = metav1.NewTime(time.Unix(c.Int63n(1<<33), c.Int63n(1e9)))
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(time.Unix(c.Int63n(1<<33), c.Int63n(1e9)))
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw = []byte(`{}`)
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte(`{"f:metadata":{}}`)
		},
	)
}

// decodeFull is how client-go decodes a pod from protobuf: every field.
func decodeFull(t testing.TB, b []byte) *corev1.Pod {
	full := new(corev1.Pod)
	if err := full.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	return full
}

// TestUnmarshalKeepsWhatTheCacheKeeps: on random pods with every field
// set, Unmarshal decodes exactly the kept fields as the generated code
// does, nothing else, and the pod cache makes the same pod of it as of
// the whole pod. A field podcache.New starts to read fails the second
// check until Unmarshal decodes it too.
func TestUnmarshalKeepsWhatTheCacheKeeps(t *testing.T) {
	for seed := range uint64(300) {
		var p corev1.Pod
		filler(seed).Fill(&p)
		b, err := p.Marshal()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		full := decodeFull(t, b)
		var got corev1.Pod
		// A pod decoded before must not leak into the next.
		filler(seed + 1000).Fill(&got)
		if err := podwire.Unmarshal(b, &got); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if want := kept(full); !reflect.DeepEqual(&got, want) {
			t.Fatalf("seed %d: decoded\n%#v\nwant\n%#v", seed, &got, want)
		}
		fromFull := podcache.New(full, full.ObjectMeta).Pod()
		fromWire := podcache.New(&got, got.ObjectMeta).Pod()
		if !reflect.DeepEqual(fromWire, fromFull) {
			t.Fatalf("seed %d: the cache keeps\n%#v\nfrom the wire's pod, and\n%#v\nfrom the whole pod", seed, fromWire, fromFull)
		}
	}
}

// TestUnmarshalRejectsTruncated: a body cut short is an error, never a
// pod with what came before the cut.
func TestUnmarshalRejectsTruncated(t *testing.T) {
	b, err := routedPod(1).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, len(b) / 3, len(b) - 1} {
		var p corev1.Pod
		if err := podwire.Unmarshal(b[:n], &p); err == nil {
			t.Errorf("%d of %d bytes decoded without an error", n, len(b))
		}
	}
}

// encode is the API server's protobuf body of obj.
func encode(t testing.TB, obj runtime.Object) []byte {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	var buf bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decoder is the object decoder a REST client on Codecs uses.
func decoder(t testing.TB) runtime.Decoder {
	ns := podwire.Codecs()
	info, ok := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	return ns.DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion)
}

// TestCodecsDecodePodsAndListsTheirWay: through Codecs' protobuf decoder
// a pod and a pod list come out as Unmarshal makes them, into a given
// object or a new one, and other kinds (a Status, a node) in full.
func TestCodecsDecodePodsAndListsTheirWay(t *testing.T) {
	d := decoder(t)
	pod := routedPod(7)
	obj, err := runtime.Decode(d, encode(t, pod))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := obj.(*corev1.Pod)
	if !ok {
		t.Fatalf("decoded a %T", obj)
	}
	if want := kept(pod); !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%#v\nwant\n%#v", got, want)
	}
	into := routedPod(8)
	if _, _, err := d.Decode(encode(t, pod), nil, into); err != nil || !reflect.DeepEqual(into, kept(pod)) {
		t.Fatalf("decoded into a pod: %v\n%#v", err, into)
	}

	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"},
		Items: []corev1.Pod{*routedPod(1), *routedPod(2), *routedPod(3)}}
	var gotList corev1.PodList
	if _, _, err := d.Decode(encode(t, list), nil, &gotList); err != nil {
		t.Fatal(err)
	}
	if gotList.ResourceVersion != "42" || gotList.Continue != "next" || len(gotList.Items) != 3 {
		t.Fatalf("list decoded as %+v", gotList.ListMeta)
	}
	for i := range list.Items {
		if want := kept(&list.Items[i]); !reflect.DeepEqual(&gotList.Items[i], want) {
			t.Fatalf("item %d decoded\n%#v\nwant\n%#v", i, &gotList.Items[i], want)
		}
	}

	status := &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: 404, Message: "gone"}
	if obj, err := runtime.Decode(d, encode(t, status)); err != nil || obj.(*metav1.Status).Message != "gone" {
		t.Fatalf("a status decoded as %#v, %v", obj, err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{PodCIDR: "10.0.0.0/24"}}
	if obj, err := runtime.Decode(d, encode(t, node)); err != nil || obj.(*corev1.Node).Spec.PodCIDR != "10.0.0.0/24" {
		t.Fatalf("a node decoded as %#v, %v", obj, err)
	}
}

// routedPod is a pod as the API server stores one of the bench's after
// kwok ran it and shardnet routed it: the defaults admission adds, kwok's
// status and the three managedFields entries of its writers.
func routedPod(i int) *corev1.Pod {
	ip := fmt.Sprintf("10.16.%d.%d", i/250, i%250+1)
	host := fmt.Sprintf("172.18.0.%d", i%100+2)
	at := metav1.NewTime(time.Unix(1700000000+int64(i), 0))
	ann := map[string]string{}
	for k, v := range map[string]string{
		"allocated": "true", "routed": "true", "ip_address": ip,
		"mac_address": fmt.Sprintf("00:00:00:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff),
		"cidr":        "10.16.0.0/16", "gateway": "10.16.0.1", "logical_switch": "ovn-default", "pod_nic_type": "veth-pair",
		"logical_router": "ovn-cluster",
	} {
		ann["ovn.kubernetes.io/"+k] = v
	}
	fields := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(s)} }
	cond := func(typ corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: at}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("pod-%06d", i), Namespace: "bench", UID: types.UID(fmt.Sprintf("0b6f6c1e-6d2a-4c55-9d3e-%012d", i)),
			ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: at,
			Labels: map[string]string{"app": "bench"}, Annotations: ann,
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "shardnet-bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &at, FieldsType: "FieldsV1",
					FieldsV1: fields(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:nodeName":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{},"f:tolerations":{}}}`)},
				{Manager: "kwok", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &at, FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: fields(`{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"` + ip + `\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`)},
				{Manager: "shardnet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &at, FieldsType: "FieldsV1",
					FieldsV1: fields(`{"f:metadata":{"f:annotations":{".":{},"f:ovn.kubernetes.io/allocated":{},"f:ovn.kubernetes.io/cidr":{},"f:ovn.kubernetes.io/gateway":{},"f:ovn.kubernetes.io/ip_address":{},"f:ovn.kubernetes.io/logical_router":{},"f:ovn.kubernetes.io/logical_switch":{},"f:ovn.kubernetes.io/mac_address":{},"f:ovn.kubernetes.io/pod_nic_type":{},"f:ovn.kubernetes.io/routed":{}}}}`)},
			},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/bench", TerminationMessagePath: "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullAlways}},
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To(int64(30)), DNSPolicy: corev1.DNSClusterFirst,
			NodeName: fmt.Sprintf("node-%d", i%100), SecurityContext: &corev1.PodSecurityContext{}, SchedulerName: corev1.DefaultSchedulerName,
			Tolerations: []corev1.Toleration{
				{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(300))},
			},
			Priority: ptr.To(int32(0)), EnableServiceLinks: ptr.To(true), PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{cond(corev1.PodInitialized), cond(corev1.PodReady), cond(corev1.ContainersReady), cond(corev1.PodScheduled)},
			HostIP:     host, HostIPs: []corev1.HostIP{{IP: host}}, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &at,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "registry.invalid/bench", ImageID: "registry.invalid/bench@sha256:0",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}, Started: ptr.To(true)}},
			QOSClass: corev1.PodQOSBestEffort,
		},
	}
}

// BenchmarkDecodeCachedPod decodes a routed pod's protobuf body and makes
// the cache's pod of it (controller.TrimPod), as client-go decodes it
// (full) and through Codecs (wire), in turns of 256 pods each, and
// reports wire/full of the time and of the bytes allocated, measured in
// the same run.
func BenchmarkDecodeCachedPod(b *testing.B) {
	const n = 256
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = encode(b, routedPod(i))
	}
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	decoders := [2]runtime.Decoder{
		scheme.Codecs.WithoutConversion().DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion),
		decoder(b),
	}
	var took [2]time.Duration
	var allocated [2]uint64
	var ms goruntime.MemStats
	pods := 0
	for b.Loop() {
		for k, d := range decoders {
			goruntime.ReadMemStats(&ms)
			before, start := ms.TotalAlloc, time.Now()
			for _, body := range bodies {
				obj, err := runtime.Decode(d, body)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := controller.TrimPod(obj); err != nil {
					b.Fatal(err)
				}
			}
			took[k] += time.Since(start)
			goruntime.ReadMemStats(&ms)
			allocated[k] += ms.TotalAlloc - before
		}
		pods += n
	}
	for k, name := range [2]string{"full", "wire"} {
		b.ReportMetric(float64(took[k].Nanoseconds())/float64(pods), name+"-ns/pod")
		b.ReportMetric(float64(allocated[k])/float64(pods), name+"-B/pod")
	}
	b.ReportMetric(float64(took[1])/float64(took[0]), "wire/full-time")
	b.ReportMetric(float64(allocated[1])/float64(allocated[0]), "wire/full-bytes")
}
