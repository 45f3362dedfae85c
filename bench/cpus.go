package bench

import (
	"fmt"
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

// Pinned tells whether the servers had CPUs of their own.
func (c *CPUs) Pinned() bool { return c != nil && len(c.Servers) > 0 }

// layOutCPUs splits the CPUs the bench may use in two halves when pin is
// set and there are at least two: the first for the servers, the second
// for the rest, to which it pins the bench's own threads (the processes
// it starts inherit them, but the servers, which harness.KubeOptions.CPUs
// starts on theirs). Otherwise it pins nothing and every CPU is Rest.
func layOutCPUs(pin bool) (*CPUs, error) {
	all, err := harness.AllowedCPUs()
	if err != nil {
		return nil, err
	}
	if !pin || len(all) < 2 {
		return &CPUs{Rest: all}, nil
	}
	half := len(all) / 2
	c := &CPUs{Servers: all[:half], Rest: all[half:]}
	if err := harness.PinProcess(c.Rest); err != nil {
		return nil, err
	}
	return c, nil
}

// cpusLine is the report's line on the layout ("" when unknown).
func cpusLine(c *CPUs) string {
	switch {
	case c == nil:
		return ""
	case c.Pinned():
		return fmt.Sprintf("etcd, kube-apiserver and kwok ran on %s, and the bench (its raw writer and its watches), the replicas and ovsdb-server on %s (`-pin`): as on a cluster, the control plane's cores were its own, so the raw ceiling is what the servers can do, and shardnet's ratio to it what shardnet costs them, not the CPU its replicas would take from them on shared cores.\n\n",
			cpuList(c.Servers), cpuList(c.Rest))
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
