package jsonrpc

import (
	"io"
	"strings"
	"testing"

	"github.com/cenkalti/rpc2"
)

type pipeConn struct {
	io.Reader
	io.Writer
}

func (pipeConn) Close() error { return nil }

// A message over ReleaseAbove gets the codec a new decoder, and the
// messages the old one had buffered after it still arrive, in order.
func TestLargeMessageRenewsTheDecoder(t *testing.T) {
	big := `{"id":1,"result":"` + strings.Repeat("x", 4096) + `","error":null}`
	small := func(id string) string { return `{"id":` + id + `,"result":"ok","error":null}` }
	stream := big + small("2") + "\n" + small("3") + big + small("5")

	saved := ReleaseAbove
	ReleaseAbove = 1024
	defer func() { ReleaseAbove = saved }()
	before := Released.Load()

	// A reader that hands out the stream in pieces that end inside
	// values, so the decoder buffers the start of the next message.
	c := NewJSONCodec(pipeConn{Reader: &chunked{data: []byte(stream), n: 700}, Writer: io.Discard}).(*jsonCodec)
	for _, want := range []struct {
		seq    uint64
		result string
	}{{1, strings.Repeat("x", 4096)}, {2, "ok"}, {3, "ok"}, {1, strings.Repeat("x", 4096)}, {5, "ok"}} {
		var req rpc2.Request
		var resp rpc2.Response
		if err := c.ReadHeader(&req, &resp); err != nil {
			t.Fatalf("message %d: %v", want.seq, err)
		}
		var got string
		if err := c.ReadResponseBody(&got); err != nil {
			t.Fatal(err)
		}
		if resp.Seq != want.seq || got != want.result {
			t.Fatalf("got id %d result of %d bytes, want id %d and %d bytes", resp.Seq, len(got), want.seq, len(want.result))
		}
		if c.clientResponse.Result != nil || c.msg.Result != nil {
			t.Fatal("the codec still holds the result it handed out")
		}
	}
	if n := Released.Load() - before; n != 2 {
		t.Errorf("%d decoders renewed, want 2 (one per large message)", n)
	}
	var req rpc2.Request
	var resp rpc2.Response
	if err := c.ReadHeader(&req, &resp); err != io.EOF {
		t.Errorf("after the last message: %v, want EOF", err)
	}
}

type chunked struct {
	data []byte
	n    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := len(p)
	if k > c.n {
		k = c.n
	}
	if k > len(c.data) {
		k = len(c.data)
	}
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}
