package harness

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// RaceEnabled reports whether the running binary was built with the race
// detector.
func RaceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// BuildShardnet builds the module's cmd/shardnet into a temporary folder
// and returns the binary's path. It is built with the race detector when
// the running binary has it, so that a `go test -race` run checks the
// replica processes too.
func BuildShardnet(t TB) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(t.TempDir(), "shardnet")
	args := []string{"build", "-o", out}
	if RaceEnabled() {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/shardnet")
	cmd := exec.Command(goBin, args...)
	cmd.Dir = repoRoot(t)
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("harness: go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	t.Logf("harness: built %s (race detector: %v) in %v", out, RaceEnabled(), time.Since(start).Round(time.Millisecond))
	return out
}

// Replica is one `shardnet controller` process. Its output goes to Log.
type Replica struct {
	*Process
	// Identity is the replica's --identity.
	Identity string
	// MetricsAddr and HealthAddr are the loopback host:port of /metrics
	// and of /healthz and /readyz.
	MetricsAddr, HealthAddr string
}

// StartReplica runs `bin controller` as identity, with /metrics and the
// health endpoints on free loopback ports and args (the cluster's flags:
// kubeconfig, Northbound, shards, ...) after them. It returns once both
// endpoints accept connections, not once the replica is ready (see
// Ready). The replica is stopped at cleanup, with SIGTERM (its shards are
// handed over) and SIGKILL after 10 s.
func StartReplica(t TB, bin, identity string, args ...string) *Replica {
	t.Helper()
	dir := t.TempDir()
	for attempt := 0; ; attempt++ {
		r := &Replica{
			Identity:    identity,
			MetricsAddr: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
			HealthAddr:  fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		}
		full := append([]string{bin, "controller",
			"--identity=" + identity,
			"--metrics-addr=" + r.MetricsAddr,
			"--health-addr=" + r.HealthAddr,
		}, args...)
		r.Process = newProcess("shardnet "+identity, filepath.Join(dir, fmt.Sprintf("%s.%d.log", identity, attempt)), nil, full...)
		r.start(t)
		err := r.waitListening(30 * time.Second)
		if err == nil {
			t.Cleanup(r.Stop)
			return r
		}
		r.Kill()
		// A port taken between freePort and the replica's bind is the
		// one failure worth another attempt.
		if attempt >= 2 || !strings.Contains(r.tail(), "address already in use") {
			t.Fatalf("harness: replica %s: %v\n%s", identity, err, r.tail())
		}
	}
}

// waitListening waits until both endpoints accept connections.
func (r *Replica) waitListening(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, addr := range []string{r.MetricsAddr, r.HealthAddr} {
		for {
			if !r.Running() {
				return fmt.Errorf("exited")
			}
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not listening after %v: %w", addr, timeout, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// Ready reports whether the replica answers 200 on /readyz.
func (r *Replica) Ready() bool {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + r.HealthAddr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Metric returns the sum of every sample of the named metric on /metrics
// (0 when the replica exports none).
func (r *Replica) Metric(name string) (float64, error) { return r.MetricWhere(name, nil) }

// MetricWhere is Metric restricted to the samples whose labels include
// every label=value of want.
func (r *Replica) MetricWhere(name string, want map[string]string) (float64, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + r.MetricsAddr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s/metrics: %s", r.MetricsAddr, resp.Status)
	}
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, labels, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		match := true
		for k, v := range want {
			if !strings.Contains(","+labels, ","+k+"=\""+v+"\"") {
				match = false
			}
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", name, line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}

// LogTail is the end of the replica's log, for failure messages.
func (r *Replica) LogTail() string { return r.tail() }

// RaceReports counts the data races the race detector reported in the
// replica's log.
func (r *Replica) RaceReports() int {
	b, err := os.ReadFile(r.Log)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "WARNING: DATA RACE")
}
