// Package app is the shardnet command: it parses and validates flags and
// runs one subcommand.
//
//	shardnet controller [flags]   run one controller replica
//	shardnet version              print the version, commit and Go version
//
// The local end-to-end demo is its own binary, cmd/shardnet-demo, so that
// the production binary carries none of the test harness.
package app
