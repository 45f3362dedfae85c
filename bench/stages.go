package bench

import (
	"bufio"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/shardnet/shardnet/reconcile"
)

// StageLatency is one stage of the replicas' pod reconciles during a
// scenario, from their histograms: how many there were and their p50 and
// p99, estimated within the histogram's buckets.
type StageLatency struct {
	Stage string  `json:"stage"`
	Count float64 `json:"count"`
	P50   float64 `json:"p50ms"`
	P99   float64 `json:"p99ms"`
}

// QueueStage is the stage name of the wait in a shard's queue, from the
// replicas' workqueue_queue_duration_seconds.
const QueueStage = "queue"

// IdleQueueStage is the stage name of the wait of a key queued while
// neither waiting nor in flight (a new pod's first reconcile), from the
// replicas' shardnet_queue_idle_key_wait_seconds. QueueStage also counts
// keys queued again while in flight, which wait for their reconcile to
// end.
const IdleQueueStage = "queue (idle key)"

// stageOrder is the order of the stages in a report: a pod's way from its
// queue through its reconcile.
var stageOrder = append([]string{QueueStage, IdleQueueStage}, reconcile.Stages...)

// buckets are cumulative histogram counts by upper bound, per stage.
type buckets map[string]map[float64]float64

// scrapeStages reads the stage histograms of the replicas' /metrics and
// sums them over the replicas (and, for the queue, over the shards).
func scrapeStages(procs []*replicaProc) buckets {
	out := buckets{}
	for _, rp := range procs {
		resp, err := http.Get("http://" + rp.metricsAddr + "/metrics")
		if err != nil {
			continue
		}
		parseStageBuckets(bufio.NewScanner(resp.Body), out)
		resp.Body.Close()
	}
	return out
}

func parseStageBuckets(sc *bufio.Scanner, out buckets) {
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var stage string
		switch {
		case strings.HasPrefix(line, "shardnet_reconcile_stage_seconds_bucket{"):
			stage = label(line, "stage")
		case strings.HasPrefix(line, "workqueue_queue_duration_seconds_bucket{") && label(line, "name") == "pods":
			stage = QueueStage
		case strings.HasPrefix(line, "shardnet_queue_idle_key_wait_seconds_bucket{") && label(line, "name") == "pods":
			stage = IdleQueueStage
		default:
			continue
		}
		le, err := strconv.ParseFloat(label(line, "le"), 64)
		if err != nil || stage == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		if out[stage] == nil {
			out[stage] = map[float64]float64{}
		}
		out[stage][le] += v
	}
}

// label is the value of label name in a metric line, "" when absent.
func label(line, name string) string {
	_, rest, ok := strings.Cut(line, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// stageLatencies are the stages observed between before and after, in
// stageOrder.
func stageLatencies(before, after buckets) []StageLatency {
	var out []StageLatency
	for _, stage := range stageOrder {
		delta := map[float64]float64{}
		for le, n := range after[stage] {
			delta[le] = n - before[stage][le]
		}
		total := delta[math.Inf(1)]
		if total <= 0 {
			continue
		}
		out = append(out, StageLatency{Stage: stage, Count: total,
			P50: 1000 * bucketQuantile(delta, 0.5), P99: 1000 * bucketQuantile(delta, 0.99)})
	}
	return out
}

// bucketQuantile estimates the q-quantile of cumulative bucket counts by
// linear interpolation inside the bucket that holds it, as Prometheus's
// histogram_quantile does; in the last finite bucket's upper bound when it
// falls in +Inf.
func bucketQuantile(cum map[float64]float64, q float64) float64 {
	les := make([]float64, 0, len(cum))
	for le := range cum {
		les = append(les, le)
	}
	slices.Sort(les)
	total := cum[math.Inf(1)]
	if total <= 0 || len(les) == 0 {
		return 0
	}
	rank := q * total
	prevLE, prevN := 0.0, 0.0
	for _, le := range les {
		n := cum[le]
		if n >= rank {
			if math.IsInf(le, 1) {
				return prevLE
			}
			if n == prevN {
				return le
			}
			return prevLE + (le-prevLE)*(rank-prevN)/(n-prevN)
		}
		prevLE, prevN = le, n
	}
	return prevLE
}
