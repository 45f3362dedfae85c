package shard

import (
	"fmt"
	"slices"
	"time"
)

// Member is what the leader knows about one replica, taken from its member
// Lease.
type Member struct {
	// Name is the replica's identity (its pod name).
	Name string
	// Incarnation changes every time the replica's process starts.
	Incarnation string
	// LastSeen is the leader's own clock reading when it last saw the Lease
	// change. Only local readings are compared, so clock skew between
	// replicas does not matter (the same rule as client-go's election).
	LastSeen time.Time
	// Seen is the table generation the member reports having processed.
	Seen uint64
	// Held lists the shards the member runs or is still draining, as of Seen.
	Held Set
	// Leaving is set by a member that shuts down: it gets no new shards and
	// hands its own over.
	Leaving bool
	// Deleted is set once the Lease is gone. The last state seen still counts
	// until the lease duration has passed since LastSeen.
	Deleted bool
}

// Planner computes the next assignment table from the previous one and what
// the leader observes. It holds no state besides its configuration, so a new
// leader continues a handoff its predecessor began from the stored table
// alone. It starts no goroutines and reads no clock: time is an argument.
type Planner struct {
	// Shards is S, the number of virtual shards.
	Shards int
	// LeaseDuration is how long after LastSeen a member counts as alive.
	LeaseDuration time.Duration
}

// Plan is the result of one Step.
type Plan struct {
	// Next is the new table; it equals the input when Changed is false.
	Next *Assignment
	// Changed reports whether Next must be written.
	Changed bool
	// Moved lists the shards whose Owner changed in this step.
	Moved []int
	// Wake is when a member may expire and Step should run again even if
	// nothing else happens; zero when no member is alive.
	Wake time.Time
}

// NewPlanner checks the configuration.
func NewPlanner(shards int, leaseDuration time.Duration) (*Planner, error) {
	if shards <= 0 {
		return nil, fmt.Errorf("shards must be positive, got %d", shards)
	}
	if leaseDuration <= 0 {
		return nil, fmt.Errorf("lease duration must be positive, got %s", leaseDuration)
	}
	return &Planner{Shards: shards, LeaseDuration: leaseDuration}, nil
}

func (p *Planner) alive(m *Member, now time.Time) bool {
	return now.Before(m.LastSeen.Add(p.LeaseDuration))
}

// Step returns the table that follows prev (nil means the empty table) given
// the members observed at now. The rules, which keep invariant 4:
//   - ready members (alive, not leaving, not deleted) get the shards, with a
//     sticky, load-bounded rendezvous hash: a shard stays with its owner while
//     that owner is ready and within its quota of S/N shards, so a join or a
//     leave moves about S/N shards;
//   - an owner change, or a restart of the owner (a new incarnation), bumps
//     the epoch and makes the previous owner pending if
//     it may have started (the entry was active), keeping earlier pending
//     members; any alive non-owner that reports holding the shard is pending;
//   - a pending member drops out once it reports a generation at least the
//     entry's Gen without holding the shard (its acknowledgement), or once it
//     is no longer alive (its own renew deadline stopped it before that); a
//     member kept pending from before an owner change is owed the release of
//     the generation before it (the previous entry's Gen), so a report of
//     that one acknowledges it: a restarted process reports the table it
//     read on start and is not made to answer the move it has not seen yet;
//   - the table records the alive members (Members): leaving ones, and
//     those that deleted their Lease less than LeaseDuration ago, included;
//     while no member is ready it only adds to them, so a stop of every
//     replica leaves all of them recorded.
func (p *Planner) Step(prev *Assignment, members []Member, now time.Time) (Plan, error) {
	if prev == nil {
		prev = NewAssignment(p.Shards)
	}
	if len(prev.Shards) != p.Shards {
		return Plan{}, fmt.Errorf("planning: table has %d shards, want %d: %w", len(prev.Shards), p.Shards, ErrShardCount)
	}
	byName := make(map[string]*Member, len(members))
	incarnation := make(map[string]string, len(members))
	var ready, here []string
	var wake time.Time
	for i := range members {
		m := &members[i]
		byName[m.Name] = m
		incarnation[m.Name] = m.Incarnation
		if !p.alive(m, now) {
			continue
		}
		if exp := m.LastSeen.Add(p.LeaseDuration); wake.IsZero() || exp.Before(wake) {
			wake = exp
		}
		here = append(here, m.Name)
		if !m.Leaving && !m.Deleted {
			ready = append(ready, m.Name)
		}
	}
	slices.Sort(ready)

	gen := prev.Generation + 1
	next := prev.Clone()
	next.Generation = gen
	owners := p.owners(prev, ready)
	var moved []int
	changed := false
	// Members: every alive member, leaving ones and those whose Lease was
	// deleted less than a lease duration ago included, while some member
	// is ready; while none is (every replica stopping), the set only grows.
	// A replica that stopped a moment before the others is thus still
	// recorded when the last one goes.
	slices.Sort(here)
	if len(ready) > 0 {
		next.Members = here
	} else {
		for _, name := range here {
			next.Members = appendSorted(next.Members, name)
		}
	}
	changed = !slices.Equal(next.Members, prev.Members)
	for s := range next.Shards {
		e := &next.Shards[s]
		old := prev.Shards[s]
		target := owners[s]
		if target != old.Owner || (target != "" && incarnation[target] != old.Inc) {
			if old.Active() {
				e.Pending = appendSorted(e.Pending, old.Owner)
			}
			e.Owner = target
			e.Inc = ""
			if target != "" {
				e.Inc = incarnation[target]
			}
			e.Epoch = old.Epoch + 1
			e.Gen = gen
			moved = append(moved, s)
		}
		for _, m := range members {
			if m.Name != e.Owner && m.Held.Has(s) && p.alive(&m, now) {
				e.Pending = appendSorted(e.Pending, m.Name)
			}
		}
		e.Pending = slices.DeleteFunc(e.Pending, func(name string) bool {
			m, ok := byName[name]
			if !ok || !p.alive(m, now) {
				return true
			}
			// The generation it has to have seen: the entry's, or for a
			// member already pending before this step's owner change, the
			// one it was pending on (an active entry has no pending
			// member, so the previous owner added above is never one).
			gen := e.Gen
			if slices.Contains(old.Pending, name) {
				gen = old.Gen
			}
			return m.Seen >= gen && !m.Held.Has(s)
		})
		if len(e.Pending) == 0 {
			e.Pending = nil
		}
		if e.Owner != old.Owner || e.Epoch != old.Epoch || !slices.Equal(e.Pending, old.Pending) {
			changed = true
		}
	}
	if !changed {
		return Plan{Next: prev, Wake: wake}, nil
	}
	return Plan{Next: next, Changed: true, Moved: moved, Wake: wake}, nil
}

// owners picks the target owner of every shard. Each ready member gets a
// quota of S/N shards, the S%N largest current owners one more, so the load is
// exactly balanced. Current owners keep the shards they rank highest, up to
// their quota; the rest go, in shard order, to the highest-ranked ready
// member still under its quota. A join therefore moves only the newcomer's
// quota and a leave only the leaver's shards.
func (p *Planner) owners(prev *Assignment, ready []string) []string {
	out := make([]string, p.Shards)
	if len(ready) == 0 {
		return out
	}
	kept := make(map[string][]int, len(ready))
	for _, r := range ready {
		kept[r] = nil
	}
	for s, e := range prev.Shards {
		if list, ok := kept[e.Owner]; ok {
			kept[e.Owner] = append(list, s)
		}
	}
	byLoad := slices.Clone(ready)
	slices.SortStableFunc(byLoad, func(a, b string) int { return len(kept[b]) - len(kept[a]) })
	quota := make(map[string]int, len(ready))
	base, extra := p.Shards/len(ready), p.Shards%len(ready)
	for i, r := range byLoad {
		quota[r] = base
		if i < extra {
			quota[r]++
		}
	}
	count := make(map[string]int, len(ready))
	for owner, shards := range kept {
		slices.SortFunc(shards, func(a, b int) int {
			sa, sb := score(owner, a), score(owner, b)
			switch {
			case sa > sb:
				return -1
			case sa < sb:
				return 1
			}
			return a - b
		})
		if len(shards) > quota[owner] {
			shards = shards[:quota[owner]]
		}
		for _, s := range shards {
			out[s] = owner
		}
		count[owner] = len(shards)
	}
	for s := range out {
		if out[s] != "" {
			continue
		}
		best, bestScore := "", uint64(0)
		for _, r := range ready {
			if count[r] >= quota[r] {
				continue
			}
			if sc := score(r, s); best == "" || sc > bestScore {
				best, bestScore = r, sc
			}
		}
		out[s] = best
		count[best]++
	}
	return out
}

func appendSorted(list []string, name string) []string {
	i, found := slices.BinarySearch(list, name)
	if found {
		return list
	}
	return slices.Insert(list, i, name)
}
