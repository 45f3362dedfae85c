package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardnet/shardnet/test/harness"
)

// ReloadClientCommand, as shardnet-bench's first argument, makes the
// process one client of the restart's ceiling in fresh processes
// (freshReload) instead of a run: shardnet-bench reload-client
// -kubeconfig PATH -timeout D.
const ReloadClientCommand = "reload-client"

// reloadedLine is what a reload client writes once its caches synced.
const reloadedLine = "loaded"

// ReloadClientMain runs ReloadClient from its arguments (those after
// ReloadClientCommand) and returns the process's exit code: a main's, the
// shardnet-bench command's or a test binary's, whose process freshReload
// starts.
func ReloadClientMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shardnet-bench "+ReloadClientCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "the cluster whose pods, claims and IP records to load")
	timeout := fs.Duration("timeout", 5*time.Minute, "bound of the load")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := ReloadClient(context.Background(), *kubeconfig, *timeout, stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "shardnet-bench %s: %v\n", ReloadClientCommand, err)
		return 1
	}
	return 0
}

// ReloadClient is one client of freshReload: it loads the pods, claims
// and IP records as the replicas decode them (loadCaches, with the
// replicas' client rate), writes reloadedLine to out, and returns once in
// is closed, so that no client's exit falls into the others' load.
func ReloadClient(ctx context.Context, kubeconfig string, timeout time.Duration, in io.Reader, out io.Writer) error {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	// As a replica sets them when the kubeconfig has none.
	rc.QPS, rc.Burst = 2000, 4000
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := loadCaches(ctx, rc, true, timeout); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out, reloadedLine); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, in)
	return nil
}

// freshReload is the restart's ceiling as a restart pays it: n clients,
// each a process of its own started from the bench's binary (a process
// whose start costs about what a replica's does), load the caches as the
// replicas do (ReloadClient). It returns the seconds from the first
// start until the last client has loaded, with the CPU and page faults
// the clients used until then, read as a restart reads the replicas'.
// rawReload measures the same clients in the bench's own process, whose
// memory is grown already and whose start is paid.
func freshReload(ctx context.Context, kubeconfig string, n int, timeout time.Duration) (*Reload, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type client struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout io.Reader
		stderr bytes.Buffer
		// waited is set once Wait returned (on a failure, before its
		// stderr is read).
		waited bool
	}
	clients := make([]*client, 0, n)
	defer func() {
		for _, c := range clients {
			c.stdin.Close()
		}
		for _, c := range clients {
			if !c.waited {
				_ = c.cmd.Wait()
			}
		}
	}()
	start := time.Now()
	for range n {
		c := &client{cmd: exec.CommandContext(ctx, self, ReloadClientCommand, "-kubeconfig", kubeconfig, "-timeout", timeout.String())}
		c.cmd.Stderr = &c.stderr
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			return nil, err
		}
		if c.stdout, err = c.cmd.StdoutPipe(); err != nil {
			return nil, err
		}
		if err := c.cmd.Start(); err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}
	type loaded struct {
		usage harness.Usage
		err   error
	}
	done := make(chan loaded, n)
	for _, c := range clients {
		go func() {
			line, err := bufio.NewReader(c.stdout).ReadString('\n')
			if strings.TrimSpace(line) != reloadedLine {
				if err == nil {
					err = fmt.Errorf("unexpected output %q", line)
				}
				// The client has exited, or ends with ctx: its stderr
				// is whole once Wait returns.
				cancel()
				_ = c.cmd.Wait()
				c.waited = true
				done <- loaded{err: fmt.Errorf("reload client: %w (%s)", err, strings.TrimSpace(c.stderr.String()))}
				return
			}
			u, _ := harness.ProcUsage(c.cmd.Process.Pid)
			done <- loaded{usage: u}
		}()
	}
	r := &Reload{}
	var errs []error
	for range n {
		l := <-done
		if l.err != nil {
			errs = append(errs, l.err)
			cancel()
			continue
		}
		r.CPUSeconds += l.usage.CPUSeconds()
		r.MinorFaults += l.usage.MinorFaults
	}
	r.Seconds = time.Since(start).Seconds()
	return r, errors.Join(errs...)
}
