package shard

import (
	"flag"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardnet/shardnet/internal/golden"

	clocktesting "k8s.io/utils/clock/testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden scenario files under testdata/")

// simMember models one replica as the protocol sees it: what it really runs
// (running, draining) and what its Lease reports to the leader.
type simMember struct {
	name      string
	renewing  bool
	lastRenew time.Time // member-side: last successful renew
	leaving   bool
	deleted   bool
	slow      bool // releases stay in draining until "fast"
	inc       int  // incarnation: bumped by "restart"

	running  map[int]uint64 // shard -> epoch it runs or drains
	draining Set            // shards of running being drained
	seen     uint64         // generation processed
	// unreported: running changed since the last report (a late Lease
	// write); the next sync reports.
	unreported bool

	// What the Lease says, and when the leader last saw it change.
	rep      Member
	lastSeen time.Time
}

type sim struct {
	t       *testing.T
	clock   *clocktesting.FakeClock
	planner *Planner
	renew   time.Duration // renew deadline: a member that has not renewed for this long stops
	table   *Assignment
	history []*Assignment // every table written, oldest first
	members map[string]*simMember
}

func newSim(t *testing.T, shards int, lease, renew time.Duration) *sim {
	p, err := NewPlanner(shards, lease)
	if err != nil {
		t.Fatal(err)
	}
	return &sim{
		t:       t,
		clock:   clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		planner: p,
		renew:   renew,
		table:   NewAssignment(shards),
		members: map[string]*simMember{},
	}
}

func (s *sim) names(args []string) []string {
	if len(args) == 0 {
		out := slices.Collect(maps.Keys(s.members))
		slices.Sort(out)
		return out
	}
	return args
}

func (s *sim) member(name string) *simMember {
	m, ok := s.members[name]
	if !ok {
		s.t.Fatalf("unknown member %q", name)
	}
	return m
}

// report is a Lease write by m; the leader sees it at once.
func (s *sim) report(m *simMember) {
	held := Set{}
	for sh := range m.running {
		held[sh] = struct{}{}
	}
	m.rep = Member{Name: m.name, Incarnation: fmt.Sprint(m.inc), Seen: m.seen, Held: held, Leaving: m.leaving, Deleted: m.deleted}
	m.lastSeen = s.clock.Now()
}

func (s *sim) observed() []Member {
	var out []Member
	for _, name := range s.names(nil) {
		m := s.members[name]
		rep := m.rep
		rep.LastSeen = m.lastSeen
		out = append(out, rep)
	}
	return out
}

func (s *sim) run(cmd string, args []string) string {
	var out []string
	now := s.clock.Now()
	switch cmd {
	case "join":
		for _, n := range args {
			m := &simMember{name: n, renewing: true, lastRenew: now, running: map[int]uint64{}, draining: Set{}, seen: s.table.Generation, inc: 1}
			s.members[n] = m
			s.report(m)
		}
	case "tick":
		d, err := time.ParseDuration(args[0])
		if err != nil {
			s.t.Fatal(err)
		}
		s.clock.Step(d)
		now = s.clock.Now()
		for _, n := range s.names(nil) {
			m := s.members[n]
			if m.renewing && !m.deleted {
				m.lastRenew = now
				m.lastSeen = now
				continue
			}
			if len(m.running) > 0 && now.Sub(m.lastRenew) >= s.renew {
				out = append(out, fmt.Sprintf("%s stops (renew deadline): %s", n, keys(m.running)))
				m.running = map[int]uint64{}
				m.draining = Set{}
			}
		}
	case "restart":
		// The process dies and a new one with the same identity starts at
		// once: it runs nothing and reports the table it read on start.
		for _, n := range args {
			m := s.member(n)
			m.running, m.draining, m.unreported = map[int]uint64{}, Set{}, false
			m.inc++
			m.renewing, m.deleted, m.leaving, m.slow = true, false, false, false
			m.lastRenew = now
			m.seen = s.table.Generation
			s.report(m)
		}
	case "crash":
		for _, n := range args {
			s.member(n).renewing = false
		}
	case "leave":
		for _, n := range args {
			m := s.member(n)
			m.leaving = true
			s.report(m)
		}
	case "delete":
		for _, n := range args {
			m := s.member(n)
			m.deleted, m.renewing = true, false
			s.report(m)
		}
	case "slow":
		for _, n := range args {
			s.member(n).slow = true
		}
	case "fast":
		for _, n := range args {
			s.member(n).slow = false
		}
	case "newleader":
		// A new leader has its own readings: it saw every Lease just now.
		for _, m := range s.members {
			m.lastSeen = now
		}
		out = append(out, "leader changed; table kept at gen "+fmt.Sprint(s.table.Generation))
	case "step":
		plan, err := s.planner.Step(s.table, s.observed(), now)
		if err != nil {
			s.t.Fatal(err)
		}
		if !plan.Changed {
			out = append(out, "no change")
			break
		}
		if len(plan.Moved) > 0 {
			out = append(out, fmt.Sprintf("moved %d: %s", len(plan.Moved), FormatRanges(plan.Moved)))
		}
		s.table = plan.Next
		s.history = append(s.history, plan.Next)
		out = append(out, s.table.String())
	case "sync":
		for _, n := range s.names(args) {
			m := s.member(n)
			if !m.renewing || m.deleted {
				continue
			}
			out = append(out, s.sync(m)...)
		}
	case "table":
		out = append(out, s.table.String())
		for _, e := range s.epochs() {
			out = append(out, e)
		}
	default:
		s.t.Fatalf("unknown command %q", cmd)
	}
	s.checkInvariants()
	if len(out) == 0 {
		return "ok"
	}
	return strings.Join(out, "\n")
}

// sync is a member processing the latest table: it releases what it may no
// longer run, finishes drains unless slow, acquires what is runnable, and
// reports when anything changed or the leader waits on it.
func (s *sim) sync(m *simMember) []string {
	return s.syncWith(m, s.table, true)
}

// syncWith is sync against table, which may be older than the latest one
// (a member's watch of the table can lag behind the leader's writes); with
// report false its Lease write is late, left for its next sync.
func (s *sim) syncWith(m *simMember, table *Assignment, report bool) []string {
	runnable := table.Runnable(m.name)
	var released, draining, acquired []int
	for sh, ep := range m.running {
		if want, ok := runnable[sh]; ok && want == ep {
			continue
		}
		if m.slow {
			if !m.draining.Has(sh) {
				m.draining[sh] = struct{}{}
				draining = append(draining, sh)
			}
			continue
		}
		delete(m.running, sh)
		delete(m.draining, sh)
		released = append(released, sh)
	}
	for sh, ep := range runnable {
		if _, busy := m.running[sh]; busy {
			continue
		}
		m.running[sh] = ep
		acquired = append(acquired, sh)
	}
	reported := m.rep.Seen
	m.seen = table.Generation
	changed := len(released)+len(acquired) > 0
	switch {
	case !report:
		// The Lease write has not landed yet: the leader still sees the
		// last report, which may leave out what the member now runs.
		m.unreported = m.unreported || changed
	case changed || m.unreported || table.AwaitsAck(m.name, reported):
		s.report(m)
		m.unreported = false
	}
	var out []string
	if len(released) > 0 {
		slices.Sort(released)
		out = append(out, fmt.Sprintf("%s released %s", m.name, FormatRanges(released)))
	}
	if len(draining) > 0 {
		slices.Sort(draining)
		out = append(out, fmt.Sprintf("%s draining %s", m.name, FormatRanges(draining)))
	}
	if len(acquired) > 0 {
		slices.Sort(acquired)
		out = append(out, fmt.Sprintf("%s acquired %s", m.name, FormatRanges(acquired)))
	}
	return out
}

func (s *sim) epochs() []string {
	var out []string
	for sh, e := range s.table.Shards {
		out = append(out, fmt.Sprintf("  %d: owner=%s epoch=%d gen=%d", sh, orDash(e.Owner), e.Epoch, e.Gen))
	}
	return out
}

// checkInvariants fails the test when two members run one shard, or a
// member runs a shard at an epoch the table never gave it.
func (s *sim) checkInvariants() {
	s.t.Helper()
	holders := map[int][]string{}
	for _, n := range s.names(nil) {
		m := s.members[n]
		for sh, ep := range m.running {
			holders[sh] = append(holders[sh], n)
			if ep > s.table.Shards[sh].Epoch {
				s.t.Fatalf("%s runs shard %d at epoch %d, table is at %d", n, sh, ep, s.table.Shards[sh].Epoch)
			}
		}
	}
	for sh, hs := range holders {
		if len(hs) > 1 {
			s.t.Fatalf("shard %d is run by %v at once", sh, hs)
		}
	}
}

func keys(m map[int]uint64) string {
	return FormatRanges(slices.Sorted(maps.Keys(m)))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// TestScenarios replays testdata/*.txt. Each block is a command line, a
// "----" line and the expected output; -rewrite regenerates the outputs. The
// first line of a file configures the simulation: "shards=8 lease=10s renew=7s".
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScenario(t, file)
		})
	}
}

func runScenario(t *testing.T, file string) {
	golden.Run(t, file, *rewrite, func(header string) golden.Runner {
		var shards int
		var lease, renew time.Duration
		var err error
		for _, f := range strings.Fields(header) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "shards":
				shards, err = strconv.Atoi(v)
			case "lease":
				lease, err = time.ParseDuration(v)
			case "renew":
				renew, err = time.ParseDuration(v)
			}
			if err != nil {
				t.Fatalf("%s: bad header %q: %v", file, header, err)
			}
		}
		if shards <= 0 || lease <= 0 || renew <= 0 || renew >= lease {
			t.Fatalf("%s: header %q needs shards, lease and renew < lease", file, header)
		}
		return newSim(t, shards, lease, renew).run
	})
}
