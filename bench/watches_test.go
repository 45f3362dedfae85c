package bench

import (
	"maps"
	"testing"
)

func TestParseClosedWatches(t *testing.T) {
	page := `# HELP apiserver_terminated_watchers_total [ALPHA] Counter of watchers closed due to unresponsiveness broken by resource type.
# TYPE apiserver_terminated_watchers_total counter
apiserver_terminated_watchers_total{group="",resource="pods"} 3
apiserver_terminated_watchers_total{group="shardnet.io",resource="addressclaims"} 1
apiserver_terminated_watchers_total{group="other.io",resource="pods"} 2
apiserver_terminated_watchers_total_other{resource="pods"} 9
apiserver_request_total{code="200",resource="pods"} 1000
`
	got := parseClosedWatches(page)
	if want := map[string]float64{"pods": 5, "addressclaims": 1}; !maps.Equal(got, want) {
		t.Fatalf("parseClosedWatches = %v, want %v", got, want)
	}
	since := closedSince(map[string]float64{"pods": 2}, got)
	if want := map[string]int{"pods": 3, "addressclaims": 1}; !maps.Equal(since, want) {
		t.Fatalf("closedSince = %v, want %v", since, want)
	}
	if closedSince(nil, got) != nil {
		t.Fatal("closedSince of a failed read is not nil")
	}
	if s := closedWatchesText(since); s != "4 watches (addressclaims 1, pods 3)" {
		t.Fatalf("closedWatchesText = %q", s)
	}
}
