// Command shardnet is the sharded pod network reconciler for OVN. See
// package app for its subcommands and flags.
package main

import (
	"os"

	"github.com/shardnet/shardnet/cmd/shardnet/app"
	"github.com/shardnet/shardnet/internal/startgc"
)

func main() {
	// The collector was off while the packages initialized.
	startgc.Restore()
	os.Exit(app.Main(os.Args[1:], os.Stdout, os.Stderr))
}
