package faults

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	encbinary "encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardnet/shardnet/test/harness"
)

// apiGate is a reverse proxy between the replicas and kube-apiserver that
// can hold their watches back. While its gap is on, every list and watch
// request in flight is cut and every new one waits until the gap ends;
// all other requests (Lease renewals, writes, reads of one object) pass.
// It changes no answer of the API server: a watch held across an etcd
// compaction is answered by the API server itself, with 410 Gone when it
// serves watches from etcd (--watch-cache=false).
type apiGate struct {
	srv   *httptest.Server
	proxy *httputil.ReverseProxy
	// kubeconfig reaches the API server through the gate.
	kubeconfig string

	// mu guards everything below.
	mu sync.Mutex
	// gap is closed when the gap ends; nil while there is none.
	gap chan struct{}
	// inflight cuts each list and watch in flight: a list is cancelled, a
	// watch ended cleanly after its last whole event, as the API server
	// ends one whose time is up, so that its client watches again from
	// the last resource version it saw.
	inflight map[int]func()
	next     int
	requests []*gateRequest
	// slow counts the other requests that took a second or more, and
	// slowest is the longest, to tell a slow API server (or gate) from a
	// slow replica when Leases are not renewed in time.
	slow    int
	slowest time.Duration
	slowReq string
}

// gateRequest is one list or watch request that passed the gate.
type gateRequest struct {
	// agent is the replica identity (its program name, the User-Agent's
	// first word); resource is the collection (pods, leases, ...).
	agent, resource string
	// watch: a watch request; initial: a watch that asks for the initial
	// state (a list by watch); rv is the resourceVersion asked for.
	watch, initial bool
	rv             string
	// start is when it was sent to the API server; held says it waited
	// for the gap to end.
	start time.Time
	held  bool
	// expired: the API server answered the watch with a 410 Gone
	// (Expired) event.
	expired bool
}

// startGate starts the gate in front of k and writes a kubeconfig for it.
func startGate(t *testing.T, k *harness.Kube) *apiGate {
	t.Helper()
	target, err := url.Parse(k.URL)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(k.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", k.CAFile())
	}
	g := &apiGate{inflight: map[int]func(){}}
	g.proxy = httputil.NewSingleHostReverseProxy(target)
	g.proxy.Transport = &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
	}
	// Watches stream: pass every event on at once.
	g.proxy.FlushInterval = -1
	g.proxy.ModifyResponse = cutWatches
	// Cut lists and watches end with "context canceled": not worth a line.
	g.proxy.ErrorLog = log.New(io.Discard, "", 0)
	g.srv = httptest.NewUnstartedServer(g)
	g.srv.EnableHTTP2 = true
	g.srv.StartTLS()
	t.Cleanup(g.srv.Close)
	caFile := filepath.Join(t.TempDir(), "gate-ca.crt")
	if err := os.WriteFile(caFile, encodeCert(g.srv.Certificate().Raw), 0o644); err != nil {
		t.Fatal(err)
	}
	g.kubeconfig = filepath.Join(t.TempDir(), "gate-kubeconfig")
	harness.WriteKubeconfig(t, g.kubeconfig, g.srv.URL, caFile)
	return g
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// closeGap starts a gap: lists and watches in flight are cut, new ones
// wait.
func (g *apiGate) closeGap() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gap == nil {
		g.gap = make(chan struct{})
	}
	for id, cut := range g.inflight {
		cut()
		delete(g.inflight, id)
	}
}

// openGap ends the gap: the held requests go on to the API server.
func (g *apiGate) openGap() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gap != nil {
		close(g.gap)
		g.gap = nil
	}
}

func (g *apiGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resource, watch, list := classify(r)
	if !watch && !list {
		start := time.Now()
		g.proxy.ServeHTTP(w, r)
		if d := time.Since(start); d >= time.Second {
			g.mu.Lock()
			g.slow++
			if d > g.slowest {
				g.slowest, g.slowReq = d, fmt.Sprintf("%s %s at %s", r.Method, r.URL.Path, start.Format("15:04:05.000"))
			}
			g.mu.Unlock()
		}
		return
	}
	q := r.URL.Query()
	req := gateRequest{
		agent: strings.SplitN(r.UserAgent(), "/", 2)[0], resource: resource,
		watch: watch, initial: q.Get("sendInitialEvents") == "true", rv: q.Get("resourceVersion"),
	}
	g.mu.Lock()
	gap := g.gap
	g.mu.Unlock()
	if gap != nil {
		req.held = true
		select {
		case <-gap:
		case <-r.Context().Done():
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	cut := cancel
	if watch {
		c := make(chan struct{})
		var once sync.Once
		cut = func() { once.Do(func() { close(c) }) }
		ctx = context.WithValue(ctx, cutKey{}, (<-chan struct{})(c))
	}
	g.mu.Lock()
	id := g.next
	g.next++
	g.inflight[id] = cut
	req.start = time.Now()
	rec := &req
	g.requests = append(g.requests, rec)
	g.mu.Unlock()
	sw := &sniffWriter{ResponseWriter: w}
	defer func() {
		g.mu.Lock()
		delete(g.inflight, id)
		rec.expired = watch && sw.expired()
		g.mu.Unlock()
	}()
	g.proxy.ServeHTTP(sw, r.WithContext(ctx))
}

// cutKey carries a watch's cut channel in its request's context.
type cutKey struct{}

// cutWatches lets a watch's response be cut between two events: once the
// gate cuts it, its body ends (io.EOF) after the last whole event, and the
// proxy ends the response as the API server ends a watch whose time is
// up. Only the framings the replicas use are known: length-prefixed
// protobuf and JSON objects; other responses are left alone (a cut then
// cancels them).
func cutWatches(resp *http.Response) error {
	cut, ok := resp.Request.Context().Value(cutKey{}).(<-chan struct{})
	if !ok || resp.StatusCode != http.StatusOK {
		return nil
	}
	ct := resp.Header.Get("Content-Type")
	var next func() ([]byte, error)
	switch {
	case strings.Contains(ct, "protobuf"):
		next = protobufFrames(resp.Body)
	case strings.Contains(ct, "json"):
		next = jsonFrames(resp.Body)
	default:
		return nil
	}
	resp.Body = newFrameCutter(resp.Body, next, cut)
	return nil
}

// protobufFrames reads the frames of a protobuf watch stream: a 4-byte
// big-endian length and that many bytes.
func protobufFrames(body io.Reader) func() ([]byte, error) {
	r := bufio.NewReader(body)
	return func() ([]byte, error) {
		var head [4]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return nil, err
		}
		frame := make([]byte, 4+int(encbinary.BigEndian.Uint32(head[:])))
		copy(frame, head[:])
		if _, err := io.ReadFull(r, frame[4:]); err != nil {
			return nil, err
		}
		return frame, nil
	}
}

// jsonFrames reads the objects of a JSON watch stream.
func jsonFrames(body io.Reader) func() ([]byte, error) {
	dec := json.NewDecoder(body)
	return func() ([]byte, error) {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		return append(raw, '\n'), nil
	}
}

// frameCutter passes whole frames of body on until cut is closed, then
// ends with io.EOF.
type frameCutter struct {
	body   io.ReadCloser
	frames chan []byte
	// err is the read error that ended frames (written before it closes).
	err    error
	cut    <-chan struct{}
	closed chan struct{}
	once   sync.Once
	buf    []byte
}

func newFrameCutter(body io.ReadCloser, next func() ([]byte, error), cut <-chan struct{}) *frameCutter {
	f := &frameCutter{body: body, frames: make(chan []byte), cut: cut, closed: make(chan struct{})}
	go func() {
		defer close(f.frames)
		for {
			frame, err := next()
			if err != nil {
				f.err = err
				return
			}
			select {
			case f.frames <- frame:
			case <-cut:
				return
			case <-f.closed:
				return
			}
		}
	}()
	return f
}

// Read returns the rest of the current frame, or the next whole frame, or
// io.EOF once cut (never part of a frame).
func (f *frameCutter) Read(p []byte) (int, error) {
	if len(f.buf) == 0 {
		select {
		case <-f.cut:
			return 0, io.EOF
		case frame, ok := <-f.frames:
			if !ok {
				if f.err == nil || errors.Is(f.err, io.EOF) {
					return 0, io.EOF
				}
				return 0, f.err
			}
			f.buf = frame
		}
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

func (f *frameCutter) Close() error {
	f.once.Do(func() { close(f.closed) })
	return f.body.Close()
}

// classify says which collection a request reads and whether it is a
// watch or a list; requests for one object are neither.
func classify(r *http.Request) (resource string, watch, list bool) {
	if r.Method != http.MethodGet {
		return "", false, false
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return "", false, false
	}
	collection := len(rest) == 1
	if len(rest) >= 3 && rest[0] == "namespaces" {
		collection = len(rest) == 3
	}
	if !collection {
		return "", false, false
	}
	resource = rest[len(rest)-1]
	w := r.URL.Query().Get("watch")
	if w == "true" || w == "1" {
		return resource, true, false
	}
	return resource, false, true
}

// sniffWriter keeps the first bytes of a response, enough to find a 410
// Gone event at the start of a watch (the Status's reason "Expired" is
// plain text in both its JSON and its protobuf form).
type sniffWriter struct {
	http.ResponseWriter
	head []byte
}

const sniffBytes = 4096

func (s *sniffWriter) Write(b []byte) (int, error) {
	if n := sniffBytes - len(s.head); n > 0 {
		s.head = append(s.head, b[:min(n, len(b))]...)
	}
	return s.ResponseWriter.Write(b)
}

func (s *sniffWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *sniffWriter) expired() bool {
	return bytes.Contains(s.head, []byte("ERROR")) &&
		(bytes.Contains(s.head, []byte("Expired")) || bytes.Contains(s.head, []byte("too old resource version")))
}

// requestsSince copies the requests that started after from.
func (g *apiGate) requestsSince(from time.Time) []gateRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []gateRequest
	for _, r := range g.requests {
		if !r.start.Before(from) {
			out = append(out, *r)
		}
	}
	return out
}

// watchGap: the lists and watches of the leader, which also runs shards,
// are held back for two lease durations while the load goes on; then etcd
// is compacted past every resource version it saw, and the held watches
// go on to the API server, which serves pod watches from etcd in this case
// and so answers its pod watch 410 Gone (the others it serves from its
// watch cache, with the events missed). The replica must relist and catch
// up: allocate the pods created during the gap and release the pods
// deleted during it; and as leader, with its view of the member Leases
// stalled, it must not move a live member's shards. (r) is 1 when the
// gate did not see the relist happen: a held pod watch from before the
// compaction answered 410 Gone, and a pod list after it.
func watchGap(ctx context.Context, t *testing.T, e *env, l *load) faultInfo {
	g := e.gate
	fi := faultInfo{injected: time.Now()}
	g.closeGap()
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(2 * leaseDuration):
	}
	rev, err := e.kube.CompactEtcd(ctx)
	if err != nil {
		g.openGap()
		t.Fatalf("compacting etcd: %v", err)
	}
	fi.healed = time.Now()
	g.openGap()
	fi.note = fmt.Sprintf("the lists and watches of %s (leading) held for %v, etcd compacted to revision %d, then let through",
		e.gated, fi.healed.Sub(fi.injected).Round(time.Millisecond), rev)
	fi.extra = func() (violations, string) {
		v := violations{id: "r", title: "gated replica not seen answered 410 Gone on its pod watch and relisting"}
		reqs := g.requestsSince(fi.injected)
		held, expired := 0, 0
		for _, id := range []string{e.gated} {
			var gone, relisted bool
			for _, r := range reqs {
				if r.agent != id || r.resource != "pods" {
					continue
				}
				if r.held && r.watch && !r.initial {
					held++
					if n, err := strconv.ParseInt(r.rv, 10, 64); err == nil && n < rev && r.expired {
						gone = true
						expired++
					}
				}
				// A list, or a watch asking for the initial state, sent
				// after the gap: the relist.
				if (!r.watch || r.initial) && r.start.After(fi.healed) {
					relisted = true
				}
			}
			if !gone || !relisted {
				v.add("%s: pod watch answered 410 Gone %v, pods relisted after it %v", id, gone, relisted)
			}
		}
		g.mu.Lock()
		slow := fmt.Sprintf("%d other requests through the gate took 1 s or more", g.slow)
		if g.slow > 0 {
			slow += fmt.Sprintf(", the longest %v (%s)", g.slowest.Round(time.Millisecond), g.slowReq)
		}
		g.mu.Unlock()
		return v.done(), fmt.Sprintf("%d held pod watches, %d answered 410 Gone; %s", held, expired, slow)
	}
	return fi
}
