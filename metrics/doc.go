// Package metrics defines shardnet's Prometheus metrics and its
// OpenTelemetry tracing setup.
package metrics
