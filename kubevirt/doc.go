// Package kubevirt serves KubeVirt VirtualMachines and
// VirtualMachineInstances (kubevirt.io/v1) to the pod path from dynamic
// informers; there is no typed client module to depend on.
//
// Guarantees:
//   - A cluster without KubeVirt is not waited for: when discovery answers
//     that the resources are not served, HasSynced is true, the lookups
//     return ErrNotServed, and that is logged once. Discovery is asked
//     again every RecheckInterval and the informers start when the CRDs
//     appear; OnChange then reports every existing object.
//   - The caches hold only what the pod path reads (see Trim): name,
//     namespace, UID, resourceVersion, deletion timestamp, owner
//     references, and a VM template's ovn.kubernetes.io/logical_switch.
//   - OnChange fires after every add, delete and real update of either
//     kind, with the object's namespace and name; a VMI has its VM's name,
//     so both kinds name the same VM key.
//
// Not guaranteed:
//   - Once the informers run they keep running until the context ends; a
//     CRD removed later empties the caches and the lookups then answer
//     found=false, not ErrNotServed.
//
// Like package netattach it sits below controller (which builds and
// starts it) and reconcile (which reads it).
package kubevirt
