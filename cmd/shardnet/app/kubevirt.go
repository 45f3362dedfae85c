package app

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardnet/shardnet/controller"
	"github.com/shardnet/shardnet/reconcile"
)

// podKey is the controller's pod key function: with --keep-vm-ip the
// launcher pods of one KubeVirt VM share the VM's key (and so its shard).
func podKey(keepVMIP bool) func(metav1.Object) string {
	if !keepVMIP {
		return nil
	}
	return func(m metav1.Object) string { return reconcile.MetaPodKey(m, true) }
}

// watchVMs, with --keep-vm-ip, queues a VM's key on every change of the VM
// or its VMI (a deleted VM releases what it kept, docs/contract.md R13),
// and lets the collector hand VM keys to the reconcile once the KubeVirt
// cache can say whether a VM exists.
func watchVMs(ctrl *controller.Controller, gc *reconcile.GC, keepVMIP bool) {
	if !keepVMIP {
		return
	}
	vms := ctrl.Informers().VMs
	vms.OnChange(func(namespace, name string) { ctrl.Enqueue(namespace + "/" + name) })
	gc.CollectVMs(vms.Served)
}
