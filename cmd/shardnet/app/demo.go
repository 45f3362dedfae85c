package app

import (
	"fmt"
	"io"
)

// runDemo will start a local API server, kwok and Northbound and run three
// replicas on a few hundred pods. Until the pod reconciler exists it says so.
func runDemo(_ []string, stdout, _ io.Writer) int {
	fmt.Fprintln(stdout, "shardnet demo: the pod reconciler is not built yet; this command will start a local")
	fmt.Fprintln(stdout, "apiserver, etcd, kwok and Northbound, run 3 replicas on a few hundred pods and print a summary.")
	return 0
}
