// Package reconcile holds the pod and subnet reconcilers.
//
// # The pod path: plan, then apply
//
// A pod's work is decided by Planner.Plan, a pure function of the pod and a
// read-only View (subnets, IP pools, namespaces, NetworkAttachmentDefinitions,
// the pod's claims and Northbound ports): for each network the pod asks for
// (docs/contract.md §8: the default network unless
// v1.multus-cni.io/default-network replaces it, then each kube-ovn
// attachment) it chooses the subnet and says why, decides where the
// addresses come from, and names the port and IP record; Planner.Complete
// turns the allocation into the port, routed-phase rows, IP record and
// annotations. Neither starts a goroutine, reads a clock or calls a client,
// so the scenarios under testdata/plan pin every decision without servers.
//
// Term applies plans for one shard term: claims first, then every port and
// routed-phase row of the pod in one request to the term's fenced
// Northbound batcher and, at the same time, the IP records (they follow
// the transaction instead when a network is unplugged, in the order of
// release), then one merge patch of the pod's annotations carrying its UID
// as a precondition.
//
// # Guarantees
//
//   - An address is claimed (an AddressClaim exists) before any port carries
//     it, and released only after every port, route and NAT row carrying it
//     is deleted.
//   - A Term writes the Northbound only through its shard's fenced batcher:
//     after the shard moves, its writes fail on the fence.
//   - A Term's memory of its own writes (ports committed, allocations made,
//     patches written) is held in xsync maps owned by the term, read on
//     every reconcile by all of the term's workers without a shared lock,
//     and dropped with the term, so a shard that comes back starts from the
//     caches. Each entry is trusted for at most cacheLagTolerance.
//   - An allocated network keeps its subnet (docs/contract.md U1).
//   - A network that cannot be served (bad input, a missing subnet or NAD)
//     gives a Warning Event on the pod and a retry where one can help; the
//     pod's other networks are still served. Nothing is unplugged while
//     any attachment cannot be resolved.
//   - Every step is idempotent, so a retry after any failure converges.
//
// It does not guarantee that a pod is served once its subnet is full or its
// static address is held by another pod: those wait, with a Warning.
//
// # The subnet path
//
// SubnetReconciler (leader only) ensures each subnet's switch, router port
// and node port groups, and keeps the subnet status counters from the
// registry of claims (Subnets).
//
// # Vips
//
// VipReconciler (leader only) reserves each Vip's address with claims of
// owner kind Vip and records it on the Vip as kube-ovn does. A pod whose
// ovn.kubernetes.io/vip names a reserved Vip is planned FromVip: it takes
// the Vip's address and MAC without claims of its own, after marking the
// Vip taken (ovn.kubernetes.io/ip_reserved) under the Vip's
// resourceVersion, so one Vip serves one pod. A deleted Vip keeps its
// claims until no live pod uses its address (docs/decisions/0014-vips.md).
package reconcile
