package cache

import (
	"fmt"
	"math/rand"
	"testing"
)

// sets returns an index's values with their rows as sets, the form the
// tests state them in.
func (v valueToRows) sets() valueToUUIDs {
	out := make(valueToUUIDs, len(v))
	for k, rows := range v {
		out[k] = rows.set()
	}
	return out
}

// TestIndexRowsAgainstSets adds and removes UUIDs at random and checks
// that indexRows holds what a plain set holds, keeps one UUID inline
// (no set) and makes a set only for more than one.
func TestIndexRowsAgainstSets(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	uuids := []string{"a", "b", "c", "d"}
	for trial := 0; trial < 200; trial++ {
		var e indexRows
		want := uuidset{}
		for step := 0; step < 20; step++ {
			u := uuids[r.Intn(len(uuids))]
			if r.Intn(2) == 0 {
				e = e.with(u)
				want.add(u)
			} else {
				e = e.without(u)
				want.remove(u)
			}
			where := fmt.Sprintf("trial %d step %d", trial, step)
			if !e.set().equals(want) || e.len() != len(want) || e.empty() != (len(want) == 0) {
				t.Fatalf("%s: have %v, want %v", where, e.set(), want)
			}
			if (e.many != nil) != (len(want) > 1) {
				t.Fatalf("%s: %d UUIDs kept with a set %v", where, len(want), e.many)
			}
			for _, u := range uuids {
				if e.has(u) != want.has(u) || e.only(u) != (len(want) == 1 && want.has(u)) {
					t.Fatalf("%s: has/only %q wrong for %v", where, u, want)
				}
			}
			seen := uuidset{}
			e.each(func(u string) { seen.add(u) })
			if !seen.equals(want) || len(e.list()) != len(want) {
				t.Fatalf("%s: each %v, list %v, want %v", where, seen, e.list(), want)
			}
		}
	}
}
