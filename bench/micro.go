package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/shardnet/shardnet/test/harness"
)

// runMicro runs the IPAM and Northbound micro-benchmarks of the module in
// dir and returns the ratios they report (speedup over the in-repo
// baseline; batched over unbatched ports/s).
func runMicro(ctx context.Context, dir string, cpus []int) ([]Micro, error) {
	var out []Micro
	for _, b := range []struct{ pkg, bench, time string }{
		{"./ipam", "BenchmarkAllocRelease", "1s"},
		{"./ovn", "BenchmarkPortWrites", "1x"},
	} {
		cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", b.bench, "-benchtime", b.time, b.pkg)
		cmd.Dir = dir
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		// On every CPU, not the bench's half of them: they measure
		// the machine, some of them in parallel.
		err := harness.StartOn(cmd, cpus)
		if err == nil {
			err = cmd.Wait()
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w\n%s", b.pkg, b.bench, err, buf.String())
		}
		out = append(out, parseBench(buf.String())...)
	}
	return out, nil
}

// parseBench reads `go test -bench` lines: the name, the iteration count,
// then value-unit pairs.
func parseBench(s string) []Micro {
	var out []Micro
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil || f[i+1] == "B/op" || f[i+1] == "allocs/op" {
				continue
			}
			out = append(out, Micro{Name: f[0], Value: v, Unit: f[i+1]})
		}
	}
	return out
}
