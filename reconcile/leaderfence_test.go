package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/ovn/nbdb"
)

// TestDeposedLeaderWritesNothing: the subnet reconciler writes the
// Northbound under its leadership term. Once a later leader recorded its
// term, the deposed one's writes fail with ErrDeposed and change nothing;
// and while its term check fails it patches no Subnet (status counters
// included).
func TestDeposedLeaderWritesNothing(t *testing.T) {
	f := startTopology(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var termErr error
	term := uint64(10)
	f.r.cfg.Term = func() (uint64, error) { return term, termErr }
	if err := f.nb.TakeOver(ctx, ovn.LeaderShard, 10); err != nil {
		t.Fatal(err)
	}
	waitCache := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("%s never reached the cache", what)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	waitCache("term 10", func() bool { e, _ := f.nb.Epoch(ovn.LeaderShard); return e == 10 })
	pg := NodePortGroupName("kovn", "node2")
	if err := f.reconcile(t, "kovn"); err != nil {
		t.Fatalf("reconcile under the current term: %v", err)
	}
	got, ok := f.nb.PortGroup(pg)
	if !ok {
		t.Fatalf("the leader did not add %s", pg)
	}
	if ids := got.ExternalIDs; ids["np"] != "kovn/node2" || ids["subnet"] != "kovn" || ids["node"] != "node2" {
		t.Errorf("node port group %s external ids %v, want subnet, node and np as kube-ovn writes them", pg, ids)
	}

	// A later leader records its term; the port group goes meanwhile.
	if err := f.nb.TakeOver(ctx, ovn.LeaderShard, 11); err != nil {
		t.Fatal(err)
	}
	if _, err := f.nb.Transact(ctx, ovsdb.Operation{Op: ovsdb.OperationDelete, Table: nbdb.PortGroupTable,
		Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: got.UUID}}}}); err != nil {
		t.Fatal(err)
	}
	waitCache("term 11 and the deleted port group", func() bool {
		e, _ := f.nb.Epoch(ovn.LeaderShard)
		_, has := f.nb.PortGroup(pg)
		return e == 11 && !has
	})
	err := f.r.Reconcile(ctx, "kovn")
	if !errors.Is(err, ErrDeposed) || !errors.Is(err, ovn.ErrStaleEpoch) {
		t.Fatalf("reconcile under a stale term: %v, want ErrDeposed wrapping ErrStaleEpoch", err)
	}
	for _, r := range selectPortGroups(t, f.nb) {
		if r == pg {
			t.Fatalf("the deposed leader re-added %s", pg)
		}
	}

	// The term check itself fails (a paused leader resuming): no Subnet
	// patch, the status counters included.
	termErr = ErrDeposed
	before, err := f.cs.KubeovnV1().Subnets().Get(ctx, "kovn", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	usage := map[string][]ipam.FamilyUsage{"kovn": {{Family: "IPv4", Used: 42, Available: 1}}}
	if err := f.r.RefreshStatus(ctx, usage); !errors.Is(err, ErrDeposed) {
		t.Errorf("status refresh while deposed: %v, want ErrDeposed", err)
	}
	after, err := f.cs.KubeovnV1().Subnets().Get(ctx, "kovn", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || after.Status.V4UsingIPs == 42 {
		t.Errorf("a deposed leader patched the Subnet: resourceVersion %s -> %s, used %v", before.ResourceVersion, after.ResourceVersion, after.Status.V4UsingIPs)
	}
}

// selectPortGroups reads the port group names from the server.
func selectPortGroups(t *testing.T, nb *ovn.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := nb.Transact(ctx, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: nbdb.PortGroupTable, Columns: []string{"name"}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res[0].Rows {
		out = append(out, r["name"].(string))
	}
	return out
}
