package app

import (
	"fmt"
	"io"
	"runtime"

	"github.com/shardnet/shardnet/metrics"
)

// The build stamps these with -ldflags "-X" (see the Makefile's build
// target and the Dockerfile); a plain `go build` leaves the defaults, which
// say that the binary was not stamped.
var (
	// Version is `git describe --tags --always --dirty` of the tree built.
	Version = "dev"
	// Commit is `git rev-parse HEAD` of the tree built.
	Commit = "unknown"
	// BuildDate is when the binary was built (RFC 3339, UTC).
	BuildDate = "unknown"
)

// buildInfo is this binary's build, as shardnet_build_info exports it.
func buildInfo() metrics.BuildInfo {
	return metrics.BuildInfo{Version: Version, Commit: Commit, GoVersion: runtime.Version()}
}

// printVersion is `shardnet version`.
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "shardnet %s\n", Version)
	fmt.Fprintf(w, "  commit:     %s\n", Commit)
	fmt.Fprintf(w, "  build date: %s\n", BuildDate)
	fmt.Fprintf(w, "  go:         %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if Version == "dev" || Commit == "unknown" {
		fmt.Fprintln(w, "  (not stamped at build: build with `make build` or the Dockerfile to record the version)")
	}
}
