package ovsdb

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// randomJSON writes a random JSON value: numbers of every form, strings
// with escapes, non-ASCII and invalid UTF-8, nested arrays and objects,
// RFC 7047's notation among them, white space anywhere.
func randomJSON(r *rand.Rand, sb *strings.Builder, depth int) {
	ws := func() {
		for range r.Intn(3) {
			sb.WriteByte(" \t\n\r"[r.Intn(4)])
		}
	}
	ws()
	kinds := 7
	if depth <= 0 {
		kinds = 5
	}
	switch r.Intn(kinds) {
	case 0:
		sb.WriteString([]string{"true", "false", "null"}[r.Intn(3)])
	case 1:
		sb.WriteString([]string{"0", "-0", "7", "-12", "3.25", "1e3", "1E-3", "-2.5e+10", "123456789012345678901234567890", "0.1", "1e-400"}[r.Intn(11)])
	case 2, 3:
		sb.WriteByte('"')
		for range r.Intn(8) {
			sb.WriteString([]string{"a", "pod-1", `\"`, `\\`, `\/`, `\n`, `\t`, `\u00e9`, `\ud83d\ude00`, `\ud800`, "é", "日本", "\xff", "\x7f", " "}[r.Intn(15)])
		}
		sb.WriteByte('"')
	case 4:
		fmt.Fprintf(sb, `["uuid","%08x-0000-4000-8000-000000000000"]`, r.Intn(1<<20))
	case 5:
		sb.WriteByte('[')
		n := r.Intn(4)
		if r.Intn(3) == 0 {
			sb.WriteString(`"set",`)
			n = 1
		} else if r.Intn(3) == 0 {
			sb.WriteString(`"map",[`)
			for i := range r.Intn(3) {
				if i > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(sb, `["k%d",`, i)
				randomJSON(r, sb, 0)
				sb.WriteByte(']')
			}
			sb.WriteString(`]]`)
			return
		}
		for i := range n {
			if i > 0 {
				sb.WriteByte(',')
			}
			randomJSON(r, sb, depth-1)
		}
		ws()
		sb.WriteByte(']')
	default:
		randomObject(r, sb, depth-1)
	}
	ws()
}

func randomObject(r *rand.Rand, sb *strings.Builder, depth int) {
	sb.WriteByte('{')
	for i := range r.Intn(5) {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(sb, ` "%s" : `, []string{"name", "addresses", "external_ids", `a\"b`, "é", "name"}[r.Intn(6)])
		randomJSON(r, sb, depth)
	}
	sb.WriteByte('}')
}

// TestRowParseAsEncodingJSON decodes random rows with the one-pass parser
// and with upstream's decoding (encoding/json, then the conversion to Go
// notation) and compares them; the same rows cut or with a byte changed,
// where they are no longer JSON, must be refused.
func TestRowParseAsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	var compared, refused int
	for i := range 20000 {
		var sb strings.Builder
		randomObject(r, &sb, 3)
		raw := []byte(sb.String())
		if i%2 == 1 {
			// not JSON any more, most of the time
			switch r.Intn(3) {
			case 0:
				raw = raw[:r.Intn(len(raw))]
			case 1:
				raw[r.Intn(len(raw))] = "{}[]\",:x0-. e\\"[r.Intn(14)]
			default:
				raw = append(raw, "}]x,1 "[r.Intn(6)])
			}
		}
		var got, want Row
		err := got.UnmarshalJSON(raw)
		if !json.Valid(raw) {
			if err == nil {
				t.Fatalf("%d: %q is not JSON, the parser read it as %#v", i, raw, got)
			}
			refused++
			continue
		}
		var plain map[string]any
		if _, outOfRange := json.Unmarshal(raw, &plain).(*json.UnmarshalTypeError); outOfRange {
			// a number out of float64's range: upstream's error can be
			// overwritten (Row.UnmarshalJSON), the parser's is not
			if err == nil {
				t.Fatalf("%d: %s: a number out of range read as %#v", i, raw, got)
			}
			refused++
			continue
		}
		wantErr := want.unmarshalJSONUpstream(raw)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%d: %s: upstream's error %v, the parser's %v", i, raw, wantErr, err)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%d: %s: upstream decodes %#v, the parser %#v", i, raw, want, got)
		}
		compared++
	}
	if compared < 9000 || refused < 5000 {
		t.Fatalf("%d rows compared and %d refused: the generator misses a kind", compared, refused)
	}

	// Not an object, or out of float64's range.
	for _, raw := range []string{`5`, `"row"`, `[1]`, `{"a":1e400}`, `{"a":-1e400}`, `{} {}`, ``, ` `, `nul`, `null x`} {
		var row Row
		if err := row.UnmarshalJSON([]byte(raw)); err == nil {
			t.Errorf("%q: read as %#v, want an error", raw, row)
		}
	}
	var row Row
	if err := row.UnmarshalJSON([]byte(` null `)); err != nil || row == nil || len(row) != 0 {
		t.Errorf("null: %#v, %v; want the empty row, as upstream", row, err)
	}
	deep := strings.Repeat(`[`, maxDepth+1) + strings.Repeat(`]`, maxDepth+1)
	if err := row.UnmarshalJSON([]byte(`{"a":` + deep + `}`)); err == nil {
		t.Error("a value nested deeper than encoding/json allows was read")
	}
}
