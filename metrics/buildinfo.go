package metrics

import "github.com/prometheus/client_golang/prometheus"

// BuildInfo is what a binary was built from: the version and commit
// stamped at build time and the Go release that compiled it.
type BuildInfo struct {
	Version   string
	Commit    string
	GoVersion string
}

// RegisterBuildInfo registers shardnet_build_info, a gauge that is always 1
// and whose labels (version, commit, go_version) say which build a replica
// runs, so that a dashboard can join it to any other series.
func RegisterBuildInfo(reg prometheus.Registerer, b BuildInfo) error {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "shardnet_build_info",
		Help: "Always 1; the labels say which build runs: version, commit and the Go release that compiled it.",
	}, []string{"version", "commit", "go_version"})
	g.WithLabelValues(b.Version, b.Commit, b.GoVersion).Set(1)
	return reg.Register(g)
}
