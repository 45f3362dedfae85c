package ovsdb

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"
)

// upstreamNotation runs upstream's conversion, a panic reported as such.
func upstreamNotation(v any) (out any, err error, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	out, err = ovsSliceToGoNotationUpstream(v)
	return out, err, false
}

// randomNotation returns a value as json.Unmarshal into any would give
// it: mostly RFC 7047's notation, sometimes not (short arrays, wrong
// element types, nested maps, objects).
func randomNotation(r *rand.Rand, depth int) any {
	atom := func() any {
		switch r.Intn(6) {
		case 0:
			return fmt.Sprintf("s%d", r.Intn(50))
		case 1:
			return float64(r.Intn(1000)) / 4
		case 2:
			return r.Intn(2) == 0
		case 3:
			return []any{"uuid", fmt.Sprintf("%08x-0000-4000-8000-%012x", r.Intn(1<<30), r.Intn(1<<30))}
		case 4:
			return []any{"named-uuid", fmt.Sprintf("row%d", r.Intn(9))}
		default:
			return nil
		}
	}
	if depth <= 0 {
		return atom()
	}
	elems := func() []any {
		out := make([]any, r.Intn(5))
		for i := range out {
			out[i] = randomNotation(r, depth-1)
		}
		return out
	}
	switch r.Intn(14) {
	case 0, 1, 2:
		return atom()
	case 3, 4:
		set := make([]any, r.Intn(5))
		for i := range set {
			set[i] = atom()
		}
		return []any{"set", set}
	case 5, 6:
		pairs := make([]any, r.Intn(5))
		for i := range pairs {
			pairs[i] = []any{fmt.Sprintf("k%d", i), atom()}
		}
		return []any{"map", pairs}
	case 7:
		return []any{"set", elems()}
	case 8:
		pairs := make([]any, r.Intn(4))
		for i := range pairs {
			pair := elems()
			if r.Intn(3) > 0 {
				pair = []any{randomNotation(r, depth-1), randomNotation(r, depth-1)}
			}
			pairs[i] = pair
		}
		return []any{"map", pairs}
	case 9:
		// a kind and too few or odd elements
		kinds := []any{"uuid", "named-uuid", "set", "map", "other", 3.0}
		out := []any{kinds[r.Intn(len(kinds))]}
		if r.Intn(2) == 0 {
			out = append(out, randomNotation(r, depth-1))
		}
		return out
	case 10:
		return []any{"uuid", atom(), atom()}
	case 11:
		return map[string]any{"a": atom()}
	case 12:
		return elems()
	default:
		return []any{"map", randomNotation(r, depth-1)}
	}
}

// TestGoNotationAsUpstream checks the direct conversion against upstream's
// round trip through JSON: the same value and the same success wherever
// upstream does not panic, and an error (never a panic) where it does.
func TestGoNotationAsUpstream(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var agreed, refused int
	for i := range 20000 {
		v := randomNotation(r, 3)
		want, wantErr, panicked := upstreamNotation(v)
		got, err := ovsSliceToGoNotation(v)
		b, _ := json.Marshal(v)
		switch {
		case panicked:
			if err == nil {
				t.Fatalf("%d: %s: upstream panicked, the copy converted it to %#v without an error", i, b, got)
			}
			refused++
		case (wantErr == nil) != (err == nil):
			t.Fatalf("%d: %s: upstream's error %v, the copy's %v", i, b, wantErr, err)
		case err == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("%d: %s: upstream gives %#v, the copy %#v", i, b, want, got)
		case err == nil:
			agreed++
		}
	}
	// The generator must reach both kinds of input.
	if agreed < 5000 || refused < 500 {
		t.Fatalf("%d values converted alike and %d refused where upstream panicked: the generator misses a kind", agreed, refused)
	}
}

// TestRowDecodeAsUpstream decodes rows of a Logical_Switch_Port's columns
// both ways.
func TestRowDecodeAsUpstream(t *testing.T) {
	defer func() { AsUpstream = false }()
	for _, raw := range []string{benchRow(7), `{"name":"x","addresses":["set",[]],"tag":["set",[3]],"up":true}`} {
		var got, want Row
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Fatal(err)
		}
		AsUpstream = true
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		AsUpstream = false
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: upstream decodes %#v, the copy %#v", raw, want, got)
		}
	}
}

// benchRow is a Logical_Switch_Port row of the columns shardnet monitors,
// as ovsdb-server sends it in a monitor reply.
func benchRow(i int) string {
	return fmt.Sprintf(`{"name":"pod-%[1]d.default","addresses":"00:00:00:00:%02[2]x:%02[3]x 10.16.%[2]d.%[3]d",`+
		`"port_security":"00:00:00:00:%02[2]x:%02[3]x 10.16.%[2]d.%[3]d",`+
		`"external_ids":["map",[["ls","ovn-default"],["pod","default/pod-%[1]d"],["vendor","kube-ovn"],["shardnet.io/owner","shardnet"]]],`+
		`"options":["map",[]],"dynamic_addresses":["set",[]],"tag":["set",[]],`+
		`"type":"","up":["set",[]],"enabled":["set",[]]}`, i, i/256, i%256)
}

// BenchmarkRowDecode reports the time to decode a port's row the way a
// monitor reply's rows are decoded, with upstream's conversion to Go
// notation and with the copy's, alternated in one run, and their ratio.
//
//	go test -run '^$' -bench RowDecode ./ovsdb/   (in third_party/libovsdb)
func BenchmarkRowDecode(b *testing.B) {
	const rows = 2000
	raw := make([][]byte, rows)
	for i := range raw {
		raw[i] = []byte(benchRow(i))
	}
	alternate(b, func() float64 {
		start := time.Now()
		for _, r := range raw {
			var row Row
			if err := json.Unmarshal(r, &row); err != nil {
				b.Fatal(err)
			}
		}
		return float64(time.Since(start).Nanoseconds()) / rows
	})
}

// TestMonitorCondSinceReplyAsUpstream decodes replies, well formed or not,
// with upstream's UnmarshalJSON and the copy's.
func TestMonitorCondSinceReplyAsUpstream(t *testing.T) {
	defer func() { AsUpstream = false }()
	rows := `{"Logical_Switch_Port":{"u1":{"initial":` + benchRow(1) + `},"u2":{"initial":` + benchRow(2) +
		`}},"Logical_Switch":{"u3":{"modify":{"ports":["set",[["uuid","u1"]]]}},"u4":{"delete":null}}}`
	for _, raw := range []string{
		`[true,"6c2e-txn",` + rows + `]`,
		`[false,"",{}]`,
		` [ false , null , ` + rows + ` ] `,
		`[false,"x"]`,
		`[false,"x",{},1]`,
		`[]`,
		`null`,
		`{"a":1}`,
		`[1,"x",{}]`,
		`[false,"x",{"T":{"u":{"initial":5}}}]`,
	} {
		var got, want MonitorCondSinceReply
		err := json.Unmarshal([]byte(raw), &got)
		AsUpstream = true
		wantErr := json.Unmarshal([]byte(raw), &want)
		AsUpstream = false
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%s: upstream's error %v, the copy's %v", raw, wantErr, err)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: upstream decodes %#v, the copy %#v", raw, want, got)
		}
	}
}

// BenchmarkReplyDecode reports the time to decode the reply to a first
// monitor of 5,000 ports as the client does (MonitorCondSinceReply), with
// upstream's decoding and with the copy's, alternated in one run.
//
//	go test -run '^$' -bench ReplyDecode ./ovsdb/   (in third_party/libovsdb)
func BenchmarkReplyDecode(b *testing.B) {
	const rows = 5000
	var sb strings.Builder
	sb.WriteString(`[true,"6c2e-txn",{"Logical_Switch_Port":{`)
	for i := range rows {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"%08x-0000-4000-8000-000000000000":{"initial":%s}`, i, benchRow(i))
	}
	sb.WriteString(`}}]`)
	raw := []byte(sb.String())
	alternate(b, func() float64 {
		start := time.Now()
		var reply MonitorCondSinceReply
		if err := json.Unmarshal(raw, &reply); err != nil {
			b.Fatal(err)
		}
		if len(reply.Updates["Logical_Switch_Port"]) != rows {
			b.Fatal("rows missing")
		}
		return float64(time.Since(start).Nanoseconds()) / rows
	})
}

// alternate runs decode with upstream's decoding and with the copy's, in
// turn b.N times, and reports each one's mean nanoseconds per row and
// their ratio.
func alternate(b *testing.B, decode func() float64) {
	defer func() { AsUpstream = false }()
	var upstream, copied float64
	for range b.N {
		AsUpstream = true
		upstream += decode()
		AsUpstream = false
		copied += decode()
	}
	n := float64(b.N)
	b.ReportMetric(upstream/n, "upstream-ns/row")
	b.ReportMetric(copied/n, "copy-ns/row")
	b.ReportMetric(copied/upstream, "copy/upstream")
}
