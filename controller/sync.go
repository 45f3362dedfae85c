package controller

import (
	"context"
	"sync"
	"time"

	"github.com/shardnet/shardnet/queue"
)

// seedSync tracks the first pass over a shard term's seeded keys: the term
// is synced once every key it started with has been reconciled to an end
// (success, or an input error the pod's next update retries). Until then
// the shard still has work a restart or handoff left it; after, its queue
// holds only what events bring. A key that keeps failing keeps the term
// unsynced, which is the point: that work is pending. A key that waits on
// a person (queue.Waiting: an address another holder keeps) is done for
// this purpose.
type seedSync struct {
	start time.Time
	// onSynced runs once, when the last seeded key is done.
	onSynced func(took time.Duration)

	mu      sync.Mutex
	pending map[string]struct{}
	synced  bool
}

func newSeedSync(keys []string, onSynced func(time.Duration)) *seedSync {
	s := &seedSync{start: time.Now(), onSynced: onSynced, pending: make(map[string]struct{}, len(keys))}
	for _, k := range keys {
		s.pending[k] = struct{}{}
	}
	return s
}

// check fires onSynced if nothing is pending; call it once after seeding
// so that a term seeded with no key is synced at once.
func (s *seedSync) check() {
	s.mu.Lock()
	fire := !s.synced && len(s.pending) == 0
	if fire {
		s.synced = true
	}
	s.mu.Unlock()
	if fire {
		s.onSynced(time.Since(s.start))
	}
}

// done records the outcome of one reconcile of key.
func (s *seedSync) done(key string, err error) {
	if err != nil && !queue.IsPermanent(err) && !queue.IsWaiting(err) {
		return
	}
	s.mu.Lock()
	if s.synced {
		s.mu.Unlock()
		return
	}
	_, was := s.pending[key]
	delete(s.pending, key)
	s.mu.Unlock()
	if was {
		s.check()
	}
}

// close ends tracking when the term stops, so that onSynced cannot fire
// after it, and reports whether the term had synced.
func (s *seedSync) close() (wasSynced bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wasSynced = s.synced
	s.synced = true
	return wasSynced
}

// handler wraps h so that every outcome reaches the tracker.
func (s *seedSync) handler(h queue.Handler) queue.Handler {
	return func(ctx context.Context, key string) error {
		err := h(ctx, key)
		s.done(key, err)
		return err
	}
}
