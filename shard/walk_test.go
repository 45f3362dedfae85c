package shard

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestRandomWalks drives the simulation of the scenarios with random
// membership events (joins, restarts, crashes, leaves, deletions, slow
// drains, leader changes, clock steps) between planner steps and member
// syncs, some of them against an older table (a lagging watch) and with
// the Lease write late (the leader does not yet see what the member runs).
// The simulation checks after every command that no two members run one
// shard and that nobody runs an epoch the table never gave, so a planner
// rule that lets a new owner start too early fails here: dropping the
// acknowledgement's generation check, for members pending from before a
// move or for the previous owner, each fails within these walks. A failure
// prints the walk's commands.
func TestRandomWalks(t *testing.T) {
	walks, steps := 1000, 200
	if testing.Short() {
		walks = 100
	}
	for w := range walks {
		var log []string
		ok := t.Run(fmt.Sprintf("walk-%d", w), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			s := newSim(t, 8, 10*time.Second, 7*time.Second)
			do := func(cmd string, args ...string) {
				log = append(log, strings.Join(append([]string{cmd}, args...), " "))
				s.run(cmd, args)
			}
			pool := []string{"a", "b", "c", "d"}
			do("join", "a", "b")
			for range steps {
				n := pool[rng.IntN(len(pool))]
				m, known := s.members[n]
				switch r := rng.IntN(20); {
				case r < 5:
					do("step")
				case r < 10:
					do("sync")
				case r < 12:
					do("tick", []string{"1s", "3s", "8s"}[rng.IntN(3)])
				case r == 12 && !known:
					do("join", n)
				case r == 13 && known:
					do("restart", n)
				case r == 14 && known:
					do("crash", n)
				case r == 15 && known && !m.deleted:
					do("leave", n)
				case r == 16 && known && m.leaving && len(m.running) == 0:
					// A member deletes its Lease on the way out, once it
					// has handed every shard over.
					do("delete", n)
				case r == 17 && known:
					do("slow", n)
				case r == 18 && known:
					do("fast", n)
				case r == 19:
					do("newleader")
				case known && m.renewing && !m.deleted && rng.IntN(2) == 0:
					// The member's watch of the table lags: it acts on a
					// table at least as new as the last one it saw.
					var older []*Assignment
					for _, a := range s.history {
						if a.Generation >= m.seen {
							older = append(older, a)
						}
					}
					if len(older) == 0 {
						do("sync", n)
						break
					}
					a := older[rng.IntN(len(older))]
					late := rng.IntN(2) == 0
					log = append(log, fmt.Sprintf("# %s syncs against gen %d (report late: %v)", n, a.Generation, late))
					s.syncWith(m, a, !late)
					s.checkInvariants()
				case known:
					do("sync", n)
				default:
					do("step")
				}
			}
		})
		if !ok {
			t.Logf("walk-%d commands:\n%s", w, strings.Join(log, "\n"))
			return
		}
	}
}
