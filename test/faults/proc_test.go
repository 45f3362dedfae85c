package faults

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardnet/shardnet/test/harness"
)

// replicaPid finds the pid of a replica process. harness.Process does not
// expose it, so it is looked up in /proc by the replica's --metrics-addr,
// which no other process shares. The harness starts each replica in a
// process group of its own, whose id is this pid.
func replicaPid(r *harness.Replica) (int, error) {
	want := []byte("--metrics-addr=" + r.MetricsAddr + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var found []int
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, want) || !bytes.Contains(cmdline, []byte("\x00controller\x00")) {
			continue
		}
		found = append(found, pid)
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("replica %s: %d processes with --metrics-addr=%s: %v", r.Identity, len(found), r.MetricsAddr, found)
	}
	return found[0], nil
}

// procState is the state letter of /proc/<pid>/stat (R, S, T, Z, ...).
func procState(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// pid (comm) state ...: comm may hold spaces, the state follows the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return "", fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	return string(b[i+2]), nil
}

// stopProcess sends SIGSTOP to the replica's process group and waits
// until the process is stopped; it returns the pid for contProcess. A
// cleanup sends SIGCONT, so that the harness's own stop at cleanup (SIGTERM)
// is handled.
func stopProcess(t *testing.T, r *harness.Replica) int {
	t.Helper()
	pid, err := replicaPid(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGCONT) })
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %s (pid %d): %v", r.Identity, pid, err)
	}
	waitState(t, pid, "T")
	return pid
}

// contProcess sends SIGCONT to a process group stopProcess stopped and
// waits until the process runs again.
func contProcess(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(-pid, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT pid %d: %v", pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		st, err := procState(pid)
		if err != nil {
			t.Fatalf("pid %d: %v", pid, err)
		}
		if st != "T" && st != "t" {
			return
		}
		if i >= 5000 || time.Now().After(deadline) {
			t.Fatalf("pid %d still stopped 10s after SIGCONT", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		st, err := procState(pid)
		if err != nil {
			t.Fatalf("pid %d: %v", pid, err)
		}
		if st == want {
			return
		}
		if i >= 5000 || time.Now().After(deadline) {
			t.Fatalf("pid %d: state %s, want %s after 10s", pid, st, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The standalone Northbound server of harness.StartNB keeps its database,
// sockets and pidfile in NB.Dir: nb.db, nb.sock, nb.ctl, nb.pid. The
// harness has no restart for it, so killNB and restartNB do it here, with
// the same binary, files and port.

// killNB sends SIGKILL to the Northbound server (found by its pidfile)
// and waits until it has exited.
func killNB(t *testing.T, nb *harness.NB) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(nb.Dir, "nb.pid"))
	if err != nil {
		t.Fatalf("reading the Northbound pidfile: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("Northbound pidfile: %q", b)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL ovsdb-server (pid %d): %v", pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		// The harness reaps it; until then it is a zombie.
		st, err := procState(pid)
		if err != nil || st == "Z" || st == "X" {
			break
		}
		if i >= 5000 || time.Now().After(deadline) {
			t.Fatalf("ovsdb-server (pid %d) still running 10s after SIGKILL (state %s)", pid, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	port := nbPort(t, nb)
	deadline = time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err != nil {
			return
		}
		c.Close()
		if i >= 5000 || time.Now().After(deadline) {
			t.Fatalf("port %d still accepts 10s after ovsdb-server was killed", port)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func nbPort(t *testing.T, nb *harness.NB) int {
	t.Helper()
	_, p, ok := strings.Cut(strings.TrimPrefix(nb.Endpoint, "tcp:"), ":")
	port, err := strconv.Atoi(p)
	if !ok || err != nil {
		t.Fatalf("Northbound endpoint %q", nb.Endpoint)
	}
	return port
}

// restartNB starts ovsdb-server again on the database file and remotes of
// nb, and waits until it accepts connections. It is stopped at cleanup.
func restartNB(t *testing.T, nb *harness.NB) {
	t.Helper()
	server, err := exec.LookPath("ovsdb-server")
	if err != nil {
		server = "/usr/sbin/ovsdb-server"
	}
	port := nbPort(t, nb)
	log, err := os.OpenFile(filepath.Join(nb.Dir, "nb-restarted.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(server, filepath.Join(nb.Dir, "nb.db"),
		"--remote=p"+nb.Unix,
		fmt.Sprintf("--remote=ptcp:%d:127.0.0.1", port),
		"--unixctl="+filepath.Join(nb.Dir, "nb.ctl"),
		"--pidfile="+filepath.Join(nb.Dir, "nb.pid"),
		"--log-file="+filepath.Join(nb.Dir, "nb-server.log"),
		"--no-chdir")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("restarting ovsdb-server: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; ; i++ {
		select {
		case <-done:
			b, _ := os.ReadFile(filepath.Join(nb.Dir, "nb-restarted.log"))
			t.Fatalf("restarted ovsdb-server exited:\n%s", b)
		default:
		}
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if i >= 5000 || time.Now().After(deadline) {
			t.Fatalf("restarted ovsdb-server not listening on %d after 15s: %v", port, errors.Unwrap(err))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
