package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// count is one labelled figure of a progress line.
type count struct {
	label string
	n     int64
}

// progress makes the progress lines of one scenario: the time elapsed,
// the pods created (of the total) and the further counts, and the rate of
// the done count since the line before and since the start.
type progress struct {
	name  string
	total int
	start time.Time
	// counts are the figures of a line, created first.
	counts func() []count
	// done is the count whose rate a line shows, named doneLabel.
	done      func() int64
	doneLabel string
	// lastN and lastT are the done count and the time of the line before
	// (the start before the first).
	lastN int64
	lastT time.Time
}

// line is the progress line at now, which becomes the reference of the
// next line's rate. A final line has the average rate only (its interval
// may be a fraction of the others).
func (p *progress) line(now time.Time, final bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bench: %s: %.1fs:", p.name, now.Sub(p.start).Seconds())
	for i, c := range p.counts() {
		if i == 0 {
			fmt.Fprintf(&b, " %s %d/%d", c.label, c.n, p.total)
		} else {
			fmt.Fprintf(&b, ", %s %d", c.label, c.n)
		}
	}
	n := p.done()
	rate := func(n int64, since time.Time) float64 {
		if dt := now.Sub(since).Seconds(); dt > 0 {
			return float64(n) / dt
		}
		return 0
	}
	if final {
		fmt.Fprintf(&b, "; %s %.0f pods/s on average\n", p.doneLabel, rate(n, p.start))
	} else {
		fmt.Fprintf(&b, "; %s %.0f pods/s now, %.0f on average\n", p.doneLabel, rate(n-p.lastN, p.lastT), rate(n, p.start))
	}
	p.lastN, p.lastT = n, now
	return b.String()
}

// startProgress writes p's line to w every interval until stop, which
// writes a last one; only stop's first call acts. A nil w or an interval
// of 0 writes nothing.
func startProgress(w io.Writer, every time.Duration, p *progress) (stop func()) {
	if w == nil || every <= 0 {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				_, _ = io.WriteString(w, p.line(now, false))
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
			_, _ = io.WriteString(w, p.line(time.Now(), true))
		})
	}
}
