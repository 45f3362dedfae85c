// Package startgc keeps the Go collector off while a program's packages
// initialize, and gives it back its target when the program's main starts.
//
// The client-go, OVSDB and Prometheus packages a replica links allocate
// about 3 MB while they initialize (API types registered in schemes,
// tables, compiled expressions), nearly all of it kept. Go starts with a
// 4 MB heap goal, so the collector ran once or twice before main, marking
// a heap that was all live: with it off, a replica's process reaches main
// with about a tenth less CPU (decision 0009, "The process's own start,
// and the first touch of its memory"). A package initializes once the
// packages it imports have, before the packages after it in import path
// order that are ready too, so this one, which imports only
// runtime/debug, turns the collector off before github.com/shardnet's
// other packages and every k8s.io one.
//
// A main that imports it calls Restore first; the collector is off, with
// nothing to bound the heap but a memory limit, until then.
package startgc

import "runtime/debug"

// percent is the collector's target the program started with: GOGC, or
// Go's 100.
var percent = debug.SetGCPercent(-1)

// Restore sets the collector's target back to what the program started
// with, and returns it.
func Restore() int {
	debug.SetGCPercent(percent)
	return percent
}
