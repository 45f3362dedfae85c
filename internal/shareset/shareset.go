// Package shareset keeps one copy of each value that cached objects have
// in common: the label map of a ReplicaSet's pods or of a subnet's claims,
// an owner reference list, a node's host addresses, a sorted list of
// annotation names. The informers' transforms (package controller,
// podcache.Annotations) give each object the kept copy, and the one it was
// decoded with becomes garbage.
//
// A Set keeps at most the number of values it was made with: objects with
// values of their own (a StatefulSet pod's name label) would otherwise
// grow it without bound. When it holds that many and another value is to
// be kept, it forgets them all and starts over. Objects keep the values
// they already share; the values still in use come back with the next
// objects that have them, one more copy each, and values no object has any
// more (a ReplicaSet's pod-template-hash after a rollout) do not stop new
// ones from being shared.
//
// Sharing is safe because cached objects are read-only: every reader
// treats an informer's objects so, and a writer deep-copies first, as the
// informer contract asks. Nothing changes a kept value, so forgetting it
// changes nothing for the objects that hold it.
//
// Values are found by a hash of their content that the caller computes,
// and a kept value is returned only when the caller's equality check
// holds for it. A value whose hash is that of a different kept value is
// not shared: the caller gets the value it would have kept, never stored,
// and the kept one stays.
package shareset

import "sync"

// Set keeps one copy of each value callers have in common, by hash. Make
// one with New; it is safe for concurrent use.
type Set[V any] struct {
	mu  sync.RWMutex
	m   map[uint64]V
	max int
}

// New returns an empty Set that keeps at most max values (one, for a max
// below one).
func New[V any](max int) *Set[V] {
	return &Set[V]{max: max}
}

// Share returns the kept value with hash h if same reports true for it.
// Otherwise it calls keep, once, for the value to keep, and stores that
// value under h, unless another value is kept under h or same reports
// false for keep's value too: then keep's value is returned unshared,
// and what is kept stays. When the set holds max values before a store,
// it forgets them all first.
//
// A kept value is found under the read lock only, and neither same nor
// keep is called with a lock held: kept values never change.
func (s *Set[V]) Share(h uint64, same func(V) bool, keep func() V) V {
	s.mu.RLock()
	cur, ok := s.m[h]
	s.mu.RUnlock()
	if ok {
		if same(cur) {
			return cur
		}
		return keep()
	}
	v := keep()
	if !same(v) {
		return v
	}
	s.mu.Lock()
	cur, ok = s.m[h]
	if !ok {
		if len(s.m) >= s.max {
			clear(s.m)
		}
		if s.m == nil {
			s.m = make(map[uint64]V)
		}
		s.m[h] = v
	}
	s.mu.Unlock()
	if ok && same(cur) {
		// Another caller stored it meanwhile.
		return cur
	}
	return v
}

// Len is the number of values kept.
func (s *Set[V]) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}
