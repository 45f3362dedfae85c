package ipam

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// Sentinel errors. Every error this package returns for one of these
// conditions matches it with errors.Is, whatever extra context it carries.
var (
	// ErrFull means a family of a subnet (or of a pool) has no free address
	// left for dynamic allocation. A retry helps once something is released.
	ErrFull = errors.New("no free address")
	// ErrNotInRange means an address, range or pool entry lies outside the
	// subnet (or, for IPv6, outside the subnet's bitmap window where a
	// bitmap position is required). Retrying does not help.
	ErrNotInRange = errors.New("address not in range")
	// ErrAllocated means a static address (or a list entry) is held by
	// another owner. It is never resolved by stealing; a retry helps only
	// once the holder lets go.
	ErrAllocated = errors.New("address already allocated")
	// ErrMACInUse means a static MAC is already given to another owner in
	// the same subnet.
	ErrMACInUse = errors.New("MAC already in use")
	// ErrInvalid matches every *ParseError. Retrying does not help.
	ErrInvalid = errors.New("invalid input")
	// ErrOrdinal means a StatefulSet pod's ordinal is past the end of its
	// address list. Retrying does not help until the list grows.
	ErrOrdinal = errors.New("ordinal past the end of the address list")
	// ErrConflict means too many picks in a row were already claimed by
	// other replicas: this allocator's view of the subnet is badly stale.
	// A retry (after the informer catches up) helps.
	ErrConflict = errors.New("too many claim conflicts")
	// ErrUnknownPool means a pool name the subnet was not built with.
	ErrUnknownPool = errors.New("unknown IP pool")
)

// ParseError reports malformed input: a CIDR, an address, an a..b range, a
// MAC or a protocol, with the offending text.
type ParseError struct {
	// What names the kind of input ("CIDR", "exclude range", "MAC" ...).
	What string
	// Input is the offending text, verbatim.
	Input string
	// Err is the underlying cause, if any.
	Err error
}

func (e *ParseError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("invalid %s %q", e.What, e.Input)
	}
	return fmt.Sprintf("invalid %s %q: %v", e.What, e.Input, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Is makes every ParseError match ErrInvalid.
func (e *ParseError) Is(target error) bool { return target == ErrInvalid }

func parseErr(what, input string, err error) error {
	return &ParseError{What: what, Input: input, Err: err}
}

// AllocatedError is returned when a static address is held by another
// owner. It matches ErrAllocated.
type AllocatedError struct {
	Subnet string
	Addr   netip.Addr
	// Holder is the owner recorded in the existing claim; zero when the
	// holder is only known from this process's bitmap.
	Holder v1alpha1.ClaimOwner
	// Hold, when not empty, says where the address was found in use
	// without a claim (see Hold.Source).
	Hold string
}

func (e *AllocatedError) Error() string {
	if e.Hold != "" {
		return fmt.Sprintf("subnet %s: %s is in use by %s: %v", e.Subnet, e.Addr, e.Hold, ErrAllocated)
	}
	if e.Holder.Name == "" {
		return fmt.Sprintf("subnet %s: %s: %v", e.Subnet, e.Addr, ErrAllocated)
	}
	return fmt.Sprintf("subnet %s: %s held by %s %s/%s: %v", e.Subnet, e.Addr,
		e.Holder.Kind, e.Holder.Namespace, e.Holder.Name, ErrAllocated)
}

// Is makes AllocatedError match ErrAllocated.
func (e *AllocatedError) Is(target error) bool { return target == ErrAllocated }

// ErrReserved means a static address is the network, broadcast or gateway
// address of its subnet. Retrying does not help.
var ErrReserved = errors.New("address reserved for the subnet")
