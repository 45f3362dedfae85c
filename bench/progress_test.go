package bench

import (
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestProgressLine(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var created, allocated, routed int64
	p := &progress{name: "shardnet-3", total: 5000, start: start, lastT: start, doneLabel: "routed",
		done: func() int64 { return routed },
		counts: func() []count {
			return []count{{"created", created}, {"allocated", allocated}, {"routed", routed}}
		}}
	created, allocated, routed = 1200, 1100, 1000
	if got, want := p.line(start.Add(2*time.Second), false), "bench: shardnet-3: 2.0s: created 1200/5000, allocated 1100, routed 1000; routed 500 pods/s now, 500 on average\n"; got != want {
		t.Errorf("first line %q, want %q", got, want)
	}
	// The current rate is over the interval since the line before.
	created, allocated, routed = 2400, 2300, 1300
	if got, want := p.line(start.Add(4*time.Second), false), "bench: shardnet-3: 4.0s: created 2400/5000, allocated 2300, routed 1300; routed 150 pods/s now, 325 on average\n"; got != want {
		t.Errorf("second line %q, want %q", got, want)
	}
	created, allocated, routed = 5000, 5000, 5000
	if got, want := p.line(start.Add(5*time.Second), true), "bench: shardnet-3: 5.0s: created 5000/5000, allocated 5000, routed 5000; routed 1000 pods/s on average\n"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
}

// syncBuffer is a writer safe for the progress goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestProgressWritesALastLineOnce(t *testing.T) {
	o := newScenarioObserver(2, spec{name: "shardnet-1"})
	o.nCreated.Add(2)
	o.see(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{"ovn.kubernetes.io/allocated": "true"}}})
	o.see(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", Annotations: map[string]string{
		"ovn.kubernetes.io/allocated": "true", "ovn.kubernetes.io/routed": "true"}}})
	var buf syncBuffer
	// An interval no test reaches: the only line is the last one.
	stop := startProgress(&buf, time.Hour, o.progress("shardnet-1", time.Now()))
	stop()
	stop()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "bench: shardnet-1: ") ||
		!strings.Contains(lines[0], "created 2/2, allocated 2, routed 1; routed ") || !strings.HasSuffix(lines[0], "pods/s on average") {
		t.Fatalf("progress output %q, want one last line with created 2/2, allocated 2, routed 1", buf.String())
	}

	// Plain pods count as seen; a zero interval writes nothing.
	plain := newScenarioObserver(1, spec{name: "raw", plain: true})
	plain.see(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	if line := plain.progress("raw", time.Now()).line(time.Now(), false); !strings.Contains(line, "created 0/1, seen 1; seen ") {
		t.Errorf("plain line %q", line)
	}
	select {
	case <-plain.done:
	default:
		t.Error("a plain pod seen is not done")
	}
	var none syncBuffer
	startProgress(&none, 0, plain.progress("raw", time.Now()))()
	startProgress(nil, time.Second, plain.progress("raw", time.Now()))()
	if none.String() != "" {
		t.Errorf("a zero interval wrote %q", none.String())
	}
}
