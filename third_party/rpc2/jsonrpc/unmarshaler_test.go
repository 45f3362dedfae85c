package jsonrpc

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/cenkalti/rpc2"
)

// recorder keeps the bytes its UnmarshalJSON is handed.
type recorder struct{ got []byte }

func (r *recorder) UnmarshalJSON(b []byte) error {
	r.got = append([]byte(nil), b...)
	return nil
}

// A result that decodes itself is handed the bytes json.Unmarshal would
// hand it; other results, and a nil pointer, are decoded by json.Unmarshal
// as upstream's codec does.
func TestResultUnmarshalerGetsItsBytes(t *testing.T) {
	for _, result := range []string{`[true,"t",{"T":{}}]`, `"s"`, ` { "a" : [1, 2] } `} {
		stream := `{"id":1,"result":` + result + `,"error":null}` + `{"id":2,"result":` + result + `,"error":null}`
		c := NewJSONCodec(pipeConn{Reader: strings.NewReader(stream), Writer: io.Discard}).(*jsonCodec)
		read := func(x interface{}) {
			t.Helper()
			var req rpc2.Request
			var resp rpc2.Response
			if err := c.ReadHeader(&req, &resp); err != nil {
				t.Fatal(err)
			}
			if err := c.ReadResponseBody(x); err != nil {
				t.Fatal(err)
			}
		}
		var direct, viaUnmarshal recorder
		read(&direct)
		AsUpstream = true
		read(&viaUnmarshal)
		AsUpstream = false
		if string(direct.got) != string(viaUnmarshal.got) {
			t.Errorf("result %s: handed %q, json.Unmarshal hands %q", result, direct.got, viaUnmarshal.got)
		}
	}

	stream := `{"id":1,"result":{"a":1},"error":null}`
	c := NewJSONCodec(pipeConn{Reader: strings.NewReader(stream), Writer: io.Discard}).(*jsonCodec)
	var req rpc2.Request
	var resp rpc2.Response
	if err := c.ReadHeader(&req, &resp); err != nil {
		t.Fatal(err)
	}
	var nilPtr *recorder
	err := c.ReadResponseBody(nilPtr)
	if _, ok := err.(*json.InvalidUnmarshalError); !ok {
		t.Errorf("a nil pointer: %v, want json.Unmarshal's InvalidUnmarshalError", err)
	}
}
