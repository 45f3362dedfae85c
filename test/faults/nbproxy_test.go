package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// nbProxy forwards one replica's Northbound connections to ovsdb-server
// and can hold back the transactions the replica sends: while it holds,
// every JSON-RPC "transact" request stays in the proxy (everything else,
// echo replies and monitor requests, goes on), and release sends them to
// the server later, on a connection of its own. It stands for a writer
// paused between its checks and its send, or a network that delays its
// packets: a transaction the replica built while it owned a shard reaches
// the server after the shard moved, and only the Northbound fence can
// refuse it. What the server sends is never held; the answers to the held
// transactions go nowhere (the replica's own connection may be gone by
// then), but release reads them.
type nbProxy struct {
	ln     net.Listener
	target string

	// mu guards held, pending and changed.
	mu      sync.Mutex
	held    bool
	pending []json.RawMessage
	changed chan struct{}
}

// startNBProxy listens on a loopback port and forwards to target
// ("tcp:HOST:PORT").
func startNBProxy(t *testing.T, target string) *nbProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &nbProxy{ln: ln, target: strings.TrimPrefix(target, "tcp:"), changed: make(chan struct{})}
	t.Cleanup(func() { _ = ln.Close() })
	go p.serve()
	return p
}

// endpoint is the proxy's --nb-endpoints remote.
func (p *nbProxy) endpoint() string { return "tcp:" + p.ln.Addr().String() }

func (p *nbProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		go func() {
			_, _ = io.Copy(client, server)
			_ = client.Close()
		}()
		go p.upstream(client, server)
	}
}

// rpc is what the proxy reads of a JSON-RPC message.
type rpc struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// upstream passes the replica's messages on, one whole message at a time,
// keeping its transactions while the proxy holds.
func (p *nbProxy) upstream(client, server net.Conn) {
	defer func() { _ = server.Close() }()
	dec := json.NewDecoder(client)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return
		}
		var m rpc
		_ = json.Unmarshal(raw, &m)
		p.mu.Lock()
		if p.held && m.Method == "transact" {
			p.pending = append(p.pending, raw)
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
			continue
		}
		p.mu.Unlock()
		if _, err := server.Write(raw); err != nil {
			return
		}
	}
}

// hold starts holding the replica's transactions.
func (p *nbProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
}

// waitHeld waits until one held transaction contains every one of parts,
// or ctx ends.
func (p *nbProxy) waitHeld(ctx context.Context, parts ...string) error {
	for {
		p.mu.Lock()
		n := len(p.pending)
		found := false
		for _, raw := range p.pending {
			all := true
			for _, s := range parts {
				all = all && bytes.Contains(raw, []byte(s))
			}
			found = found || all
		}
		ch := p.changed
		p.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d transactions held, none with %q: %w", n, parts, ctx.Err())
		case <-ch:
		}
	}
}

// release stops holding and sends the held transactions to the server on
// a new connection, in order; it returns how many it sent, how many the
// server refused (an operation of the transaction failed: for a fenced
// one, the fence), and the operations of those it did not refuse.
func (p *nbProxy) release(ctx context.Context) (sent, refused int, accepted []string, err error) {
	p.mu.Lock()
	held := p.pending
	p.pending, p.held = nil, false
	p.mu.Unlock()
	if len(held) == 0 {
		return 0, 0, nil, nil
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.target)
	if err != nil {
		return 0, 0, nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	want := map[string]json.RawMessage{}
	for _, raw := range held {
		var m rpc
		_ = json.Unmarshal(raw, &m)
		want[string(m.ID)] = raw
		if _, err := conn.Write(raw); err != nil {
			return sent, refused, accepted, err
		}
		sent++
	}
	dec := json.NewDecoder(conn)
	for len(want) > 0 {
		var m rpc
		if err := dec.Decode(&m); err != nil {
			return sent, refused, accepted, fmt.Errorf("reading the answers: %w", err)
		}
		raw, ok := want[string(m.ID)]
		if !ok || m.Method != "" {
			continue
		}
		delete(want, string(m.ID))
		if (len(m.Error) > 0 && string(m.Error) != "null") || bytes.Contains(m.Result, []byte(`"error"`)) {
			refused++
		} else {
			accepted = append(accepted, transactOps(raw))
		}
	}
	return sent, refused, accepted, nil
}

// transactOps names the operations of a transact request: "op table"
// each.
func transactOps(raw json.RawMessage) string {
	var req struct {
		Params []json.RawMessage `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil || len(req.Params) < 2 {
		return "?"
	}
	var ops []string
	for _, p := range req.Params[1:] {
		var op struct {
			Op    string `json:"op"`
			Table string `json:"table"`
		}
		_ = json.Unmarshal(p, &op)
		ops = append(ops, op.Op+" "+op.Table)
	}
	return strings.Join(ops, ", ")
}

// nbProxies starts a proxy per replica identity in front of endpoint.
func nbProxies(t *testing.T, endpoint string, ids ...string) map[string]*nbProxy {
	out := map[string]*nbProxy{}
	for _, id := range ids {
		out[id] = startNBProxy(t, endpoint)
	}
	return out
}

// heldWait bounds the wait for the first held transaction.
const heldWait = 30 * time.Second
