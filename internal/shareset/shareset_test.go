package shareset

import (
	"fmt"
	"hash/maphash"
	"sync"
	"testing"
)

var seed = maphash.MakeSeed()

// share shares a *string with content s, counting keep's calls in *keeps.
func share(set *Set[*string], s string, keeps *int) *string {
	return shareAt(set, maphash.String(seed, s), s, keeps)
}

// shareAt is share with the hash h.
func shareAt(set *Set[*string], h uint64, s string, keeps *int) *string {
	return set.Share(h,
		func(cur *string) bool { return *cur == s },
		func() *string {
			*keeps++
			c := s
			return &c
		})
}

// Equal values share one copy, made once; different values do not.
func TestShareKeepsOneCopy(t *testing.T) {
	set := New[*string](8)
	var keeps int
	a := share(set, "a", &keeps)
	if *a != "a" || keeps != 1 {
		t.Fatalf("first share: %q, keep called %d times", *a, keeps)
	}
	for range 3 {
		if got := share(set, "a", &keeps); got != a {
			t.Errorf("an equal value got its own copy %p, want the kept %p", got, a)
		}
	}
	if keeps != 1 {
		t.Errorf("keep called %d times for one value, want 1", keeps)
	}
	b := share(set, "b", &keeps)
	if b == a || *b != "b" || keeps != 2 {
		t.Errorf("a different value: %q (shared with a: %v), keep called %d times", *b, b == a, keeps)
	}
	if n := set.Len(); n != 2 {
		t.Errorf("Len = %d, want 2", n)
	}
}

// Past the bound the set forgets what it holds and starts over: values
// returned before stay as they were, and new ones are kept again.
func TestStartOverWhenFull(t *testing.T) {
	set := New[*string](2)
	var keeps int
	a := share(set, "a", &keeps)
	b := share(set, "b", &keeps)
	if set.Len() != 2 {
		t.Fatalf("Len = %d, want 2", set.Len())
	}
	c1 := share(set, "c", &keeps)
	if n := set.Len(); n != 1 {
		t.Errorf("after the start over Len = %d, want 1", n)
	}
	if c2 := share(set, "c", &keeps); c2 != c1 {
		t.Error("after the start over, equal values kept apart")
	}
	if *a != "a" || *b != "b" {
		t.Errorf("values shared before the start over changed: %q, %q", *a, *b)
	}
	// a was forgotten: a new copy is made, and kept from then on.
	keeps = 0
	a2 := share(set, "a", &keeps)
	if a2 == a || *a2 != "a" || keeps != 1 {
		t.Errorf("a forgotten value: same copy %v, %q, keep called %d times", a2 == a, *a2, keeps)
	}
	if a3 := share(set, "a", &keeps); a3 != a2 || keeps != 1 {
		t.Error("a value kept again after the start over is not shared")
	}
	for i := range 10 {
		share(set, fmt.Sprint(i), &keeps)
		if n := set.Len(); n > 2 {
			t.Fatalf("%d values kept, bound 2", n)
		}
	}
}

// A value whose hash is a different kept value's is returned unshared, and
// the kept one stays.
func TestHashCollision(t *testing.T) {
	set := New[*string](8)
	var keeps int
	a := shareAt(set, 1, "a", &keeps)
	x := shareAt(set, 1, "x", &keeps)
	if x == a || *x != "x" || keeps != 2 {
		t.Fatalf("a colliding value: %q (the kept one: %v), keep called %d times", *x, x == a, keeps)
	}
	if x2 := shareAt(set, 1, "x", &keeps); x2 == x || *x2 != "x" || keeps != 3 {
		t.Errorf("a colliding value was kept: %q (the earlier copy: %v)", *x2, x2 == x)
	}
	if got := shareAt(set, 1, "a", &keeps); got != a || keeps != 3 {
		t.Error("the kept value was replaced by a colliding one")
	}
	if n := set.Len(); n != 1 {
		t.Errorf("Len = %d, want 1", n)
	}
}

// A value keep makes that is not what was asked for is not kept.
func TestKeepNotSame(t *testing.T) {
	set := New[*string](8)
	calls := 0
	wrong := func() *string { calls++; s := "b"; return &s }
	got := set.Share(1, func(cur *string) bool { return *cur == "a" }, wrong)
	if *got != "b" || calls != 1 {
		t.Errorf("got %q, keep called %d times", *got, calls)
	}
	if n := set.Len(); n != 0 {
		t.Errorf("a value unequal to the one asked for was kept (Len %d)", n)
	}
}

// Concurrent callers sharing the same values all get the one kept copy
// of each, and the bound holds when they share many.
func TestConcurrent(t *testing.T) {
	const goroutines, values = 8, 500
	set := New[*string](values)
	names := make([]string, values)
	for v := range names {
		names[v] = fmt.Sprint("v", v)
	}
	got := make([][values]*string, goroutines)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			var keeps int
			<-start
			// Each value twice, in the same order in every goroutine:
			// they race to keep each one.
			for v := range 2 * values {
				p := share(set, names[v%values], &keeps)
				if got[g][v%values] == nil {
					got[g][v%values] = p
				} else if got[g][v%values] != p {
					t.Errorf("goroutine %d: value %d got two copies", g, v%values)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for g := range goroutines {
		for v := range values {
			if p := got[g][v]; p != got[0][v] || *p != names[v] {
				t.Errorf("goroutine %d got %q at %p for value %d, goroutine 0 %p", g, *p, p, v, got[0][v])
			}
		}
	}
	if n := set.Len(); n != values {
		t.Errorf("Len = %d, want %d", n, values)
	}

	small := New[*string](3)
	for g := range goroutines {
		wg.Go(func() {
			var keeps int
			for r := range 200 {
				want := fmt.Sprint(g*1000 + r%10)
				if p := share(small, want, &keeps); *p != want {
					t.Errorf("asked for %q, got %q", want, *p)
				}
			}
		})
	}
	wg.Wait()
	if n := small.Len(); n > 3 {
		t.Errorf("%d values kept, bound 3", n)
	}
}
