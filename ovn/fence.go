package ovn

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// Fence names the owner epoch that a shard's writes are valid for. The epoch
// of a shard is recorded in NB_Global.external_ids under EpochKey(shard);
// every transaction a fenced Batcher sends starts with a wait op that aborts
// it unless that key holds exactly Epoch.
type Fence struct {
	Shard int
	Epoch uint64
}

// LeaderShard is the shard number of the leader's own writes (switches,
// router ports, port groups of the subnet reconciler): its epoch is the
// leadership term, recorded by the leader with TakeOver(LeaderShard, term)
// when its term starts, so that a deposed leader's writes fail as a lost
// shard's do.
const LeaderShard = -1

// EpochKey is the NB_Global external_ids key holding a shard's epoch
// ("shardnet-leader-term" for LeaderShard).
func EpochKey(shard int) string {
	if shard == LeaderShard {
		return "shardnet-leader-term"
	}
	return "shardnet-epoch-" + strconv.Itoa(shard)
}

// TransactFenced sends ops in one transaction that commits only while f
// holds: a *StaleEpochError when another owner recorded a newer epoch (or
// the cache has no NB_Global row yet), otherwise as Transact.
func (c *Client) TransactFenced(ctx context.Context, f Fence, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	w, err := c.fenceOp(f)
	if err != nil {
		return nil, err
	}
	all := append([]ovsdb.Operation{w}, ops...)
	res, err := c.rawTransact(ctx, all)
	if err != nil {
		return nil, err
	}
	if len(res) > 0 && res[0].Error != "" {
		return nil, &StaleEpochError{Shard: f.Shard, Epoch: f.Epoch}
	}
	if errs, err := ovsdb.CheckOperationResults(res, all); err != nil {
		if len(errs) > 0 {
			err = errs[0]
		}
		return res[1:], fmt.Errorf("ovn: transaction: %s: %w", describeOpErrors(res[1:], ops), err)
	}
	return res[1:], nil
}

// Epoch returns the epoch recorded for shard, as the cache has it.
func (c *Client) Epoch(shard int) (uint64, bool) {
	g, ok := c.global()
	if !ok {
		return 0, false
	}
	return parseEpoch(g.ExternalIDs[EpochKey(shard)])
}

func parseEpoch(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	e, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return e, true
}

// fenceOp builds the wait op that holds only while the shard's recorded epoch
// equals f.Epoch (pairHolds).
func (c *Client) fenceOp(f Fence) (ovsdb.Operation, error) {
	g, ok := c.global()
	if !ok {
		return ovsdb.Operation{}, &StaleEpochError{Shard: f.Shard, Epoch: f.Epoch}
	}
	return pairHolds(g.UUID, EpochKey(f.Shard), strconv.FormatUint(f.Epoch, 10)), nil
}

// TakeOver records epoch as the owner epoch of shard, after which fenced
// batches carrying any other epoch for the shard fail with ErrStaleEpoch.
//
// Epochs only grow: TakeOver returns a *StaleEpochError when a higher epoch
// is already recorded, and nil without writing when epoch itself is (so a
// retry after a lost reply is safe). The write is a compare-and-swap on the
// shard's own pair of NB_Global.external_ids (a wait that the pair still
// holds the value read, then a mutation of that key alone; a key not yet
// recorded is inserted by a mutation that never replaces one, then checked),
// so take-overs of other shards neither lose each other's epochs nor make
// each other retry: a whole replica's shards, or every shard after a
// restart, are taken over at once. A lost race on the same shard is
// retried against the fresh cache, a bounded number of times.
//
// TakeOver creates the NB_Global row when the database has none.
func (c *Client) TakeOver(ctx context.Context, shard int, epoch uint64) error {
	if epoch == 0 {
		return errors.New("ovn: epoch 0 is reserved for \"none recorded\"")
	}
	key, val := EpochKey(shard), strconv.FormatUint(epoch, 10)
	const attempts = 20
	for attempt := 0; attempt < attempts; attempt++ {
		if err := c.WaitReady(ctx); err != nil {
			return fmt.Errorf("ovn: taking over shard %d: %w", shard, err)
		}
		var ops []ovsdb.Operation
		g, ok := c.global()
		if !ok {
			// NB_Global has maxRows 1, so of two racing inserts one fails.
			ops = []ovsdb.Operation{{
				Op:    ovsdb.OperationInsert,
				Table: nbdb.NBGlobalTable,
				Row:   ovsdb.Row{"external_ids": ovsdb.OvsMap{GoMap: map[any]any{key: val}}},
			}}
		} else {
			raw, present := g.ExternalIDs[key]
			cur, has := parseEpoch(raw)
			switch {
			case has && cur == epoch:
				return nil
			case has && cur > epoch:
				return &StaleEpochError{Shard: shard, Epoch: epoch, Recorded: cur}
			}
			mutate := func(ms ...ovsdb.Mutation) ovsdb.Operation {
				return ovsdb.Operation{
					Op: ovsdb.OperationMutate, Table: nbdb.NBGlobalTable, Mutations: ms,
					Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: g.UUID}}},
				}
			}
			insert := ovsdb.Mutation{Column: "external_ids", Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsMap{GoMap: map[any]any{key: val}}}
			if present {
				// Compare-and-swap on this shard's pair alone.
				remove := ovsdb.Mutation{Column: "external_ids", Mutator: ovsdb.MutateOperationDelete, Value: ovsdb.OvsSet{GoSet: []any{key}}}
				ops = []ovsdb.Operation{pairHolds(g.UUID, key, raw), mutate(remove, insert)}
			} else {
				// An insert mutation never replaces a key: when another
				// owner's epoch got there first it stays, and the wait
				// after the insert fails the transaction.
				ops = []ovsdb.Operation{mutate(insert), pairHolds(g.UUID, key, val)}
			}
		}
		res, err := c.rawTransact(ctx, ops)
		if err == nil {
			if _, err = ovsdb.CheckOperationResults(res, ops); err == nil {
				return nil
			}
			// Lost the compare-and-swap (or the insert race): the cache
			// will show the winner shortly.
		} else if !errors.Is(err, ErrOutcomeUnknown) && !errors.Is(err, ErrNotReady) {
			return fmt.Errorf("ovn: taking over shard %d: %w", shard, err)
		}
		delay := time.Duration(attempt+1) * 10 * time.Millisecond
		select {
		case <-ctx.Done():
			return fmt.Errorf("ovn: taking over shard %d: %w", shard, ctx.Err())
		case <-time.After(delay):
		}
	}
	return fmt.Errorf("ovn: taking over shard %d: compare-and-swap lost %d times", shard, attempts)
}

// pairHolds is the wait op that holds only while NB_Global's external_ids
// have key=value. Timeout 0 makes the server abort the whole transaction
// at once (error "timed out") instead of waiting for the value to come
// back. The wait selects the NB_Global rows whose external_ids include the
// pair and expects exactly the one row uuid: it passes iff the pair is
// present.
func pairHolds(uuid, key, value string) ovsdb.Operation {
	zero := 0
	return ovsdb.Operation{
		Op:      ovsdb.OperationWait,
		Table:   nbdb.NBGlobalTable,
		Timeout: &zero,
		Where: []ovsdb.Condition{{
			Column:   "external_ids",
			Function: ovsdb.ConditionIncludes,
			Value:    ovsdb.OvsMap{GoMap: map[any]any{key: value}},
		}},
		Columns: []string{"_uuid"},
		Until:   string(ovsdb.WaitConditionEqual),
		Rows:    []ovsdb.Row{{"_uuid": ovsdb.UUID{GoUUID: uuid}}},
	}
}

func toOvsMap(m map[string]string) ovsdb.OvsMap {
	gm := make(map[any]any, len(m))
	for k, v := range m {
		gm[k] = v
	}
	return ovsdb.OvsMap{GoMap: gm}
}
