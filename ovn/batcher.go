package ovn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// BatcherConfig configures a Batcher. Zero values take the defaults.
type BatcherConfig struct {
	// Fence, when set, makes every transaction carry the shard's epoch
	// check. Only a writer that is not a shard owner (the leader's subnet
	// reconciler) should leave it nil.
	Fence *Fence
	// Linger is how long the first request of a batch waits for company
	// (default 1ms). Under load batches fill while the previous one is in
	// flight, so the linger only costs latency when the load is light.
	Linger time.Duration
	// MaxOps caps the ops of one transaction, the fence excluded
	// (default 600). A single request larger than the cap goes alone.
	MaxOps int
	// MaxInFlight bounds the transactions in flight at once (default 2):
	// one commits while the next is encoded and sent.
	MaxInFlight int
	// TxnTimeout bounds one transaction, including the wait for the client
	// to be ready again after a disconnect (default 30s).
	TxnTimeout time.Duration
	// Metrics receives batch measurements (default NopMetrics).
	Metrics Metrics
}

func (cfg *BatcherConfig) setDefaults() {
	if cfg.Linger == 0 {
		cfg.Linger = time.Millisecond
	}
	if cfg.MaxOps == 0 {
		cfg.MaxOps = 600
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 2
	}
	if cfg.TxnTimeout == 0 {
		cfg.TxnTimeout = 30 * time.Second
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NopMetrics{}
	}
}

func (cfg *BatcherConfig) validate() error {
	switch {
	case cfg.Linger < 0:
		return fmt.Errorf("negative linger %v", cfg.Linger)
	case cfg.MaxOps < 1:
		return fmt.Errorf("max ops %d < 1", cfg.MaxOps)
	case cfg.MaxInFlight < 1:
		return fmt.Errorf("max in flight %d < 1", cfg.MaxInFlight)
	case cfg.TxnTimeout < 0:
		return fmt.Errorf("negative transaction timeout %v", cfg.TxnTimeout)
	case cfg.Fence != nil && cfg.Fence.Epoch == 0:
		return errors.New("fence epoch 0")
	}
	return nil
}

// Result is what one request's ops produced once committed.
type Result struct {
	// UUIDs maps each named UUID of the request's insert ops
	// (Operation.UUIDName) to the UUID the server gave the row.
	UUIDs map[string]string
	// Ops are the server's results for the request's ops, in order.
	Ops []ovsdb.OperationResult
}

// backend is what the batcher needs from a Client; tests replace it.
type backend interface {
	rawTransact(ctx context.Context, ops []ovsdb.Operation) ([]ovsdb.OperationResult, error)
	fenceOp(Fence) (ovsdb.Operation, error)
	WaitReady(ctx context.Context) error
}

var _ backend = (*Client)(nil)

// Batcher commits the op lists that many goroutines submit as few
// transactions as it can, each fenced by the shard's epoch. See the package
// documentation for what it guarantees.
type Batcher struct {
	be    backend
	cfg   BatcherConfig
	shard int // for metrics; -1 when unfenced

	// reqs carries submitted requests to the loop. It is never closed;
	// closing (under mu) stops new sends instead.
	reqs chan *request
	// mu guards closing. Submit holds it for reading while it sends on
	// reqs, so that once Close has set closing no request can slip into
	// reqs after the loop's final drain.
	mu      sync.RWMutex
	closing bool

	stop     chan struct{} // closed by Close: the loop flushes and exits
	stopOnce sync.Once
	done     chan struct{}  // closed when the loop and every commit ended
	sem      chan struct{}  // one token per transaction in flight
	inflight sync.WaitGroup // commit goroutines started by the loop
	// accepted counts requests handed to the loop, so that tests can tell
	// when a request is inside without timing it.
	accepted  atomic.Int64
	collector collector // owned by the loop goroutine only
}

// request is one caller's op list. done is buffered so the batcher never
// blocks on a caller that gave up; each request is answered exactly once.
type request struct {
	ctx  context.Context
	ops  []ovsdb.Operation
	done chan outcome
}

type outcome struct {
	res Result
	err error
}

func (r *request) answer(res Result, err error) { r.done <- outcome{res, err} }

// NewBatcher starts a batcher writing through c. Close it to flush and stop.
func (c *Client) NewBatcher(cfg BatcherConfig) (*Batcher, error) {
	return newBatcher(c, cfg)
}

func newBatcher(be backend, cfg BatcherConfig) (*Batcher, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("ovn: invalid batcher config: %w", err)
	}
	b := &Batcher{
		be:    be,
		cfg:   cfg,
		shard: -1,
		reqs:  make(chan *request, 1024),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		sem:   make(chan struct{}, cfg.MaxInFlight),
	}
	if cfg.Fence != nil {
		b.shard = cfg.Fence.Shard
	}
	go b.loop()
	return b, nil
}

// Fence returns the fence the batcher writes under, or nil.
func (b *Batcher) Fence() *Fence {
	if b.cfg.Fence == nil {
		return nil
	}
	f := *b.cfg.Fence
	return &f
}

// Submit queues ops as one request and waits for its outcome. The ops commit
// atomically, with other requests' ops in the same transaction; a request
// whose ops fail is taken out and the others are committed without it.
//
// Errors: a *StaleEpochError (ErrStaleEpoch) when the fence failed; a
// *RequestError when the request's own ops were refused; ErrOutcomeUnknown
// when the reply was lost; ErrNotReady when the client could not reconnect
// within the transaction timeout; ErrClosed after Close. If ctx ends first,
// Submit returns ctx's error: a request not yet sent is dropped, but one
// already in flight may still commit.
//
// An empty op list succeeds at once, so an idempotent rerun that finds
// nothing to change costs no transaction.
func (b *Batcher) Submit(ctx context.Context, ops ...ovsdb.Operation) (Result, error) {
	if len(ops) == 0 {
		return Result{}, nil
	}
	ctx, span := b.startWait(ctx, len(ops))
	defer span.End()
	r := &request{ctx: ctx, ops: ops, done: make(chan outcome, 1)}
	b.mu.RLock()
	if b.closing {
		b.mu.RUnlock()
		return Result{}, ErrClosed
	}
	select {
	case b.reqs <- r:
		b.accepted.Add(1)
		b.mu.RUnlock()
	case <-ctx.Done():
		b.mu.RUnlock()
		return Result{}, ctx.Err()
	}
	select {
	case o := <-r.done:
		endWait(span, o.err)
		return o.res, o.err
	case <-ctx.Done():
		endWait(span, ctx.Err())
		return Result{}, ctx.Err()
	}
}

// Close stops accepting requests, commits every request already submitted,
// and waits for the transactions in flight, or for ctx to end.
func (b *Batcher) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
	b.stopOnce.Do(func() { close(b.stop) })
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ovn: closing batcher: %w", ctx.Err())
	}
}

// collector accumulates one batch. It is owned by the loop goroutine.
type collector struct {
	reqs  []*request
	ops   int
	names map[string]struct{} // named UUIDs used by reqs
	carry []*request          // requests deferred to the next batch
}

// add puts r in the batch, or defers it when it would overflow the cap or
// reuse a named UUID of a request already in the batch (named UUIDs are
// scoped to a transaction, so two requests must not share one).
func (c *collector) add(r *request, maxOps int) {
	if len(c.reqs) > 0 && c.ops+len(r.ops) > maxOps {
		c.carry = append(c.carry, r)
		return
	}
	for _, op := range r.ops {
		if op.UUIDName == "" {
			continue
		}
		if _, dup := c.names[op.UUIDName]; dup {
			c.carry = append(c.carry, r)
			return
		}
	}
	if c.names == nil {
		c.names = make(map[string]struct{})
	}
	for _, op := range r.ops {
		if op.UUIDName != "" {
			c.names[op.UUIDName] = struct{}{}
		}
	}
	c.reqs = append(c.reqs, r)
	c.ops += len(r.ops)
}

func (c *collector) full(maxOps int) bool { return c.ops >= maxOps || len(c.carry) > 0 }

// take returns the batch and starts the next one with the deferred requests.
func (c *collector) take(maxOps int) []*request {
	batch := c.reqs
	carry := c.carry
	*c = collector{}
	for _, r := range carry {
		c.add(r, maxOps)
	}
	return batch
}

func (b *Batcher) loop() {
	defer close(b.done)
	defer b.inflight.Wait()
	col := &b.collector
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		if len(col.reqs) == 0 {
			select {
			case r := <-b.reqs:
				col.add(r, b.cfg.MaxOps)
			case <-b.stop:
				b.drain()
				return
			}
		}
		// Linger for company unless the batch is already full.
		timer.Reset(b.cfg.Linger)
	linger:
		for !col.full(b.cfg.MaxOps) {
			select {
			case r := <-b.reqs:
				col.add(r, b.cfg.MaxOps)
			case <-timer.C:
				break linger
			case <-b.stop:
				break linger
			}
		}
		timer.Stop()
		// Wait for a slot, still filling the batch meanwhile.
	slot:
		for {
			in := b.reqs
			if col.full(b.cfg.MaxOps) {
				in = nil
			}
			select {
			case b.sem <- struct{}{}:
				break slot
			case r := <-in:
				col.add(r, b.cfg.MaxOps)
			}
		}
		b.dispatch(col.take(b.cfg.MaxOps))
	}
}

// drain commits what is left after Close: the collector and the channel.
// Close has set closing, so nothing more can arrive.
func (b *Batcher) drain() {
	col := &b.collector
	for {
		select {
		case r := <-b.reqs:
			col.add(r, b.cfg.MaxOps)
			if !col.full(b.cfg.MaxOps) {
				continue
			}
		default:
			if len(col.reqs) == 0 {
				return
			}
		}
		b.sem <- struct{}{}
		b.dispatch(col.take(b.cfg.MaxOps))
	}
}

// dispatch commits batch in its own goroutine; the caller holds a sem token,
// which the goroutine returns.
func (b *Batcher) dispatch(batch []*request) {
	if len(batch) == 0 {
		<-b.sem
		return
	}
	b.inflight.Add(1)
	go func() {
		defer b.inflight.Done()
		defer func() { <-b.sem }()
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.TxnTimeout)
		defer cancel()
		b.commit(ctx, batch)
	}()
}

func (b *Batcher) commit(ctx context.Context, batch []*request) {
	if err := b.be.WaitReady(ctx); err != nil {
		b.cfg.Metrics.ObserveTransaction(b.shard, len(batch), 0, 0, OutcomeNotSent)
		for _, r := range batch {
			r.answer(Result{}, err)
		}
		return
	}
	// Callers that gave up while the batch lingered or waited for the
	// connection are dropped: their ops were never sent.
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.answer(Result{}, err)
			continue
		}
		live = append(live, r)
	}
	b.try(ctx, live)
}

// try commits reqs as one transaction and answers each of them exactly once.
// On failure it finds the culprit: an op error names its request, which is
// failed while the rest are retried; a commit error (constraint, referential
// integrity) names no op, so the batch is split in halves until the failing
// request is alone.
func (b *Batcher) try(ctx context.Context, reqs []*request) {
	for len(reqs) > 0 {
		pl, err := b.assemble(reqs)
		if err != nil {
			b.cfg.Metrics.ObserveTransaction(b.shard, len(reqs), 0, 0, OutcomeStaleEpoch)
			for _, r := range reqs {
				r.answer(Result{}, err)
			}
			return
		}
		ops := pl.ops
		span := b.startTransaction(reqs, len(ops))
		t0 := time.Now()
		res, err := b.be.rawTransact(ctx, ops)
		latency := time.Since(t0)
		if err != nil {
			var ve *errValidation
			if errors.As(err, &ve) {
				b.observe(span, len(reqs), len(ops), latency, OutcomeNotSent)
				if len(reqs) == 1 {
					reqs[0].answer(Result{}, &RequestError{Index: -1, Err: err})
					return
				}
				b.split(ctx, reqs)
				return
			}
			out := OutcomeUnknown
			if errors.Is(err, ErrNotReady) {
				out = OutcomeNotSent
			}
			b.observe(span, len(reqs), len(ops), latency, out)
			for _, r := range reqs {
				r.answer(Result{}, err)
			}
			return
		}
		_, cerr := ovsdb.CheckOperationResults(res, ops)
		if cerr == nil {
			b.observe(span, len(reqs), len(ops), latency, OutcomeCommitted)
			for i, r := range reqs {
				r.answer(pl.resultFor(i, r, res), nil)
			}
			return
		}
		idx := firstError(res)
		switch {
		case idx < 0 || len(res) < len(ops):
			// Not a shape the protocol allows; do not guess.
			b.observe(span, len(reqs), len(ops), latency, OutcomeUnknown)
			for _, r := range reqs {
				r.answer(Result{}, fmt.Errorf("%w: malformed reply: %w", ErrOutcomeUnknown, cerr))
			}
			return
		case b.cfg.Fence != nil && idx == 0:
			// The fence failed: the whole transaction aborted and every
			// request in it is equally stale. Splitting would not help.
			b.observe(span, len(reqs), len(ops), latency, OutcomeStaleEpoch)
			stale := &StaleEpochError{Shard: b.cfg.Fence.Shard, Epoch: b.cfg.Fence.Epoch}
			for _, r := range reqs {
				r.answer(Result{}, stale)
			}
			return
		case idx < len(ops) && pl.owner[idx] >= 0:
			b.observe(span, len(reqs), len(ops), latency, OutcomeRequestError)
			k := pl.owner[idx]
			var opErr error = fmt.Errorf("%s: %s", res[idx].Error, res[idx].Details)
			if errs, _ := ovsdb.CheckOperationResults(res[idx:idx+1], ops[idx:idx+1]); len(errs) > 0 {
				opErr = errs[0]
			}
			op := ops[idx]
			reqs[k].answer(Result{}, &RequestError{Index: pl.indexIn(k, idx), Op: &op, Err: opErr})
			reqs = append(reqs[:k:k], reqs[k+1:]...)
		default:
			// A commit error, or an error in an op merged from several
			// requests: no single request is named.
			b.observe(span, len(reqs), len(ops), latency, OutcomeCommitError)
			if len(reqs) == 1 {
				reqs[0].answer(Result{}, &RequestError{Index: -1, Err: cerr})
				return
			}
			b.split(ctx, reqs)
			return
		}
	}
}

func (b *Batcher) split(ctx context.Context, reqs []*request) {
	b.cfg.Metrics.ObserveSplit(b.shard)
	h := len(reqs) / 2
	b.try(ctx, reqs[:h:h])
	b.try(ctx, reqs[h:])
}

// plan is one transaction built from several requests.
type plan struct {
	ops []ovsdb.Operation
	// pos[k][j] is the index in ops of request k's op j (an op merged or
	// deduplicated with others maps to the shared op).
	pos [][]int
	// owner[i] is the request that alone owns ops[i], ownerFence for the
	// fence, ownerShared for an op merged from several requests.
	owner []int
}

const (
	ownerFence  = -1
	ownerShared = -2
)

// mergeKey identifies a set-insert mutation on one row's column.
type mergeKey struct{ table, uuid, column string }

// assemble concatenates the requests' ops behind the fence, with two
// rewrites that keep each request's effect and make the transaction much
// cheaper for the server:
//   - set-insert mutations of one row's column by _uuid (a switch's ports,
//     a router's routes) are merged into one mutation at the end of the
//     transaction. Every request inserting a port into a switch would
//     otherwise make the server copy the switch's whole port set once per
//     request. The merged insert runs after the request's other ops, which
//     is safe for what the builders emit (an insert of a new row, then the
//     reference to it);
//   - identical existence waits on a row (waitExists) are kept once, at the
//     first request's position.
func (b *Batcher) assemble(reqs []*request) (*plan, error) {
	n := 0
	for _, r := range reqs {
		n += len(r.ops)
	}
	pl := &plan{ops: make([]ovsdb.Operation, 0, n+1), pos: make([][]int, len(reqs)), owner: make([]int, 0, n+1)}
	if b.cfg.Fence != nil {
		f, err := b.be.fenceOp(*b.cfg.Fence)
		if err != nil {
			return nil, err
		}
		pl.ops = append(pl.ops, f)
		pl.owner = append(pl.owner, ownerFence)
	}
	type merged struct {
		elems  []any
		seen   map[any]struct{}
		owners []int // requests whose ops went into it
		refs   [][2]int
	}
	var order []mergeKey
	merges := map[mergeKey]*merged{}
	waits := map[mergeKey]int{}
	for k, r := range reqs {
		pl.pos[k] = make([]int, len(r.ops))
		for j, op := range r.ops {
			if key, elems, ok := setInsert(op); ok {
				m := merges[key]
				if m == nil {
					m = &merged{seen: map[any]struct{}{}}
					merges[key] = m
					order = append(order, key)
				}
				for _, e := range elems {
					if _, dup := m.seen[e]; !dup {
						m.seen[e] = struct{}{}
						m.elems = append(m.elems, e)
					}
				}
				if len(m.owners) == 0 || m.owners[len(m.owners)-1] != k {
					m.owners = append(m.owners, k)
				}
				m.refs = append(m.refs, [2]int{k, j})
				continue
			}
			if key, ok := existenceWait(op); ok {
				if i, dup := waits[key]; dup {
					pl.pos[k][j] = i
					if pl.owner[i] != k {
						pl.owner[i] = ownerShared
					}
					continue
				}
				waits[key] = len(pl.ops)
			}
			pl.pos[k][j] = len(pl.ops)
			pl.ops = append(pl.ops, op)
			pl.owner = append(pl.owner, k)
		}
	}
	for _, key := range order {
		m := merges[key]
		i := len(pl.ops)
		pl.ops = append(pl.ops, ovsdb.Operation{
			Op: ovsdb.OperationMutate, Table: key.table, Where: uuidWhere(key.uuid),
			Mutations: []ovsdb.Mutation{{Column: key.column, Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsSet{GoSet: m.elems}}},
		})
		owner := ownerShared
		if len(m.owners) == 1 {
			owner = m.owners[0]
		}
		pl.owner = append(pl.owner, owner)
		for _, ref := range m.refs {
			pl.pos[ref[0]][ref[1]] = i
		}
	}
	return pl, nil
}

// setInsert recognises a mutation that only inserts elements into a set
// column of one row named by UUID.
func setInsert(op ovsdb.Operation) (mergeKey, []any, bool) {
	if op.Op != ovsdb.OperationMutate || len(op.Where) != 1 || len(op.Mutations) != 1 {
		return mergeKey{}, nil, false
	}
	w, m := op.Where[0], op.Mutations[0]
	u, ok := w.Value.(ovsdb.UUID)
	if !ok || w.Column != "_uuid" || w.Function != ovsdb.ConditionEqual || !ovsdb.IsValidUUID(u.GoUUID) || m.Mutator != ovsdb.MutateOperationInsert {
		return mergeKey{}, nil, false
	}
	set, ok := m.Value.(ovsdb.OvsSet)
	if !ok {
		return mergeKey{}, nil, false
	}
	for _, e := range set.GoSet {
		switch e.(type) {
		case ovsdb.UUID, string:
		default:
			return mergeKey{}, nil, false
		}
	}
	return mergeKey{op.Table, u.GoUUID, m.Column}, set.GoSet, true
}

// existenceWait recognises the op waitExists builds.
func existenceWait(op ovsdb.Operation) (mergeKey, bool) {
	if op.Op != ovsdb.OperationWait || len(op.Where) != 1 || op.Until != string(ovsdb.WaitConditionEqual) ||
		len(op.Rows) != 1 || len(op.Columns) != 1 || op.Columns[0] != "_uuid" || op.Timeout == nil || *op.Timeout != 0 {
		return mergeKey{}, false
	}
	w := op.Where[0]
	u, ok := w.Value.(ovsdb.UUID)
	if !ok || w.Column != "_uuid" || w.Function != ovsdb.ConditionEqual {
		return mergeKey{}, false
	}
	if r, ok := op.Rows[0]["_uuid"].(ovsdb.UUID); !ok || r != u || len(op.Rows[0]) != 1 {
		return mergeKey{}, false
	}
	return mergeKey{table: op.Table, uuid: u.GoUUID}, true
}

// indexIn returns the position within request k of the op at index i.
func (pl *plan) indexIn(k, i int) int {
	for j, p := range pl.pos[k] {
		if p == i {
			return j
		}
	}
	return -1
}

// resultFor gives request k its results, in its own op order.
func (pl *plan) resultFor(k int, r *request, res []ovsdb.OperationResult) Result {
	out := Result{Ops: make([]ovsdb.OperationResult, len(r.ops))}
	for j, op := range r.ops {
		out.Ops[j] = res[pl.pos[k][j]]
		if op.UUIDName != "" {
			if out.UUIDs == nil {
				out.UUIDs = make(map[string]string)
			}
			out.UUIDs[op.UUIDName] = out.Ops[j].UUID.GoUUID
		}
	}
	return out
}

func firstError(res []ovsdb.OperationResult) int {
	for i, r := range res {
		if r.Error != "" {
			return i
		}
	}
	return -1
}
