//go:build tools

// Package tools pins the kwok controller that the end-to-end harness runs.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
