package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardnet/shardnet/queue"
)

func TestSeedSync(t *testing.T) {
	fired := 0
	s := newSeedSync([]string{"ns/a", "ns/b"}, func(time.Duration) { fired++ })
	s.check()
	if fired != 0 {
		t.Fatal("synced with two keys pending")
	}
	h := s.handler(func(_ context.Context, key string) error {
		switch key {
		case "ns/b":
			return errors.New("northbound unreachable")
		case "ns/c":
			return nil
		}
		return nil
	})
	_ = h(context.Background(), "ns/a")
	_ = h(context.Background(), "ns/c") // not seeded: no effect
	_ = h(context.Background(), "ns/b") // fails: still pending
	if fired != 0 {
		t.Fatalf("synced while ns/b failed (fired %d)", fired)
	}
	s.done("ns/b", queue.Permanent(errors.New("bad annotation")))
	if fired != 1 {
		t.Fatalf("fired %d times after every seeded key ended, want 1", fired)
	}
	s.done("ns/a", nil)
	s.check()
	if fired != 1 {
		t.Fatalf("fired again (%d)", fired)
	}
	if !s.close() {
		t.Fatal("close: a synced term reports unsynced")
	}
}

func TestSeedSyncEmptyAndClosed(t *testing.T) {
	fired := 0
	empty := newSeedSync(nil, func(time.Duration) { fired++ })
	empty.check()
	if fired != 1 {
		t.Fatalf("a term seeded with no key: fired %d, want 1", fired)
	}
	s := newSeedSync([]string{"ns/a"}, func(time.Duration) { fired++ })
	if s.close() {
		t.Fatal("close: an unsynced term reports synced")
	}
	s.done("ns/a", nil)
	if fired != 1 {
		t.Fatal("a closed term fired")
	}
}
