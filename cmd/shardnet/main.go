// Command shardnet is the sharded pod network reconciler for OVN. See
// package app for its subcommands and flags.
package main

import (
	"os"

	"github.com/shardnet/shardnet/cmd/shardnet/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:], os.Stdout, os.Stderr))
}
