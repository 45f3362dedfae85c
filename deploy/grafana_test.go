package deploy

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	dashboardFile          = "grafana/shardnet-dashboard.json"
	dashboardConfigMapFile = "grafana/dashboard-configmap.yaml"
	// dashboardKey is the file name Grafana's sidecar gives the dashboard.
	dashboardKey = "shardnet-dashboard.json"
)

var update = flag.Bool("update", false, "rewrite "+dashboardConfigMapFile+" from "+dashboardFile)

// dashboardConfigMap renders the ConfigMap that carries the dashboard JSON
// for Grafana's dashboard sidecar.
func dashboardConfigMap(dashboard []byte) ([]byte, error) {
	if !json.Valid(dashboard) {
		return nil, fmt.Errorf("%s is not valid JSON", dashboardFile)
	}
	if !bytes.HasSuffix(dashboard, []byte("\n")) || bytes.HasSuffix(dashboard, []byte("\n\n")) {
		return nil, fmt.Errorf("%s must end with exactly one newline to be kept as is in a YAML block", dashboardFile)
	}
	var b strings.Builder
	b.WriteString(`# Generated from shardnet-dashboard.json; do not edit. After changing the
# dashboard, regenerate it with
#   go test ./deploy/ -run TestDashboardConfigMap -update
# Grafana's dashboard sidecar (kube-prometheus-stack's
# grafana.sidecar.dashboards) loads ConfigMaps labelled grafana_dashboard: "1"
# from the namespaces it watches; apply this in one of them, e.g.
#   kubectl -n monitoring apply -f deploy/grafana/dashboard-configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: shardnet-dashboard
  labels:
    app.kubernetes.io/name: shardnet
    grafana_dashboard: "1"
data:
  ` + dashboardKey + `: |
`)
	for _, line := range strings.SplitAfter(strings.TrimSuffix(string(dashboard), "\n"), "\n") {
		if strings.TrimRight(line, " \t\n") != strings.TrimSuffix(line, "\n") {
			return nil, fmt.Errorf("%s: trailing whitespace in %q would be lost in a YAML block", dashboardFile, line)
		}
		b.WriteString("    " + line)
	}
	b.WriteString("\n")
	return []byte(b.String()), nil
}

// TestDashboardConfigMap: the ConfigMap carries exactly the dashboard file,
// under the sidecar's label. With -update it is rewritten first.
func TestDashboardConfigMap(t *testing.T) {
	dashboard, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		out, err := dashboardConfigMap(dashboard)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dashboardConfigMapFile, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(dashboardConfigMapFile)
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	if err := yaml.UnmarshalStrict(b, &cm); err != nil {
		t.Fatalf("%s: %v", dashboardConfigMapFile, err)
	}
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" {
		t.Errorf("%s: %s %s, want v1 ConfigMap", dashboardConfigMapFile, cm.APIVersion, cm.Kind)
	}
	if cm.Metadata.Labels["grafana_dashboard"] != "1" {
		t.Errorf("%s: label grafana_dashboard is %q, want \"1\"", dashboardConfigMapFile, cm.Metadata.Labels["grafana_dashboard"])
	}
	if len(cm.Data) != 1 || cm.Data[dashboardKey] != string(dashboard) {
		t.Errorf("%s does not carry exactly %s under %s; regenerate it: go test ./deploy/ -run TestDashboardConfigMap -update",
			dashboardConfigMapFile, dashboardFile, dashboardKey)
	}
}
