package mapper

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"
)

type indexedRow struct {
	unexported string
	UUID       string `ovsdb:"_uuid"`
	Untagged   int
	Name       string            `ovsdb:"name"`
	IDs        map[string]string `ovsdb:"external_ids"`
	Opt        *string           `ovsdb:"opt"`
	Addrs      []string          `ovsdb:"addresses"`
}

// SetField and FieldByColumn find each column's field by the index NewInfo
// recorded, the same field reflect's search by name finds (with
// ovsdb.AsUpstream), in a struct whose fields are not in the columns'
// order and include untagged ones.
func TestFieldIndexAsByName(t *testing.T) {
	var table ovsdb.TableSchema
	if err := json.Unmarshal([]byte(`{"columns":{
		"name":{"type":"string"},
		"external_ids":{"type":{"key":"string","value":"string","min":0,"max":"unlimited"}},
		"opt":{"type":{"key":"string","min":0,"max":1}},
		"addresses":{"type":{"key":"string","min":0,"max":"unlimited"}}}}`), &table); err != nil {
		t.Fatal(err)
	}
	defer func() { ovsdb.AsUpstream = false }()
	opt := "o"
	values := map[string]any{
		"_uuid": "u1", "name": "n", "external_ids": map[string]string{"a": "b"}, "opt": &opt, "addresses": []string{"x", "y"},
	}
	var rows [2]indexedRow
	for i, upstream := range []bool{false, true} {
		ovsdb.AsUpstream = upstream
		info, err := NewInfo("T", &table, &rows[i])
		if err != nil {
			t.Fatal(err)
		}
		for column, v := range values {
			if err := info.SetField(column, v); err != nil {
				t.Fatalf("%s: %v", column, err)
			}
			got, err := info.FieldByColumn(column)
			if err != nil || !reflect.DeepEqual(got, v) {
				t.Fatalf("%s: read back %#v, %v; set %#v", column, got, err, v)
			}
		}
		if err := info.SetField("name", 3); err == nil {
			t.Error("an int set into a string column")
		}
	}
	if rows[0].Untagged != 0 || rows[0].unexported != "" || !reflect.DeepEqual(rows[0], rows[1]) {
		t.Fatalf("by index %#v, by name %#v", rows[0], rows[1])
	}
}

// GetRowData sets the same fields whether it walks the row's columns or
// the table's (ovsdb.AsUpstream): a row's column the table lacks, or the
// struct does, is skipped either way, and a bad value fails either way.
func TestGetRowDataAsUpstream(t *testing.T) {
	var table ovsdb.TableSchema
	if err := json.Unmarshal([]byte(`{"columns":{
		"name":{"type":"string"},
		"external_ids":{"type":{"key":"string","value":"string","min":0,"max":"unlimited"}},
		"opt":{"type":{"key":"string","min":0,"max":1}},
		"addresses":{"type":{"key":"string","min":0,"max":"unlimited"}},
		"not_in_struct":{"type":"integer"}}}`), &table); err != nil {
		t.Fatal(err)
	}
	defer func() { ovsdb.AsUpstream = false }()
	rows := []ovsdb.Row{
		{"name": "n", "external_ids": ovsdb.OvsMap{GoMap: map[any]any{"a": "b"}}, "opt": ovsdb.OvsSet{GoSet: []any{"o"}},
			"addresses": ovsdb.OvsSet{GoSet: []any{"x", "y"}}, "not_in_struct": 3.0, "not_in_table": "z"},
		{"name": "n2"},
		{},
	}
	for _, row := range rows {
		var got, want indexedRow
		for _, upstream := range []bool{false, true} {
			ovsdb.AsUpstream = upstream
			into := &got
			if upstream {
				into = &want
			}
			info, err := NewInfo("T", &table, into)
			if err != nil {
				t.Fatal(err)
			}
			if err := (Mapper{}).GetRowData(&row, info); err != nil {
				t.Fatalf("%v (upstream %v): %v", row, upstream, err)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: walking the row's columns %#v, the table's %#v", row, got, want)
		}
	}
	for _, upstream := range []bool{false, true} {
		ovsdb.AsUpstream = upstream
		var r indexedRow
		info, _ := NewInfo("T", &table, &r)
		if err := (Mapper{}).GetRowData(&ovsdb.Row{"name": 5.0}, info); err == nil {
			t.Errorf("upstream %v: a number read into a string column", upstream)
		}
	}
}
