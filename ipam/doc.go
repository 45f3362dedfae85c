// Package ipam allocates addresses per subnet and family from lock-free
// bitmaps and makes each allocation durable with an AddressClaim in the API
// server.
//
// # Layers
//
// Subnet is the deterministic core: no API calls, no goroutines, no clock.
// NewSubnet parses a SubnetConfig (cidrBlock, gateway, excludeIps,
// protocol, IP pools) into one bitmap per family, a []atomic.Uint64 with
// one bit per address. Allocate picks a clear bit with a compare-and-swap
// on its word, next-fit from a per-shard cursor that starts in the shard's
// slice of the range, so shards (and replicas owning different shards)
// rarely contend, and an address just released is not handed out again
// until the cursor has gone round. AllocateStatic, Release, Mark, IsFree
// and Usage complete it; AllocateFromPool draws from an IPPool's addresses,
// which dynamic allocation never hands out.
//
// Claims is the thin shell that makes a pick final: it creates the claim
// named v1alpha1.ClaimName(subnet, address), labelled shardnet.io/subnet
// and shardnet.io/family, through a small ClaimStore (NewClientStore wraps
// the generated clientset). AlreadyExists means someone else holds the
// address: its bit stays set and the next one is tried. Release deletes the
// claim with its UID as a precondition. Track restores a Subnet from an
// AddressClaim lister and EventHandler keeps it in step with claims made
// by other replicas, so a restart or a shard takeover starts warm.
//
// # API
//
// Core: NewSubnet(SubnetConfig) (SubnetConfigFrom builds the config from a
// kubeovn.io Subnet and its IPPools); (*Subnet).Allocate(shard),
// AllocateFromPool(name), AllocateStatic(Addresses), Release, Mark, IsFree,
// Usage, PoolUsage, DerivedMAC, AssignMAC, Restore. Parsers: ParseRange(s),
// ParseAddresses, ParseIPPoolAnnotation / ParseAddressList (the ip_pool
// annotation), StatefulSetOrdinal, AtOrdinal, ParseMAC.
//
// Claims: NewClaims(ClaimStore, ...ClaimsOption); (*Claims).Allocate,
// AllocateStatic, AllocateFromPool, AllocateFromList (address lists with
// StatefulSet ordinals), Release; Track / Untrack / Tracked and
// EventHandler for the AddressClaim informer (its objects as the API
// types or in the replicas' cached form, claimcache.Claim); Repair and
// RepairAddr to mark a claimed address whose bit was lost; ClaimIndexers and Held to
// find what an owner already holds.
//
// # Guarantees
//
//   - Within one Subnet value, no address is handed out twice while held
//     (the CAS), whatever the number of goroutines and shards.
//   - Across replicas, restarts and split brains, no two owners hold a
//     claim for one address of one subnet: the API server's uniqueness of
//     names decides. The bitmap is only a cache of the claims; it may be
//     stale, which costs a wasted create or an address left unused until
//     the next event or restore, never a duplicate.
//   - Dynamic picks never return the network, broadcast (IPv4) or gateway
//     address, an excludeIps entry, or an IP pool's address. Static
//     allocation may take an excluded address, never the network,
//     broadcast or gateway address (ErrReserved).
//   - A static address already claimed by another owner is refused with
//     *AllocatedError (ErrAllocated) naming the holder, never stolen; one
//     claimed by the same owner (equal kind, namespace, name and UID) is
//     given back, so retries and retained owners are idempotent.
//   - A dual-stack subnet gives one address per family, all or none.
//   - MACs: a static MAC is honoured and unique within the subnet among the
//     claims this process has seen; otherwise it is derived: 0a:58 and the
//     IPv4 address, or, for IPv6-only subnets, 0a:59 and the address's
//     offset in the window, unique within the subnet by construction. A
//     static MAC inside 0a:58..0a:5a is accepted only when it is the
//     derived one of its own address.
//
// # Not guaranteed
//
//   - Static MAC uniqueness across replicas that have not yet seen each
//     other's claims: there is no claim per MAC.
//   - Freedom from leaks after a crash between creating a claim and using
//     it, or when a rollback cannot reach the server: the claim outlives
//     its purpose until the owner releases it or a garbage collector finds
//     that its owner is gone. A dynamic pick that finds its claim taken
//     does not check whether the claim is the owner's own from an earlier,
//     ambiguous attempt.
//   - Fairness or ordering between shards; a full shard slice spills into
//     the next.
//   - Idempotence for two concurrent calls for one owner: both may succeed
//     with different addresses. Calls for one owner must be serial (a work
//     queue gives that), and Held tells a retry what the owner already has.
//
// # IPv6 window
//
// An IPv6 prefix larger than SubnetConfig.IPv6Window (DefaultIPv6Window,
// at most MaxIPv6Window) gets a bitmap over its first IPv6Window addresses
// only: a /64 costs 8 KiB by default, not 2^61 bytes. Dynamic addresses
// and IP pool entries come from the window; static addresses beyond it
// are kept in a small mutex-guarded set. Usage reports the window's size.
// IPv4 prefixes are covered whole, down to /8 (2 MiB of bitmap).
//
// # Errors
//
// ErrFull, ErrNotInRange, ErrAllocated, ErrReserved, ErrMACInUse,
// ErrOrdinal, ErrConflict, ErrUnknownPool and ErrInvalid (every
// *ParseError, which carries the offending input) are matched with
// errors.Is. API errors come back wrapped with what was being done
// ("creating claim <name>: ...").
package ipam
