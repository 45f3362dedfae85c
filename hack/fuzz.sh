#!/usr/bin/env bash
# Runs every Fuzz target of the module for a bounded number of executions
# each (default 10000x), so that CI exercises the fuzzers beyond their seed
# corpus.
#
# The budget is a count, not a duration: with a duration, Go's fuzzing
# coordinator (go1.26) can report a bare "context deadline exceeded" as a
# failure when the time runs out while a worker is mid-call on a loaded
# machine (golang/go#75804, fixed in go1.27). A count has no deadline to
# race, so a failure here is a finding (a reproducer is written under
# testdata/fuzz/).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000x}
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
		echo "fuzz: $pkg $f for $n"
		go test -run='^$' -fuzz="^$f\$" -fuzztime="$n" "$pkg"
	done
done
