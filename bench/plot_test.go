package bench

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestLogTicksAreRound(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []float64
	}{
		{20, 3000, []float64{20, 50, 100, 200, 500, 1000, 2000}},
		{1, 10000, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}},
		{35, 40, nil},
		{0.2, 1, []float64{0.2, 0.5, 1}},
		{1000, 1000, []float64{1000}},
	} {
		if got := logTicks(c.lo, c.hi); !slices.Equal(got, c.want) {
			t.Errorf("logTicks(%v, %v) = %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
	var labels []string
	for _, v := range logTicks(0.5, 10000) {
		labels = append(labels, msLabel(v))
	}
	if got := strings.Join(labels, ","); got != "500µs,1ms,2ms,5ms,10ms,20ms,50ms,100ms,200ms,500ms,1s,2s,5s,10s" {
		t.Errorf("labels %s", got)
	}
	for _, c := range []struct{ v, below, above float64 }{
		{35, 20, 50}, {2400, 2000, 5000}, {100, 100, 100}, {1000, 1000, 1000}, {0.3, 0.2, 0.5}, {7, 5, 10},
	} {
		if b, a := roundBelow(c.v), roundAbove(c.v); b != c.below || a != c.above {
			t.Errorf("round values around %v: %v and %v, want %v and %v", c.v, b, a, c.below, c.above)
		}
	}
	// An axis over many decades labels the powers of ten only.
	a := logAxis(0.5, 80000)
	var shown []string
	for i, v := range a.ticks {
		if a.labelled == nil || a.labelled(i) {
			shown = append(shown, msLabel(v))
		}
	}
	if got := strings.Join(shown, ","); got != "1ms,10ms,100ms,1s,10s,100s" {
		t.Errorf("labels of a 500µs-100s axis: %s", got)
	}
}

// TestLatencyPlotIsLogScale checks that the latency plot places 10 ms,
// 100 ms and 1 s at equal distances, with round ticks labelled from the
// axis's round start to its round end.
func TestLatencyPlotIsLogScale(t *testing.T) {
	r := &Result{Scenarios: []Scenario{{Name: "shardnet-3", Latencies: []float64{10, 100, 1000}}}}
	svg := latencySVG(r)
	m := regexp.MustCompile(`<polyline [^>]*points="([^"]+)"`).FindStringSubmatch(svg)
	if m == nil {
		t.Fatalf("no polyline:\n%s", svg)
	}
	var xs []float64
	for _, p := range strings.Fields(m[1]) {
		x, err := strconv.ParseFloat(strings.Split(p, ",")[0], 64)
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
	// The three points, then the last again at 100%.
	if len(xs) != 4 {
		t.Fatalf("points %v", xs)
	}
	if d1, d2 := xs[1]-xs[0], xs[2]-xs[1]; d1 <= 0 || math.Abs(d1-d2) > 0.2 {
		t.Fatalf("10ms, 100ms and 1s at x %v: steps %.1f and %.1f, want equal (log scale)", xs[:3], d1, d2)
	}

	labels := map[string]float64{}
	for _, m := range regexp.MustCompile(`<text x="([0-9.]+)" y="[0-9.]+" text-anchor="middle">([^<]+)</text>`).FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		labels[m[2]] = x
	}
	for _, l := range []string{"10ms", "20ms", "50ms", "100ms", "200ms", "500ms", "1s"} {
		if _, ok := labels[l]; !ok {
			t.Errorf("no tick %s (labels %v)", l, labels)
		}
	}
	if _, ok := labels["2s"]; ok {
		t.Error("a tick beyond the axis's end (1s)")
	}
	if x10, x100, x1s := labels["10ms"], labels["100ms"], labels["1s"]; math.Abs((x100-x10)-(x1s-x100)) > 0.2 || x10 != xs[0] || x1s != xs[2] {
		t.Errorf("ticks 10ms, 100ms, 1s at %v, %v, %v; points at %v", x10, x100, x1s, xs)
	}
	// 35 ms and 2 s on the same axis: both within it, far apart.
	a := logAxis(35, 2000)
	if a.lo != 20 || a.hi != 2000 || a.frac(35) <= 0.1 || a.frac(2000) != 1 {
		t.Errorf("axis for 35ms-2s: %v to %v, 35ms at %.2f", a.lo, a.hi, a.frac(35))
	}
}
