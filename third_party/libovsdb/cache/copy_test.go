package cache

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
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

// TestPopulate2CachesBuiltModels checks that Populate2 caches a model
// built while the reply was read (RowUpdate2.Model) and one it builds
// from a row itself as they are, where upstream caches a copy; that the
// event handlers get the cached model; and that a row update without a
// row or a model for a row the cache lacks is still refused.
func TestPopulate2CachesBuiltModels(t *testing.T) {
	db, err := model.NewClientDBModel("Open_vSwitch", map[string]model.Model{"Open_vSwitch": &testModel{}})
	require.NoError(t, err)
	var schema ovsdb.DatabaseSchema
	require.NoError(t, json.Unmarshal(getTestSchema(`["foo"]`), &schema))
	dbModel, errs := model.NewDatabaseModel(schema, db)
	require.Empty(t, errs)
	for _, upstream := range []bool{false, true} {
		AsUpstream = upstream
		tc, err := NewTableCache(dbModel, nil, nil)
		require.NoError(t, err)
		built := &testModel{UUID: "built", Foo: "from the reply"}
		row := ovsdb.Row(map[string]any{"_uuid": "row", "foo": "from a row"})
		require.NoError(t, tc.Populate2(ovsdb.TableUpdates2{"Open_vSwitch": {
			"built": &ovsdb.RowUpdate2{Model: built},
			"row":   &ovsdb.RowUpdate2{Initial: &row},
		}}))
		rows := tc.Table("Open_vSwitch").RowsShallow()
		require.Len(t, rows, 2)
		assert.Equal(t, built, rows["built"])
		assert.Equal(t, "from a row", rows["row"].(*testModel).Foo)
		assert.Equal(t, !upstream, rows["built"] == model.Model(built), "the built model cached as it is (upstream: a copy)")
		events := map[string]model.Model{}
		for range 2 {
			ev := <-tc.eventProcessor.events
			events[ev.new.(*testModel).UUID] = ev.new
		}
		assert.Equal(t, model.Model(built), events["built"])
		assert.Equal(t, !upstream, events["row"] == rows["row"], "the handlers get the cached model (upstream: the original of the copy)")
		require.Error(t, tc.Populate2(ovsdb.TableUpdates2{"Open_vSwitch": {"missing": &ovsdb.RowUpdate2{}}}))
	}
	AsUpstream = false
}

// portModel is a port-like row: a schema index on name, a client index
// on the pod key of external_ids, and a column no index has.
type portModel struct {
	UUID string            `ovsdb:"_uuid"`
	Name string            `ovsdb:"name"`
	Type string            `ovsdb:"type"`
	Ext  map[string]string `ovsdb:"external_ids"`
}

// TestIndexRowsOfAgainstSearch checks the lookup of one condition that
// one index answers, and RowsByIndexValue, against the generic search (the same condition
// twice, which the shortcut leaves to it), over random rows created,
// updated and deleted, and that the shortcut is taken exactly for an
// indexed column's non-empty value.
func TestIndexRowsOfAgainstSearch(t *testing.T) {
	db, err := model.NewClientDBModel("NB", map[string]model.Model{"Port": &portModel{}})
	require.NoError(t, err)
	db.SetIndexes(map[string][]model.ClientIndex{"Port": {{Columns: []model.ColumnKey{{Column: "external_ids", Key: "pod"}}}}})
	var schema ovsdb.DatabaseSchema
	require.NoError(t, json.Unmarshal([]byte(`{"name": "NB", "tables": {"Port": {
		"columns": {
			"name": {"type": "string"},
			"type": {"type": "string"},
			"external_ids": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}}
		},
		"indexes": [["name"]]}}}`), &schema))
	dbModel, errs := model.NewDatabaseModel(schema, db)
	require.Empty(t, errs)
	tc, err := NewTableCache(dbModel, nil, nil)
	require.NoError(t, err)
	rc := tc.Table("Port")

	r := rand.New(rand.NewSource(2))
	names := []string{"", "p0", "p1", "p2", "p3", "p4", "p5", "p6"}
	pods := []string{"", "ns/a", "ns/b", "ns/c"}
	randomPort := func(uuid string) *portModel {
		p := &portModel{UUID: uuid, Name: names[r.Intn(len(names))], Type: pods[r.Intn(len(pods))], Ext: map[string]string{}}
		switch r.Intn(3) {
		case 0: // no pod key
		case 1:
			p.Ext["pod"] = pods[r.Intn(len(pods))]
		case 2:
			p.Ext["pod"] = pods[r.Intn(len(pods))]
			p.Ext["other"] = pods[r.Intn(len(pods))]
		}
		return p
	}
	conditions := func() []ovsdb.Condition {
		var out []ovsdb.Condition
		for _, n := range names {
			out = append(out, ovsdb.Condition{Column: "name", Function: ovsdb.ConditionEqual, Value: n},
				ovsdb.Condition{Column: "type", Function: ovsdb.ConditionEqual, Value: n})
		}
		for _, p := range pods {
			for _, key := range []string{"pod", "other"} {
				out = append(out, ovsdb.Condition{Column: "external_ids", Function: ovsdb.ConditionIncludes,
					Value: ovsdb.OvsMap{GoMap: map[any]any{key: p}}})
			}
		}
		return out
	}()
	keys := func(rows map[string]model.Model) []string {
		var out []string
		for uuid, m := range rows {
			require.Equal(t, uuid, m.(*portModel).UUID)
			out = append(out, uuid)
		}
		sort.Strings(out)
		return out
	}
	for step := range 400 {
		uuid := fmt.Sprintf("u%d", r.Intn(12))
		switch existing := rc.Row(uuid); {
		case existing == nil:
			_ = rc.Create(uuid, randomPort(uuid), true) // a taken name fails, as in the server
		case r.Intn(3) == 0:
			require.NoError(t, rc.Delete(uuid))
		default:
			_, _ = rc.Update(uuid, randomPort(uuid), true)
		}
		for _, c := range conditions {
			fast, err := rc.RowsByCondition([]ovsdb.Condition{c})
			require.NoError(t, err)
			slow, err := rc.RowsByCondition([]ovsdb.Condition{c, c})
			require.NoError(t, err)
			require.Equal(t, keys(slow), keys(fast), "step %d: %+v", step, c)
			_, took := rc.indexRowsOf(c)
			value := fmt.Sprint(c.Value)
			if m, ok := c.Value.(ovsdb.OvsMap); ok {
				for k, v := range m.GoMap {
					value = fmt.Sprint(v)
					if k != "pod" {
						value = ""
					}
				}
			} else if c.Column != "name" {
				value = ""
			}
			require.Equal(t, value != "", took, "shortcut taken for %+v", c)

			// The same lookup without a condition.
			ck, v := model.ColumnKey{Column: c.Column}, fmt.Sprint(c.Value)
			if m, ok := c.Value.(ovsdb.OvsMap); ok {
				for k, mv := range m.GoMap {
					ck.Key, v = k, mv.(string)
				}
			}
			rows, ok := rc.RowsByIndexValue(ck, v)
			require.Equal(t, took, ok, "RowsByIndexValue answered %+v", c)
			if ok {
				byUUID := map[string]model.Model{}
				for _, m := range rows {
					byUUID[m.(*portModel).UUID] = m
				}
				require.Len(t, byUUID, len(rows), "a row twice")
				require.Equal(t, keys(slow), keys(byUUID), "step %d: RowsByIndexValue %v=%q", step, ck, v)
			}
		}
	}
}
