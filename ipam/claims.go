package ipam

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	"github.com/shardnet/shardnet/api/client/clientset/versioned/scheme"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// ClaimStore is what the claim layer needs of the API server. The errors
// it returns must be API status errors (apierrors.IsAlreadyExists,
// IsNotFound and IsConflict are how outcomes are told apart).
type ClaimStore interface {
	// Create creates the claim; AlreadyExists when the name is taken. It
	// returns the claim created, of which callers read only the UID.
	Create(ctx context.Context, claim *v1alpha1.AddressClaim) (*v1alpha1.AddressClaim, error)
	// Get reads the claim from the server (not a cache), to learn who
	// holds a name that was found taken.
	Get(ctx context.Context, name string) (*v1alpha1.AddressClaim, error)
	// Delete deletes the claim only if its UID is uid; Conflict when the
	// claim has been replaced, NotFound when it is gone.
	Delete(ctx context.Context, name string, uid types.UID) error
}

// NewClientStore is a ClaimStore over the generated clientset.
func NewClientStore(c versioned.Interface) ClaimStore { return clientStore{c: c} }

type clientStore struct{ c versioned.Interface }

var _ ClaimStore = clientStore{}

// Create creates the claim. Of the API server's answer, the claim as
// stored, only the UID and resource version are decoded: the claim
// returned is the one given with those two set. A clientset with no REST
// client (a fake) creates through its typed client.
func (s clientStore) Create(ctx context.Context, claim *v1alpha1.AddressClaim) (*v1alpha1.AddressClaim, error) {
	rc, _ := s.c.ShardnetV1alpha1().RESTClient().(*rest.RESTClient)
	if rc == nil {
		return s.c.ShardnetV1alpha1().AddressClaims().Create(ctx, claim, metav1.CreateOptions{})
	}
	res := rc.Post().Resource("addressclaims").VersionedParams(&metav1.CreateOptions{}, scheme.ParameterCodec).
		Body(claim).Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	body, _ := res.Raw()
	var stored storedMeta
	if err := json.Unmarshal(body, &stored); err != nil || stored.Metadata.UID == "" {
		return nil, fmt.Errorf("claim %s created, but its UID not read from the answer: %w", claim.Name, errors.Join(err, errNoUID))
	}
	out := *claim
	out.UID, out.ResourceVersion = stored.Metadata.UID, stored.Metadata.ResourceVersion
	return &out, nil
}

// storedMeta is what clientStore.Create decodes of the claim stored.
type storedMeta struct {
	Metadata struct {
		UID             types.UID `json:"uid"`
		ResourceVersion string    `json:"resourceVersion"`
	} `json:"metadata"`
}

// errNoUID is the error of a create answered without a UID.
var errNoUID = errors.New("no UID in the answer")

func (s clientStore) Get(ctx context.Context, name string) (*v1alpha1.AddressClaim, error) {
	return s.c.ShardnetV1alpha1().AddressClaims().Get(ctx, name, metav1.GetOptions{})
}

func (s clientStore) Delete(ctx context.Context, name string, uid types.UID) error {
	return s.c.ShardnetV1alpha1().AddressClaims().Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
	})
}

// rollbackTimeout bounds the deletes that undo a failed allocation.
const rollbackTimeout = 10 * time.Second

// DefaultMaxConflicts bounds how many taken picks one dynamic allocation
// skips before it gives up with ErrConflict.
const DefaultMaxConflicts = 256

// Request says who an allocation is for and what its claims record.
type Request struct {
	// Owner holds the claims. Two requests with an equal Owner (kind,
	// namespace, name, UID) are the same holder: a static address already
	// claimed by it is given back rather than refused.
	Owner v1alpha1.ClaimOwner
	// Provider is the network provider ("ovn" for the default network).
	Provider string
	// NodeName is the owner's node, if it has one.
	NodeName string
	// MAC is a static MAC; zero means derived from the address.
	MAC MAC
}

// Allocation is what an owner holds in one subnet once every claim of it
// exists.
type Allocation struct {
	Subnet    string
	Addresses Addresses
	MAC       MAC
	// uids are the claim UIDs, IPv4 then IPv6, as created or found.
	uids [2]types.UID
}

// ClaimUID is the UID of the claim of the given family's address.
func (a Allocation) ClaimUID(is4 bool) types.UID {
	if is4 {
		return a.uids[0]
	}
	return a.uids[1]
}

// Claims makes allocations durable: an address is given only once its
// AddressClaim has been created, and released by deleting that claim. It
// also keeps the tracked subnets' bitmaps in step with claims made
// elsewhere (EventHandler), and restores them (Track). It is safe for
// concurrent use; calls for one owner should not overlap (the reconciler's
// queue gives that), since two concurrent allocations for one owner may
// both succeed.
type Claims struct {
	store        ClaimStore
	maxConflicts int
	mu           sync.RWMutex
	// subnets guarded by mu: the subnets whose bitmaps follow the claim
	// informer, by name.
	subnets map[string]*Subnet
}

// ClaimsOption configures Claims.
type ClaimsOption func(*Claims) error

// WithMaxConflicts sets how many taken picks a dynamic allocation skips
// before ErrConflict (default DefaultMaxConflicts); n must be positive.
func WithMaxConflicts(n int) ClaimsOption {
	return func(c *Claims) error {
		if n < 1 {
			return fmt.Errorf("max conflicts %d: %w", n, ErrInvalid)
		}
		c.maxConflicts = n
		return nil
	}
}

// NewClaims builds the claim layer over store.
func NewClaims(store ClaimStore, opts ...ClaimsOption) (*Claims, error) {
	if store == nil {
		return nil, fmt.Errorf("nil claim store: %w", ErrInvalid)
	}
	c := &Claims{store: store, maxConflicts: DefaultMaxConflicts, subnets: map[string]*Subnet{}}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// OwnerKey is the identity of an owner as the MAC table records it.
func OwnerKey(o v1alpha1.ClaimOwner) string {
	return o.Kind + "/" + o.Namespace + "/" + o.Name + "/" + o.UID
}

// SubnetLabelValue is the value of the shardnet.io/subnet label on the
// claims of a subnet: the name itself, or a digest of it when the name is
// not a valid label value (longer than 63 characters).
func SubnetLabelValue(subnet string) string {
	if len(validation.IsValidLabelValue(subnet)) == 0 {
		return subnet
	}
	sum := sha256.Sum256([]byte(subnet))
	return "sha256-" + hex.EncodeToString(sum[:])[:40]
}

func familyLabel(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

func (c *Claims) newClaim(s *Subnet, a netip.Addr, req Request, mac MAC) *v1alpha1.AddressClaim {
	return NewClaim(s.name, a, req, mac)
}

// NewClaim is the claim of address a of subnet for req, with mac (zero:
// none), as Allocate creates it.
func NewClaim(subnet string, a netip.Addr, req Request, mac MAC) *v1alpha1.AddressClaim {
	claim := &v1alpha1.AddressClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha1.ClaimName(subnet, a),
			Labels: map[string]string{
				v1alpha1.LabelSubnet: SubnetLabelValue(subnet),
				v1alpha1.LabelFamily: familyLabel(a),
			},
		},
		Spec: v1alpha1.AddressClaimSpec{
			Subnet:   subnet,
			Address:  a.String(),
			Provider: req.Provider,
			NodeName: req.NodeName,
			Owner:    req.Owner,
		},
	}
	if !mac.IsZero() {
		claim.Spec.MAC = mac.String()
	}
	// The spec goes into the metadata too, so that replicas can watch
	// claims as their metadata only (v1alpha1.EncodeSpec).
	if v, ok := v1alpha1.EncodeSpec(&claim.Spec); ok {
		claim.Labels[v1alpha1.LabelSpecInMetadata] = v1alpha1.SpecInMetadataV1
		claim.Annotations = map[string]string{v1alpha1.AnnotationSpec: v}
	}
	return claim
}

// Allocate gives req one dynamic address per family of s, next-fit from
// shard's cursor, each made durable by its claim. A pick whose claim
// already exists belongs to someone else: it stays marked and the next
// one is tried. Errors: ErrFull, ErrConflict, ErrMACInUse, ErrInvalid, or
// an API error ("creating claim ..."); on error nothing is held.
func (c *Claims) Allocate(ctx context.Context, s *Subnet, shard int, req Request) (Allocation, error) {
	return c.allocate(ctx, s, Addresses{}, nil, shard, req)
}

// AllocateFromPool is Allocate restricted to the named IPPool of s. A
// family of s that the pool has no entries for is allocated dynamically.
func (c *Claims) AllocateFromPool(ctx context.Context, s *Subnet, pool string, shard int, req Request) (Allocation, error) {
	p, ok := s.pools[pool]
	if !ok {
		return Allocation{}, fmt.Errorf("subnet %s: pool %q: %w", s.name, pool, ErrUnknownPool)
	}
	return c.allocate(ctx, s, Addresses{}, p, shard, req)
}

// AllocateStatic gives req exactly the valid addresses of static (and a
// dynamic one for a family of s that static leaves out, as kube-ovn does).
// A static address already claimed by req.Owner is given back as it is;
// one claimed by anyone else fails with *AllocatedError naming the holder.
// Other errors: ErrNotInRange, ErrReserved, ErrMACInUse, ErrInvalid, API
// errors. On error nothing new is held.
func (c *Claims) AllocateStatic(ctx context.Context, s *Subnet, static Addresses, shard int, req Request) (Allocation, error) {
	if static.IsZero() {
		return Allocation{}, parseErr("static address", "", errors.New("empty"))
	}
	for _, a := range static.List() {
		if !s.Contains(a) {
			return Allocation{}, fmt.Errorf("subnet %s: %s: %w", s.name, a, ErrNotInRange)
		}
	}
	return c.allocate(ctx, s, static, nil, shard, req)
}

// AllocateFromList gives req an entry of an ip_pool address list: for a
// StatefulSet pod (ordinal >= 0) the entry at its ordinal (ErrOrdinal past
// the end, *AllocatedError if another owner holds it); otherwise the first
// entry not held by another owner (ErrFull when there is none).
func (c *Claims) AllocateFromList(ctx context.Context, s *Subnet, list []Addresses, ordinal, shard int, req Request) (Allocation, error) {
	if ordinal >= 0 {
		a, err := AtOrdinal(list, ordinal)
		if err != nil {
			return Allocation{}, err
		}
		return c.AllocateStatic(ctx, s, a, shard, req)
	}
	var last error
	for _, a := range list {
		al, err := c.AllocateStatic(ctx, s, a, shard, req)
		if err == nil {
			return al, nil
		}
		if !errors.Is(err, ErrAllocated) && !errors.Is(err, ErrNotInRange) && !errors.Is(err, ErrReserved) {
			return Allocation{}, err
		}
		last = err
	}
	return Allocation{}, fmt.Errorf("subnet %s: no free entry in the address list (last: %v): %w", s.name, last, ErrFull)
}

// allocate claims one address per family of s: the family's static address
// when given, else from p when it has the family, else dynamic. The IPv4
// address is claimed first, since a derived MAC comes from it.
func (c *Claims) allocate(ctx context.Context, s *Subnet, static Addresses, p *ipPool, shard int, req Request) (Allocation, error) {
	al := Allocation{Subnet: s.name}
	key := OwnerKey(req.Owner)
	var created []claimed
	var ms macState
	fail := func(err error) (Allocation, error) {
		c.rollback(ctx, s, created)
		if ms.set && !ms.adopted {
			s.ReleaseMAC(ms.mac, key)
		}
		return Allocation{}, err
	}
	for _, is4 := range [2]bool{true, false} {
		f := s.v6
		want := static.V6
		if is4 {
			f, want = s.v4, static.V4
		}
		if f == nil {
			continue
		}
		var fromPool *ipPool
		if p != nil && ((is4 && p.v4 != nil) || (!is4 && p.v6 != nil)) {
			fromPool = p
		}
		got, err := c.claimFamily(ctx, s, is4, want, fromPool, shard, req, &ms)
		if err != nil {
			return fail(err)
		}
		if got.created {
			created = append(created, got)
		}
		if is4 {
			al.Addresses.V4, al.uids[0] = got.addr, got.uid
		} else {
			al.Addresses.V6, al.uids[1] = got.addr, got.uid
		}
	}
	al.MAC = ms.mac
	klog.FromContext(ctx).V(4).Info("Allocated", "subnet", s.name, "addresses", al.Addresses.String(),
		"mac", al.MAC.String(), "owner", key)
	return al, nil
}

// macState is the MAC of one allocation, decided with its first family.
type macState struct {
	mac MAC
	// set is true once the first family has decided mac.
	set bool
	// adopted is true when mac came from a claim the owner already held,
	// which a failed allocation must not take away from it.
	adopted bool
}

// claimed is one address this call holds.
type claimed struct {
	addr netip.Addr
	uid  types.UID
	// created is false for a claim that already existed for the owner,
	// which a rollback must leave alone.
	created bool
}

func one(a netip.Addr) Addresses {
	if a.Is4() {
		return Addresses{V4: a}
	}
	return Addresses{V6: a}
}

// claimFamily picks (or takes, when want is valid) one address of a family
// and creates its claim. The first family to run decides ms.
func (c *Claims) claimFamily(ctx context.Context, s *Subnet, is4 bool, want netip.Addr, p *ipPool, shard int, req Request, ms *macState) (claimed, error) {
	key := OwnerKey(req.Owner)
	primary := !ms.set
	// ownBit is true while the bit of the current address was set by this
	// call, so that an error must clear it again.
	ownBit := false
	for conflicts := 0; ; conflicts++ {
		if conflicts >= c.maxConflicts {
			return claimed{}, fmt.Errorf("subnet %s: %d picks in a row already claimed: %w", s.name, conflicts, ErrConflict)
		}
		if err := ctx.Err(); err != nil {
			return claimed{}, err
		}
		var a netip.Addr
		if want.IsValid() {
			a = want
			if !ownBit {
				switch err := s.AllocateStatic(one(a)); {
				case err == nil:
					ownBit = true
				case errors.Is(err, ErrAllocated):
					// Held here already: by this owner (a retry, a restart),
					// by another, or only in a stale bitmap. The claim decides.
				default:
					return claimed{}, err
				}
			}
		} else {
			var err error
			if a, err = s.allocateFamily(is4, shard, p); err != nil {
				return claimed{}, err
			}
			ownBit = true
		}
		undo := func() {
			if ownBit {
				s.Release(one(a))
			}
		}
		name := v1alpha1.ClaimName(s.name, a)
		var existing *v1alpha1.AddressClaim
		if want.IsValid() && !ownBit {
			got, err := c.store.Get(ctx, name)
			switch {
			case err == nil:
				existing = got
			case !apierrors.IsNotFound(err):
				return claimed{}, fmt.Errorf("reading claim %s: %w", name, err)
			}
		}
		if existing == nil && want.IsValid() && !ownBit {
			// Held without a claim: in use by a pod, record or port
			// found at adoption. Only its holder may claim it.
			if err := s.holdConflict(a, req.Owner); err != nil {
				return claimed{}, err
			}
		}
		if existing == nil {
			if primary {
				m, err := s.AssignMAC(req.MAC, one(a), key)
				if err != nil {
					undo()
					return claimed{}, err
				}
				*ms = macState{mac: m, set: true}
			}
			out, err := c.store.Create(ctx, c.newClaim(s, a, req, ms.mac))
			if err == nil {
				return claimed{addr: a, uid: out.UID, created: true}, nil
			}
			if !apierrors.IsAlreadyExists(err) {
				undo()
				if primary {
					s.ReleaseMAC(ms.mac, key)
					*ms = macState{}
				}
				return claimed{}, fmt.Errorf("creating claim %s: %w", name, err)
			}
			if !want.IsValid() {
				// Someone else holds it: the bit stays set, try the next.
				klog.FromContext(ctx).V(4).Info("Address already claimed, picking another", "claim", name)
				continue
			}
			got, err := c.store.Get(ctx, name)
			switch {
			case apierrors.IsNotFound(err):
				// Released between the create and the read: try again.
				continue
			case err != nil:
				undo()
				return claimed{}, fmt.Errorf("reading claim %s: %w", name, err)
			}
			existing = got
		}
		// The address is claimed; the bit stays set whoever holds it.
		s.Mark(a)
		if !sameOwner(existing.Spec.Owner, req.Owner) {
			if primary && ms.set {
				s.ReleaseMAC(ms.mac, key)
				*ms = macState{}
			}
			return claimed{}, &AllocatedError{Subnet: s.name, Addr: a, Holder: existing.Spec.Owner}
		}
		if primary {
			// The owner's claims are given back as they are, MAC included.
			m, err := ParseMAC(existing.Spec.MAC)
			if err != nil {
				m = s.DerivedMAC(one(a))
			}
			s.recordMAC(m, key)
			*ms = macState{mac: m, set: true, adopted: true}
		}
		return claimed{addr: a, uid: existing.UID}, nil
	}
}

func sameOwner(a, b v1alpha1.ClaimOwner) bool { return a == b }

// rollback deletes the claims an allocation created before it failed, and
// frees their bits.
func (c *Claims) rollback(ctx context.Context, s *Subnet, created []claimed) {
	// The caller's context may be what ended the allocation; the undo
	// still has to reach the server, but not wait on it forever.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	for _, cl := range created {
		name := v1alpha1.ClaimName(s.name, cl.addr)
		err := c.store.Delete(ctx, name, cl.uid)
		if err == nil || apierrors.IsNotFound(err) {
			s.Release(one(cl.addr))
			continue
		}
		klog.FromContext(ctx).Error(err, "Leaving claim behind after a failed allocation", "claim", name)
	}
}

// Release deletes owner's claims of addrs in s (each with its UID as a
// precondition, so a claim re-created for someone else meanwhile is left
// alone) and frees the addresses. A claim held by another owner is not
// touched; a claim already gone only frees the bit. The first API error
// is returned after every address has been tried.
func (c *Claims) Release(ctx context.Context, s *Subnet, addrs Addresses, owner v1alpha1.ClaimOwner) error {
	var first error
	for _, a := range addrs.List() {
		name := v1alpha1.ClaimName(s.name, a)
		existing, err := c.store.Get(ctx, name)
		if apierrors.IsNotFound(err) {
			s.releaseUnheld(a)
			continue
		}
		if err != nil {
			first = firstErr(first, fmt.Errorf("reading claim %s: %w", name, err))
			continue
		}
		if !sameOwner(existing.Spec.Owner, owner) {
			klog.FromContext(ctx).V(4).Info("Not releasing a claim held by another owner", "claim", name,
				"holder", OwnerKey(existing.Spec.Owner), "owner", OwnerKey(owner))
			continue
		}
		err = c.store.Delete(ctx, name, existing.UID)
		switch {
		case err == nil, apierrors.IsNotFound(err):
			s.releaseUnheld(a)
			if m, perr := ParseMAC(existing.Spec.MAC); perr == nil {
				s.ReleaseMAC(m, OwnerKey(owner))
			}
		case apierrors.IsConflict(err):
			// Replaced since the read: no longer this owner's.
		default:
			first = firstErr(first, fmt.Errorf("deleting claim %s: %w", name, err))
		}
	}
	return first
}

func firstErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
