// Package netattach serves multus NetworkAttachmentDefinitions
// (k8s.cni.cncf.io/v1) to the pod path from a dynamic informer.
//
// Guarantees:
//   - A cluster without multus is not waited for: when discovery answers
//     that the resource is not served, HasSynced is true and Config returns
//     ErrNotServed. Discovery is asked again every RecheckInterval, and the
//     informer starts when the CRD appears; OnChange then reports every
//     existing object, so pods that wait for one are requeued.
//   - The cache holds only name, namespace, resourceVersion and spec.config
//     of each object (see Trim).
//   - OnChange fires after every add, delete and real update (a resync that
//     delivers the same resourceVersion again does not fire it).
//
// Not guaranteed:
//   - Once the informer runs it keeps running until the context ends. A CRD
//     removed later empties the cache (the API server deletes the objects
//     first, and the watch reports it), after which the informer's list
//     fails and retries with backoff; Config then answers found=false, not
//     ErrNotServed.
//   - Config does not parse spec.config; that is the pod path's job.
//
// The package sits below controller (which builds and starts one per
// replica) and reconcile (which reads it), so that neither imports the
// other for it.
package netattach
