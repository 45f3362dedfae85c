package ovn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// fakeNB is a tiny transactional store standing in for ovsdb-server in the
// batcher's unit tests. Rows of table "T" are identified by their "name";
// the rules mirror the server's failure modes:
//   - the fence (a wait on NB_Global) fails with "timed out" unless its
//     epoch is current: nothing after it runs;
//   - an op on table "Bad" fails by itself (an op error at its index);
//   - a duplicate name fails at commit (an extra result, like an index
//     violation);
//   - an op on table "Invalid" is refused before sending, like libovsdb's
//     schema validation.
type fakeNB struct {
	mu sync.Mutex // guards every field below
	// epoch is the recorded epoch of every shard.
	epoch uint64
	names map[string]string // committed name -> uuid
	txns  []int             // ops per transaction received
	seq   int
	// gate, when set, is received from before each transaction is answered.
	gate chan struct{}
	// fail, when set, is returned instead of transacting.
	fail error
}

func newFakeNB(epoch uint64) *fakeNB { return &fakeNB{epoch: epoch, names: map[string]string{}} }

func (f *fakeNB) WaitReady(context.Context) error { return nil }

func (f *fakeNB) fenceOp(fe Fence) (ovsdb.Operation, error) {
	return ovsdb.Operation{Op: ovsdb.OperationWait, Table: "NB_Global", Comment: ptr(fmt.Sprint(fe.Epoch))}, nil
}

func ptr[T any](v T) *T { return &v }

func (f *fakeNB) rawTransact(ctx context.Context, ops []ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.txns = append(f.txns, len(ops))
	if f.fail != nil {
		return nil, f.fail
	}
	for _, op := range ops {
		if op.Table == "Invalid" {
			return nil, &errValidation{err: errors.New("validation failed for the operation")}
		}
	}
	res := make([]ovsdb.OperationResult, len(ops))
	pending := map[string]string{}
	for i, op := range ops {
		switch {
		case op.Op == ovsdb.OperationWait && op.Table == "NB_Global":
			if *op.Comment != fmt.Sprint(f.epoch) {
				res[i] = ovsdb.OperationResult{Error: "timed out", Details: "where clause test failed"}
				return res, nil
			}
		case op.Table == "Bad":
			res[i] = ovsdb.OperationResult{Error: "constraint violation", Details: "bad op"}
			return res, nil
		case op.Op == ovsdb.OperationInsert:
			f.seq++
			u := fmt.Sprintf("00000000-0000-0000-0000-%012d", f.seq)
			pending[op.Row["name"].(string)+"\x00"+fmt.Sprint(i)] = u
			res[i] = ovsdb.OperationResult{UUID: ovsdb.UUID{GoUUID: u}}
		}
	}
	seen := map[string]bool{}
	for k := range pending {
		name := k[:indexByte(k, 0)]
		if _, dup := f.names[name]; dup || seen[name] {
			return append(res, ovsdb.OperationResult{Error: "constraint violation", Details: "duplicate " + name}), nil
		}
		seen[name] = true
	}
	for k, u := range pending {
		f.names[k[:indexByte(k, 0)]] = u
	}
	return res, nil
}

func indexByte(s string, c byte) int {
	for i := range len(s) {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func (f *fakeNB) committed(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.names[name]
	return ok
}

func (f *fakeNB) transactions() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.txns...)
}

type countingMetrics struct {
	mu       sync.Mutex // guards the fields below
	outcomes map[Outcome]int
	splits   int
}

func (m *countingMetrics) ObserveTransaction(_ int, _, _ int, _ time.Duration, o Outcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.outcomes == nil {
		m.outcomes = map[Outcome]int{}
	}
	m.outcomes[o]++
}

func (m *countingMetrics) ObserveSplit(int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.splits++
}

func insertOp(name string) ovsdb.Operation {
	return ovsdb.Operation{Op: ovsdb.OperationInsert, Table: "T", UUIDName: "u_" + name, Row: ovsdb.Row{"name": name}}
}

// submitAll submits every request concurrently and returns the outcomes in
// request order.
func submitAll(t *testing.T, b *Batcher, reqs [][]ovsdb.Operation) ([]Result, []error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := make([]Result, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, ops := range reqs {
		wg.Go(func() { res[i], errs[i] = b.Submit(ctx, ops...) })
	}
	wg.Wait()
	return res, errs
}

// newTestBatcher builds a batcher whose only flush trigger is the op cap:
// the linger is far longer than any test.
func newTestBatcher(t *testing.T, nb *fakeNB, maxOps int, m Metrics) *Batcher {
	t.Helper()
	b, err := newBatcher(nb, BatcherConfig{Fence: &Fence{Shard: 3, Epoch: 7}, Linger: time.Hour, MaxOps: maxOps, MaxInFlight: 1, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return b
}

func TestBatcherCommitsOneTransactionAtCap(t *testing.T) {
	nb := newFakeNB(7)
	b := newTestBatcher(t, nb, 4, nil)
	reqs := [][]ovsdb.Operation{{insertOp("a")}, {insertOp("b")}, {insertOp("c")}, {insertOp("d")}}
	res, errs := submitAll(t, b, reqs)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		name := reqs[i][0].UUIDName
		if u := res[i].UUIDs[name]; !ovsdb.IsValidUUID(u) {
			t.Errorf("request %d: UUID for %s = %q", i, name, u)
		}
		if len(res[i].Ops) != 1 {
			t.Errorf("request %d: %d results, want 1", i, len(res[i].Ops))
		}
	}
	if got := nb.transactions(); len(got) != 1 || got[0] != 5 {
		t.Fatalf("transactions = %v, want one of 5 ops (fence + 4)", got)
	}
}

func TestBatcherFailsOnlyTheRequestWithABadOp(t *testing.T) {
	nb := newFakeNB(7)
	m := &countingMetrics{}
	b := newTestBatcher(t, nb, 6, m)
	reqs := [][]ovsdb.Operation{
		{insertOp("a")},
		{insertOp("b"), {Op: ovsdb.OperationMutate, Table: "Bad"}},
		{insertOp("c")},
		{insertOp("d"), insertOp("e")},
	}
	_, errs := submitAll(t, b, reqs)
	var re *RequestError
	if !errors.As(errs[1], &re) || re.Index != 1 || re.Op == nil || re.Op.Table != "Bad" {
		t.Fatalf("bad request error = %v, want RequestError at op 1", errs[1])
	}
	for _, i := range []int{0, 2, 3} {
		if errs[i] != nil {
			t.Errorf("request %d: %v", i, errs[i])
		}
	}
	for name, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true, "e": true} {
		if nb.committed(name) != want {
			t.Errorf("%s committed = %v, want %v", name, !want, want)
		}
	}
	if m.splits != 0 {
		t.Errorf("an op error named its request, yet the batch was split %d times", m.splits)
	}
}

func TestBatcherBisectsCommitErrors(t *testing.T) {
	nb := newFakeNB(7)
	nb.names["taken"] = "00000000-0000-0000-0000-999999999999"
	m := &countingMetrics{}
	b := newTestBatcher(t, nb, 8, m)
	var reqs [][]ovsdb.Operation
	for i := range 8 {
		name := fmt.Sprint("p", i)
		if i == 5 {
			name = "taken"
		}
		reqs = append(reqs, []ovsdb.Operation{insertOp(name)})
	}
	_, errs := submitAll(t, b, reqs)
	for i, err := range errs {
		var re *RequestError
		switch {
		case i == 5 && (!errors.As(err, &re) || re.Index != -1):
			t.Errorf("request 5: %v, want commit RequestError", err)
		case i != 5 && err != nil:
			t.Errorf("request %d: %v", i, err)
		case i != 5 && !nb.committed(fmt.Sprint("p", i)):
			t.Errorf("p%d not committed", i)
		}
	}
	// 8 -> 4+4 -> 2+2 -> 1+1: three splits on the path to the culprit.
	if m.splits != 3 {
		t.Errorf("splits = %d, want 3", m.splits)
	}
}

func TestBatcherStaleEpochFailsEveryRequestWithoutSplitting(t *testing.T) {
	nb := newFakeNB(8) // the shard moved on: epoch 8 is recorded
	m := &countingMetrics{}
	b := newTestBatcher(t, nb, 4, m)
	reqs := [][]ovsdb.Operation{{insertOp("a")}, {insertOp("b")}, {insertOp("c")}, {insertOp("d")}}
	_, errs := submitAll(t, b, reqs)
	for i, err := range errs {
		var se *StaleEpochError
		if !errors.Is(err, ErrStaleEpoch) || !errors.As(err, &se) || se.Shard != 3 || se.Epoch != 7 {
			t.Errorf("request %d: %v, want StaleEpochError shard 3 epoch 7", i, err)
		}
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		if nb.committed(n) {
			t.Errorf("%s committed under a stale epoch", n)
		}
	}
	if got := nb.transactions(); len(got) != 1 {
		t.Errorf("transactions = %v, want exactly one", got)
	}
	if m.splits != 0 || m.outcomes[OutcomeStaleEpoch] != 1 {
		t.Errorf("splits %d, stale outcomes %d; want 0 and 1", m.splits, m.outcomes[OutcomeStaleEpoch])
	}
}

func TestBatcherSeparatesRequestsSharingANamedUUID(t *testing.T) {
	nb := newFakeNB(7)
	b, err := newBatcher(nb, BatcherConfig{Fence: &Fence{Shard: 3, Epoch: 7}, MaxOps: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	x := insertOp("x")
	y := insertOp("y")
	y.UUIDName = x.UUIDName // same named UUID in two independent requests
	_, errs := submitAll(t, b, [][]ovsdb.Operation{{x}, {y}})
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	if !nb.committed("x") || !nb.committed("y") {
		t.Error("x and y must both be committed")
	}
	for _, n := range nb.transactions() {
		if n != 2 {
			t.Errorf("a transaction carried %d ops; the two requests must not share one", n)
		}
	}
}

func TestBatcherSplitsOnValidationErrors(t *testing.T) {
	nb := newFakeNB(7)
	b := newTestBatcher(t, nb, 4, nil)
	reqs := [][]ovsdb.Operation{{insertOp("a")}, {{Op: ovsdb.OperationInsert, Table: "Invalid"}}, {insertOp("c")}, {insertOp("d")}}
	_, errs := submitAll(t, b, reqs)
	var re *RequestError
	if !errors.As(errs[1], &re) {
		t.Fatalf("invalid request: %v, want RequestError", errs[1])
	}
	for _, i := range []int{0, 2, 3} {
		if errs[i] != nil {
			t.Errorf("request %d: %v", i, errs[i])
		}
	}
}

func TestBatcherReportsUnknownOutcome(t *testing.T) {
	nb := newFakeNB(7)
	nb.fail = fmt.Errorf("%w: connection reset", ErrOutcomeUnknown)
	b := newTestBatcher(t, nb, 2, nil)
	_, errs := submitAll(t, b, [][]ovsdb.Operation{{insertOp("a")}, {insertOp("b")}})
	for i, err := range errs {
		if !errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("request %d: %v, want ErrOutcomeUnknown", i, err)
		}
	}
}

func TestBatcherCloseFlushes(t *testing.T) {
	nb := newFakeNB(7)
	// With an hour of linger and a cap never reached, only Close can
	// flush the batch.
	b, err := newBatcher(nb, BatcherConfig{Fence: &Fence{Shard: 3, Epoch: 7}, Linger: time.Hour, MaxOps: 100})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make(chan error, 3)
	for _, n := range []string{"a", "b", "c"} {
		go func() { _, err := b.Submit(ctx, insertOp(n)); errs <- err }()
	}
	for b.accepted.Load() < 3 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Errorf("submit: %v", err)
		}
	}
	if got := nb.transactions(); len(got) != 1 || got[0] != 4 {
		t.Errorf("transactions = %v, want one of 4 ops", got)
	}
	if _, err := b.Submit(ctx, insertOp("late")); !errors.Is(err, ErrClosed) {
		t.Errorf("submit after close: %v, want ErrClosed", err)
	}
	if nb.committed("late") {
		t.Error("a request submitted after Close was committed")
	}
}

func TestBatcherDropsCanceledRequestsBeforeSending(t *testing.T) {
	nb := newFakeNB(7)
	b, err := newBatcher(nb, BatcherConfig{Fence: &Fence{Shard: 3, Epoch: 7}, MaxOps: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Submit(ctx, insertOp("gone")); !errors.Is(err, context.Canceled) {
		t.Fatalf("submit with canceled ctx: %v", err)
	}
	// Flush a full batch behind it; the canceled request must not ride
	// along even if it reached the collector.
	_, errs := submitAll(t, b, [][]ovsdb.Operation{{insertOp("a")}, {insertOp("b")}})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if nb.committed("gone") {
		t.Error("canceled request was committed")
	}
}

// TestBatcherRandomMix checks the batcher against the plain expectation on
// random mixes of good, bad and conflicting requests: every request is
// answered once, the good ones are committed, the others are not.
func TestBatcherRandomMix(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			nb := newFakeNB(7)
			nb.names["taken"] = "00000000-0000-0000-0000-999999999999"
			b, err := newBatcher(nb, BatcherConfig{Fence: &Fence{Shard: 3, Epoch: 7}, Linger: 50 * time.Microsecond, MaxOps: 1 + rng.IntN(20), MaxInFlight: 1 + rng.IntN(3)})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close(context.Background())
			n := 50 + rng.IntN(100)
			reqs := make([][]ovsdb.Operation, n)
			good := make([]bool, n)
			for i := range reqs {
				name := fmt.Sprint("p", i)
				switch rng.IntN(6) {
				case 0:
					reqs[i] = []ovsdb.Operation{insertOp(name), {Op: ovsdb.OperationMutate, Table: "Bad"}}
				case 1:
					reqs[i] = []ovsdb.Operation{insertOp(name), insertOp("taken")}
				default:
					reqs[i] = []ovsdb.Operation{insertOp(name)}
					good[i] = true
				}
				for j := range reqs[i] {
					reqs[i][j].UUIDName = fmt.Sprintf("u%d_%d", i, j)
				}
			}
			_, errs := submitAll(t, b, reqs)
			for i := range reqs {
				name := fmt.Sprint("p", i)
				if good[i] != (errs[i] == nil) {
					t.Errorf("request %d (good=%v): %v", i, good[i], errs[i])
				}
				if nb.committed(name) != good[i] {
					t.Errorf("request %d (good=%v): committed=%v", i, good[i], !good[i])
				}
			}
		})
	}
}

func TestBatcherConfigValidation(t *testing.T) {
	for _, cfg := range []BatcherConfig{
		{Linger: -1},
		{MaxOps: -1},
		{MaxInFlight: -2},
		{Fence: &Fence{Shard: 1, Epoch: 0}},
	} {
		if _, err := newBatcher(newFakeNB(1), cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

func TestAssembleMergesSetInsertsAndExistenceWaits(t *testing.T) {
	nb := newFakeNB(7)
	b := newTestBatcher(t, nb, 100, nil)
	const ls = "aaaaaaaa-0000-0000-0000-000000000001"
	port := func(name string) []ovsdb.Operation {
		return []ovsdb.Operation{
			{Op: ovsdb.OperationInsert, Table: "Logical_Switch_Port", UUIDName: name, Row: ovsdb.Row{"name": name}},
			waitExists("Logical_Switch", ls),
			insertRefs("Logical_Switch", ls, "ports", ovsdb.UUID{GoUUID: name}),
		}
	}
	reqs := []*request{{ops: port("a")}, {ops: port("b")}, {ops: port("c")}}
	pl, err := b.assemble(reqs)
	if err != nil {
		t.Fatal(err)
	}
	// fence, 3 inserts, 1 wait, 1 merged mutate
	var kinds []string
	for _, op := range pl.ops {
		kinds = append(kinds, op.Op)
	}
	want := []string{"wait", "insert", "wait", "insert", "insert", "mutate"}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("ops %v, want %v", kinds, want)
	}
	merged := pl.ops[len(pl.ops)-1]
	if set := merged.Mutations[0].Value.(ovsdb.OvsSet); len(set.GoSet) != 3 {
		t.Errorf("merged mutate inserts %v, want the 3 ports", set.GoSet)
	}
	if pl.owner[0] != ownerFence || pl.owner[2] != ownerShared || pl.owner[len(pl.ops)-1] != ownerShared {
		t.Errorf("owners %v: the fence, the shared wait and the merged mutate must not name one request", pl.owner)
	}
	if pl.owner[1] != 0 || pl.owner[3] != 1 || pl.owner[4] != 2 {
		t.Errorf("owners %v: each insert belongs to its request", pl.owner)
	}
	// Every request's ops map to ops of the same kind.
	for k, r := range reqs {
		for j, op := range r.ops {
			if got := pl.ops[pl.pos[k][j]].Op; got != op.Op {
				t.Errorf("request %d op %d (%s) maps to a %s", k, j, op.Op, got)
			}
		}
	}
	// Results come back in each request's own order, UUIDs included.
	res := make([]ovsdb.OperationResult, len(pl.ops))
	res[1].UUID.GoUUID = "bbbbbbbb-0000-0000-0000-000000000001"
	res[len(pl.ops)-1].Count = 1
	got := pl.resultFor(0, reqs[0], res)
	if got.UUIDs["a"] != res[1].UUID.GoUUID || len(got.Ops) != 3 || got.Ops[2].Count != 1 {
		t.Errorf("result for request 0: %+v", got)
	}
}

func TestAssembleLeavesOtherMutationsAlone(t *testing.T) {
	nb := newFakeNB(7)
	b := newTestBatcher(t, nb, 100, nil)
	const ls = "aaaaaaaa-0000-0000-0000-000000000001"
	del := removeRefEverywhere("Logical_Switch", "ports", "cccccccc-0000-0000-0000-000000000001")
	keys := ovsdb.Operation{Op: ovsdb.OperationMutate, Table: "Logical_Switch", Where: uuidWhere(ls),
		Mutations: setKeys("other_config", nil, map[string]string{"subnet": "10.0.0.0/24"})}
	pl, err := b.assemble([]*request{{ops: []ovsdb.Operation{del, keys}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.ops) != 3 || pl.ops[1].Mutations[0].Mutator != ovsdb.MutateOperationDelete || pl.ops[2].Mutations[0].Column != "other_config" {
		t.Errorf("ops rewritten: %+v", pl.ops)
	}
}
