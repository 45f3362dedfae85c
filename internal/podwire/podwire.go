// Package podwire decodes pods from the API server's protobuf into only
// the fields the pod cache keeps (podcache.Pod, controller.TrimPod), for
// the pod informer of a replica.
//
// client-go decodes every field of every pod its watch delivers: the
// containers, volumes, conditions, container statuses and managedFields
// (three entries on a routed kwok pod: its create, kwok's status and
// shardnet's patch), into a few hundred small objects, and the informer's
// transform keeps a handful of them. That is most of the garbage of a
// replica's pod watch, and the collector's work for it is CPU taken from
// the API server on a shared machine: a restart of three replicas at
// 50,000 pods spent about a third of each replica's CPU in the collector.
// Unmarshal reads the same bytes and keeps only what the transform reads;
// every other field is skipped where it lies.
//
// Kept, as the generated code decodes them: of the metadata, name,
// namespace, uid, resourceVersion, creationTimestamp, deletionTimestamp,
// deletionGracePeriodSeconds, labels, annotations, ownerReferences and
// finalizers; of the spec, restartPolicy, terminationGracePeriodSeconds,
// nodeName and hostNetwork; of the status, phase, reason, hostIP(s) and
// podIP(s). A field added to podcache.Pod must be added here too:
// TestUnmarshalKeepsWhatTheCacheKeeps compares the two on random pods.
//
// Codecs is a runtime.NegotiatedSerializer whose protobuf decoder decodes
// pods and pod lists this way and everything else (Status errors, the
// watch events' envelopes) as client-go does. A Client is a REST client
// on it: it lists and watches pods for the informer and patches them for
// the pod path, whose callers read only the UID and resource version of
// the answer.
package podwire

import (
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardnet/shardnet/internal/kubeproto"
)

// Unmarshal sets p to the pod whose protobuf (a v1.Pod message, without
// the API server's envelope) is b, only the fields the pod cache keeps
// (see the package doc); p's other fields are left empty. p is reset
// first, as proto.Unmarshal does. The strings do not share b.
func Unmarshal(b []byte, p *corev1.Pod) error {
	*p = corev1.Pod{}
	return kubeproto.Fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			return objectMeta(v, &p.ObjectMeta)
		case 2:
			return podSpec(v, &p.Spec)
		case 3:
			return podStatus(v, &p.Status)
		}
		return nil
	})
}

// objectMeta merges the kept fields of the ObjectMeta in b into m.
func objectMeta(b []byte, m *metav1.ObjectMeta) error {
	return kubeproto.Fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		if typ == protowire.VarintType {
			if num == 10 {
				g := int64(n)
				m.DeletionGracePeriodSeconds = &g
			}
			return nil
		}
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			m.Name = string(v)
		case 3:
			m.Namespace = string(v)
		case 5:
			m.UID = types.UID(v)
		case 6:
			m.ResourceVersion = string(v)
		case 8:
			return m.CreationTimestamp.Unmarshal(v)
		case 9:
			if m.DeletionTimestamp == nil {
				m.DeletionTimestamp = new(metav1.Time)
			}
			return m.DeletionTimestamp.Unmarshal(v)
		case 11:
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			return mapEntry(v, m.Labels)
		case 12:
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			return mapEntry(v, m.Annotations)
		case 13:
			m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{})
			return m.OwnerReferences[len(m.OwnerReferences)-1].Unmarshal(v)
		case 14:
			m.Finalizers = append(m.Finalizers, string(v))
		}
		return nil
	})
}

// mapEntry adds the map<string, string> entry in b to m.
func mapEntry(b []byte, m map[string]string) error {
	var k, val string
	err := kubeproto.Fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			k = string(v)
		case 2:
			val = string(v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	m[k] = val
	return nil
}

// podSpec merges the kept fields of the PodSpec in b into s.
func podSpec(b []byte, s *corev1.PodSpec) error {
	return kubeproto.Fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == 3 && typ == protowire.BytesType:
			s.RestartPolicy = corev1.RestartPolicy(v)
		case num == 4 && typ == protowire.VarintType:
			g := int64(n)
			s.TerminationGracePeriodSeconds = &g
		case num == 10 && typ == protowire.BytesType:
			s.NodeName = string(v)
		case num == 11 && typ == protowire.VarintType:
			s.HostNetwork = n != 0
		}
		return nil
	})
}

// podStatus merges the kept fields of the PodStatus in b into s.
func podStatus(b []byte, s *corev1.PodStatus) error {
	return kubeproto.Fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			s.Phase = corev1.PodPhase(v)
		case 4:
			s.Reason = string(v)
		case 5:
			s.HostIP = string(v)
		case 6:
			s.PodIP = string(v)
		case 12:
			s.PodIPs = append(s.PodIPs, corev1.PodIP{})
			return s.PodIPs[len(s.PodIPs)-1].Unmarshal(v)
		case 16:
			s.HostIPs = append(s.HostIPs, corev1.HostIP{})
			return s.HostIPs[len(s.HostIPs)-1].Unmarshal(v)
		}
		return nil
	})
}
