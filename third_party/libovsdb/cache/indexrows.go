package cache

import (
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

// indexRows is what an index maps one value to: the UUIDs of the rows that
// have the value. A schema index maps a value to one row, and a client
// index mostly does too, so that one UUID is kept inline and a set is made
// only for more than one. A set of one cost about 180 bytes per row and
// index, most of the memory of the indexes of a large table.
//
// An indexRows is a value: with and without return the changed one, which
// the caller stores back. A set of more than one is changed in place, as
// the index's sets always were, under the row cache's lock.
type indexRows struct {
	one  string  // the UUID when there is exactly one
	many uuidset // the UUIDs when there are more than one, else nil
}

func (e indexRows) len() int {
	if e.many != nil {
		return len(e.many)
	}
	if e.one != "" {
		return 1
	}
	return 0
}

func (e indexRows) empty() bool { return e.len() == 0 }

func (e indexRows) has(uuid string) bool {
	if e.many != nil {
		return e.many.has(uuid)
	}
	return e.one != "" && e.one == uuid
}

// only reports whether uuid is the one row.
func (e indexRows) only(uuid string) bool { return e.len() == 1 && e.has(uuid) }

func (e indexRows) getAny() string {
	if e.many != nil {
		return e.many.getAny()
	}
	return e.one
}

func (e indexRows) list() []string {
	if e.many != nil {
		return e.many.list()
	}
	if e.one != "" {
		return []string{e.one}
	}
	return []string{}
}

// each calls f with every UUID.
func (e indexRows) each(f func(uuid string)) {
	if e.one != "" {
		f(e.one)
	}
	for uuid := range e.many {
		f(uuid)
	}
}

// set returns the UUIDs as a set: the index's own when there are more than
// one, which the caller must not change, else a new one.
func (e indexRows) set() uuidset {
	if e.many != nil {
		return e.many
	}
	if e.one != "" {
		return newUUIDSet(e.one)
	}
	return uuidset{}
}

// with returns e with uuid added.
func (e indexRows) with(uuid string) indexRows {
	switch {
	case e.many != nil:
		e.many.add(uuid)
	case AsUpstream:
		e.many = newUUIDSet(uuid)
	case e.one == "" || e.one == uuid:
		e.one = uuid
	default:
		e.many = newUUIDSet(e.one, uuid)
		e.one = ""
	}
	return e
}

// without returns e with uuid removed.
func (e indexRows) without(uuid string) indexRows {
	switch {
	case e.many != nil:
		e.many.remove(uuid)
		if len(e.many) == 1 && !AsUpstream {
			return indexRows{one: e.many.getAny()}
		}
	case e.one == uuid:
		e.one = ""
	}
	return e
}

// AsUpstream, when set before a cache is filled, makes it do as upstream's
// does where this copy differs: its indexes keep a set for a value of one
// row too, Populate2 keeps every decoded row until it returns, Populate
// and Populate2 grow an empty table's map row by row, and
// RowsByCondition searches generically for a condition one index answers
// (this last one is read at each search). It is the baseline of the
// benchmarks that measure what the copy saves.
var AsUpstream = false

// indexRowsOf answers a condition that one index answers whole, without
// the search's generic steps (a model built from the condition, the
// power set of the conditions, sets intersected, every candidate's column
// read again by reflection), which cost a lookup of one port about 2 KB:
// an equality on a string column that is an index alone, or an includes
// of one key of a string map that a client index keys on (stringIndex).
// ok is false when the condition is not such a one.
func (r *RowCache) indexRowsOf(cond ovsdb.Condition) (rows indexRows, ok bool) {
	var key model.ColumnKey
	var value string
	switch cond.Function {
	case ovsdb.ConditionEqual:
		s, isString := cond.Value.(string)
		if !isString {
			return indexRows{}, false
		}
		key, value = model.ColumnKey{Column: cond.Column}, s
	case ovsdb.ConditionIncludes:
		m, isMap := cond.Value.(ovsdb.OvsMap)
		if !isMap || len(m.GoMap) != 1 {
			return indexRows{}, false
		}
		for k, v := range m.GoMap {
			ks, kOK := k.(string)
			vs, vOK := v.(string)
			if !kOK || !vOK {
				return indexRows{}, false
			}
			key, value = model.ColumnKey{Column: cond.Column, Key: ks}, vs
		}
	default:
		return indexRows{}, false
	}
	idx, ok := r.stringIndex(key, value)
	if !ok {
		return indexRows{}, false
	}
	return r.indexes[idx][value], true
}

// stringIndex returns the index of the one column key alone when the key
// is a string column or one key of a string map, and value is not empty:
// a client index files a row without the key under "", which an includes
// of key="" must not match.
func (r *RowCache) stringIndex(key model.ColumnKey, value string) (index, bool) {
	if value == "" || key.Column == "_uuid" {
		return "", false
	}
	schema := r.dbModel.Schema.Table(r.name)
	if schema == nil {
		return "", false
	}
	col := schema.Column(key.Column)
	switch {
	case col == nil:
		return "", false
	case key.Key == nil:
		if col.Type != ovsdb.TypeString {
			return "", false
		}
	default:
		if _, isString := key.Key.(string); !isString || col.Type != ovsdb.TypeMap || col.TypeObj == nil ||
			col.TypeObj.Key == nil || col.TypeObj.Key.Type != ovsdb.TypeString ||
			col.TypeObj.Value == nil || col.TypeObj.Value.Type != ovsdb.TypeString {
			return "", false
		}
	}
	return r.indexOf(key)
}

// indexOf returns the index of the one column key alone.
func (r *RowCache) indexOf(key model.ColumnKey) (index, bool) {
	for _, spec := range r.indexSpecs {
		if len(spec.columns) == 1 && spec.columns[0].Column == key.Column && spec.columns[0].Key == key.Key {
			return spec.index, true
		}
	}
	return "", false
}

// RowsByIndexValue returns copies of the rows that the index of the one
// column key alone (a string column, or one key of a string map) files
// under value: what RowsByCondition answers for an equality on that
// column or an includes of that key, without the condition, its map and
// the map of the results, which cost a lookup about 600 bytes. ok is
// false when no index is of that column key alone or value is empty (a
// client index files a row without the key under ""), which the caller
// then asks RowsByCondition.
func (r *RowCache) RowsByIndexValue(key model.ColumnKey, value string) (rows []model.Model, ok bool) {
	if AsUpstream {
		return nil, false
	}
	r.mutex.RLock()
	defer r.mutex.RUnlock()
	idx, ok := r.stringIndex(key, value)
	if !ok {
		return nil, false
	}
	e := r.indexes[idx][value]
	if e.empty() {
		return nil, true
	}
	rows = make([]model.Model, 0, e.len())
	e.each(func(uuid string) { rows = append(rows, r.rowByUUID(uuid)) })
	return rows, true
}
