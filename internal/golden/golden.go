// Package golden runs the scenario files of the packages' tests: a header
// line, then commands, each followed by "----" and its expected output up
// to a blank line. Lines starting with "#" are comments. With rewrite set
// the file is written back with the outputs the commands gave, so a
// scenario is added by writing its commands and running with -rewrite.
package golden

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Runner runs one command of a scenario and returns its output.
type Runner func(cmd string, args []string) string

// Run runs the scenario in file. setup gets the header line and returns
// the runner for the commands that follow.
func Run(t *testing.T, file string, rewrite bool, setup func(header string) Runner) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	run := setup(lines[0])
	var out strings.Builder
	out.WriteString(lines[0] + "\n\n")
	for i := 1; i < len(lines); {
		line := lines[i]
		if strings.TrimSpace(line) == "" {
			i++
			continue
		}
		if strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			i++
			continue
		}
		i++
		var want []string
		if i < len(lines) && lines[i] == "----" {
			i++
			for i < len(lines) && lines[i] != "" {
				want = append(want, lines[i])
				i++
			}
		}
		fields := strings.Fields(line)
		got := run(fields[0], fields[1:])
		if !rewrite && got != strings.Join(want, "\n") {
			t.Errorf("%s: %q:\ngot:\n%s\nwant:\n%s", file, line, got, strings.Join(want, "\n"))
		}
		fmt.Fprintf(&out, "%s\n----\n%s\n\n", line, got)
	}
	if rewrite {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
