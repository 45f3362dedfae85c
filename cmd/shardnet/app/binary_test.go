package app

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/shardnet/shardnet"

func goTool(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to inspect the shardnet binary: %v", err)
	}
	return gobin
}

// TestBinaryLeavesOutTheHarness: the production binary does not link the
// test harness (etcd, kube-apiserver and kwok launchers); the demo that
// needs it is cmd/shardnet-demo.
func TestBinaryLeavesOutTheHarness(t *testing.T) {
	out, err := exec.Command(goTool(t), "list", "-deps", module+"/cmd/shardnet").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !strings.Contains(string(out), module+"/cmd/shardnet/app\n") {
		t.Fatalf("go list -deps listed %d packages, without the app package: %s", len(deps), out)
	}
	for _, p := range deps {
		if strings.HasPrefix(p, module+"/test/") || strings.HasPrefix(p, module+"/cmd/shardnet-demo") {
			t.Errorf("cmd/shardnet depends on %s", p)
		}
	}
}

// TestVersionStampedByLdflags builds the binary with the -X flags the
// Makefile and the Dockerfile pass and checks what `shardnet version`
// prints.
func TestVersionStampedByLdflags(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "shardnet")
	pkg := module + "/cmd/shardnet/app"
	ldflags := "-X " + pkg + ".Version=v1.2.3-4-gabcdef0-dirty -X " + pkg + ".Commit=abcdef0123456789 -X " + pkg + ".BuildDate=2026-01-02T03:04:05Z"
	build := exec.Command(goTool(t), "build", "-trimpath", "-ldflags", ldflags, "-o", bin, module+"/cmd/shardnet")
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("shardnet version: %v\n%s", err, out)
	}
	for _, want := range []string{
		"shardnet v1.2.3-4-gabcdef0-dirty\n",
		"commit:     abcdef0123456789\n",
		"build date: 2026-01-02T03:04:05Z\n",
		"go:         " + runtime.Version(),
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("shardnet version printed\n%s\nwithout %q", out, want)
		}
	}
	if strings.Contains(string(out), "not stamped") {
		t.Errorf("a stamped binary says it is not stamped:\n%s", out)
	}
}
