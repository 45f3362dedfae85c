package ipam

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

// memStore is a ClaimStore in memory with the API server's semantics for
// the three calls: unique names, UIDs, a UID precondition on delete.
type memStore struct {
	mu sync.Mutex
	// claims guarded by mu, by name.
	claims map[string]*v1alpha1.AddressClaim
	next   int
	// Hooks, called without mu held; a non-nil error is returned as is.
	beforeCreate func(name string) error
	beforeDelete func(name string) error
	// afterCreate runs once a create has committed; its error is what
	// the caller sees (a reply lost after the write).
	afterCreate func(c *v1alpha1.AddressClaim) error
	creates     int
}

var _ ClaimStore = (*memStore)(nil)

func newMemStore() *memStore { return &memStore{claims: map[string]*v1alpha1.AddressClaim{}} }

func (m *memStore) Create(_ context.Context, c *v1alpha1.AddressClaim) (*v1alpha1.AddressClaim, error) {
	if m.beforeCreate != nil {
		if err := m.beforeCreate(c.Name); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.creates++
	if _, ok := m.claims[c.Name]; ok {
		return nil, apierrors.NewAlreadyExists(v1alpha1.Resource("addressclaims"), c.Name)
	}
	m.next++
	out := c.DeepCopy()
	out.UID = types.UID(fmt.Sprintf("uid-%d", m.next))
	m.claims[c.Name] = out
	if m.afterCreate != nil {
		m.mu.Unlock()
		err := m.afterCreate(out.DeepCopy())
		m.mu.Lock()
		if err != nil {
			return nil, err
		}
	}
	return out.DeepCopy(), nil
}

func (m *memStore) Get(_ context.Context, name string) (*v1alpha1.AddressClaim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.claims[name]
	if !ok {
		return nil, apierrors.NewNotFound(v1alpha1.Resource("addressclaims"), name)
	}
	return c.DeepCopy(), nil
}

func (m *memStore) Delete(_ context.Context, name string, uid types.UID) error {
	if m.beforeDelete != nil {
		if err := m.beforeDelete(name); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.claims[name]
	if !ok {
		return apierrors.NewNotFound(v1alpha1.Resource("addressclaims"), name)
	}
	if c.UID != uid {
		return apierrors.NewConflict(v1alpha1.Resource("addressclaims"), name,
			fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", uid, c.UID))
	}
	delete(m.claims, name)
	return nil
}

// put stores a claim as if someone else had created it.
func (m *memStore) put(subnet, addr string, owner v1alpha1.ClaimOwner, mac string) *v1alpha1.AddressClaim {
	a := mustAddrNoT(addr)
	c := &v1alpha1.AddressClaim{}
	c.Name = v1alpha1.ClaimName(subnet, a)
	c.Labels = map[string]string{v1alpha1.LabelSubnet: SubnetLabelValue(subnet), v1alpha1.LabelFamily: familyLabel(a)}
	c.Spec = v1alpha1.AddressClaimSpec{Subnet: subnet, Address: a.String(), Owner: owner, MAC: mac}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	c.UID = types.UID(fmt.Sprintf("uid-%d", m.next))
	m.claims[c.Name] = c
	return c.DeepCopy()
}

func (m *memStore) list() []*v1alpha1.AddressClaim {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*v1alpha1.AddressClaim, 0, len(m.claims))
	for _, c := range m.claims {
		out = append(out, c.DeepCopy())
	}
	return out
}

func (m *memStore) has(subnet, addr string) (*v1alpha1.AddressClaim, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.claims[v1alpha1.ClaimName(subnet, mustAddrNoT(addr))]
	return c, ok
}
