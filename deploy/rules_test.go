// Package deploy holds the tests of the monitoring manifests under deploy/:
// the Prometheus rules and the Grafana dashboard's ConfigMap.
package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	ruleFile           = "prometheus/shardnet-rules.yaml"
	ruleTestFile       = "prometheus/shardnet-rules_test.yaml"
	prometheusRuleFile = "optional/prometheusrule.yaml"
)

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// rule is the part of a rule the tests look at.
type rule struct {
	Alert string `json:"alert"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

func decodeGroups(t *testing.T, what string, groups any) []ruleGroup {
	t.Helper()
	b, err := json.Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	var gs []ruleGroup
	if err := json.Unmarshal(b, &gs); err != nil {
		t.Fatalf("%s: groups: %v", what, err)
	}
	return gs
}

// TestPrometheusRuleMatchesRuleFile: the PrometheusRule for the Prometheus
// Operator carries exactly the groups of the plain rule file.
func TestPrometheusRuleMatchesRuleFile(t *testing.T) {
	plain := readYAML(t, ruleFile)
	op := readYAML(t, prometheusRuleFile)
	if op["apiVersion"] != "monitoring.coreos.com/v1" || op["kind"] != "PrometheusRule" {
		t.Fatalf("%s: %v %v, want monitoring.coreos.com/v1 PrometheusRule", prometheusRuleFile, op["apiVersion"], op["kind"])
	}
	spec, _ := op["spec"].(map[string]any)
	want, got := plain["groups"], spec["groups"]
	if want == nil {
		t.Fatalf("%s has no groups", ruleFile)
	}
	if reflect.DeepEqual(want, got) {
		return
	}
	// Say which rules differ.
	wg, gg := decodeGroups(t, ruleFile, want), decodeGroups(t, prometheusRuleFile, got)
	wantRules, gotRules := rawRules(t, want), rawRules(t, got)
	for k, w := range wantRules {
		if g, ok := gotRules[k]; !ok {
			t.Errorf("%s lacks %s", prometheusRuleFile, k)
		} else if g != w {
			t.Errorf("%s differs between the files:\n%s:\n%s\n%s:\n%s", k, ruleFile, w, prometheusRuleFile, g)
		}
	}
	for k := range gotRules {
		if _, ok := wantRules[k]; !ok {
			t.Errorf("%s has %s, which %s lacks", prometheusRuleFile, k, ruleFile)
		}
	}
	if !t.Failed() {
		t.Errorf("the groups differ (order or group fields): %s has %d groups, %s %d", ruleFile, len(wg), prometheusRuleFile, len(gg))
	}
}

// rawRules maps "group/alert" to the rule as JSON.
func rawRules(t *testing.T, groups any) map[string]string {
	t.Helper()
	out := map[string]string{}
	gs, _ := groups.([]any)
	for _, g := range gs {
		gm, _ := g.(map[string]any)
		rules, _ := gm["rules"].([]any)
		for _, r := range rules {
			rm, _ := r.(map[string]any)
			name, _ := rm["alert"].(string)
			if name == "" {
				name, _ = rm["record"].(string)
			}
			b, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			out[gm["name"].(string)+"/"+name] = string(b)
		}
	}
	return out
}

// promtool finds Debian's promtool, or fails the test saying how to get it.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (%v): install Debian's prometheus package (apt-get install prometheus), which ships /usr/bin/promtool; .ci/run does", err)
	}
	return p
}

func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

// TestRulesPromtool: promtool accepts the rule file and the unit tests of
// shardnet-rules_test.yaml pass.
func TestRulesPromtool(t *testing.T) {
	dir := filepath.Dir(ruleFile)
	runPromtool(t, dir, "check", "rules", filepath.Base(ruleFile))
	runPromtool(t, dir, "test", "rules", filepath.Base(ruleTestFile))
}

// TestEveryAlertTested: each alert of the rule file has a unit test that
// expects it to fire, so that a new alert comes with its test.
func TestEveryAlertTested(t *testing.T) {
	var tests struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	b, err := os.ReadFile(ruleTestFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatalf("%s: %v", ruleTestFile, err)
	}
	if !reflect.DeepEqual(tests.RuleFiles, []string{filepath.Base(ruleFile)}) {
		t.Errorf("%s tests %v, want [%s]", ruleTestFile, tests.RuleFiles, filepath.Base(ruleFile))
	}
	fired := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fired[a.Alertname] = true
			}
		}
	}
	for _, g := range decodeGroups(t, ruleFile, readYAML(t, ruleFile)["groups"]) {
		for _, r := range g.Rules {
			if r.Alert != "" && !fired[r.Alert] {
				t.Errorf("alert %s has no test in %s that expects it to fire", r.Alert, ruleTestFile)
			}
		}
	}
}
