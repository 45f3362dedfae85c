package harness

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// insertPort writes one Logical_Switch_Port, and the Logical_Switch that
// holds it (ports are not root rows: an unreferenced port is collected),
// through the generated models, and returns the transaction error, if any.
func insertPort(ctx context.Context, c client.Client, name string) error {
	lsp := &nbdb.LogicalSwitchPort{
		UUID:        "newport",
		Name:        name,
		Addresses:   []string{"0a:00:00:00:00:01 10.16.0.2"},
		ExternalIDs: map[string]string{"pod": "default/" + name, "vendor": "shardnet"},
	}
	ls := &nbdb.LogicalSwitch{UUID: "newswitch", Name: "ls-" + name, Ports: []string{lsp.UUID}}
	ops, err := c.Create(lsp)
	if err != nil {
		return err
	}
	lsOps, err := c.Create(ls)
	if err != nil {
		return err
	}
	ops = append(ops, lsOps...)
	res, err := c.Transact(ctx, ops...)
	if err != nil {
		return err
	}
	_, err = ovsdb.CheckOperationResults(res, ops)
	return err
}

func TestStandaloneNBRoundTrip(t *testing.T) {
	nb := StartNB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, endpoint := range []string{nb.Endpoint, nb.Unix} {
		c := NBView(t, client.WithEndpoint(endpoint))
		name := "port-" + endpoint[:3]
		if err := insertPort(ctx, c, name); err != nil {
			t.Fatalf("insert via %s: %v", endpoint, err)
		}
		got := &nbdb.LogicalSwitchPort{Name: name}
		waitCache(t, ctx, c, got)
		if got.ExternalIDs["pod"] != "default/"+name || len(got.Addresses) != 1 {
			t.Fatalf("read back %+v", got)
		}
	}
}

// waitCache waits until the row with m's index is in the client's cache and
// fills m from it.
func waitCache(t *testing.T, ctx context.Context, c client.Client, m model.Model) {
	t.Helper()
	for {
		if err := c.Get(ctx, m); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("row %+v never reached the cache", m)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestRAFTLeaderFailover(t *testing.T) {
	cluster := StartNBCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := []client.Option{client.WithLeaderOnly(true), client.WithReconnect(2*time.Second, backoff.NewConstantBackOff(100*time.Millisecond))}
	for _, e := range cluster.Endpoints {
		opts = append(opts, client.WithEndpoint(e))
	}
	c := NBView(t, opts...)
	if err := insertPort(ctx, c, "before"); err != nil {
		t.Fatalf("insert before failover: %v", err)
	}

	leader := cluster.Leader(t)
	killed := time.Now()
	cluster.Kill(leader)

	var outage time.Duration
	var name string
	for i := 0; ; i++ {
		if ctx.Err() != nil {
			t.Fatalf("no transaction committed within the test deadline after killing leader %d", leader)
		}
		tctx, tcancel := context.WithTimeout(ctx, 2*time.Second)
		// A fresh name per attempt: an attempt that committed but whose
		// reply was lost must not make the next one a duplicate.
		name = fmt.Sprintf("after-%d", i)
		err := insertPort(tctx, c, name)
		tcancel()
		if err == nil {
			outage = time.Since(killed)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	newLeader := cluster.Leader(t)
	if newLeader == leader {
		t.Fatalf("leader %d was killed but is still reported leader", leader)
	}
	got := &nbdb.LogicalSwitchPort{Name: name}
	waitCache(t, ctx, c, got)
	t.Logf("RAFT NB leader %d killed: first good transaction after %v (new leader %d)", leader, outage.Round(time.Millisecond), newLeader)
	// The figure is a measurement, not an assertion: print it where go test
	// shows it without -v too.
	println("harness: RAFT NB leader-kill outage:", outage.Round(time.Millisecond).String())
}
