// Package metrics defines shardnet's shardnet_* Prometheus metrics and the
// adapters that let other packages report to them through the one-method
// interfaces they declare (ovn.Metrics, reconcile.Metrics), so that those
// packages do not import Prometheus.
//
// Names follow Prometheus conventions (_total for counters, _seconds for
// durations). No metric carries a per-pod label: labels are bounded sets
// (phase, result, outcome, subnet, family), so cardinality grows with the
// number of subnets at most, never with pods. The shard number is not a
// label of the per-transaction metrics either, since S may be in the
// hundreds; per-shard queue depth comes from the workqueue metrics.
//
// RegisterClientGo adds client-go's REST client metrics (request latency
// and results by verb and host) and its leader election metrics
// (leader_election_master_status, leader_election_slowpath_total) to a
// registry. While a replica leads, Metrics also exports kube-ovn-controller's
// subnet gauges (subnet_available_ip_count, subnet_used_ip_count) under
// kube-ovn's names and labels, so that alerts written for kube-ovn keep
// working.
//
// SetupTracing installs the OpenTelemetry tracer provider the standard
// OTEL_* variables ask for; with none set, tracing stays off and the
// packages' tracers are the global no-op. A pod reconcile is one trace
// ("reconcile pod" with a span per stage); a Northbound transaction, which
// carries many pods, is a trace of its own linked to each pod's wait.
package metrics
