package harness

import (
	"os"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	// A command name with a space and a parenthesis in it: the fields
	// count from the last ')'.
	line := "4242 (shard net) x) S 1 4242 4242 0 -1 4194560 13037 0 2 0 16 18 0 0 20 0 343 0 12345 1000000 24000 18446744073709551615\n"
	u, ok := parseProcStat(line)
	if !ok {
		t.Fatalf("parseProcStat(%q) failed", line)
	}
	want := Usage{UserSeconds: 0.16, SystemSeconds: 0.18, MinorFaults: 13037}
	if u != want {
		t.Fatalf("parseProcStat = %+v, want %+v", u, want)
	}
	for _, bad := range []string{"", "4242 shardnet S 1", "4242 (shardnet) S 1 2 3", "4242 (shardnet) S 1 4242 4242 0 -1 4194560 many 0 2 0 16 18 0"} {
		if u, ok := parseProcStat(bad); ok {
			t.Errorf("parseProcStat(%q) = %+v, want a failure", bad, u)
		}
	}
}

func TestProcUsageOfThisProcess(t *testing.T) {
	before, ok := ProcUsage(os.Getpid())
	if !ok {
		t.Fatal("ProcUsage of this process failed")
	}
	// Touching fresh pages counts as minor faults.
	b := make([]byte, 64<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	after, _ := ProcUsage(os.Getpid())
	if after.MinorFaults <= before.MinorFaults {
		t.Fatalf("minor faults %d after touching 64 MiB, %d before", after.MinorFaults, before.MinorFaults)
	}
	if after.CPUSeconds() < before.CPUSeconds() {
		t.Fatalf("CPU went back: %+v after %+v", after, before)
	}
	if _, ok := ProcUsage(-1); ok {
		t.Fatal("ProcUsage(-1) succeeded")
	}
}
