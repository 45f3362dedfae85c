package harness

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// NBSchema is the path of the pinned OVN Northbound schema, the one the
// generated models in ovn/nbdb come from.
func NBSchema(t TB) string {
	t.Helper()
	return filepath.Join(repoRoot(t), "ovn", "nbdb", "ovn-nb.ovsschema")
}

// NB is a standalone ovsdb-server serving the OVN_Northbound database.
type NB struct {
	// Endpoint is the TCP remote, "tcp:127.0.0.1:PORT".
	Endpoint string
	// Unix is the unix-socket remote, "unix:/path/nb.sock".
	Unix string
	// Dir holds the database file, sockets and log.
	Dir string

	proc *Process
}

// StartNB starts ovsdb-server with an empty OVN_Northbound database on a
// loopback TCP port and a unix socket. It is stopped at cleanup.
func StartNB(t TB) *NB {
	t.Helper()
	server := systemBinary(t, "ovsdb-server", "ovn-central")
	tool := systemBinary(t, "ovsdb-tool", "ovn-central")
	dir := t.TempDir()
	db := filepath.Join(dir, "nb.db")
	run(t, tool, "create", db, NBSchema(t))

	nb := &NB{Dir: dir, Unix: "unix:" + filepath.Join(dir, "nb.sock")}
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		nb.Endpoint = fmt.Sprintf("tcp:127.0.0.1:%d", port)
		nb.proc = newProcess("ovsdb-server", filepath.Join(dir, "nb.log"), nil, server, db,
			"--remote=p"+nb.Unix,
			fmt.Sprintf("--remote=ptcp:%d:127.0.0.1", port),
			"--unixctl="+filepath.Join(dir, "nb.ctl"),
			"--pidfile="+filepath.Join(dir, "nb.pid"),
			"--log-file="+filepath.Join(dir, "nb-server.log"),
			"--no-chdir")
		nb.proc.start(t)
		if err := waitTCP(nb.proc, port, 10*time.Second); err == nil {
			break
		} else if attempt >= 2 {
			t.Fatalf("harness: ovsdb-server not listening: %v\n%s", err, nb.proc.tail())
		}
		nb.proc.Kill()
	}
	t.Cleanup(nb.proc.Stop)
	return nb
}

// Stop stops the server (before cleanup would); an embedded one stops at
// cleanup only.
func (nb *NB) Stop() {
	if nb.proc != nil {
		nb.proc.Stop()
	}
}

// CPUSeconds is the CPU time ovsdb-server has used so far; 0 for an
// embedded or nil one.
func (nb *NB) CPUSeconds() float64 {
	if nb == nil || nb.proc == nil {
		return 0
	}
	return nb.proc.CPUSeconds()
}

// NBCluster is a RAFT cluster of ovsdb-server members serving
// OVN_Northbound, each on its own loopback ports.
type NBCluster struct {
	// Endpoints are the members' client remotes, "tcp:127.0.0.1:PORT".
	Endpoints []string
	// Dir holds the members' databases and logs.
	Dir string

	members []*nbMember
}

type nbMember struct {
	db, ctl    string
	clientPort int
	proc       *Process
	args       []string
}

// StartNBCluster creates and starts an n-member RAFT cluster and waits until
// every member has joined and one is leader. Members are stopped at cleanup.
func StartNBCluster(t TB, n int) *NBCluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("harness: a cluster needs at least one member, got %d", n)
	}
	server := systemBinary(t, "ovsdb-server", "ovn-central")
	tool := systemBinary(t, "ovsdb-tool", "ovn-central")
	systemBinary(t, "ovs-appctl", "openvswitch-common")
	// The RAFT and client ports are picked free, then bound by the
	// members a moment later: when another process took one meanwhile,
	// a member never joins (it talks to whatever holds its leader's
	// port), and the cluster is started again on new ports.
	for attempt := 1; ; attempt++ {
		c, err := startNBCluster(t, n, server, tool)
		if err == nil {
			c.Leader(t)
			return c
		}
		if attempt == 3 {
			t.Fatalf("harness: NB cluster: %v (%d attempts)", err, attempt)
		}
		t.Logf("harness: NB cluster: %v; starting it again on new ports", err)
	}
}

// startNBCluster starts one attempt at an n-member cluster and waits
// until every member has joined; on error it kills the members it
// started.
func startNBCluster(t TB, n int, server, tool string) (*NBCluster, error) {
	t.Helper()
	dir := t.TempDir()
	c := &NBCluster{Dir: dir}
	raftAddrs := make([]string, n)
	for i := range n {
		raftAddrs[i] = fmt.Sprintf("tcp:127.0.0.1:%d", freePort(t))
	}
	for i := range n {
		m := &nbMember{
			db:         filepath.Join(dir, fmt.Sprintf("nb%d.db", i)),
			ctl:        filepath.Join(dir, fmt.Sprintf("nb%d.ctl", i)),
			clientPort: freePort(t),
		}
		if i == 0 {
			run(t, tool, "create-cluster", m.db, NBSchema(t), raftAddrs[0])
		} else {
			run(t, tool, "join-cluster", m.db, "OVN_Northbound", raftAddrs[i], raftAddrs[0])
		}
		m.args = []string{server, m.db,
			fmt.Sprintf("--remote=ptcp:%d:127.0.0.1", m.clientPort),
			"--unixctl=" + m.ctl,
			"--pidfile=" + filepath.Join(dir, fmt.Sprintf("nb%d.pid", i)),
			"--log-file=" + filepath.Join(dir, fmt.Sprintf("nb%d-server.log", i)),
			"--no-chdir"}
		c.members = append(c.members, m)
		c.Endpoints = append(c.Endpoints, fmt.Sprintf("tcp:127.0.0.1:%d", m.clientPort))
	}
	fail := func(err error) (*NBCluster, error) {
		for _, m := range c.members {
			if m.proc != nil {
				m.proc.Kill()
			}
		}
		return nil, err
	}
	for i := range c.members {
		if err := c.tryStartMember(t, i); err != nil {
			return fail(err)
		}
	}
	for i, m := range c.members {
		err := waitReady(m.proc, 30*time.Second, func(context.Context) error {
			st, err := c.status(i)
			if err != nil {
				return err
			}
			if !strings.Contains(st, "Status: cluster member") {
				return fmt.Errorf("member %d not joined yet", i)
			}
			return nil
		})
		if err != nil {
			return fail(err)
		}
	}
	return c, nil
}

func (c *NBCluster) startMember(t TB, i int) {
	t.Helper()
	if err := c.tryStartMember(t, i); err != nil {
		t.Fatalf("harness: %v", err)
	}
}

// tryStartMember starts member i and waits until its client port
// listens.
func (c *NBCluster) tryStartMember(t TB, i int) error {
	t.Helper()
	m := c.members[i]
	m.proc = newProcess(fmt.Sprintf("ovsdb-server[nb%d]", i), filepath.Join(c.Dir, fmt.Sprintf("nb%d.log", i)), nil, m.args...)
	m.proc.start(t)
	t.Cleanup(m.proc.Stop)
	if err := waitTCP(m.proc, m.clientPort, 15*time.Second); err != nil {
		return fmt.Errorf("NB member %d not listening: %v\n%s", i, err, m.proc.tail())
	}
	return nil
}

func (c *NBCluster) status(i int) (string, error) {
	out, err := exec.Command("ovs-appctl", "-t", c.members[i].ctl, "cluster/status", "OVN_Northbound").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("cluster/status of member %d: %v: %s", i, err, out)
	}
	return string(out), nil
}

// Leader returns the index of the current leader, waiting up to 30 s for the
// cluster to elect one.
func (c *NBCluster) Leader(t TB) int {
	t.Helper()
	leader := -1
	waitFor(t, nil, 30*time.Second, func(context.Context) error {
		for i, m := range c.members {
			if m.proc == nil || !m.proc.Running() {
				continue
			}
			st, err := c.status(i)
			if err == nil && strings.Contains(st, "Role: leader") {
				leader = i
				return nil
			}
		}
		return fmt.Errorf("no leader among running members")
	})
	return leader
}

// Kill sends SIGKILL to member i and waits for it to exit.
func (c *NBCluster) Kill(i int) { c.members[i].proc.Kill() }

// Restart starts member i again on its database and ports.
func (c *NBCluster) Restart(t TB, i int) {
	t.Helper()
	if c.members[i].proc.Running() {
		t.Fatalf("harness: NB member %d is still running", i)
	}
	c.startMember(t, i)
}

func run(t TB, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("harness: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// waitTCP waits until something accepts connections on a loopback port.
func waitTCP(p *Process, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for {
		if !p.Running() {
			return fmt.Errorf("%s exited", p.Name)
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
