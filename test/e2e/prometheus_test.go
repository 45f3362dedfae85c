package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/cmd/shardnet/app"
	"github.com/shardnet/shardnet/reconcile"
)

// prometheusBinary is where Debian's prometheus package installs the server.
const prometheusBinary = "/usr/bin/prometheus"

// dashboardFile is the Grafana dashboard whose every query is checked.
const dashboardFile = "../../deploy/grafana/shardnet-dashboard.json"

// rulesFile is the shipped rule file the test's Prometheus evaluates.
const rulesFile = "../../deploy/prometheus/shardnet-rules.yaml"

// TestDashboardQueriesOnPrometheus: replicas, each serving /metrics on its
// own port, scraped by a real Prometheus every second while they hand
// shards over (one alone, then three, then four) and route a few hundred
// pods, two of them bad, and a dozen more that fill a small subnet, and a
// last batch once a fourth replica has joined and every target has been
// scraped. Then every query of the Grafana dashboard, and every variable's
// label query, returns data: a panel that names a metric or label the code
// does not export, or that aggregates it away, fails here rather than in
// front of an operator. The same Prometheus evaluates the shipped alerting rules (with
// their for: durations at 0s): every rule evaluates without error, the
// subnet-nearly-full alert fires for the full subnet and not for the
// default one, kube-ovn's own exhaustion expression sees one series for it
// (the leader's), and the pod asking for a missing subnet raises the
// waiting-for-an-address alert.
func TestDashboardQueriesOnPrometheus(t *testing.T) {
	if _, err := os.Stat(prometheusBinary); err != nil {
		t.Fatalf("%s not found: install Debian's prometheus package (apt-get install prometheus); .ci/run does", prometheusBinary)
	}
	dash := loadDashboard(t, dashboardFile)
	if len(dash.exprs) < 20 {
		t.Fatalf("%s has %d queries; the panels were not found", dashboardFile, len(dash.exprs))
	}

	// Deployed replicas run with a Go soft limit (--memory-limit), which
	// the memory panel draws; the replicas here share the test's process.
	prevLimit := debug.SetMemoryLimit(8 << 30)
	t.Cleanup(func() { debug.SetMemoryLimit(prevLimit) })

	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	node := c.kube.CreateNode(t, "kwok-node-1", "")
	c.subnet("ovn-default", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	// 13 addresses a pod can take (16 less the network, broadcast and
	// gateway addresses): 12 pods fill 92% of it.
	c.subnet(fullSubnet, "10.17.0.0/28", func(s *kubeovnv1.SubnetSpec) { s.Namespaces = []string{"ns-full"} })
	c.namespace("ns-load")
	c.namespace("ns-bad")
	c.namespace("ns-full")

	ids := []string{"shardnet-0", "shardnet-1", "shardnet-2", "shardnet-3"}
	servers := make([]*app.Server, len(ids))
	var targets []string
	scrape := map[string]string{} // address -> pod
	for i, id := range ids {
		opts := c.options(id)
		opts.MetricsAddr, opts.HealthAddr = "127.0.0.1:0", ""
		s, err := app.NewServer(ctx, opts, c.kube.Config)
		if err != nil {
			t.Fatalf("replica %s: %v", id, err)
		}
		servers[i] = s
		targets = append(targets, s.MetricsAddr())
		scrape[s.MetricsAddr()] = id
	}
	run := runServers(t)
	prom := startPrometheus(t, scrape, testRules(t))
	// scrapedSince is a waitFor check: every one of these targets' last
	// scrape was good and started after since.
	scrapedSince := func(these []string, since time.Time) func() error {
		want := slices.Sorted(slices.Values(these))
		return func() error {
			up, err := prom.upTargetsSince(ctx, since)
			if err != nil {
				return err
			}
			up = slices.DeleteFunc(up, func(a string) bool { return !slices.Contains(want, a) })
			slices.Sort(up)
			if !slices.Equal(up, want) {
				return errorf("targets up and scraped since %s: %v, want %v", since.Format(time.RFC3339Nano), up, want)
			}
			return nil
		}
	}

	// One replica alone takes every shard; the two that join take theirs
	// from it, so that the handoff panels have releases to show.
	run(ids[0], servers[0])
	waitFor(t, ctx, "the first replica owning every shard", func() error {
		if n := len(servers[0].Replica().Owned()); n != 16 {
			return errorf("%s owns %d of 16 shards", ids[0], n)
		}
		return nil
	})
	run(ids[1], servers[1])
	run(ids[2], servers[2])
	waitSpread(t, ctx, ids[:3], servers[:3])
	// A release duration series is born at its first release, and rate()
	// counts nothing for a series' first sample: the release panels show
	// the first replica's releases when the fourth joins only if a good
	// scrape saw its series between the two (the pods below can take
	// less time than a few scrapes on a quiet machine, and a loaded one
	// times scrapes out).
	waitFor(t, ctx, "the first three targets scraped after the spread", scrapedSince(targets[:3], time.Now()))

	const pods = 300
	c.createPods("ns-load", "pod", node.Name, pods)
	// A pod with an unparsable address is "invalid"; one asking for a
	// subnet that does not exist is an "error", retried: the error panels
	// have series to show.
	for name, ann := range map[string]map[string]string{
		"bad-address": {reconcile.DefaultKey(reconcile.KeyIPAddress): "not-an-address"},
		"no-subnet":   {reconcile.DefaultKey(reconcile.KeyLogicalSwitch): "missing"},
	} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns-bad", Annotations: ann},
			Spec:       corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
		}
		if _, err := c.kube.Client.CoreV1().Pods("ns-bad").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.waitRouted(ctx, "ns-load", pods)
	c.createPods("ns-full", "full", node.Name, 12)
	c.waitRouted(ctx, "ns-full", 12)

	// A fourth replica joins, and shards move again. A counter or
	// histogram series is born at its first observation, and rate() counts
	// nothing for a series' first sample: only the releases of a replica
	// that had released before show in the release duration quantiles.
	run(ids[3], servers[3])
	waitSpread(t, ctx, ids, servers)

	waitFor(t, ctx, "every target scraped", scrapedSince(targets, time.Time{}))

	// A last batch of pods between two good scrapes of every target. A
	// rate() panel needs an increase between two samples in its window;
	// on a loaded machine the scrapes during the load above can time out
	// (1 s), and a series whose first good sample came after the load
	// shows nothing (seen in CI: every allocation panel NaN). Every
	// target's last scrape was good just now, before the batch; the
	// queries wait for a good one after it.
	const last = 24
	c.createPods("ns-load", "last", node.Name, last)
	c.waitRouted(ctx, "ns-load", pods+last)
	waitFor(t, ctx, "every target scraped after the last batch", scrapedSince(targets, time.Now()))

	// Every query must return a series with a number: NaN (a quantile of
	// no observations) is a panel with nothing to draw. The data may lag
	// the last scrape, so each query is retried until one deadline.
	deadline := time.Now().Add(90 * time.Second)
	for _, raw := range dash.exprs {
		expr := substitute(t, raw)
		var last string
		for {
			n, finite, err := prom.query(ctx, expr)
			if err == nil && finite > 0 {
				break
			}
			last = fmt.Sprintf("%d series, %d with a finite value, err %v", n, finite, err)
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Errorf("dashboard query returned no data: %s\n  sent: %s\n  %s", raw, expr, last)
				break
			}
			time.Sleep(time.Second)
		}
	}

	// The variables' label_values() queries find the job and every
	// replica, by pod name.
	for _, v := range dash.labelQueries {
		vals, err := prom.labelValues(ctx, v.label, substitute(t, v.match))
		if err != nil {
			t.Errorf("variable %s: %v", v.name, err)
			continue
		}
		want, ok := map[string][]string{"job": {"shardnet"}, "pod": ids}[v.label]
		if !ok {
			t.Errorf("variable %s: label %s is not one the test checks", v.name, v.label)
		}
		for _, w := range want {
			if !slices.Contains(vals, w) {
				t.Errorf("variable %s: label_values(%s, %s) = %v, missing %s", v.name, v.match, v.label, vals, w)
			}
		}
	}

	checkAlerts(t, ctx, prom, servers, ids)
}

// fullSubnet is the subnet the test fills past the alert's threshold.
const fullSubnet = "nearly-full"

// checkAlerts: every shipped rule evaluates without error on the replicas'
// series; the subnet alert fires for the full subnet only, from kube-ovn's
// metrics, which the leader alone exports; the pods-waiting alert fires.
func checkAlerts(t *testing.T, ctx context.Context, prom *promServer, servers []*app.Server, ids []string) {
	t.Helper()
	actx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	waitFor(t, actx, "every shipped rule evaluated without error", func() error {
		rules, err := prom.rules(actx)
		if err != nil {
			return err
		}
		if len(rules) == 0 {
			return errorf("no rules loaded")
		}
		for _, r := range rules {
			if r.Health != "ok" {
				return errorf("rule %s: health %q %s", r.Name, r.Health, r.LastError)
			}
		}
		return nil
	})
	firing := func(subnet string) string {
		return fmt.Sprintf(`ALERTS{alertname="ShardnetSubnetNearlyFull", alertstate="firing", subnet_name=%q}`, subnet)
	}
	waitFor(t, actx, "ShardnetSubnetNearlyFull firing for "+fullSubnet, func() error {
		if n, _, err := prom.query(actx, firing(fullSubnet)); err != nil || n != 1 {
			return errorf("%d firing alerts, err %v", n, err)
		}
		return nil
	})
	if n, _, err := prom.query(actx, firing("ovn-default")); err != nil || n != 0 {
		t.Errorf("ShardnetSubnetNearlyFull for ovn-default (300 of 65,533 addresses): %d alerts, err %v", n, err)
	}
	// The pod that asks for a subnet that does not exist is retried.
	waitFor(t, actx, "ShardnetPodsWaitingForAddress firing", func() error {
		if n, _, err := prom.query(actx, `ALERTS{alertname="ShardnetPodsWaitingForAddress", alertstate="firing"}`); err != nil || n != 1 {
			return errorf("%d firing alerts, err %v", n, err)
		}
		return nil
	})

	// kube-ovn's KubeOvnSubnetIPExhaustion expression, as its chart has it,
	// matches one series: the leader's.
	leader := ""
	for i, s := range servers {
		if s.Replica().IsLeader() {
			leader = ids[i]
		}
	}
	kubeOVN := `(subnet_used_ip_count / (subnet_used_ip_count + subnet_available_ip_count)) > 0.9`
	waitFor(t, actx, "kube-ovn's expression matching the leader's series only", func() error {
		pods, err := prom.labelOf(actx, kubeOVN, "pod")
		if err != nil {
			return err
		}
		if len(pods) != 1 || pods[0] != leader {
			return errorf("series from %v, want one from the leader %s", pods, leader)
		}
		return nil
	})

	// client-go's leader election metric, under component-base's name.
	waitFor(t, actx, "leader_election_master_status", func() error {
		if _, finite, err := prom.query(actx, `max(leader_election_master_status{name="shardnet-leader"}) == 1`); err != nil || finite != 1 {
			return errorf("no leader_election_master_status{name=\"shardnet-leader\"} at 1 (err %v)", err)
		}
		return nil
	})
}

// testRules writes the shipped rule file with every for: at 0s, so that an
// alert fires at the first evaluation that finds its condition true, and
// returns its path.
func testRules(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string           `json:"name"`
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	n := 0
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if _, ok := r["alert"]; ok {
				r["for"] = "0s"
				n++
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s has no alerts", rulesFile)
	}
	out, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "shardnet-rules.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitSpread waits until every one of servers owns a shard and together
// they own all 16.
func waitSpread(t *testing.T, ctx context.Context, ids []string, servers []*app.Server) {
	t.Helper()
	waitFor(t, ctx, "every replica owning shards", func() error {
		total := 0
		for i, s := range servers {
			n := len(s.Replica().Owned())
			if n == 0 {
				return errorf("%s owns no shard", ids[i])
			}
			total += n
		}
		if total != 16 {
			return errorf("%d of 16 shards owned", total)
		}
		return nil
	})
}

// dashboard is what the test reads from the Grafana JSON.
type dashboard struct {
	exprs        []string
	labelQueries []labelQuery
}

// labelQuery is a variable's label_values(match, label).
type labelQuery struct{ name, match, label string }

var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)

func loadDashboard(t *testing.T, path string) dashboard {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
			Panels []json.RawMessage `json:"panels"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out dashboard
	for _, p := range d.Panels {
		if len(p.Panels) > 0 { // a collapsed row keeps its panels inside
			t.Fatalf("%s: panel %q nests panels; expand the row so that the test sees them", path, p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Fatalf("%s: panel %q has a target without a query", path, p.Title)
			}
			out.exprs = append(out.exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("%s: variable %s: %v", path, v.Name, err)
		}
		m := labelValuesRE.FindStringSubmatch(q.Query)
		if m == nil {
			t.Fatalf("%s: variable %s: query %q is not label_values(selector, label)", path, v.Name, q.Query)
		}
		out.labelQueries = append(out.labelQueries, labelQuery{name: v.Name, match: m[1], label: m[2]})
	}
	return out
}

// substitute replaces what Grafana would: its interval macros, with
// windows that cover the whole load of this test, and the variables, with
// "all". The dashboard's "all" replicas is ".*", which also matches series
// without a pod label; ".+" here requires the label the scrape sets.
func substitute(t *testing.T, expr string) string {
	t.Helper()
	out := strings.NewReplacer(
		"$__rate_interval", "2m",
		"$__interval", "15s",
		"$__range", "10m",
		"$job", "shardnet",
		"$pod", ".+",
	).Replace(expr)
	if strings.Contains(out, "$") {
		t.Fatalf("query %q uses a variable the test does not know", expr)
	}
	return out
}

// runServers returns a function that runs a replica server until the test
// ends; the cleanup stops each, which hands its shards over.
func runServers(t *testing.T) func(id string, s *app.Server) {
	var mu sync.Mutex // guards stops
	var stops []func()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		var wg sync.WaitGroup
		for _, stop := range stops {
			wg.Go(stop)
		}
		wg.Wait()
	})
	return func(id string, s *app.Server) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		mu.Lock()
		defer mu.Unlock()
		stops = append(stops, func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("replica %s: %v", id, err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("replica %s did not stop within 30s", id)
			}
		})
	}
}

// promServer is a Prometheus server on a loopback port.
type promServer struct {
	base string
	http *http.Client
}

// startPrometheus starts a Prometheus that scrapes targets (address to pod
// name) every second, labelling each with its pod as the ServiceMonitor
// does, and evaluates the rule file every second.
func startPrometheus(t *testing.T, targets map[string]string, rules string) *promServer {
	t.Helper()
	dir := t.TempDir()
	var static strings.Builder
	for _, addr := range slices.Sorted(maps.Keys(targets)) {
		fmt.Fprintf(&static, "      - targets: [%s]\n        labels: {pod: %s}\n", strconv.Quote(addr), strconv.Quote(targets[addr]))
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: shardnet
    static_configs:
%s`, strconv.Quote(rules), static.String())
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopback(t)
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prometheusBinary,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("prometheus log:\n%s", tail(string(b), 4000))
			}
		}
	})

	p := &promServer{base: "http://" + addr, http: &http.Client{Timeout: 5 * time.Second}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := p.http.Get(p.base + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("prometheus exited:\n%s", tail(string(b), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready on %s within 30s: %v", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// apiResponse is the envelope of every Prometheus HTTP API answer.
type apiResponse struct {
	Status string          `json:"status"`
	Error  string          `json:"error"`
	Data   json.RawMessage `json:"data"`
}

func (p *promServer) get(ctx context.Context, path string, params url.Values, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r apiResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", path, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s: %s", path, r.Error)
	}
	return json.Unmarshal(r.Data, into)
}

// query runs an instant query and counts the series it returned and those
// whose value is a finite number.
func (p *promServer) query(ctx context.Context, expr string) (series, finite int, err error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return 0, 0, err
	}
	if data.ResultType != "vector" {
		return 0, 0, fmt.Errorf("result type %q, want vector", data.ResultType)
	}
	for _, r := range data.Result {
		s, _ := r.Value[1].(string)
		if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
			finite++
		}
	}
	return len(data.Result), finite, nil
}

func (p *promServer) labelValues(ctx context.Context, label, match string) ([]string, error) {
	var vals []string
	err := p.get(ctx, "/api/v1/label/"+label+"/values", url.Values{"match[]": {match}}, &vals)
	return vals, err
}

// labelOf runs an instant query and returns the values of label in its
// series.
func (p *promServer) labelOf(ctx context.Context, expr, label string) ([]string, error) {
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
		} `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	var vals []string
	for _, r := range data.Result {
		vals = append(vals, r.Metric[label])
	}
	return vals, nil
}

// ruleState is one rule's health as /api/v1/rules reports it.
type ruleState struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// rules is every loaded rule's health.
func (p *promServer) rules(ctx context.Context) ([]ruleState, error) {
	var data struct {
		Groups []struct {
			Rules []ruleState `json:"rules"`
		} `json:"groups"`
	}
	if err := p.get(ctx, "/api/v1/rules", url.Values{}, &data); err != nil {
		return nil, err
	}
	var out []ruleState
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// upTargetsSince is the addresses of the targets whose last scrape
// succeeded and started after since.
func (p *promServer) upTargetsSince(ctx context.Context, since time.Time) ([]string, error) {
	var data struct {
		ActiveTargets []struct {
			Labels     map[string]string `json:"labels"`
			Health     string            `json:"health"`
			LastScrape time.Time         `json:"lastScrape"`
		} `json:"activeTargets"`
	}
	if err := p.get(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &data); err != nil {
		return nil, err
	}
	var up []string
	for _, tg := range data.ActiveTargets {
		if tg.Health == "up" && tg.LastScrape.After(since) {
			up = append(up, tg.Labels["instance"])
		}
	}
	return up, nil
}
