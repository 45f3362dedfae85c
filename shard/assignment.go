package shard

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Entry is the assignment of one shard.
type Entry struct {
	// Owner is the member that runs the shard, or "" when no member is ready.
	Owner string `json:"o,omitempty"`
	// Inc is the owner's incarnation (its process start) when it got the
	// shard. A restarted owner gets a new term, so that a leftover process
	// of the old incarnation is fenced by the epoch.
	Inc string `json:"i,omitempty"`
	// Epoch grows by one every time Owner changes and never goes back, so
	// a (shard, epoch) pair names one ownership term. The Northbound fence
	// is built on it.
	Epoch uint64 `json:"e"`
	// Gen is the table generation in which Owner last changed. A member
	// acknowledges a release only by reporting a generation at least Gen.
	Gen uint64 `json:"g,omitempty"`
	// Pending lists (sorted) the members that may still run the shard under
	// an older term. Owner may start only when Pending is empty.
	Pending []string `json:"p,omitempty"`
}

// Active reports whether Owner may run the shard now.
func (e Entry) Active() bool { return e.Owner != "" && len(e.Pending) == 0 }

// Assignment is the whole table, written by the leader only. It is one
// object whatever the number of shards, so coordination writes do not grow
// with S.
type Assignment struct {
	// Generation grows by one on every write of the table.
	Generation uint64 `json:"generation"`
	// Shards has exactly one entry per shard.
	Shards []Entry `json:"shards"`
	// Members are the alive members (sorted), leaving ones and those gone
	// less than a lease duration ago included, as of the last step with a
	// ready member, plus those seen since while
	// none was ready: after every replica stopped, the ones a new leader
	// waits for before its first assignment (Config.FirstAssignmentWait).
	// Tables written before this field have none, and no wait.
	Members []string `json:"m,omitempty"`
}

// NewAssignment returns the empty table for shards shards: no owners,
// epoch 0, generation 0.
func NewAssignment(shards int) *Assignment {
	return &Assignment{Shards: make([]Entry, shards)}
}

// Clone returns a deep copy.
func (a *Assignment) Clone() *Assignment {
	out := &Assignment{Generation: a.Generation, Shards: make([]Entry, len(a.Shards)), Members: slices.Clone(a.Members)}
	for i, e := range a.Shards {
		e.Pending = slices.Clone(e.Pending)
		out.Shards[i] = e
	}
	return out
}

// Runnable returns the shards member may run, with their epochs: it owns
// them and nobody is pending on them.
func (a *Assignment) Runnable(member string) map[int]uint64 {
	out := map[int]uint64{}
	for s, e := range a.Shards {
		if e.Owner == member && e.Active() {
			out[s] = e.Epoch
		}
	}
	return out
}

// AwaitsAck reports whether some entry waits on member for a generation
// newer than reported, i.e. whether member has to write its Lease so that a
// handoff can go on.
func (a *Assignment) AwaitsAck(member string, reported uint64) bool {
	for _, e := range a.Shards {
		if e.Gen > reported && slices.Contains(e.Pending, member) {
			return true
		}
	}
	return false
}

// Owners counts the shards per owner ("" for unowned).
func (a *Assignment) Owners() map[string]int {
	out := map[string]int{}
	for _, e := range a.Shards {
		out[e.Owner]++
	}
	return out
}

// Marshal encodes the table for the assignment ConfigMap.
func (a *Assignment) Marshal() (string, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return "", fmt.Errorf("encoding assignment: %w", err)
	}
	return string(b), nil
}

// ErrShardCount is returned by UnmarshalAssignment when the stored table was
// written for another number of shards; the shard count is fixed for a
// cluster, so this is a configuration error that retrying does not fix.
var ErrShardCount = errors.New("assignment has a different shard count")

// UnmarshalAssignment decodes a table written by Marshal and checks that it
// has shards entries.
func UnmarshalAssignment(text string, shards int) (*Assignment, error) {
	a := &Assignment{}
	if err := json.Unmarshal([]byte(text), a); err != nil {
		return nil, fmt.Errorf("decoding assignment: %w", err)
	}
	if len(a.Shards) != shards {
		return nil, fmt.Errorf("decoding assignment: %d entries, want %d: %w", len(a.Shards), shards, ErrShardCount)
	}
	return a, nil
}

// String renders the table one line per owner, for logs and golden files:
// "a: 0-3,7 | b: 4-6 (pending 5:[a])".
func (a *Assignment) String() string {
	byOwner := map[string][]int{}
	var pend []string
	for s, e := range a.Shards {
		byOwner[e.Owner] = append(byOwner[e.Owner], s)
		if len(e.Pending) > 0 {
			pend = append(pend, fmt.Sprintf("%d:[%s]", s, strings.Join(e.Pending, ",")))
		}
	}
	owners := make([]string, 0, len(byOwner))
	for o := range byOwner {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	var parts []string
	for _, o := range owners {
		name := o
		if name == "" {
			name = "-"
		}
		parts = append(parts, fmt.Sprintf("%s: %s", name, FormatRanges(byOwner[o])))
	}
	out := fmt.Sprintf("gen %d | %s", a.Generation, strings.Join(parts, " | "))
	if len(pend) > 0 {
		out += " | pending " + strings.Join(pend, " ")
	}
	return out
}
