package e2e

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// firstRefusedProxy is a loopback TCP proxy to target that closes the
// first refuse connections it accepts at once, as a Northbound too busy
// to answer would look to a client, and relays the later ones.
type firstRefusedProxy struct {
	l        net.Listener
	target   string
	refuse   int64
	accepted atomic.Int64
	wg       sync.WaitGroup
	// mu guards conns, every relayed connection's two ends, closed at
	// cleanup so that the relays end, and closed, set then: a relay
	// that starts after it closes its ends at once.
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func startFirstRefusedProxy(t *testing.T, target string, refuse int64) *firstRefusedProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &firstRefusedProxy{l: l, target: target, refuse: refuse}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		p.closed = true
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *firstRefusedProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if p.accepted.Add(1) <= p.refuse {
			c.Close()
			continue
		}
		p.wg.Go(func() { p.relay(c) })
	}
}

func (p *firstRefusedProxy) relay(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.conns = append(p.conns, c, up)
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// TestReplicaWaitsForTheNorthbound: a replica whose first connections to
// the Northbound fail does not give up (a process would exit and wait out
// the kubelet's back-off): it tries again every retry period, and once
// the server answers it joins and routes pods as any replica does.
func TestReplicaWaitsForTheNorthbound(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := c.kube.CreateNode(t, "kwok-node-1", "")
	c.subnet("ovn-default", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	const ns = "nbwait"
	c.namespace(ns)

	proxy := startFirstRefusedProxy(t, strings.TrimPrefix(c.nb.Endpoint, "tcp:"), 2)
	opts := c.options("shardnet-0")
	opts.NBEndpoints = "tcp:" + proxy.l.Addr().String()
	// Returns once a connection got through: the two refused ones were
	// retried, not fatal.
	c.startReplicaWith(opts, c.kube.Config)
	if n := proxy.accepted.Load(); n < 3 {
		t.Fatalf("the replica started after %d connections to the Northbound; want the 2 refused and one more", n)
	}
	c.createPods(ns, "pod", node.Name, 20)
	c.waitRouted(ctx, ns, 20)
}
