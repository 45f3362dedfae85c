package app

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolveMemoryLimit(t *testing.T) {
	noEnv := func(string) string { return "" }
	withEnv := func(k string) string {
		if k == "GOMEMLIMIT" {
			return "300MiB"
		}
		return ""
	}
	limited := func() (int64, bool) { return 1 << 30, true }
	unlimited := func() (int64, bool) { return 0, false }
	for _, tc := range []struct {
		name   string
		value  string
		env    func(string) string
		cgroup func() (int64, bool)
		bytes  int64
		source string
	}{
		{"auto under a 1Gi container limit", "auto", noEnv, limited, 858993459 /* 80% of 1Gi */, "80% of the container limit of 1Gi"},
		{"auto without a container limit", "auto", noEnv, unlimited, 0, "no container memory limit"},
		{"auto defers to GOMEMLIMIT", "auto", withEnv, limited, 0, "GOMEMLIMIT=300MiB"},
		{"an explicit quantity wins over both", "512Mi", withEnv, limited, 512 << 20, "--memory-limit=512Mi"},
		{"none", "none", noEnv, limited, 0, "--memory-limit=none"},
	} {
		got, err := resolveMemoryLimit(tc.value, tc.env, tc.cgroup)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got.bytes != tc.bytes || !strings.Contains(got.source, tc.source) {
			t.Errorf("%s: got %d bytes from %q, want %d from %q", tc.name, got.bytes, got.source, tc.bytes, tc.source)
		}
	}
	for _, bad := range []string{"lots", "0", "-5Mi"} {
		if _, err := resolveMemoryLimit(bad, noEnv, limited); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseCgroupLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"max\n":                 0,
		"1073741824\n":          1 << 30,
		"9223372036854771712\n": 0, // cgroup v1's "unlimited"
		"garbage":               0,
	} {
		got, ok := parseCgroupLimit(in)
		if got != want || ok != (want > 0) {
			t.Errorf("parseCgroupLimit(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
}

// TestApplyGCPercent: --gc-percent sets the collector's target; 0 leaves
// it as it was.
func TestApplyGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	if applyGCPercent(0) {
		t.Error("applyGCPercent(0) reports a change")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after applyGCPercent(0) the target is %d, want it left at 100", got)
	}
	if !applyGCPercent(50) {
		t.Error("applyGCPercent(50) reports no change")
	}
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("after applyGCPercent(50) the target is %d, want 50", got)
	}
}
