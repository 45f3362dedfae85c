package harness

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TB is the part of testing.TB the harness uses, so that programs outside
// `go test` (the demo, the benchmark driver) can drive it too.
type TB interface {
	Helper()
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// binDir is where `make testbin` puts the binaries.
func binDir() string {
	if d := os.Getenv("SHARDNET_TESTBIN"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "shardnet-testbin")
	}
	return filepath.Join(home, ".cache", "shardnet", "testbin")
}

// testBinary returns the path of a binary built by `make testbin`.
func testBinary(t TB, name string) string {
	t.Helper()
	p := filepath.Join(binDir(), name)
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		t.Fatalf("harness: %s not found at %s: run `make testbin` (or set SHARDNET_TESTBIN to the folder it built)", name, p)
	}
	return p
}

// systemBinary returns the path of a binary from a Debian package.
func systemBinary(t TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin"} {
			if _, serr := os.Stat(filepath.Join(dir, name)); serr == nil {
				return filepath.Join(dir, name)
			}
		}
		t.Fatalf("harness: %s not found: install Debian's %s package (apt-get install %s)", name, pkg, pkg)
	}
	return p
}

// repoRoot finds the shardnet module root from the working directory.
func repoRoot(t TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/shardnet/shardnet\n")) {
			return d
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("harness: finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Process is a server the harness started. Its output goes to a log file.
type Process struct {
	Name string
	Log  string

	args []string
	env  []string
	// cpus, when set, are the CPUs the process runs on (StartOn).
	cpus []int

	// mu guards cmd and done.
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func newProcess(name, log string, env []string, args ...string) *Process {
	return &Process{Name: name, Log: log, args: args, env: env}
}

// start runs the process; it is stopped at cleanup if still running.
func (p *Process) start(t TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("harness: %s log: %v", p.Name, err)
	}
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), p.env...)
	// Its own process group, so that a signal to the test does not reach it
	// first and a stop reaches its children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := StartOn(cmd, p.cpus); err != nil {
		f.Close()
		t.Fatalf("harness: starting %s: %v", p.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
}

// Running tells whether the process has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// CPUSeconds is the user and system CPU the running process has used so
// far; 0 when it is not running.
func (p *Process) CPUSeconds() float64 {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil || !p.Running() {
		return 0
	}
	return ProcCPUSeconds(cmd.Process.Pid)
}

// ProcCPUSeconds is the user and system CPU process pid has used, from
// /proc/<pid>/stat; 0 when it cannot be read.
func ProcCPUSeconds(pid int) float64 {
	u, _ := ProcUsage(pid)
	return u.CPUSeconds()
}

// Usage is what a process has used since it started.
type Usage struct {
	// UserSeconds and SystemSeconds are its CPU in its own code and in
	// the kernel's on its behalf.
	UserSeconds, SystemSeconds float64
	// MinorFaults counts the page faults the kernel served without
	// reading a disk: mostly the first touch of each page of the
	// process's memory, and of its binary's pages already in the page
	// cache. A fresh process pays one per page it grows into; one whose
	// heap is grown already reuses its pages.
	MinorFaults int64
}

// CPUSeconds is the user and system CPU together.
func (u Usage) CPUSeconds() float64 { return u.UserSeconds + u.SystemSeconds }

// ProcUsage reads what process pid has used from /proc/<pid>/stat; false
// when it cannot be read.
func ProcUsage(pid int) (Usage, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, false
	}
	return parseProcStat(string(b))
}

// parseProcStat reads a /proc/<pid>/stat line (proc(5)).
func parseProcStat(s string) (Usage, bool) {
	// The fields after the command name, which is in parentheses and
	// may hold spaces: the third field of the line (state) is f[0].
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Usage{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) <= 12 {
		return Usage{}, false
	}
	minflt, err1 := strconv.ParseInt(f[7], 10, 64)
	ut, err2 := strconv.ParseFloat(f[11], 64)
	st, err3 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Usage{}, false
	}
	return Usage{UserSeconds: ut / 100, SystemSeconds: st / 100, MinorFaults: minflt}, true // USER_HZ
}

// Kill sends SIGKILL and waits for the process to exit.
func (p *Process) Kill() { p.signal(syscall.SIGKILL, 0) }

// Stop sends SIGTERM, waits up to 10 s, then kills.
func (p *Process) Stop() { p.signal(syscall.SIGTERM, 10*time.Second) }

func (p *Process) signal(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	if grace > 0 {
		select {
		case <-done:
			return
		case <-time.After(grace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	<-done
}

// tail returns the last lines of the process log, for failure messages.
func (p *Process) tail() string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls ready until it returns nil, the process exits or the
// timeout passes.
func waitFor(t TB, p *Process, timeout time.Duration, ready func(ctx context.Context) error) {
	t.Helper()
	if err := waitReady(p, timeout, ready); err != nil {
		t.Fatalf("harness: %v", err)
	}
}

// waitReady is waitFor's wait: it polls ready until it returns nil, and
// fails when p (if not nil) exits first or timeout passes.
func waitReady(p *Process, timeout time.Duration, ready func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		if p != nil && !p.Running() {
			return fmt.Errorf("%s exited before it was ready; last log lines:\n%s", p.Name, p.tail())
		}
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			name := "condition"
			tail := ""
			if p != nil {
				name, tail = p.Name, p.tail()
			}
			return fmt.Errorf("%s not ready after %s: %v\n%s", name, timeout, last, tail)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func mustWrite(t TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatalf("harness: writing %s: %v", path, err)
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// FreePort returns a loopback TCP port that was free a moment ago, for
// servers a caller starts itself.
func FreePort(t TB) int { return freePort(t) }
