#!/usr/bin/env bash
# Runs every Fuzz target of the module for a short time each (default 5s),
# so that CI exercises the fuzzers beyond their seed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-5s}
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
		echo "fuzz: $pkg $f for $t"
		go test -run='^$' -fuzz="^$f\$" -fuzztime="$t" "$pkg"
	done
done
