package harness

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// allowedList is the Cpus_allowed_list of /proc/<pid>[/task/<tid>]/status,
// as the CPUs it names.
func allowedList(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "Cpus_allowed_list:")
		if !ok {
			continue
		}
		var cpus []int
		for part := range strings.SplitSeq(strings.TrimSpace(v), ",") {
			lo, hi, isRange := strings.Cut(part, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				t.Fatalf("%s: %q", path, v)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(hi); err != nil {
					t.Fatalf("%s: %q", path, v)
				}
			}
			for c := a; c <= b; c++ {
				cpus = append(cpus, c)
			}
		}
		return cpus
	}
	t.Fatalf("%s has no Cpus_allowed_list", path)
	return nil
}

// sleeper starts a process that waits, on cpus, and stops it at cleanup.
func sleeper(t *testing.T, cpus []int) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := StartOn(cmd, cpus); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// TestStartOn: a process started on a CPU runs there and only there, the
// thread that started it is back on the CPUs it had, and a process
// started without CPUs has the caller's.
func TestStartOn(t *testing.T) {
	all, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if got := allowedList(t, "/proc/self/status"); !slices.Equal(got, all) {
		t.Fatalf("AllowedCPUs %v, the kernel says %v", all, got)
	}
	last := all[len(all)-1:]
	pid := sleeper(t, last)
	if got := allowedList(t, fmt.Sprintf("/proc/%d/status", pid)); !slices.Equal(got, last) {
		t.Fatalf("started on %v, runs on %v", last, got)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	if set.Count() != len(all) {
		t.Fatalf("the starting thread kept %d CPUs, want its %d back", set.Count(), len(all))
	}
	if got := allowedList(t, fmt.Sprintf("/proc/%d/status", sleeper(t, nil))); !slices.Equal(got, all) {
		t.Fatalf("started without CPUs, runs on %v, want %v", got, all)
	}
	if err := StartOn(exec.Command("true"), []int{len(set) * 64}); err == nil {
		t.Fatal("a CPU number past the largest was accepted")
	}
}

// TestPinProcess: every thread of the process moves to the CPUs given,
// and so do the processes it starts then; pinning back to every CPU
// undoes it.
func TestPinProcess(t *testing.T) {
	all, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	last := all[len(all)-1:]
	if err := PinProcess(last); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := PinProcess(all); err != nil {
			t.Errorf("pinning back to %v: %v", all, err)
		}
	})
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if got := allowedList(t, "/proc/self/task/"+task.Name()+"/status"); !slices.Equal(got, last) {
			t.Fatalf("thread %s on %v after pinning to %v", task.Name(), got, last)
		}
	}
	if got := allowedList(t, fmt.Sprintf("/proc/%d/status", sleeper(t, nil))); !slices.Equal(got, last) {
		t.Fatalf("a process started after pinning to %v runs on %v", last, got)
	}
}
