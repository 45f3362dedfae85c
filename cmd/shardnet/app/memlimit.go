package app

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// autoMemoryFraction is the share of the container's memory limit that
// --memory-limit=auto gives the Go runtime as its soft limit: the rest is
// for what the runtime does not count (stacks of cgo-free threads, the
// binary's pages) and for the moment a list response is being decoded.
const autoMemoryFraction = 0.8

// memoryLimit is the resolved --memory-limit.
type memoryLimit struct {
	// bytes is the soft limit to set; 0 leaves the runtime's own.
	bytes int64
	// source says where it came from, for the log line.
	source string
}

// resolveMemoryLimit turns --memory-limit into a soft limit for the Go
// runtime: "auto" takes autoMemoryFraction of the cgroup's memory limit
// (none without one) unless GOMEMLIMIT is set, "none" keeps the runtime's
// default, and a quantity ("512Mi") is taken as is. cgroupLimit returns the
// container's limit in bytes and whether it has one.
func resolveMemoryLimit(value string, env func(string) string, cgroupLimit func() (int64, bool)) (memoryLimit, error) {
	switch v := strings.TrimSpace(value); v {
	case "", "auto":
		if g := env("GOMEMLIMIT"); g != "" {
			return memoryLimit{source: "GOMEMLIMIT=" + g}, nil
		}
		limit, ok := cgroupLimit()
		if !ok {
			return memoryLimit{source: "no container memory limit"}, nil
		}
		return memoryLimit{
			bytes:  int64(float64(limit) * autoMemoryFraction),
			source: fmt.Sprintf("%.0f%% of the container limit of %s", autoMemoryFraction*100, resource.NewQuantity(limit, resource.BinarySI)),
		}, nil
	case "none":
		return memoryLimit{source: "--memory-limit=none"}, nil
	default:
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return memoryLimit{}, fmt.Errorf("--memory-limit %q: want auto, none or a quantity such as 512Mi: %w", value, err)
		}
		if q.Sign() <= 0 {
			return memoryLimit{}, fmt.Errorf("--memory-limit %q: want a positive quantity", value)
		}
		return memoryLimit{bytes: q.Value(), source: "--memory-limit=" + v}, nil
	}
}

// apply sets the soft limit, if any.
func (m memoryLimit) apply() {
	if m.bytes > 0 {
		debug.SetMemoryLimit(m.bytes)
	}
}

// cgroupMemoryLimit reads the container's memory limit from cgroup v2, then
// v1; "max" or an absurdly large v1 value means none.
func cgroupMemoryLimit() (int64, bool) {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		return parseCgroupLimit(string(b))
	}
	return 0, false
}

func parseCgroupLimit(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	// cgroup v1 reports "no limit" as the largest page-aligned int64.
	if err != nil || n <= 0 || n >= math.MaxInt64/2 {
		return 0, false
	}
	return n, true
}

// applyGCPercent sets the collector's target to --gc-percent when it is
// set (positive), and reports whether it did; 0 leaves GOGC or Go's 100.
func applyGCPercent(percent int) bool {
	if percent <= 0 {
		return false
	}
	debug.SetGCPercent(percent)
	return true
}
