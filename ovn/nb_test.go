package ovn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/test/harness"
)

// The tests in this file run against Debian's ovsdb-server, standalone and
// as a 3-member RAFT cluster, started by the harness.

type nbServer struct {
	name       string
	endpoints  []string
	leaderOnly bool
}

func standalone(t *testing.T) nbServer {
	nb := harness.StartNB(t)
	return nbServer{name: "standalone", endpoints: []string{nb.Endpoint}}
}

func raft(t *testing.T) nbServer {
	c := harness.StartNBCluster(t, 3)
	return nbServer{name: "raft", endpoints: c.Endpoints, leaderOnly: true}
}

// bothServers runs f against a standalone server and a RAFT cluster.
func bothServers(t *testing.T, f func(t *testing.T, s nbServer)) {
	for _, start := range []func(*testing.T) nbServer{standalone, raft} {
		s := start(t)
		t.Run(s.name, func(t *testing.T) { f(t, s) })
	}
}

func connect(t testing.TB, endpoints []string, leaderOnly bool) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := NewClient(ctx, Config{Endpoints: endpoints, LeaderOnly: leaderOnly})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// eventually polls cond (which reads the cache, updated asynchronously)
// for up to 10 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// selectRows reads the server, not the cache.
func selectRows(t testing.TB, c *Client, table string, columns ...string) []ovsdb.Row {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	op := ovsdb.Operation{Op: ovsdb.OperationSelect, Table: table, Columns: columns}
	res, err := c.Transact(ctx, op)
	if err != nil {
		t.Fatalf("select %s: %v", table, err)
	}
	return res[0].Rows
}

func setLen(v any) int {
	switch s := v.(type) {
	case ovsdb.OvsSet:
		return len(s.GoSet)
	case ovsdb.UUID:
		return 1
	}
	return 0
}

func mustTransact(t testing.TB, c *Client, ops []ovsdb.Operation) []ovsdb.OperationResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Transact(ctx, ops...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func makeSwitch(t testing.TB, c *Client, name string) *nbdb.LogicalSwitch {
	t.Helper()
	ops, _, _, err := c.EnsureSwitch(SwitchSpec{Name: name, CIDRs: []string{"10.16.0.0/16", "fd00:10:16::/64"}, ExcludeIPs: []string{"10.16.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	mustTransact(t, c, ops)
	var ls *nbdb.LogicalSwitch
	eventually(t, "switch in cache", func() bool { var ok bool; ls, ok = c.Switch(name); return ok })
	return ls
}

func newShardBatcher(t testing.TB, c *Client, shard int, epoch uint64, cfg BatcherConfig) *Batcher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.TakeOver(ctx, shard, epoch); err != nil {
		t.Fatal(err)
	}
	cfg.Fence = &Fence{Shard: shard, Epoch: epoch}
	b, err := c.NewBatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return b
}

func TestPortLifecycleIsIdempotent(t *testing.T) {
	bothServers(t, func(t *testing.T, s nbServer) {
		c := connect(t, s.endpoints, s.leaderOnly)
		ls := makeSwitch(t, c, "subnet-a")
		other := makeSwitch(t, c, "subnet-b")
		b := newShardBatcher(t, c, 1, 1, BatcherConfig{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()

		spec := PortSpec{Name: "web-0.default", Switch: "subnet-a", Pod: "default/web-0", MAC: "00:00:00:0a:0b:0c", IPs: []string{"10.16.0.5", "fd00:10:16::5"}, PortSecurity: true, VIPs: []string{"10.16.0.100"}}
		ops, ref, err := c.EnsurePort(spec)
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.Submit(ctx, ops...)
		if err != nil {
			t.Fatal(err)
		}
		uuid := res.UUIDs[string(ref)]
		if !ovsdb.IsValidUUID(uuid) {
			t.Fatalf("no UUID for the inserted port: %+v", res.UUIDs)
		}
		eventually(t, "port in cache", func() bool { _, ok := c.Port(spec.Name); return ok })
		p, _ := c.Port(spec.Name)
		if p.UUID != uuid {
			t.Errorf("cached port UUID %s, insert said %s", p.UUID, uuid)
		}
		if want := []string{"00:00:00:0a:0b:0c 10.16.0.5 fd00:10:16::5"}; !slices.Equal(p.Addresses, want) {
			t.Errorf("addresses %q, want %q", p.Addresses, want)
		}
		if want := []string{"00:00:00:0a:0b:0c 10.16.0.5 fd00:10:16::5 10.16.0.100"}; !slices.Equal(p.PortSecurity, want) {
			t.Errorf("port_security %q, want %q", p.PortSecurity, want)
		}
		if p.ExternalIDs["pod"] != "default/web-0" || p.ExternalIDs["ls"] != "subnet-a" || p.ExternalIDs["vendor"] != DefaultVendor {
			t.Errorf("external_ids %v", p.ExternalIDs)
		}
		if got := c.PortsByPod("default/web-0"); len(got) != 1 || got[0].UUID != uuid {
			t.Errorf("PortsByPod = %v", got)
		}

		// A rerun with the same spec has nothing to do.
		if ops, _, err := c.EnsurePort(spec); err != nil || len(ops) != 0 {
			t.Fatalf("rerun: %d ops, %v; want none", len(ops), err)
		}

		// An update changes the row in place and keeps foreign keys.
		mustTransact(t, c, []ovsdb.Operation{{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchPortTable, Where: uuidWhere(uuid),
			Mutations: []ovsdb.Mutation{{Column: "external_ids", Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsMap{GoMap: map[any]any{"owner": "someone-else"}}}}}})
		eventually(t, "foreign key in cache", func() bool { p, _ := c.Port(spec.Name); return p.ExternalIDs["owner"] != "" })
		spec.IPs = []string{"10.16.0.6"}
		spec.Layer2Forward = true
		spec.Switch = "subnet-b"
		ops, ref, err = c.EnsurePort(spec)
		if err != nil || len(ops) == 0 {
			t.Fatalf("update: %d ops, %v", len(ops), err)
		}
		if Ref(uuid) != ref {
			t.Errorf("update ref %s, want the existing UUID %s", ref, uuid)
		}
		if _, err := b.Submit(ctx, ops...); err != nil {
			t.Fatal(err)
		}
		eventually(t, "update in cache", func() bool { p, _ := c.Port(spec.Name); return p.ExternalIDs["ls"] == "subnet-b" })
		p, _ = c.Port(spec.Name)
		if want := []string{"00:00:00:0a:0b:0c 10.16.0.6", "unknown"}; !sameSet(p.Addresses, want) {
			t.Errorf("addresses after update %q, want %q", p.Addresses, want)
		}
		if p.ExternalIDs["owner"] != "someone-else" {
			t.Errorf("update rewrote a foreign external id: %v", p.ExternalIDs)
		}
		if ops, _, _ := c.EnsurePort(spec); len(ops) != 0 {
			t.Errorf("rerun after update: %d ops, want none", len(ops))
		}
		switchPorts := func() map[string]int {
			out := map[string]int{}
			for _, r := range selectRows(t, c, nbdb.LogicalSwitchTable, "name", "ports") {
				out[r["name"].(string)] = setLen(r["ports"])
			}
			return out
		}
		if got := switchPorts(); got[ls.Name] != 0 || got[other.Name] != 1 {
			t.Errorf("switch ports after the move: %v", got)
		}

		// Delete, then delete again.
		ops, err = c.DeletePodPorts("default/web-0")
		if err != nil || len(ops) == 0 {
			t.Fatalf("delete: %d ops, %v", len(ops), err)
		}
		if _, err := b.Submit(ctx, ops...); err != nil {
			t.Fatal(err)
		}
		eventually(t, "port gone from cache", func() bool { _, ok := c.Port(spec.Name); return !ok })
		if n := len(selectRows(t, c, nbdb.LogicalSwitchPortTable, "name")); n != 0 {
			t.Errorf("%d ports left after delete", n)
		}
		if got := switchPorts(); got[other.Name] != 0 {
			t.Errorf("switch still references the deleted port: %v", got)
		}
		if ops, err := c.DeletePort(spec.Name); err != nil || len(ops) != 0 {
			t.Errorf("second delete: %d ops, %v; want none", len(ops), err)
		}
	})
}

func TestTenThousandPortsFrom64GoroutinesLandOnce(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	makeSwitch(t, c, "bulk")
	m := &countingMetrics{}
	b := newShardBatcher(t, c, 2, 1, BatcherConfig{Metrics: m})
	const total, workers = 10000, 64
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var next atomic.Int64
	var failures atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total || ctx.Err() != nil {
					return
				}
				ops, _, err := c.EnsurePort(bulkPort(i))
				if err == nil {
					_, err = b.Submit(ctx, ops...)
				}
				if err != nil {
					failures.Add(1)
					t.Errorf("port %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	if failures.Load() > 0 {
		t.Fatalf("%d submits failed", failures.Load())
	}
	rows := selectRows(t, c, nbdb.LogicalSwitchPortTable, "name")
	seen := map[string]int{}
	for _, r := range rows {
		seen[r["name"].(string)]++
	}
	if len(rows) != total || len(seen) != total {
		t.Fatalf("%d rows with %d names, want %d of each", len(rows), len(seen), total)
	}
	for i := range total {
		if seen[bulkPort(i).Name] != 1 {
			t.Fatalf("port %d present %d times", i, seen[bulkPort(i).Name])
		}
	}
	for _, r := range selectRows(t, c, nbdb.LogicalSwitchTable, "name", "ports") {
		if r["name"] == "bulk" && setLen(r["ports"]) != total {
			t.Fatalf("switch holds %d ports, want %d", setLen(r["ports"]), total)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.outcomes[OutcomeCommitted] >= total {
		t.Errorf("%d transactions for %d ports: nothing was batched", m.outcomes[OutcomeCommitted], total)
	}
	t.Logf("%d ports in %d transactions", total, m.outcomes[OutcomeCommitted])
}

func bulkPort(i int) PortSpec {
	return PortSpec{
		Name: fmt.Sprintf("pod-%05d.bulk", i), Switch: "bulk", Pod: fmt.Sprintf("bulk/pod-%05d", i),
		MAC: fmt.Sprintf("00:00:0a:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff),
		IPs: []string{fmt.Sprintf("10.16.%d.%d", i>>8&0xff, i&0xff)},
	}
}

func TestBatchWithBadRequestsCommitsTheOthers(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	makeSwitch(t, c, "bulk")
	m := &countingMetrics{}
	// Nine requests of three ops fill the cap exactly; the hour-long linger
	// makes sure they travel in one transaction.
	b := newShardBatcher(t, c, 3, 1, BatcherConfig{Metrics: m, MaxOps: 27, Linger: time.Hour})
	existing := PortSpec{Name: "existing", Switch: "bulk"}
	ops, _, err := c.EnsurePort(existing)
	if err != nil {
		t.Fatal(err)
	}
	mustTransact(t, c, ops)
	reqs := make([][]ovsdb.Operation, 9)
	for i := range reqs {
		spec := bulkPort(i)
		switch i {
		case 6:
			// The same name as port 5: a unique index violation at commit.
			spec.Name = bulkPort(5).Name
		}
		ops, _, err := c.EnsurePort(spec)
		if err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			// An insert under a name that is taken (a cache that lags
			// would build it): the server refuses the commit (unique
			// index), naming no op.
			ops[0].Row["name"] = existing.Name
		}
		if i == 7 {
			// An out-of-range tag: an op error the server pins to the op.
			ops[0].Row["tag_request"] = 5000
		}
		reqs[i] = ops
	}
	_, errs := submitAll(t, b, reqs)
	var bad []int
	for i, err := range errs {
		var re *RequestError
		if err != nil {
			if !errors.As(err, &re) {
				t.Errorf("request %d: %v is not a RequestError", i, err)
			}
			bad = append(bad, i)
		}
	}
	// Of 5 and 6 (same name) exactly one wins; which depends on arrival.
	if !(slices.Equal(bad, []int{2, 5, 7}) || slices.Equal(bad, []int{2, 6, 7})) {
		t.Fatalf("failed requests %v (errors %v), want 2, 7 and one of 5/6", bad, errs)
	}
	names := map[string]bool{}
	for _, r := range selectRows(t, c, nbdb.LogicalSwitchPortTable, "name", "addresses") {
		names[r["name"].(string)] = true
		if r["name"] == existing.Name && setLen(r["addresses"]) != 0 {
			t.Errorf("the failed request changed the existing port: %v", r)
		}
	}
	for i := range 9 {
		want := i != 2 && i != 6 && i != 7
		if names[bulkPort(i).Name] != want {
			t.Errorf("port %d present=%v, want %v", i, !want, want)
		}
	}
	if m.splits == 0 {
		t.Error("commit errors were isolated without splitting the batch")
	}
	if m.outcomes[OutcomeRequestError] == 0 {
		t.Error("the op error was not reported as a request error")
	}
}

// Take-overs of different shards at once (a replica's shards after a
// restart) all land with their own epochs, whether the shard's key is new
// or recorded; two owners racing for one shard leave the higher epoch.
func TestTakeOversAtOnce(t *testing.T) {
	bothServers(t, func(t *testing.T, s nbServer) {
		c := connect(t, s.endpoints, s.leaderOnly)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.TakeOver(ctx, 0, 1); err != nil {
			t.Fatal(err)
		}
		eventually(t, "NB_Global in cache", func() bool { e, _ := c.Epoch(0); return e == 1 })
		const shards = 64
		all := func(epoch uint64) {
			t.Helper()
			errs := make(chan error, shards)
			for s := 1; s <= shards; s++ {
				go func() { errs <- c.TakeOver(ctx, s, epoch) }()
			}
			for range shards {
				if err := <-errs; err != nil {
					t.Fatalf("take-over at epoch %d: %v", epoch, err)
				}
			}
			eventually(t, fmt.Sprintf("every shard at epoch %d", epoch), func() bool {
				for s := 1; s <= shards; s++ {
					if e, _ := c.Epoch(s); e != epoch {
						return false
					}
				}
				return true
			})
		}
		all(2) // keys not recorded yet
		all(3) // keys recorded
		if e, _ := c.Epoch(0); e != 1 {
			t.Fatalf("shard 0 at epoch %d, want 1: lost to the others' take-overs", e)
		}

		errs := make(chan error, 2)
		for _, epoch := range []uint64{4, 9} {
			go func() { errs <- c.TakeOver(ctx, 100, epoch) }()
		}
		for range 2 {
			var se *StaleEpochError
			if err := <-errs; err != nil && !(errors.As(err, &se) && se.Epoch == 4 && se.Recorded == 9) {
				t.Fatalf("racing take-overs of one shard: %v", err)
			}
		}
		eventually(t, "shard 100 at epoch 9", func() bool { e, _ := c.Epoch(100); return e == 9 })
	})
}

func TestStaleEpochBatchIsRejectedAfterTakeOver(t *testing.T) {
	bothServers(t, func(t *testing.T, s nbServer) {
		c := connect(t, s.endpoints, s.leaderOnly)
		makeSwitch(t, c, "bulk")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		old := newShardBatcher(t, c, 5, 1, BatcherConfig{})
		// Another shard's owner moves on concurrently; shard 5 must not
		// notice.
		neighbour := newShardBatcher(t, c, 6, 3, BatcherConfig{})
		submitPort := func(b *Batcher, i int) error {
			ops, _, err := c.EnsurePort(bulkPort(i))
			if err != nil {
				return err
			}
			_, err = b.Submit(ctx, ops...)
			return err
		}
		if err := submitPort(old, 0); err != nil {
			t.Fatalf("current epoch: %v", err)
		}
		if err := submitPort(neighbour, 1); err != nil {
			t.Fatalf("neighbour shard: %v", err)
		}

		if err := c.TakeOver(ctx, 5, 2); err != nil {
			t.Fatal(err)
		}
		err := submitPort(old, 2)
		var se *StaleEpochError
		if !errors.As(err, &se) || !errors.Is(err, ErrStaleEpoch) || se.Shard != 5 || se.Epoch != 1 {
			t.Fatalf("stale batch: %v, want StaleEpochError for shard 5 epoch 1", err)
		}
		for _, r := range selectRows(t, c, nbdb.LogicalSwitchPortTable, "name") {
			if r["name"] == bulkPort(2).Name {
				t.Fatal("the stale batch changed the database")
			}
		}
		eventually(t, "epoch 2 in cache", func() bool { e, _ := c.Epoch(5); return e == 2 })
		if e, _ := c.Epoch(6); e != 3 {
			t.Errorf("shard 6 epoch %d, want 3 (lost by a concurrent take-over?)", e)
		}

		current, err := c.NewBatcher(BatcherConfig{Fence: &Fence{Shard: 5, Epoch: 2}})
		if err != nil {
			t.Fatal(err)
		}
		defer current.Close(ctx)
		if err := submitPort(current, 2); err != nil {
			t.Fatalf("new epoch: %v", err)
		}
		// Epochs only grow; retaking the current one is a no-op.
		if err := c.TakeOver(ctx, 5, 1); !errors.Is(err, ErrStaleEpoch) {
			t.Errorf("take-over with an older epoch: %v, want ErrStaleEpoch", err)
		}
		if err := c.TakeOver(ctx, 5, 2); err != nil {
			t.Errorf("retaking the current epoch: %v", err)
		}
	})
}

func TestRoutingOpsAreIdempotent(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	makeSwitch(t, c, "ovn-default")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newShardBatcher(t, c, 1, 1, BatcherConfig{})

	// apply runs build, submits its ops and then checks that a rerun
	// builds none.
	apply := func(what string, build func() ([]ovsdb.Operation, error)) {
		t.Helper()
		ops, err := build()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(ops) == 0 {
			t.Fatalf("%s: no ops on first run", what)
		}
		if _, err := b.Submit(ctx, ops...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var last []ovsdb.Operation
		deadline := time.Now().Add(10 * time.Second)
		for {
			ops, err := build()
			if err == nil && len(ops) == 0 {
				break
			}
			last = ops
			if time.Now().After(deadline) {
				t.Fatalf("%s: a rerun still builds %+v (%v)", what, last, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	apply("router", func() ([]ovsdb.Operation, error) {
		ops, _, err := c.EnsureRouter(RouterSpec{Name: "ovn-cluster"})
		return ops, err
	})
	apply("router port", func() ([]ovsdb.Operation, error) {
		ops, diffs, err := c.EnsureRouterPort(RouterPortSpec{Router: "ovn-cluster", Switch: "ovn-default", RouterPort: "ovn-cluster-ovn-default",
			SwitchPort: "ovn-default-ovn-cluster", MAC: "00:00:00:aa:bb:cc", Networks: []string{"10.16.0.1/16"}})
		if len(diffs) > 0 {
			t.Errorf("router port: differences %v", diffs)
		}
		return ops, err
	})
	apply("port group", func() ([]ovsdb.Operation, error) {
		ops, _, _, err := c.EnsurePortGroup("node1", map[string]string{"node": "node1"})
		return ops, err
	})
	apply("pod port", func() ([]ovsdb.Operation, error) {
		ops, _, err := c.EnsurePort(PortSpec{Name: "p.ns", Switch: "ovn-default", Pod: "ns/p", MAC: "00:00:00:00:00:01", IPs: []string{"10.16.0.9"}})
		return ops, err
	})
	apply("static route", func() ([]ovsdb.Operation, error) {
		return c.EnsureStaticRoute(RouteSpec{Router: "ovn-cluster", Prefix: "10.16.0.9", Nexthop: "100.64.0.2", Policy: "src-ip", Pod: "ns/p"})
	})
	apply("reroute policy", func() ([]ovsdb.Operation, error) {
		return c.EnsureReroutePolicy(PolicySpec{Router: "ovn-cluster", Priority: 31000, Match: "ip4.src == 10.16.0.9", Nexthops: []string{"10.16.0.254"}, Pod: "ns/p"})
	})
	apply("eip", func() ([]ovsdb.Operation, error) {
		return c.EnsureNAT(NATSpec{Router: "ovn-cluster", Type: "dnat_and_snat", ExternalIP: "172.18.0.10", LogicalIP: "10.16.0.9", Pod: "ns/p"})
	})
	apply("snat", func() ([]ovsdb.Operation, error) {
		return c.EnsureNAT(NATSpec{Router: "ovn-cluster", Type: "snat", ExternalIP: "172.18.0.11", LogicalIP: "10.16.0.9", Pod: "ns/p"})
	})
	// Membership is a set mutation: adding twice leaves one member.
	p, _ := c.Port("p.ns")
	for range 2 {
		ops, err := c.AddToPortGroup("node1", Ref(p.UUID))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Submit(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range selectRows(t, c, nbdb.PortGroupTable, "name", "ports") {
		if r["name"] == "node1" && setLen(r["ports"]) != 1 {
			t.Errorf("port group has %d members, want 1", setLen(r["ports"]))
		}
	}
	// A changed next hop updates the route in place.
	ops, err := c.EnsureStaticRoute(RouteSpec{Router: "ovn-cluster", Prefix: "10.16.0.9", Nexthop: "100.64.0.3", Policy: "src-ip", Pod: "ns/p"})
	if err != nil || len(ops) != 1 || ops[0].Op != ovsdb.OperationUpdate {
		t.Fatalf("next hop change: %v, %v; want one update", ops, err)
	}
	if _, err := b.Submit(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	routes := selectRows(t, c, nbdb.LogicalRouterStaticRouteTable, "nexthop")
	if len(routes) != 1 || routes[0]["nexthop"] != "100.64.0.3" {
		t.Errorf("routes %v, want one with next hop 100.64.0.3", routes)
	}

	counts := func() map[string]int {
		out := map[string]int{}
		for _, table := range []string{nbdb.LogicalRouterStaticRouteTable, nbdb.LogicalRouterPolicyTable, nbdb.NATTable, nbdb.LogicalRouterPortTable} {
			out[table] = len(selectRows(t, c, table, "_uuid"))
		}
		for _, r := range selectRows(t, c, nbdb.LogicalRouterTable, "static_routes", "policies", "nat", "ports") {
			out["lr.static_routes"] += setLen(r["static_routes"])
			out["lr.policies"] += setLen(r["policies"])
			out["lr.nat"] += setLen(r["nat"])
			out["lr.ports"] += setLen(r["ports"])
		}
		return out
	}
	want := map[string]int{nbdb.LogicalRouterStaticRouteTable: 1, nbdb.LogicalRouterPolicyTable: 1, nbdb.NATTable: 2, nbdb.LogicalRouterPortTable: 1,
		"lr.static_routes": 1, "lr.policies": 1, "lr.nat": 2, "lr.ports": 1}
	if got := counts(); !mapsEqual(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}

	// The pod goes: its routing and port go by the pod index.
	ops, err = c.DeletePodRouting("ns/p")
	if err != nil {
		t.Fatal(err)
	}
	portOps, err := c.DeletePodPorts("ns/p")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Submit(ctx, append(ops, portOps...)...); err != nil {
		t.Fatal(err)
	}
	want = map[string]int{nbdb.LogicalRouterStaticRouteTable: 0, nbdb.LogicalRouterPolicyTable: 0, nbdb.NATTable: 0, nbdb.LogicalRouterPortTable: 1,
		"lr.static_routes": 0, "lr.policies": 0, "lr.nat": 0, "lr.ports": 1}
	if got := counts(); !mapsEqual(got, want) {
		t.Errorf("rows after the pod's delete %v, want %v", got, want)
	}
	for _, r := range selectRows(t, c, nbdb.PortGroupTable, "name", "ports") {
		if r["name"] == "node1" && setLen(r["ports"]) != 0 {
			t.Errorf("port group still holds %d members", setLen(r["ports"]))
		}
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestReadinessFollowsTheConnection(t *testing.T) {
	nb := harness.StartNB(t)
	c := connect(t, []string{nb.Endpoint}, false)
	if err := c.Ready(); err != nil {
		t.Fatalf("connected client not ready: %v", err)
	}
	nb.Stop()
	eventually(t, "unready after the server stopped", func() bool { return errors.Is(c.Ready(), ErrNotReady) })
	if _, _, err := c.EnsurePort(bulkPort(0)); !errors.Is(err, ErrNotReady) {
		t.Errorf("builder on a disconnected client: %v, want ErrNotReady", err)
	}
}

func TestUnixEndpoint(t *testing.T) {
	nb := harness.StartNB(t)
	c := connect(t, []string{nb.Unix}, false)
	makeSwitch(t, c, "via-unix")
	if got := c.Endpoint(); got != nb.Unix {
		t.Errorf("endpoint %q, want %q", got, nb.Unix)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Endpoints: []string{"http://x"}},
		{Endpoints: []string{"ssl:127.0.0.1:6641"}},
		{Endpoints: []string{"tcp:"}},
		{Endpoints: []string{"tcp:127.0.0.1:1"}, MinBackoff: time.Second, MaxBackoff: time.Millisecond},
		{Endpoints: []string{"tcp:127.0.0.1:1"}, ConnectTimeout: time.Minute, InactivityProbe: time.Second},
		{Endpoints: []string{"tcp:127.0.0.1:1"}, ConnectTimeout: time.Minute, ReconnectTimeout: time.Second},
	} {
		if _, err := NewClient(context.Background(), cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

func TestPodKeysListsEveryPodHoldingAPort(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	makeSwitch(t, c, "bulk")
	var ops []ovsdb.Operation
	for i := range 3 {
		o, _, err := c.EnsurePort(bulkPort(i))
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, o...)
	}
	// A second port of pod 0 (an attachment) and a port with no pod.
	extra := bulkPort(0)
	extra.Name = "pod-00000.bulk.net1"
	o, _, err := c.EnsurePort(extra)
	if err != nil {
		t.Fatal(err)
	}
	ops = append(ops, o...)
	o, _, err = c.EnsurePort(PortSpec{Name: "node-port", Switch: "bulk"})
	if err != nil {
		t.Fatal(err)
	}
	mustTransact(t, c, append(ops, o...))
	eventually(t, "ports in cache", func() bool { _, ok := c.Port("node-port"); return ok })
	got := c.PodKeys()
	slices.Sort(got)
	if want := []string{"bulk/pod-00000", "bulk/pod-00001", "bulk/pod-00002"}; !slices.Equal(got, want) {
		t.Errorf("PodKeys = %v, want %v", got, want)
	}
	if n := len(c.PortsByPod("bulk/pod-00000")); n != 2 {
		t.Errorf("PortsByPod found %d ports of pod 0, want 2", n)
	}
}

func TestTransactReturnsTypedErrors(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	ls := makeSwitch(t, c, "bulk")
	ops, _, err := c.EnsurePort(PortSpec{Name: "dup", Switch: "bulk"})
	if err != nil {
		t.Fatal(err)
	}
	mustTransact(t, c, ops)
	// The same insert again violates the unique name index at commit.
	ops[0].UUIDName = "again"
	ops[2] = insertRefs(nbdb.LogicalSwitchTable, ls.UUID, "ports", ovsdb.UUID{GoUUID: "again"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.Transact(ctx, ops...)
	var cv *ovsdb.ConstraintViolation
	if !errors.As(err, &cv) {
		t.Fatalf("duplicate insert: %v, want an ovsdb.ConstraintViolation", err)
	}
}

// TestLeaveNodePortGroups moves an existing port from one node's group to
// another's in one transaction, and leaves groups of other subnets and
// kinds alone. kube-ovn's node groups count as the subnet's: since v1.14
// they carry external_ids:subnet, before it only np=<subnet>/<node>; its
// network policy and node groups, which also carry np, are left alone.
func TestLeaveNodePortGroups(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	makeSwitch(t, c, "ovn-default")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newShardBatcher(t, c, 1, 1, BatcherConfig{})
	submit := func(ops []ovsdb.Operation, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Submit(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	groups := []struct {
		name string
		ids  map[string]string
	}{
		{"ovn.default.node1", map[string]string{ExternalIDSubnet: "ovn-default"}},
		{"ovn.default.node2", map[string]string{ExternalIDSubnet: "ovn-default"}},
		{"other.node1", map[string]string{ExternalIDSubnet: "other"}},
		{"sg.web", nil},
		// kube-ovn before v1.14: a node group of this subnet and of
		// another; a network policy's group; a node's own group.
		{"ovn.default.node3", map[string]string{"np": "ovn-default/node3"}},
		{"other.node3", map[string]string{"np": "other/node3"}},
		{"web.ovn.default", map[string]string{"np": "ovn-default/web"}},
		{"node.node1", map[string]string{"node": "node1", "np": "node/node1"}},
	}
	for _, g := range groups {
		ops, _, _, err := c.EnsurePortGroup(g.name, g.ids)
		submit(ops, err)
	}
	ops, _, err := c.EnsurePort(PortSpec{Name: "p.ns", Switch: "ovn-default", Pod: "ns/p", MAC: "00:00:00:00:00:01", IPs: []string{"10.16.0.9"}})
	submit(ops, err)
	// The cache follows the commits; wait for it, bounded.
	cached := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never reached the cache", what)
			}
		}
	}
	var port Ref
	cached("port", func() bool {
		p, ok := c.Port("p.ns")
		if ok {
			port = Ref(p.UUID)
		}
		return ok
	})
	for _, g := range groups {
		cached(g.name, func() bool { _, ok := c.PortGroup(g.name); return ok })
	}
	for _, g := range groups {
		if g.name != "ovn.default.node2" {
			submit(c.AddToPortGroup(g.name, port))
		}
	}
	members := func() map[string]int {
		t.Helper()
		out := map[string]int{}
		for _, r := range selectRows(t, c, nbdb.PortGroupTable, "name", "ports") {
			out[r["name"].(string)] = setLen(r["ports"])
		}
		return out
	}
	// Routed again on node2: leave the subnet's node groups, join node2's.
	add, err := c.AddToPortGroup("ovn.default.node2", port)
	submit(append(c.LeaveNodePortGroups("ovn-default", port), add...), err)
	want := map[string]int{"ovn.default.node1": 0, "ovn.default.node2": 1, "other.node1": 1, "sg.web": 1,
		"ovn.default.node3": 0, "other.node3": 1, "web.ovn.default": 1, "node.node1": 1}
	if got := members(); !mapsEqual(got, want) {
		t.Fatalf("port group members %v, want %v", got, want)
	}
	// Leaving again finds nothing to do and fails nothing.
	submit(c.LeaveNodePortGroups("ovn-default", port), nil)

	// A kube-ovn group made after the index was built reaches it through
	// the cache's events.
	ops, _, _, err = c.EnsurePortGroup("late.node1", map[string]string{"np": "late/node1"})
	submit(ops, err)
	cached("late.node1", func() bool { _, ok := c.PortGroup("late.node1"); return ok })
	submit(c.AddToPortGroup("late.node1", port))
	cached("late.node1 in the index", func() bool { return c.legacyNodeGroups().has("late") })
	leave := c.LeaveNodePortGroups("late", port)
	if len(leave) != 2 {
		t.Errorf("leave ops for a subnet with a legacy group holding the port: %d, want 2", len(leave))
	}
	submit(leave, nil)
	if got := members()["late.node1"]; got != 0 {
		t.Errorf("late.node1 holds %d ports after the leave, want 0", got)
	}
	// A subnet without legacy groups costs no read: one op.
	if n := len(c.LeaveNodePortGroups("ovn-default-2", port)); n != 1 {
		t.Errorf("leave ops for a subnet without legacy groups: %d, want 1", n)
	}
}

// TestLeaderTermFencesTransactions: the leader's own writes carry its term;
// once a newer term is recorded, a deposed leader's transaction changes
// nothing and fails with ErrStaleEpoch, and shard epochs are untouched.
func TestLeaderTermFencesTransactions(t *testing.T) {
	c := connect(t, []string{harness.StartNB(t).Endpoint}, false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.TakeOver(ctx, 3, 7); err != nil {
		t.Fatal(err)
	}
	if err := c.TakeOver(ctx, LeaderShard, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "term 1 in cache", func() bool { e, _ := c.Epoch(LeaderShard); return e == 1 })
	sw := func(name string) []ovsdb.Operation {
		ops, _, _, err := c.EnsureSwitch(SwitchSpec{Name: name, CIDRs: []string{"10.16.0.0/16"}})
		if err != nil {
			t.Fatal(err)
		}
		return ops
	}
	if _, err := c.TransactFenced(ctx, Fence{Shard: LeaderShard, Epoch: 1}, sw("by-term-1")...); err != nil {
		t.Fatalf("current term: %v", err)
	}
	if err := c.TakeOver(ctx, LeaderShard, 2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "term 2 in cache", func() bool { e, _ := c.Epoch(LeaderShard); return e == 2 })
	_, err := c.TransactFenced(ctx, Fence{Shard: LeaderShard, Epoch: 1}, sw("by-deposed")...)
	var se *StaleEpochError
	if !errors.As(err, &se) || !errors.Is(err, ErrStaleEpoch) || se.Shard != LeaderShard || se.Epoch != 1 {
		t.Fatalf("deposed leader's write: %v, want a StaleEpochError for the leader term 1", err)
	}
	if !strings.Contains(err.Error(), "leader term 1") {
		t.Errorf("error %q does not name the leader term", err)
	}
	names := map[any]bool{}
	for _, r := range selectRows(t, c, nbdb.LogicalSwitchTable, "name") {
		names[r["name"]] = true
	}
	if !names["by-term-1"] || names["by-deposed"] {
		t.Fatalf("switches %v: want by-term-1 and not by-deposed", names)
	}
	if e, _ := c.Epoch(3); e != 7 {
		t.Errorf("shard 3 epoch %d after leader take-overs, want 7", e)
	}
	if err := c.TakeOver(ctx, LeaderShard, 1); !errors.Is(err, ErrStaleEpoch) {
		t.Errorf("taking an older term: %v, want ErrStaleEpoch", err)
	}
}

// TestOnConnectedRunsBeforeTheLoadAndOnlyOnceConnected: the hook runs once
// the server answers, before NewClient returns, and never when no server
// does.
func TestOnConnectedRunsBeforeTheLoadAndOnlyOnceConnected(t *testing.T) {
	nb := harness.StartNB(t)
	calls := 0
	c, err := NewClient(context.Background(), Config{Endpoints: []string{nb.Endpoint}, OnConnected: func() { calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if calls != 1 {
		t.Errorf("OnConnected called %d times on a reachable server, want 1", calls)
	}

	down := fmt.Sprintf("tcp:127.0.0.1:%d", harness.FreePort(t))
	calls = 0
	if _, err := NewClient(context.Background(), Config{Endpoints: []string{down}, ConnectTimeout: time.Second, OnConnected: func() { calls++ }}); err == nil {
		t.Fatal("NewClient succeeded with no server listening")
	}
	if calls != 0 {
		t.Errorf("OnConnected called %d times with no server listening, want 0", calls)
	}
}

// TestOnConnectedRunsOnceTheServerAccepts: with StartOnAccept, a server
// that accepts the connection but has not answered yet (ovsdb-server
// writing another client's monitor reply) already lets the caller start
// its loads; the hook still runs once. Without it, the hook waits for the
// answer.
func TestOnConnectedRunsOnceTheServerAccepts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		// Accept and keep every connection open, saying nothing.
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	calls := 0
	_, err = NewClient(context.Background(), Config{Endpoints: []string{"tcp:" + l.Addr().String()}, ConnectTimeout: 500 * time.Millisecond,
		OnConnected: func() { calls++ }, StartOnAccept: true})
	if err == nil {
		t.Fatal("NewClient succeeded against a server that never answers")
	}
	if calls != 1 {
		t.Errorf("OnConnected called %d times on a server that accepted and never answered, want 1", calls)
	}
	// Without StartOnAccept the hook waits for the server's answer.
	calls = 0
	if _, err = NewClient(context.Background(), Config{Endpoints: []string{"tcp:" + l.Addr().String()}, ConnectTimeout: 300 * time.Millisecond,
		OnConnected: func() { calls++ }}); err == nil {
		t.Fatal("NewClient succeeded against a server that never answers")
	}
	if calls != 0 {
		t.Errorf("OnConnected called %d times without StartOnAccept on a server that never answered, want 0", calls)
	}
	if !reachable(context.Background(), []string{"unix:/nonexistent/ovnnb.sock", "ssl:" + l.Addr().String()}) {
		t.Error("an ssl endpoint that accepts after an unreachable unix one: not reachable")
	}
	if reachable(context.Background(), []string{"bogus", "punix:/x", "unix:/nonexistent/ovnnb.sock"}) {
		t.Error("no endpoint that accepts: reachable")
	}
}

// TestEnsurePortFromRow: ops built from a row the caller read are the ops
// EnsurePort builds, a port moved to another subnet still reads (and
// needs) its new switch, and a row of another port is refused.
func TestEnsurePortFromRow(t *testing.T) {
	s := standalone(t)
	c := connect(t, s.endpoints, false)
	makeSwitch(t, c, "bulk")
	makeSwitch(t, c, "other")
	spec := bulkPort(1)
	ops, _, err := c.EnsurePort(spec)
	if err != nil {
		t.Fatal(err)
	}
	mustTransact(t, c, ops)
	var row *nbdb.LogicalSwitchPort
	eventually(t, "port in cache", func() bool { var ok bool; row, ok = c.Port(spec.Name); return ok })

	for _, tc := range []struct {
		name string
		edit func(*PortSpec)
		ops  bool
	}{
		{"as it is", func(*PortSpec) {}, false},
		{"another address", func(p *PortSpec) { p.IPs = []string{"10.16.9.9"} }, true},
		{"another switch", func(p *PortSpec) { p.Switch = "other" }, true},
	} {
		want := spec
		tc.edit(&want)
		searched, sref, err := c.EnsurePort(want)
		if err != nil {
			t.Fatalf("%s: EnsurePort: %v", tc.name, err)
		}
		from, fref, err := c.EnsurePortFrom(want, row)
		if err != nil {
			t.Fatalf("%s: EnsurePortFrom: %v", tc.name, err)
		}
		if !reflect.DeepEqual(searched, from) || sref != fref {
			t.Errorf("%s: from the row %v (%s), searched %v (%s)", tc.name, from, fref, searched, sref)
		}
		if (len(from) > 0) != tc.ops {
			t.Errorf("%s: %d ops", tc.name, len(from))
		}
	}

	moved := spec
	moved.Switch = "missing"
	if _, _, err := c.EnsurePortFrom(moved, row); !errors.Is(err, ErrNotFound) {
		t.Errorf("port moved to a switch not in the cache: %v, want ErrNotFound", err)
	}
	other := bulkPort(2)
	if _, _, err := c.EnsurePortFrom(other, row); err == nil {
		t.Errorf("port %s built from the row of %s: no error", other.Name, row.Name)
	}
}
