package ovsdb

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// TestStringsToNativeAsUpstream converts random values of string maps and
// sets, well typed or not, without reflection and with upstream's
// reflective conversion, and compares values and errors.
func TestStringsToNativeAsUpstream(t *testing.T) {
	defer func() { AsUpstream = false }()
	var columns []*ColumnSchema
	for _, raw := range []string{
		`{"type":{"key":"string","value":"string","min":0,"max":"unlimited"}}`,
		`{"type":{"key":"string","min":0,"max":"unlimited"}}`,
		`{"type":{"key":"string","min":0,"max":1}}`,
		`{"type":{"key":"string","min":1,"max":"unlimited"}}`,
		`{"type":{"key":"string","min":0,"max":4}}`,
		`{"type":{"key":"string","value":"integer","min":0,"max":"unlimited"}}`,
		`{"type":{"key":{"type":"string","enum":["set",["a","b"]]}}}`,
		`{"type":"string"}`,
	} {
		var c ColumnSchema
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		columns = append(columns, &c)
	}
	r := rand.New(rand.NewSource(3))
	atom := func() any {
		switch r.Intn(8) {
		case 0:
			return 3.0
		case 1:
			return UUID{GoUUID: "u"}
		case 2:
			return true
		default:
			return fmt.Sprintf("v%d", r.Intn(9))
		}
	}
	value := func() any {
		switch r.Intn(5) {
		case 0:
			return atom()
		case 1, 2:
			set := OvsSet{GoSet: []any{}}
			for range r.Intn(3) {
				set.GoSet = append(set.GoSet, atom())
			}
			return set
		default:
			m := OvsMap{GoMap: map[any]any{}}
			for range r.Intn(3) {
				m.GoMap[atom()] = atom()
			}
			return m
		}
	}
	var fast, compared int
	for i := range 20000 {
		c := columns[r.Intn(len(columns))]
		v := value()
		if _, ok, _ := stringsToNative(c, v); ok {
			fast++
		}
		got, err := OvsToNative(c, v)
		AsUpstream = true
		want, wantErr := OvsToNative(c, v)
		AsUpstream = false
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%d: %s of %#v: upstream's error %v, the copy's %v", i, c, v, wantErr, err)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%d: %s of %#v: upstream gives %#v, the copy %#v", i, c, v, want, got)
		}
		// (which entry of a map fails first follows the map's order)
		if err != nil && reflect.TypeOf(err) != reflect.TypeOf(wantErr) {
			t.Fatalf("%d: %s of %#v: upstream's error %q, the copy's %q", i, c, v, wantErr, err)
		}
		compared++
	}
	if fast < 8000 {
		t.Fatalf("only %d of %d values took the path without reflection: the test misses it", fast, compared)
	}
}
