package cache

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sets returns an index's values with their rows as sets, the form the
// tests state them in.
func (v valueToRows) sets() valueToUUIDs {
	out := make(valueToUUIDs, len(v))
	for k, rows := range v {
		out[k] = rows.set()
	}
	return out
}

// TestIndexRowsAgainstSets adds and removes UUIDs at random and checks
// that indexRows holds what a plain set holds, keeps one UUID inline
// (no set) and makes a set only for more than one.
func TestIndexRowsAgainstSets(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	uuids := []string{"a", "b", "c", "d"}
	for trial := 0; trial < 200; trial++ {
		var e indexRows
		want := uuidset{}
		for step := 0; step < 20; step++ {
			u := uuids[r.Intn(len(uuids))]
			if r.Intn(2) == 0 {
				e = e.with(u)
				want.add(u)
			} else {
				e = e.without(u)
				want.remove(u)
			}
			where := fmt.Sprintf("trial %d step %d", trial, step)
			if !e.set().equals(want) || e.len() != len(want) || e.empty() != (len(want) == 0) {
				t.Fatalf("%s: have %v, want %v", where, e.set(), want)
			}
			if (e.many != nil) != (len(want) > 1) {
				t.Fatalf("%s: %d UUIDs kept with a set %v", where, len(want), e.many)
			}
			for _, u := range uuids {
				if e.has(u) != want.has(u) || e.only(u) != (len(want) == 1 && want.has(u)) {
					t.Fatalf("%s: has/only %q wrong for %v", where, u, want)
				}
			}
			seen := uuidset{}
			e.each(func(u string) { seen.add(u) })
			if !seen.equals(want) || len(e.list()) != len(want) {
				t.Fatalf("%s: each %v, list %v, want %v", where, seen, e.list(), want)
			}
		}
	}
}

// TestPopulate2DropsAppliedRows checks that Populate2 removes each row
// from the updates once it is in the cache, and keeps a row it could not
// apply.
func TestPopulate2DropsAppliedRows(t *testing.T) {
	db, err := model.NewClientDBModel("Open_vSwitch", map[string]model.Model{"Open_vSwitch": &testModel{}})
	require.NoError(t, err)
	var schema ovsdb.DatabaseSchema
	require.NoError(t, json.Unmarshal(getTestSchema(`["foo"]`), &schema))
	dbModel, errs := model.NewDatabaseModel(schema, db)
	require.Empty(t, errs)
	tc, err := NewTableCache(dbModel, nil, nil)
	require.NoError(t, err)

	updates := ovsdb.TableUpdates2{"Open_vSwitch": {}}
	for i := range 10 {
		uuid := fmt.Sprintf("row%d", i)
		row := ovsdb.Row(map[string]any{"_uuid": uuid, "foo": fmt.Sprintf("foo%d", i)})
		updates["Open_vSwitch"][uuid] = &ovsdb.RowUpdate2{Initial: &row}
	}
	require.NoError(t, tc.Populate2(updates))
	assert.Empty(t, updates["Open_vSwitch"], "applied rows left in the updates")
	for i := range 10 {
		got := tc.Table("Open_vSwitch").Row(fmt.Sprintf("row%d", i))
		require.NotNil(t, got)
		assert.Equal(t, fmt.Sprintf("foo%d", i), got.(*testModel).Foo)
	}

	// A modify of a row the cache does not have fails, and stays.
	mod := ovsdb.Row(map[string]any{"foo": "x"})
	bad := ovsdb.TableUpdates2{"Open_vSwitch": {"missing": &ovsdb.RowUpdate2{Modify: &mod}}}
	require.Error(t, tc.Populate2(bad))
	assert.Len(t, bad["Open_vSwitch"], 1)

	// As upstream, every row stays.
	AsUpstream = true
	defer func() { AsUpstream = false }()
	row := ovsdb.Row(map[string]any{"_uuid": "up", "foo": "up"})
	kept := ovsdb.TableUpdates2{"Open_vSwitch": {"up": &ovsdb.RowUpdate2{Initial: &row}}}
	require.NoError(t, tc.Populate2(kept))
	assert.Len(t, kept["Open_vSwitch"], 1)
}
