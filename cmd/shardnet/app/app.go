package app

import (
	"fmt"
	"io"
)

// Main runs the subcommand named by args[0] and returns the process exit
// code: 0 on success, 1 when the command failed, 2 for a usage error.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "version", "--version":
		printVersion(stdout)
		return 0
	case "controller":
		return runController(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "shardnet: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: shardnet <command> [flags]

commands:
  controller  run one controller replica (see shardnet controller -h)
  version     print the version, commit, build date and Go version

The local end-to-end demo is a separate binary: make demo (cmd/shardnet-demo).
`)
}
