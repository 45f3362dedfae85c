package faults

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/test/harness"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binProg *harness.Program
)

// binary builds cmd/shardnet once for the package's tests (with the race
// detector when the tests have it); TestMain removes it.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binProg, binErr = harness.NewProgram()
		if binErr != nil {
			return
		}
		binProg.Log = os.Stderr
		binErr = binProg.Run(func() error {
			binPath = harness.BuildShardnet(binProg)
			return nil
		})
	})
	if binErr != nil {
		t.Fatalf("building shardnet: %v", binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binProg != nil {
		binProg.Close()
	}
	os.Exit(code)
}

// TestCheckerCatchesViolations shows that each invariant of the checker
// can fail: on a quiet cluster served by one replica (stopped before the
// injections, so that nothing repairs them), each violation is written
// straight into the servers, the invariant it breaks must report it,
// naming the injected object, and once it is undone every invariant
// passes again.
func TestCheckerCatchesViolations(t *testing.T) {
	requireFaults(t)
	e := newEnv(t, binary(t), envConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	r := e.startReplica("shardnet-0")
	e.waitWhole(ctx, "one replica running every shard", 3*time.Minute)

	type want struct{ ns, name, node, static string }
	var pods []want
	for i := range 6 {
		w := want{ns: "faults-wide", name: fmt.Sprintf("w-%d", i), node: e.kwokNodes[i%2]}
		if i < 2 {
			w.static = fmt.Sprintf("10.120.15.%d", 20+i)
		}
		pods = append(pods, w)
	}
	for i := range 4 {
		pods = append(pods, want{ns: "faults-mid", name: fmt.Sprintf("m-%d", i), node: e.kwokNodes[i%2]})
	}
	pods = append(pods, want{ns: "faults-tight", name: "t-0", node: e.staticNode}, want{ns: "faults-tight", name: "t-1", node: e.kwokNodes[0]})
	for _, w := range pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: w.ns},
			Spec:       corev1.PodSpec{NodeName: w.node, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
		}
		if w.static != "" {
			pod.Annotations = map[string]string{annIP: w.static}
		}
		if _, err := e.kube.Client.CoreV1().Pods(w.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if final, _ := waitQuiet(ctx, t, e, 2*time.Minute); total(final) != 0 {
		t.Fatalf("the cluster is not quiet before any injection:\n%s", describe(final))
	}
	r.Stop()
	e.forget(r.Identity)
	expectClean(ctx, t, e, "after the replica stopped")

	get := func(ns, name string) *corev1.Pod {
		p, err := e.kube.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	portOf := func(name string) nbdb.LogicalSwitchPort {
		var ports []nbdb.LogicalSwitchPort
		if err := e.view.List(ctx, &ports); err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if p.Name == name {
				return p
			}
		}
		t.Fatalf("no port %s", name)
		return nbdb.LogicalSwitchPort{}
	}
	p, q, m := get("faults-wide", "w-3"), get("faults-wide", "w-4"), get("faults-mid", "m-1")
	pIP, qIP, mIP, mMAC := p.Annotations[annIP], q.Annotations[annIP], m.Annotations[annIP], m.Annotations[annMAC]
	unused := netip.MustParseAddr(mIP)
	for range 500 {
		unused = unused.Next()
	}

	injections := []struct {
		inv, what string
		// needle is a part of the example the invariant must report.
		needle string
		inject func() error
		undo   func() error
	}{
		{
			inv: "a", what: "a second pod annotated with an address another pod holds",
			needle: "wide/" + pIP + " annotated on pods",
			inject: func() error { return patchAnnotation(ctx, e, q, annIP, pIP) },
			undo:   func() error { return patchAnnotation(ctx, e, q, annIP, qIP) },
		},
		{
			inv: "a", what: "a second Northbound port carrying an address a pod's port carries",
			needle: mIP + " carried by ports",
			inject: func() error {
				return transact(ctx, e, insertPortOps("ghost.faults-mid", "faults-mid/ghost", "mid", "0a:58:0a:79:ff:ff "+mIP))
			},
			undo: func() error { return transact(ctx, e, deletePortOps(portOf("ghost.faults-mid"), "mid")) },
		},
		{
			inv: "b", what: "a pod's port carrying another address than its annotations",
			needle: "faults-mid/m-1",
			inject: func() error {
				return transact(ctx, e, setPortAddresses(portOf("m-1.faults-mid"), mMAC+" "+unused.String()))
			},
			undo: func() error { return transact(ctx, e, setPortAddresses(portOf("m-1.faults-mid"), mMAC+" "+mIP)) },
		},
		{
			inv: "c", what: "a claim owned by a pod that does not exist",
			needle: "claim mid.10.121.3.200 of pod faults-mid/gone",
			inject: func() error {
				c := &v1alpha1.AddressClaim{
					ObjectMeta: metav1.ObjectMeta{Name: "mid.10.121.3.200", Labels: map[string]string{v1alpha1.LabelSubnet: "mid", v1alpha1.LabelFamily: "IPv4"}},
					Spec: v1alpha1.AddressClaimSpec{Subnet: "mid", Address: "10.121.3.200", Provider: "ovn", MAC: "0a:58:0a:79:03:c8",
						Owner: v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "faults-mid", Name: "gone", UID: "00000000-0000-4000-8000-000000000001"}},
				}
				_, err := e.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Create(ctx, c, metav1.CreateOptions{})
				return err
			},
			undo: func() error {
				return e.kube.Shardnet.ShardnetV1alpha1().AddressClaims().Delete(ctx, "mid.10.121.3.200", metav1.DeleteOptions{})
			},
		},
		{
			inv: "d", what: "a subnet's v4usingIPs off by 7",
			needle: "subnet tight: status says",
			inject: func() error { return shiftUsing(ctx, e, "tight", 7) },
			undo:   func() error { return shiftUsing(ctx, e, "tight", -7) },
		},
	}
	for _, in := range injections {
		if err := in.inject(); err != nil {
			t.Fatalf("injecting %s: %v", in.what, err)
		}
		var caught violations
		waitFor(t, ctx, "invariant ("+in.inv+") catching "+in.what, 30*time.Second, 200*time.Millisecond, func() error {
			s, err := readSnapshot(ctx, e.kube, e.view, false)
			if err != nil {
				return err
			}
			for _, v := range checkAll(s) {
				if v.id != in.inv {
					continue
				}
				for _, ex := range v.examples {
					if strings.Contains(ex, in.needle) {
						caught = v
						return nil
					}
				}
				return fmt.Errorf("(%s) reports %d, none naming %q: %v", v.id, v.count, in.needle, v.examples)
			}
			return fmt.Errorf("no invariant (%s)", in.inv)
		})
		t.Logf("injected %s: caught by %s", in.what, caught)
		if err := in.undo(); err != nil {
			t.Fatalf("undoing %s: %v", in.what, err)
		}
		expectClean(ctx, t, e, "after undoing "+in.what)
	}
	e.checkProcesses()
}

// expectClean waits (briefly: the Northbound view may lag a write) until
// every invariant passes.
func expectClean(ctx context.Context, t *testing.T, e *env, what string) {
	t.Helper()
	waitFor(t, ctx, "every invariant passing "+what, 30*time.Second, 200*time.Millisecond, func() error {
		s, err := readSnapshot(ctx, e.kube, e.view, false)
		if err != nil {
			return err
		}
		if vs := checkAll(s); total(vs) != 0 {
			return fmt.Errorf("%s", describe(vs))
		}
		return nil
	})
}

func patchAnnotation(ctx context.Context, e *env, p *corev1.Pod, key, value string) error {
	body := fmt.Sprintf(`{"metadata":{"uid":%q,"annotations":{%q:%q}}}`, p.UID, key, value)
	_, err := e.kube.Client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
	return err
}

func shiftUsing(ctx context.Context, e *env, subnet string, by float64) error {
	s, err := e.kube.Shardnet.KubeovnV1().Subnets().Get(ctx, subnet, metav1.GetOptions{})
	if err != nil {
		return err
	}
	body := fmt.Sprintf(`{"status":{"v4usingIPs":%v}}`, s.Status.V4UsingIPs+by)
	_, err = e.kube.Shardnet.KubeovnV1().Subnets().Patch(ctx, subnet, types.MergePatchType, []byte(body), metav1.PatchOptions{}, "status")
	return err
}

func transact(ctx context.Context, e *env, ops []ovsdb.Operation) error {
	res, err := e.view.Transact(ctx, ops...)
	if err != nil {
		return err
	}
	_, err = ovsdb.CheckOperationResults(res, ops)
	return err
}

func insertPortOps(name, pod, sw, addresses string) []ovsdb.Operation {
	return []ovsdb.Operation{
		{Op: ovsdb.OperationInsert, Table: nbdb.LogicalSwitchPortTable, UUIDName: "ghost", Row: ovsdb.Row{
			"name": name, "addresses": ovsdb.OvsSet{GoSet: []any{addresses}},
			"external_ids": ovsdb.OvsMap{GoMap: map[any]any{"pod": pod, "ls": sw, "vendor": "kube-ovn"}}}},
		{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
			Where:     []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: sw}},
			Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "ghost"}}}}}},
	}
}

func deletePortOps(p nbdb.LogicalSwitchPort, sw string) []ovsdb.Operation {
	return []ovsdb.Operation{
		{Op: ovsdb.OperationMutate, Table: nbdb.LogicalSwitchTable,
			Where:     []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: sw}},
			Mutations: []ovsdb.Mutation{{Column: "ports", Mutator: ovsdb.MutateOperationDelete, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: p.UUID}}}}}},
		{Op: ovsdb.OperationDelete, Table: nbdb.LogicalSwitchPortTable,
			Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: p.UUID}}}},
	}
}

func setPortAddresses(p nbdb.LogicalSwitchPort, addresses string) []ovsdb.Operation {
	return []ovsdb.Operation{{Op: ovsdb.OperationUpdate, Table: nbdb.LogicalSwitchPortTable,
		Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: p.UUID}}},
		Row:   ovsdb.Row{"addresses": ovsdb.OvsSet{GoSet: []any{addresses}}}}}
}
