package podcache

import (
	"hash/maphash"
	"iter"
	"slices"
	"strings"

	"github.com/shardnet/shardnet/internal/shareset"
)

// Annotations are a cached pod's annotations: their values, in the order
// of their keys, and the sorted keys, which every pod with the same
// annotation names shares (the pods of one network have the same dozen
// kube-ovn names). Nine annotations, as a routed pod of kube-ovn's default
// network carries, take 144 bytes of the pod's own here, 288 as sorted
// pairs and about 630 in a map. The zero Annotations is a pod without
// annotations (IsNil); an empty one, a pod with an empty map.
type Annotations struct {
	keys *[]string // shared and never changed; nil for no annotations
	vals []string  // vals[i] is the value of (*keys)[i]
}

// NewAnnotations returns m's entries as Annotations, sharing m's strings.
func NewAnnotations(m map[string]string) Annotations {
	return NewAnnotationsFunc(m, func(k, v string) (string, string, bool) { return k, v, true })
}

// NewAnnotationsFunc returns m's entries as Annotations, each as f makes
// it: f returns the key and value to keep, or false to leave the entry
// out. f must not map two keys to one.
func NewAnnotationsFunc(m map[string]string, f func(k, v string) (string, string, bool)) Annotations {
	if m == nil {
		return Annotations{}
	}
	var buf [32]string
	pairs := buf[:0]
	for k, v := range m {
		if k, v, ok := f(k, v); ok {
			pairs = append(pairs, k, v)
		}
	}
	sortPairs(pairs)
	n := len(pairs) / 2
	var kbuf [16]string
	keys := kbuf[:0]
	vals := make([]string, n)
	for i := range n {
		keys = append(keys, pairs[2*i])
		vals[i] = pairs[2*i+1]
	}
	if n == 0 {
		vals = nil
	}
	return Annotations{keys: keySets.share(keys), vals: vals}
}

// sortPairs orders key and value pairs by key.
func sortPairs(a []string) {
	n := len(a) / 2
	// Insertion sort of pairs: a pod has a handful of annotations.
	for i := 1; i < n; i++ {
		for j := i; j > 0 && strings.Compare(a[2*j], a[2*j-2]) < 0; j-- {
			a[2*j], a[2*j-2] = a[2*j-2], a[2*j]
			a[2*j+1], a[2*j-1] = a[2*j-1], a[2*j+1]
		}
	}
}

// IsNil reports whether a stands for no annotations at all (a nil map).
func (a Annotations) IsNil() bool { return a.keys == nil }

// Len is the number of annotations.
func (a Annotations) Len() int { return len(a.vals) }

// Get returns the value of key.
func (a Annotations) Get(key string) (string, bool) {
	if a.keys == nil {
		return "", false
	}
	for i, k := range *a.keys {
		switch c := strings.Compare(k, key); {
		case c == 0:
			return a.vals[i], true
		case c > 0:
			return "", false
		}
	}
	return "", false
}

// All yields every annotation in key order.
func (a Annotations) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if a.keys == nil {
			return
		}
		for i, k := range *a.keys {
			if !yield(k, a.vals[i]) {
				return
			}
		}
	}
}

// Map returns a new map of a's entries, nil for a nil a.
func (a Annotations) Map() map[string]string { return a.Fill(nil) }

// Fill empties m and puts a's entries into it, returning it, or a new
// map when m is nil. For a nil a it returns nil.
func (a Annotations) Fill(m map[string]string) map[string]string {
	switch {
	case a.keys == nil:
		return nil
	case m == nil:
		m = make(map[string]string, a.Len())
	default:
		clear(m)
	}
	for i, k := range *a.keys {
		m[k] = a.vals[i]
	}
	return m
}

// Clone returns a copy of a with values of its own (the keys stay shared:
// nothing changes them).
func (a Annotations) Clone() Annotations {
	return Annotations{keys: a.keys, vals: slices.Clone(a.vals)}
}

// keySets holds one copy of each sorted key list that cached pods have in
// common (internal/shareset: the bound, the start over, why sharing is
// safe). Pods with annotation names of their own are why it is bounded.
var keySets = keySetInterner{shareset.New[*[]string](keySetsMax)}

const keySetsMax = 1 << 12

// keySetInterner shares sorted key lists with the same keys.
type keySetInterner struct {
	*shareset.Set[*[]string]
}

var keySeed = maphash.MakeSeed()

// share returns the shared list equal to keys, or a copy of keys kept as
// the shared one when there is none yet; a copy of its own when another
// list with the same hash is kept. keys itself is never kept, and the
// result is never nil.
func (in keySetInterner) share(keys []string) *[]string {
	var d maphash.Hash
	d.SetSeed(keySeed)
	for _, k := range keys {
		d.WriteString(k)
		d.WriteByte(0)
	}
	return in.Share(d.Sum64(),
		func(cur *[]string) bool { return slices.Equal(*cur, keys) },
		func() *[]string {
			own := slices.Clone(keys)
			if own == nil {
				own = []string{}
			}
			return &own
		})
}
