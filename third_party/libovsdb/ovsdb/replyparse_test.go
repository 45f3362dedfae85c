package ovsdb

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// randomReply writes a random reply to monitor_cond_since: mostly the form
// ovsdb-server sends, with white space anywhere, and sometimes another
// (other types, members named otherwise or in other case, escaped names,
// rows that are not RFC 7047's notation, elements missing or extra).
func randomReply(r *rand.Rand) string {
	var sb strings.Builder
	ws := func() {
		for range r.Intn(2) {
			sb.WriteByte(" \t\n\r"[r.Intn(4)])
		}
	}
	odd := func() bool { return r.Intn(40) == 0 }
	oddValue := func() {
		sb.WriteString([]string{"null", "5", `"x"`, "[]", "true", "{}"}[r.Intn(6)])
	}
	row := func() {
		switch {
		case odd():
			oddValue()
		case r.Intn(8) == 0:
			randomObject(r, &sb, 2)
		default:
			sb.WriteString(benchRow(r.Intn(1000)))
		}
	}
	rowUpdate := func() {
		sb.WriteByte('{')
		for i := range r.Intn(3) {
			if i > 0 {
				sb.WriteByte(',')
			}
			ws()
			name := []string{"initial", "insert", "modify", "delete"}[r.Intn(4)]
			if odd() {
				name = []string{"Initial", "INSERT", "old", `in\u017fert`, `in\u0069tial`, "new", ""}[r.Intn(7)]
			}
			fmt.Fprintf(&sb, `"%s"`, name)
			ws()
			sb.WriteByte(':')
			ws()
			if r.Intn(6) == 0 {
				sb.WriteString("null")
			} else {
				row()
			}
			ws()
		}
		sb.WriteByte('}')
	}
	tables := func() {
		sb.WriteByte('{')
		for i := range r.Intn(4) {
			if i > 0 {
				sb.WriteByte(',')
			}
			ws()
			fmt.Fprintf(&sb, `"%s"`, []string{"Logical_Switch_Port", "Logical_Switch", "NB_Global", `a\"b`, "é", "Logical_Switch_Port"}[r.Intn(6)])
			sb.WriteByte(':')
			ws()
			switch {
			case odd():
				oddValue()
				continue
			case r.Intn(10) == 0:
				sb.WriteString("null")
				continue
			}
			sb.WriteByte('{')
			for j := range r.Intn(5) {
				if j > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `"%08x-0000-4000-8000-00000000000%d"`, r.Intn(4), r.Intn(2))
				sb.WriteByte(':')
				ws()
				switch {
				case odd():
					oddValue()
				case r.Intn(10) == 0:
					sb.WriteString("null")
				default:
					rowUpdate()
				}
				ws()
			}
			sb.WriteByte('}')
			ws()
		}
		sb.WriteByte('}')
	}
	ws()
	sb.WriteByte('[')
	ws()
	if odd() {
		oddValue()
	} else {
		sb.WriteString([]string{"true", "false"}[r.Intn(2)])
	}
	ws()
	sb.WriteByte(',')
	ws()
	if odd() {
		oddValue()
	} else {
		sb.WriteString([]string{`"6c2e-txn"`, `""`, `"a\"b\u00e9"`, `"é"`}[r.Intn(4)])
	}
	ws()
	if !odd() {
		sb.WriteByte(',')
		ws()
		switch {
		case odd():
			oddValue()
		case r.Intn(20) == 0:
			sb.WriteString("null")
		default:
			tables()
		}
		if odd() {
			sb.WriteString(",1")
		}
	}
	ws()
	sb.WriteByte(']')
	ws()
	return sb.String()
}

// TestCondSinceReplyParseAsDecoder decodes random replies with the
// copy's UnmarshalJSON and with upstream's, and compares them; what the
// one-pass parser takes must be what encoding/json gives, and it must
// refuse the same replies cut or with a byte changed, where they are no
// longer JSON.
func TestCondSinceReplyParseAsDecoder(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	var parsed, decoded, refused int
	for i := range 20000 {
		raw := []byte(randomReply(r))
		if i%4 == 3 {
			switch r.Intn(3) {
			case 0:
				raw = raw[:r.Intn(len(raw))]
			case 1:
				raw[r.Intn(len(raw))] = "{}[]\",:x0-. e\\"[r.Intn(14)]
			default:
				raw = append(raw, "}]x,1 "[r.Intn(6)])
			}
		}
		fast, ok := parseCondSinceReply(raw, nil)
		if !json.Valid(raw) {
			if ok {
				t.Fatalf("%d: %q is not JSON, the parser read it as %#v", i, raw, fast)
			}
			refused++
			continue
		}
		var want MonitorCondSinceReply
		wantErr := want.unmarshalJSONUpstream(raw)
		if ok {
			if wantErr != nil {
				t.Fatalf("%d: %s: upstream refuses it (%v), the parser read it as %#v", i, raw, wantErr, fast)
			}
			if !reflect.DeepEqual(fast, want) {
				t.Fatalf("%d: %s: upstream decodes %#v, the parser %#v", i, raw, want, fast)
			}
			parsed++
		}
		var got MonitorCondSinceReply
		err := json.Unmarshal(raw, &got)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%d: %s: upstream's error %v, the copy's %v", i, raw, wantErr, err)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%d: %s: upstream decodes %#v, the copy %#v", i, raw, want, got)
		}
		if !ok {
			decoded++
		}
		if err == nil {
			compareBuilt(t, i, raw, want, ok)
		}
	}
	if parsed < 7000 || decoded < 1500 || refused < 2500 {
		t.Fatalf("%d replies parsed in one pass, %d decoded otherwise, %d refused: the generator misses a kind", parsed, decoded, refused)
	}
	t.Logf("%d replies parsed in one pass, %d decoded otherwise, %d refused", parsed, decoded, refused)
	if builtReplies < 1000 || keptReplies < 500 {
		t.Fatalf("%d replies with models built, %d with a model refused: the generator misses a kind", builtReplies, keptReplies)
	}
}

// builtRow is what testBuild builds.
type builtRow struct {
	table, uuid string
	row         Row
}

var errNotBuilt = errors.New("not built")

// testBuild builds a Logical_Switch_Port's row, keeps a NB_Global's, and
// fails for a Logical_Switch's.
func testBuild(table, uuid string, row *Row) (any, error) {
	switch table {
	case "Logical_Switch_Port":
		return &builtRow{table, uuid, *row}, nil
	case "Logical_Switch":
		return nil, errNotBuilt
	}
	return nil, nil
}

var builtReplies, keptReplies int

// compareBuilt decodes raw with testBuild as BuildModel and compares it
// with want, upstream's reply: with each Logical_Switch_Port's Initial,
// or else Insert, built, when raw is read in one pass (onePass) and holds
// no Logical_Switch to build; as want otherwise.
func compareBuilt(t *testing.T, i int, raw []byte, want MonitorCondSinceReply, onePass bool) {
	t.Helper()
	got := MonitorCondSinceReply{BuildModel: testBuild}
	if err := got.UnmarshalJSON(raw); err != nil {
		t.Fatalf("%d: %s: with BuildModel: %v", i, raw, err)
	}
	if got.BuildModel == nil {
		t.Fatalf("%d: %s: BuildModel lost", i, raw)
	}
	got.BuildModel = nil
	rowOf := func(u *RowUpdate2) *Row {
		switch {
		case u == nil:
			return nil
		case u.Initial != nil:
			return u.Initial
		}
		return u.Insert
	}
	// A member repeated in raw replaces the one before it, whose row was
	// handed to BuildModel all the same: whether a Logical_Switch's row
	// was is asked of the parser, with a BuildModel that fails for none.
	refused, built := false, 0
	if _, ok := parseCondSinceReply(raw, func(table, _ string, _ *Row) (any, error) {
		refused = refused || table == "Logical_Switch"
		return nil, nil
	}); ok != onePass {
		t.Fatalf("%d: %s: read in one pass %v without BuildModel, %v with one that builds nothing", i, raw, onePass, ok)
	}
	if onePass && !refused {
		for table, rows := range want.Updates {
			for uuid, u := range rows {
				if row := rowOf(u); row != nil && table == "Logical_Switch_Port" {
					u.Model, u.Initial, u.Insert = &builtRow{table, uuid, *row}, nil, nil
					built++
				}
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%d: %s: with BuildModel, want %#v, got %#v", i, raw, want, got)
	}
	if built > 0 {
		builtReplies++
	}
	if onePass && refused {
		keptReplies++
	}
}
