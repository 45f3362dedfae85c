package controller

import (
	"runtime"
	"slices"
	"testing"
)

// TestRoomyPass: a pass runs after a collection only when the live heap is
// at least the floor and the goal has less room than twice what the
// pass allocated last time (or none: a collection marking); the first
// pass, a small heap and a goal with room run it as it is. What each pass
// allocated is what the next one needs.
func TestRoomyPass(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name    string
		last    uint64 // what the pass before allocated
		heap    heapState
		collect bool
	}{
		{"first pass", 0, heapState{live: 200 * mib, inUse: 390 * mib, goal: 400 * mib}, false},
		{"under the floor", 30 * mib, heapState{live: 10 * mib, inUse: 19 * mib, goal: 20 * mib}, false},
		{"room for it", 30 * mib, heapState{live: 200 * mib, inUse: 300 * mib, goal: 400 * mib}, false},
		{"room for it once only", 30 * mib, heapState{live: 200 * mib, inUse: 350 * mib, goal: 400 * mib}, true},
		{"marking, past the goal", 30 * mib, heapState{live: 200 * mib, inUse: 410 * mib, goal: 400 * mib}, true},
		{"goal unknown", 30 * mib, heapState{live: 200 * mib, inUse: 390 * mib}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var events []string
			heap := tc.heap
			p := &roomyPass{what: "test", floor: BurstHeapFloor, last: tc.last,
				read:    func() heapState { return heap },
				collect: func() { events = append(events, "collect") },
			}
			p.run(func() {
				events = append(events, "pass")
				heap.allocated += 7 * mib
			})
			want := []string{"pass"}
			if tc.collect {
				want = []string{"collect", "pass"}
			}
			if !slices.Equal(events, want) {
				t.Errorf("ran %v, want %v", events, want)
			}
			if p.last != 7*mib {
				t.Errorf("the pass's garbage read %d bytes, want %d", p.last, 7*mib)
			}
		})
	}
}

// TestReadHeap: the runtime has every metric roomyPass reads, so none
// reads as 0 in a running process.
func TestReadHeap(t *testing.T) {
	runtime.GC() // the live heap is a collection's
	h := readHeap()
	if h.live == 0 || h.inUse == 0 || h.goal == 0 || h.allocated == 0 {
		t.Fatalf("readHeap() = %+v: a metric is missing", h)
	}
	buf := make([]byte, 1<<20)
	if after := readHeap(); after.allocated < h.allocated+uint64(len(buf)) {
		t.Errorf("allocated %d after 1 MiB more, from %d", after.allocated, h.allocated)
	}
	_ = buf[0]
}
