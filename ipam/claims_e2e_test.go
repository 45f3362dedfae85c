package ipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	"github.com/shardnet/shardnet/api/client/informers/externalversions"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/test/harness"
)

// countingStore counts the creates that found the name taken, to show
// that the overlapping shards did collide and the server arbitrated.
type countingStore struct {
	ClaimStore
	taken *atomic.Int64
}

func (s countingStore) Create(ctx context.Context, c *v1alpha1.AddressClaim) (*v1alpha1.AddressClaim, error) {
	out, err := s.ClaimStore.Create(ctx, c)
	if apierrors.IsAlreadyExists(err) {
		s.taken.Add(1)
	}
	return out, err
}

// replica is one controller replica's IPAM: its own clients, informer,
// bitmap and claim layer, as after a process start.
type replica struct {
	claims *Claims
	subnet *Subnet
}

func startReplica(ctx context.Context, t *testing.T, cs versioned.Interface, cfg SubnetConfig, taken *atomic.Int64) *replica {
	t.Helper()
	claims, err := NewClaims(countingStore{ClaimStore: NewClientStore(cs), taken: taken})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSubnet(cfg)
	if err != nil {
		t.Fatal(err)
	}
	factory := externalversions.NewSharedInformerFactory(cs, 0)
	inf := factory.Shardnet().V1alpha1().AddressClaims()
	if _, err := inf.Informer().AddEventHandler(claims.EventHandler()); err != nil {
		t.Fatal(err)
	}
	ictx, cancel := context.WithCancel(ctx)
	factory.Start(ictx.Done())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	if !cache.WaitForCacheSync(ictx.Done(), inf.Informer().HasSynced) {
		t.Fatal("claim informer did not sync")
	}
	if _, err := claims.Track(s, inf.Lister()); err != nil {
		t.Fatal(err)
	}
	return &replica{claims: claims, subnet: s}
}

// TestClaimsAgainstAPIServer runs the claim layer against a real
// kube-apiserver. Two replicas whose shard sets overlap allocate 2,000
// addresses of one /21 at once: no address is granted twice, the claims
// are exactly the grants, and a restarted replica restores exactly the
// claimed set. Dual-stack claims (IPv6 names in hex) round-trip too.
func TestClaimsAgainstAPIServer(t *testing.T) {
	k := harness.StartKube(t)
	t.Run("two replicas", func(t *testing.T) { testTwoReplicas(t, k) })
	t.Run("dual stack", func(t *testing.T) { testDualStackClaims(t, k) })
	t.Run("create answer", func(t *testing.T) { testCreateAnswer(t, k) })
}

// testCreateAnswer: the store's create, which decodes only the UID and
// resource version of the API server's answer, returns the stored
// claim's, and a taken name is AlreadyExists, as the typed client's.
func testCreateAnswer(t *testing.T, k *harness.Kube) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := NewClientStore(k.Shardnet)
	a := netip.MustParseAddr("10.78.0.5")
	claim := &v1alpha1.AddressClaim{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ClaimName("answer-net", a)},
		Spec: v1alpha1.AddressClaimSpec{Subnet: "answer-net", Address: a.String(),
			Owner: v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "e2e", Name: "p", UID: "u1"}}}
	out, err := store.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.Get(ctx, claim.Name)
	if err != nil {
		t.Fatal(err)
	}
	if out.UID == "" || out.UID != got.UID || out.ResourceVersion != got.ResourceVersion || out.Spec != got.Spec {
		t.Fatalf("create returned UID %q version %q spec %+v; stored: %q %q %+v", out.UID, out.ResourceVersion, out.Spec, got.UID, got.ResourceVersion, got.Spec)
	}
	if claim.UID != "" {
		t.Fatalf("the claim given was changed: UID %q", claim.UID)
	}
	if _, err := store.Create(ctx, claim); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
}

func testTwoReplicas(t *testing.T, k *harness.Kube) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := SubnetConfig{Name: "e2e-net", CIDRBlock: "10.77.0.0/21", Shards: 16}
	const total, workers = 2000, 8
	shardSets := [][]int{{0, 1, 2, 3, 4, 5, 6, 7}, {4, 5, 6, 7, 8, 9, 10, 11}}

	var mu sync.Mutex
	granted := make(map[netip.Addr]v1alpha1.ClaimOwner, total)
	var issued, taken atomic.Int64
	var wg sync.WaitGroup
	for r, shards := range shardSets {
		rep := startReplica(ctx, t, k.Shardnet, cfg, &taken)
		for w := range workers {
			wg.Go(func() {
				for {
					n := issued.Add(1)
					if n > total {
						return
					}
					owner := v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "e2e",
						Name: fmt.Sprintf("pod-%d", n), UID: fmt.Sprintf("uid-%d", n)}
					al, err := rep.claims.Allocate(ctx, rep.subnet, shards[w%len(shards)], Request{Owner: owner, Provider: "ovn"})
					if err != nil {
						t.Errorf("replica %d: %v", r, err)
						return
					}
					mu.Lock()
					if prev, dup := granted[al.Addresses.V4]; dup {
						t.Errorf("%s granted to %s and %s", al.Addresses.V4, prev.Name, owner.Name)
					}
					granted[al.Addresses.V4] = owner
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if len(granted) != total {
		t.Fatalf("granted %d distinct addresses, want %d", len(granted), total)
	}
	t.Logf("%d creates found their address already claimed by the other replica", taken.Load())

	list, err := k.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{
		LabelSelector: v1alpha1.LabelSubnet + "=" + cfg.Name,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != total {
		t.Fatalf("%d claims in the API server, want %d", len(list.Items), total)
	}
	for _, c := range list.Items {
		a, err := netip.ParseAddr(c.Spec.Address)
		if err != nil {
			t.Fatal(err)
		}
		if owner, ok := granted[a]; !ok || owner != c.Spec.Owner || c.Name != v1alpha1.ClaimName(cfg.Name, a) {
			t.Fatalf("claim %s (%s, %+v) does not match the grant %+v", c.Name, a, c.Spec.Owner, owner)
		}
	}

	// A restart (or another replica taking the shards over) is warm: the
	// fresh bitmap holds exactly the claimed addresses.
	restarted := startReplica(ctx, t, k.Shardnet, cfg, &taken)
	pre := netip.MustParsePrefix(cfg.CIDRBlock)
	gw := restarted.subnet.Gateways().V4
	for a := pre.Addr(); pre.Contains(a); a = a.Next() {
		fixed := a == pre.Addr() || a == gw || a == netip.MustParseAddr("10.77.7.255")
		_, claimed := granted[a]
		if free := restarted.subnet.IsFree(a); free == (claimed || fixed) {
			t.Fatalf("after restart IsFree(%s) = %v, claimed %v", a, free, claimed)
		}
	}
	if u := restarted.subnet.Usage()[0]; u.Used != total || u.Available != 2045-total {
		t.Fatalf("after restart Usage() = %+v", u)
	}

	// Release goes through the UID precondition on the real server.
	var some []netip.Addr
	for a := range granted {
		if len(some) == 20 {
			break
		}
		some = append(some, a)
	}
	for _, a := range some {
		if err := restarted.claims.Release(ctx, restarted.subnet, Addresses{V4: a}, granted[a]); err != nil {
			t.Fatal(err)
		}
		if !restarted.subnet.IsFree(a) {
			t.Fatalf("%s not free after release", a)
		}
		if _, err := k.Shardnet.ShardnetV1alpha1().AddressClaims().Get(ctx, v1alpha1.ClaimName(cfg.Name, a), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("claim of %s after release: %v", a, err)
		}
	}
	// A delete whose UID precondition does not match is refused as a
	// Conflict, which Release relies on to leave a re-created claim alone.
	var victim netip.Addr
	for a := range granted {
		if restarted.subnet.IsFree(a) {
			continue
		}
		victim = a
		break
	}
	err = NewClientStore(k.Shardnet).Delete(ctx, v1alpha1.ClaimName(cfg.Name, victim), types.UID("not-the-uid"))
	if !apierrors.IsConflict(err) {
		t.Fatalf("delete with a stale UID: %v, want Conflict", err)
	}

	// The subnet is nearly full: the remaining 25 addresses go, then ErrFull.
	for i := range 2045 - total + 20 {
		owner := v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "e2e", Name: fmt.Sprintf("late-%d", i), UID: fmt.Sprintf("late-%d", i)}
		if _, err := restarted.claims.Allocate(ctx, restarted.subnet, i, Request{Owner: owner}); err != nil {
			t.Fatalf("allocation %d of the remainder: %v", i, err)
		}
	}
	if _, err := restarted.claims.Allocate(ctx, restarted.subnet, 0, Request{Owner: v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Name: "one-too-many"}}); !errors.Is(err, ErrFull) {
		t.Fatalf("allocation on a full subnet: %v, want ErrFull", err)
	}
}

func testDualStackClaims(t *testing.T, k *harness.Kube) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var taken atomic.Int64
	cfg := SubnetConfig{Name: "e2e-dual", CIDRBlock: "10.78.0.0/24,fd78::/64", Shards: 4}
	rep := startReplica(ctx, t, k.Shardnet, cfg, &taken)
	held := map[netip.Addr]bool{}
	for i := range 50 {
		owner := v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "e2e", Name: fmt.Sprintf("dual-%d", i), UID: fmt.Sprintf("dual-%d", i)}
		al, err := rep.claims.Allocate(ctx, rep.subnet, i, Request{Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		if !al.Addresses.V4.IsValid() || !al.Addresses.V6.IsValid() || al.MAC != rep.subnet.DerivedMAC(al.Addresses) {
			t.Fatalf("dual-stack allocation %+v", al)
		}
		held[al.Addresses.V4], held[al.Addresses.V6] = true, true
	}
	// A static IPv6 address beyond the window is claimed like any other;
	// the IPv4 family it leaves out comes dynamically.
	far := netip.MustParseAddr("fd78::ffff:0:1")
	farOwner := v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "e2e", Name: "far", UID: "far"}
	al, err := rep.claims.AllocateStatic(ctx, rep.subnet, Addresses{V6: far}, 0, Request{Owner: farOwner})
	if err != nil || al.Addresses.V6 != far || !al.Addresses.V4.IsValid() {
		t.Fatalf("AllocateStatic beyond the window = %+v, %v", al, err)
	}
	held[far], held[al.Addresses.V4] = true, true
	list, err := k.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{
		LabelSelector: v1alpha1.LabelSubnet + "=" + cfg.Name + "," + v1alpha1.LabelFamily + "=IPv6",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 51 {
		t.Fatalf("%d IPv6 claims, want 51", len(list.Items))
	}
	restarted := startReplica(ctx, t, k.Shardnet, cfg, &taken)
	for a := range held {
		if restarted.subnet.IsFree(a) {
			t.Fatalf("%s claimed but free after restart", a)
		}
	}
	if u := restarted.subnet.Usage(); u[0].Used != 51 || u[1].Used != 51 {
		t.Fatalf("after restart Usage() = %+v", u)
	}
}
