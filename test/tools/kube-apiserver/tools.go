//go:build tools

// Package tools pins the kube-apiserver that the end-to-end harness runs.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
