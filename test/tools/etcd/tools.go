//go:build tools

// Package tools pins the etcd server that the end-to-end harness runs.
// Build it with: go build -o BIN go.etcd.io/etcd/server/v3
package tools

import _ "go.etcd.io/etcd/server/v3"
