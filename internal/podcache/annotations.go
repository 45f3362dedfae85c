package podcache

import (
	"iter"
	"strings"
)

// Annotations are a cached pod's annotations: keys and values in turn,
// sorted by key. Nine annotations, as a routed pod of kube-ovn's default
// network carries, take 288 bytes here and about 630 in a map. A nil
// Annotations is a pod without annotations; an empty one, a pod with an
// empty map.
type Annotations []string

// NewAnnotations returns m's entries as Annotations, sharing m's strings.
func NewAnnotations(m map[string]string) Annotations {
	return NewAnnotationsFunc(m, func(k, v string) (string, string, bool) { return k, v, true })
}

// NewAnnotationsFunc returns m's entries as Annotations, each as f makes
// it: f returns the key and value to keep, or false to leave the entry
// out. f must not map two keys to one.
func NewAnnotationsFunc(m map[string]string, f func(k, v string) (string, string, bool)) Annotations {
	if m == nil {
		return nil
	}
	a := make(Annotations, 0, 2*len(m))
	for k, v := range m {
		if k, v, ok := f(k, v); ok {
			a = append(a, k, v)
		}
	}
	a.sort()
	return a
}

// sort orders the pairs by key.
func (a Annotations) sort() {
	n := len(a) / 2
	// Insertion sort of pairs: a pod has a handful of annotations.
	for i := 1; i < n; i++ {
		for j := i; j > 0 && strings.Compare(a[2*j], a[2*j-2]) < 0; j-- {
			a[2*j], a[2*j-2] = a[2*j-2], a[2*j]
			a[2*j+1], a[2*j-1] = a[2*j-1], a[2*j+1]
		}
	}
}

// Len is the number of annotations.
func (a Annotations) Len() int { return len(a) / 2 }

// Get returns the value of key.
func (a Annotations) Get(key string) (string, bool) {
	for i := 0; i+1 < len(a); i += 2 {
		switch c := strings.Compare(a[i], key); {
		case c == 0:
			return a[i+1], true
		case c > 0:
			return "", false
		}
	}
	return "", false
}

// All yields every annotation in key order.
func (a Annotations) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for i := 0; i+1 < len(a); i += 2 {
			if !yield(a[i], a[i+1]) {
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
	case a == nil:
		return nil
	case m == nil:
		m = make(map[string]string, a.Len())
	default:
		clear(m)
	}
	for i := 0; i+1 < len(a); i += 2 {
		m[a[i]] = a[i+1]
	}
	return m
}
