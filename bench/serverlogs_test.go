package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardnet/shardnet/test/harness"
)

// A scenario's server logs are kept under Out/logs with the scenario's
// name, kwok's included, and a log the scenario never got to write (kwok's
// when the API server failed to start) is skipped without a complaint.
func TestKeepServerLogs(t *testing.T) {
	kube := &harness.Kube{Dir: t.TempDir()}
	for name, body := range map[string]string{"kube-apiserver.log": "api\n", "kwok.log": "kwok: node not ready\n"} {
		if err := os.WriteFile(filepath.Join(kube.Dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var progress bytes.Buffer
	cfg := Config{Out: t.TempDir(), Progress: &progress}
	keepServerLogs(cfg, "raw-half", kube)
	for name, want := range map[string]string{"raw-half-kube-apiserver.log": "api\n", "raw-half-kwok.log": "kwok: node not ready\n"} {
		got, err := os.ReadFile(filepath.Join(cfg.Out, "logs", name))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, "logs", "raw-half-etcd.log")); err == nil {
		t.Error("a log that was never written was kept")
	}
	if strings.TrimSpace(progress.String()) != "" {
		t.Errorf("complained: %s", progress.String())
	}
}
