package bench

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestScrapeAsksForItsMetrics: a scrape with names reads those metrics
// alone, summed over their series, uncompressed; one without reads the
// whole page.
func TestScrapeAsksForItsMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	owned := prometheus.NewGauge(prometheus.GaugeOpts{Name: "shardnet_shards_owned"})
	depth := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_depth"}, []string{"shard"})
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "other_total"})
	reg.MustRegister(owned, depth, other)
	owned.Set(3)
	depth.WithLabelValues("1").Set(2)
	depth.WithLabelValues("2").Set(5)
	other.Add(7)
	var encodings []string
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		encodings = append(encodings, r.Header.Get("Accept-Encoding"))
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	m := scrape(addr, "shardnet_shards_owned", "workqueue_depth")
	if m["shardnet_shards_owned"] != 3 || m["workqueue_depth"] != 7 {
		t.Errorf("filtered scrape: %v", m)
	}
	if _, ok := m["other_total"]; ok {
		t.Errorf("filtered scrape read other_total: %v", m)
	}
	if all := scrape(addr); all["other_total"] != 7 || all["workqueue_depth"] != 7 {
		t.Errorf("whole scrape: %v", all)
	}
	for _, e := range encodings {
		if strings.Contains(e, "gzip") {
			t.Errorf("scrape asked for %q", e)
		}
	}
}
