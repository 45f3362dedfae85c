package shard

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
)

// electionLock is the leader Lease's lock as client-go's elector uses it,
// with two additions that keep a paused leader from acting on a stale view
// of the Lease once it runs again.
//
//   - It records when this elector last started a write that left the
//     Lease naming it (renewedAt): LeaderTerm fails once that is older
//     than the election's renew deadline, whatever the elector still
//     believes. The elector only learns it lost the Lease when its renew
//     loop fails, and that loop may take up to its renew deadline after
//     the resume to notice; the replica's own member Lease, renewed at
//     once, proves nothing about the election.
//   - It refuses a release (a write with no holder) unless the Lease it
//     last read still names this elector's term: the same holder and the
//     acquire time this elector wrote. client-go decides whether to
//     release from the record it observed before the pause, not from the
//     one it reads just before; without this check a resumed leader
//     cleared the Lease of its successor, and then took it back.
type electionLock struct {
	resourcelock.Interface
	clock clock.PassiveClock
	// renewedAt is shared with the Coordinator (UnixNano of the last
	// write's start, 0 when none counts).
	renewedAt *atomic.Int64

	mu sync.Mutex
	// read is the record the last Get returned.
	read *resourcelock.LeaderElectionRecord
	// acquired is the acquire time (µs) of the last record this elector
	// wrote naming itself, 0 before the first.
	acquired int64
}

func (l *electionLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, raw, err := l.Interface.Get(ctx)
	l.mu.Lock()
	if err == nil {
		l.read = r
	} else {
		l.read = nil
	}
	l.mu.Unlock()
	return r, raw, err
}

func (l *electionLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	start := l.clock.Now()
	err := l.Interface.Create(ctx, r)
	l.wrote(r, start, err)
	return err
}

func (l *electionLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if r.HolderIdentity == "" {
		// A release: whatever comes of it, this elector no longer counts
		// as renewed.
		l.renewedAt.Store(0)
		l.mu.Lock()
		read, acquired := l.read, l.acquired
		l.mu.Unlock()
		if read == nil || read.HolderIdentity != l.Identity() || acquired == 0 || read.AcquireTime.UnixMicro() != acquired {
			holder, since := "", "never read"
			if read != nil {
				holder, since = read.HolderIdentity, read.AcquireTime.UTC().String()
			}
			return fmt.Errorf("not releasing the leader Lease: it names %q acquired %s, not this elector's term", holder, since)
		}
	}
	start := l.clock.Now()
	err := l.Interface.Update(ctx, r)
	l.wrote(r, start, err)
	return err
}

// wrote records a write that left the Lease naming this elector.
func (l *electionLock) wrote(r resourcelock.LeaderElectionRecord, start time.Time, err error) {
	if err != nil || r.HolderIdentity != l.Identity() {
		return
	}
	l.mu.Lock()
	l.acquired = r.AcquireTime.UnixMicro()
	l.mu.Unlock()
	l.renewedAt.Store(start.UnixNano())
}
