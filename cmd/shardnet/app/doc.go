// Package app is the shardnet command: it parses and validates flags and
// runs one subcommand.
//
//	shardnet controller [flags]   run one controller replica
//	shardnet demo [flags]         run the local end-to-end demo
//	shardnet version              print the version
package app
