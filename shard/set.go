package shard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Set is a set of shard numbers. Its text form is a sorted list of ranges,
// "0-3,7,9-12", so that a member Lease annotation stays small even when a
// replica holds hundreds of shards.
type Set map[int]struct{}

// NewSet returns a set holding the given shards.
func NewSet(shards ...int) Set {
	s := make(Set, len(shards))
	for _, x := range shards {
		s[x] = struct{}{}
	}
	return s
}

// Has reports whether shard x is in the set.
func (s Set) Has(x int) bool { _, ok := s[x]; return ok }

// Sorted returns the members in ascending order.
func (s Set) Sorted() []int {
	out := make([]int, 0, len(s))
	for x := range s {
		out = append(out, x)
	}
	slices.Sort(out)
	return out
}

// Equal reports whether both sets hold the same shards.
func (s Set) Equal(o Set) bool {
	if len(s) != len(o) {
		return false
	}
	for x := range s {
		if !o.Has(x) {
			return false
		}
	}
	return true
}

// String encodes the set as ranges ("" for the empty set).
func (s Set) String() string { return FormatRanges(s.Sorted()) }

// FormatRanges encodes ascending shard numbers as "0-3,7".
func FormatRanges(sorted []int) string {
	var b strings.Builder
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] == sorted[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(sorted[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(sorted[j]))
		}
		i = j + 1
	}
	return b.String()
}

// ParseSet decodes the text form written by Set.String. Shards must be below
// limit, which also bounds the memory a corrupt annotation can cost.
func ParseSet(text string, limit int) (Set, error) {
	s := Set{}
	if text == "" {
		return s, nil
	}
	for part := range strings.SplitSeq(text, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("parsing shard set %q: bad shard %q", text, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("parsing shard set %q: bad range %q", text, part)
			}
		}
		if b >= limit {
			return nil, fmt.Errorf("parsing shard set %q: shard %d out of range [0,%d)", text, b, limit)
		}
		for x := a; x <= b; x++ {
			s[x] = struct{}{}
		}
	}
	return s, nil
}
