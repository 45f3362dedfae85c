package ovsdb

import "encoding/json"

// Row is a table Row according to RFC7047
type Row map[string]any

// UnmarshalJSON unmarshalls a byte array to an OVSDB Row.
//
// This copy decodes the row in one pass (rowParser) and converts each
// column's value to Go notation directly (ovsSliceToGoNotation); upstream
// checked the row's bytes twice, decoded them, and encoded every set, map
// and UUID back to JSON to decode it again. A first monitor's reply is the
// whole database, decoded this way row by row. The values are upstream's
// (TestRowDecodeAsUpstream), with one difference: a number out of
// float64's range is an error, where upstream's error could be overwritten
// by the next column's conversion and the column read as null.
func (r *Row) UnmarshalJSON(b []byte) error {
	if AsUpstream {
		return r.unmarshalJSONUpstream(b)
	}
	m, err := parseRow(b)
	if err != nil || m == nil {
		// null, or an error: the empty row, as upstream
		*r = make(map[string]any)
		return err
	}
	*r = m
	return nil
}

// parseRow decodes a row, nil for null, and converts its columns' values
// to Go notation.
func parseRow(b []byte) (map[string]any, error) {
	p := rowParser{b: b}
	p.space()
	if p.i < len(b) && b[p.i] == 'n' {
		if err := p.literal("null"); err != nil {
			return nil, err
		}
		if !p.end() {
			return nil, p.errorf("data after the row")
		}
		return nil, nil
	}
	if p.i >= len(b) || b[p.i] != '{' {
		return nil, p.errorf("a row is a JSON object")
	}
	m, err := p.object()
	if err != nil {
		return nil, err
	}
	if !p.end() {
		return nil, p.errorf("data after the row")
	}
	if err := toGoNotation(m); err != nil {
		return nil, err
	}
	return m, nil
}

// toGoNotation converts a decoded row's columns' values to Go notation,
// in place.
func toGoNotation(m map[string]any) error {
	for key, val := range m {
		val, err := ovsSliceToGoNotation(val)
		if err != nil {
			return err
		}
		m[key] = val
	}
	return nil
}

// unmarshalJSONUpstream is upstream's UnmarshalJSON.
func (r *Row) unmarshalJSONUpstream(b []byte) (err error) {
	*r = make(map[string]any)
	var raw map[string]any
	err = json.Unmarshal(b, &raw)
	for key, val := range raw {
		val, err = ovsSliceToGoNotation(val)
		if err != nil {
			return err
		}
		(*r)[key] = val
	}
	return err
}

// NewRow returns a new empty row
func NewRow() Row {
	return Row(make(map[string]any))
}
