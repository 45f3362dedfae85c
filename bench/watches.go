package bench

import (
	"bufio"
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// terminatedWatchers is the API server's counter of the watches it closed
// because their client did not read fast enough (its watch cache gives
// each watcher a bounded buffer and a bounded wait): the client's
// reflector watches again from where it was, and the events in between
// arrive late, all at once.
const terminatedWatchers = "apiserver_terminated_watchers_total"

// closedWatches reads terminatedWatchers from the API server's /metrics,
// by resource; nil when the metrics cannot be read. A resource none of
// whose watches was ever closed has no series.
func closedWatches(ctx context.Context, client kubernetes.Interface) map[string]float64 {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil
	}
	return parseClosedWatches(string(b))
}

// parseClosedWatches sums the terminatedWatchers series of a metrics page
// by their resource label.
func parseClosedWatches(page string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(page))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, terminatedWatchers+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		resource := ""
		for l := range strings.SplitSeq(labels, ",") {
			if r, ok := strings.CutPrefix(l, `resource="`); ok {
				resource = strings.TrimSuffix(r, `"`)
			}
		}
		out[resource] += v
	}
	return out
}

// closedSince is after less before, by resource, keeping the resources
// with a watch closed in between; nil when either read failed.
func closedSince(before, after map[string]float64) map[string]int {
	if before == nil || after == nil {
		return nil
	}
	out := map[string]int{}
	for r, v := range after {
		if d := int(v - before[r]); d > 0 {
			out[r] = d
		}
	}
	return out
}

// closedWatchesText is "N watches (addressclaims m, pods n)", the
// resources in name order.
func closedWatchesText(closed map[string]int) string {
	total := 0
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(closed)) {
		total += closed[r]
		parts = append(parts, r+" "+strconv.Itoa(closed[r]))
	}
	return strconv.Itoa(total) + " watches (" + strings.Join(parts, ", ") + ")"
}
