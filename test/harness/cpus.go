package harness

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// StartOn starts cmd with its CPU affinity set to cpus (the caller's
// when cpus is empty). A process inherits the affinity of the thread that
// forked it, so the calling goroutine is locked to its thread, whose
// affinity is set to cpus for the fork and put back after it; then the
// thread goes back to the runtime, alive (with Pdeathsig, the child is
// signalled when the thread that forked it exits).
func StartOn(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	set, err := cpuSet(cpus)
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var saved unix.CPUSet
	if err := unix.SchedGetaffinity(0, &saved); err != nil {
		return fmt.Errorf("reading the CPU affinity: %w", err)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("setting the CPU affinity to %v: %w", cpus, err)
	}
	startErr := cmd.Start()
	if err := unix.SchedSetaffinity(0, &saved); err != nil {
		// The thread stays on cpus; a start that worked still did.
		return fmt.Errorf("putting the CPU affinity back after starting %s: %w", cmd.Path, err)
	}
	return startErr
}

// cpuSet is the set of cpus. A CPU the process may not use makes setting
// the affinity fail when the set has no other.
func cpuSet(cpus []int) (unix.CPUSet, error) {
	var set unix.CPUSet
	for _, c := range cpus {
		if c < 0 || c >= len(set)*64 {
			return set, fmt.Errorf("no CPU %d", c)
		}
		set.Set(c)
	}
	return set, nil
}

// AllowedCPUs are the CPUs the calling thread may run on, in order.
func AllowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("reading the CPU affinity: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// PinProcess sets the CPU affinity of every thread of this process to
// cpus. The threads the process starts later inherit it from the thread
// that starts them, and so do the processes it starts but those started
// on other CPUs (KubeOptions.CPUs). The threads are read twice, for one
// started while the first pass ran.
func PinProcess(cpus []int) error {
	set, err := cpuSet(cpus)
	if err != nil {
		return err
	}
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("listing this process's threads: %w", err)
		}
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("setting thread %d's CPU affinity to %v: %w", tid, cpus, err)
			}
		}
	}
	return nil
}
