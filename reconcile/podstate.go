package reconcile

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardnet/shardnet/ipam"
)

// Alive reports whether pod still needs its network: it is not terminal
// and, if it is being deleted, its grace period has not run out.
func Alive(pod *corev1.Pod, now time.Time) bool {
	if end, ok := GraceEnd(pod); ok && now.After(end) {
		return false
	}
	return !Terminal(pod)
}

// GraceEnd is the moment a terminating pod stops being alive: its
// deletion timestamp plus its grace period, as kube-ovn counts it (a pod
// on a node that is gone is never deleted by its kubelet). ok is false
// for a pod that is not being deleted.
func GraceEnd(pod *corev1.Pod) (end time.Time, ok bool) {
	if pod.DeletionTimestamp == nil || pod.DeletionGracePeriodSeconds == nil {
		return time.Time{}, false
	}
	return pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second), true
}

// Terminal reports whether pod has ended for good: Succeeded and not
// restarted, Failed and never restarted, or Evicted.
func Terminal(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		return pod.Spec.RestartPolicy != corev1.RestartPolicyAlways
	case corev1.PodFailed:
		return pod.Spec.RestartPolicy == corev1.RestartPolicyNever || pod.Status.Reason == "Evicted"
	}
	return false
}

// StatefulSetOwner returns the StatefulSet that owns pod and the pod's
// ordinal, when pod is a StatefulSet pod.
func StatefulSetOwner(pod *corev1.Pod) (name string, ordinal int, ok bool) {
	for _, o := range pod.OwnerReferences {
		if o.Kind != "StatefulSet" || !strings.HasPrefix(o.APIVersion, "apps/") {
			continue
		}
		if !strings.HasPrefix(pod.Name, o.Name+"-") {
			continue
		}
		n, ok := ipam.StatefulSetOrdinal(pod.Name)
		if !ok {
			continue
		}
		return o.Name, n, true
	}
	return "", 0, false
}

// VMOwner returns the KubeVirt VirtualMachineInstance that owns pod (its
// name is the VM's name), when pod is a VM launcher pod.
func VMOwner(pod *corev1.Pod) (string, bool) { return ownerVM(pod.OwnerReferences) }

// ownerVM is VMOwner of a pod's owner references.
func ownerVM(refs []metav1.OwnerReference) (string, bool) {
	for _, o := range refs {
		if o.Kind == "VirtualMachineInstance" && strings.HasPrefix(o.APIVersion, "kubevirt.io") {
			return o.Name, true
		}
	}
	return "", false
}

// PodType is the podType recorded in the IP record.
func PodType(pod *corev1.Pod) string {
	if _, _, ok := StatefulSetOwner(pod); ok {
		return "StatefulSet"
	}
	if _, ok := VMOwner(pod); ok {
		return "VirtualMachine"
	}
	return ""
}
