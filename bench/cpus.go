package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shardnet/shardnet/test/harness"
)

// CPUs is how a run laid its processes out on the CPUs it may use
// (Config.Pin).
type CPUs struct {
	// Servers are the CPUs of etcd, kube-apiserver and kwok; empty when
	// nothing was pinned.
	Servers []int `json:"servers,omitempty"`
	// Rest are the CPUs of the bench itself (its raw writer and its
	// watches), the replicas and ovsdb-server; every CPU when nothing was
	// pinned.
	Rest []int `json:"rest"`
}

// all are every CPU of the run (nil for a nil layout: the caller's).
func (c *CPUs) all() []int {
	if c == nil {
		return nil
	}
	all := append(slices.Clone(c.Servers), c.Rest...)
	slices.Sort(all)
	return slices.Compact(all)
}

// Pinned tells whether the servers had CPUs of their own.
func (c *CPUs) Pinned() bool { return c != nil && len(c.Servers) > 0 }

// layOutCPUs splits the CPUs the bench may use in two halves when pin is
// set and there are at least two: the first for the servers, the second
// for the rest. Otherwise every CPU is Rest.
func layOutCPUs(pin bool) (*CPUs, error) {
	all, err := harness.AllowedCPUs()
	if err != nil {
		return nil, err
	}
	if !pin || len(all) < 2 {
		return &CPUs{Rest: all}, nil
	}
	half := len(all) / 2
	return &CPUs{Servers: all[:half], Rest: all[half:]}, nil
}

// placeScenario lays out sp's processes and returns the servers' CPUs
// (nil: any). With a pinned layout, a scenario at full speed runs the
// servers on theirs and the bench's own threads on the rest (the
// processes it starts inherit them, but the servers, which
// harness.KubeOptions.CPUs starts on theirs); a paced one runs every
// process on every CPU. A paced scenario measures a pod's latency at
// half or 90% of the rate, and the servers on half the CPUs would run
// near saturation there: their CPU per pod nearly doubles at a low rate,
// so a pod's p99 would measure that half's queue (decision 0009).
func placeScenario(c *CPUs, sp spec) ([]int, error) {
	if !c.Pinned() {
		return nil, nil
	}
	if sp.rate > 0 {
		return nil, harness.PinProcess(c.all())
	}
	return c.Servers, harness.PinProcess(c.Rest)
}

// cpusLine is the report's line on the layout ("" when unknown).
func cpusLine(c *CPUs) string {
	switch {
	case c == nil:
		return ""
	case c.Pinned():
		return fmt.Sprintf("In the scenarios at full speed, etcd, kube-apiserver and kwok ran on %s, and the bench (its raw writer and its watches), the replicas and ovsdb-server on %s (`-pin`): as on a cluster, the control plane's cores were its own, so the raw ceiling is what the servers can do, and shardnet's ratio to it what shardnet costs them, not the CPU its replicas would take from them on shared cores. The paced scenarios (half and 90%% of the rate) shared %s: on half of them, the servers would run near saturation at half the rate, and a pod's p99 would measure their queue.\n\n",
			cpuList(c.Servers), cpuList(c.Rest), cpuList(c.all()))
	default:
		return fmt.Sprintf("Every process shared %s (`-pin=false`, or a single CPU): the replicas' CPU was taken from the API server's.\n\n", cpuList(c.Rest))
	}
}

// cpuList names cpus: "CPU 0", "CPUs 2, 3".
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = fmt.Sprint(c)
	}
	if len(cpus) == 1 {
		return "CPU " + s[0]
	}
	return "CPUs " + strings.Join(s, ", ")
}
