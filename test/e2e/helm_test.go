package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/cmd/shardnet/app"
	"github.com/shardnet/shardnet/test/harness"
)

var syncChartCopies = flag.Bool("sync-chart-copies", false,
	"rewrite the copies in deploy/helm/shardnet (crds, crds-optional, files) from their sources under deploy/ before comparing them")

// The release the tests render: the install command of the chart's README,
// helm install shardnet deploy/helm/shardnet -n kube-system.
const (
	helmRelease   = "shardnet"
	helmNamespace = "kube-system"
)

func chartDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(deployDir(t), "helm", "shardnet")
}

// chartCopies lists the files the chart carries as copies, each with its
// source under deploy/: shardnet's CRD (crds/, installed by Helm before the
// templates), the opt-in kubeovn.io CRDs (crds-optional/), the alert rules
// and the Grafana dashboard (files/).
func chartCopies(t *testing.T) map[string]string {
	t.Helper()
	dir, chart := deployDir(t), chartDir(t)
	copies := map[string]string{
		filepath.Join(chart, "files", "shardnet-dashboard.json"): filepath.Join(dir, "grafana", "shardnet-dashboard.json"),
		filepath.Join(chart, "files", "shardnet-rules.yaml"):     filepath.Join(dir, "prometheus", "shardnet-rules.yaml"),
	}
	for _, f := range harness.CRDFiles(t, filepath.Join(dir, "base", "crds")) {
		copies[filepath.Join(chart, "crds", filepath.Base(f))] = f
	}
	for _, f := range harness.CRDFiles(t, filepath.Join(dir, "kubeovn-crds")) {
		copies[filepath.Join(chart, "crds-optional", filepath.Base(f))] = f
	}
	return copies
}

// renderChart renders the chart as `helm template --include-crds` does,
// without a cluster: the chart's values overridden by vals, the CRDs of
// crds/ first, then every template's objects. Templates are executed in
// strict mode, so that a reference to a value the chart does not define is
// an error. NOTES.txt is returned apart.
func renderChart(t *testing.T, release, ns string, vals map[string]any) ([]*unstructured.Unstructured, string, error) {
	t.Helper()
	return renderChartWith(t, engine.Engine{Strict: true}, release, ns, vals)
}

// renderChartWith is renderChart with the engine given: one made by
// engine.New answers the chart's lookups from that cluster, as `helm
// install` does.
func renderChartWith(t *testing.T, eng engine.Engine, release, ns string, vals map[string]any) ([]*unstructured.Unstructured, string, error) {
	t.Helper()
	eng.Strict = true
	ch, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	if err := ch.Validate(); err != nil {
		t.Fatalf("chart: %v", err)
	}
	top, err := chartutil.ToRenderValues(ch, vals, common.ReleaseOptions{Name: release, Namespace: ns, Revision: 1, IsInstall: true}, nil)
	if err != nil {
		return nil, "", err
	}
	out, err := eng.RenderWithContext(context.Background(), ch, top)
	if err != nil {
		return nil, "", err
	}
	var objs []*unstructured.Unstructured
	for _, crd := range ch.CRDObjects() {
		objs = append(objs, decodeObjects(t, crd.Filename, crd.File.Data)...)
	}
	var notes string
	for _, name := range slices.Sorted(maps.Keys(out)) {
		switch {
		case strings.HasSuffix(name, "NOTES.txt"):
			notes = out[name]
		case strings.HasPrefix(filepath.Base(name), "_"):
		default:
			objs = append(objs, decodeObjects(t, name, []byte(out[name]))...)
		}
	}
	return objs, notes, nil
}

// mustRender is renderChart for values that must render.
func mustRender(t *testing.T, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, _, err := renderChart(t, helmRelease, helmNamespace, vals)
	if err != nil {
		t.Fatalf("rendering the chart with %v: %v", vals, err)
	}
	return objs
}

// chartValues parses YAML values (as a -f file would give them).
func chartValues(t *testing.T, s string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &vals); err != nil {
		t.Fatal(err)
	}
	return vals
}

// everyToggleOn turns on every optional part of the chart, with Northbound
// remotes given as a list.
const everyToggleOn = `
installKubeOVNCRDs: true
serviceMonitor: {enabled: true, labels: {release: prometheus}}
prometheusRule: {enabled: true, labels: {release: prometheus}}
dashboard: {enabled: true, namespace: monitoring, annotations: {grafana_folder: Networking}}
metrics:
  secure: true
  certSecret: shardnet-metrics-tls
  readerServiceAccounts: [{name: prometheus-k8s, namespace: monitoring}]
northbound:
  endpoints: [ssl:10.0.0.11:6641, ssl:10.0.0.12:6641, ssl:10.0.0.13:6641]
  serverName: ovn
imagePullSecrets: [{name: registry}]
podAnnotations: {example.com/team: network}
extraArgs: [--workers-per-shard=4]
`

// kubeOVNEnvironment gives the Northbound as kube-ovn names it, with a
// kubernetes.io/tls Secret, a coordination namespace made elsewhere, and a
// release name without "shardnet" in it.
const kubeOVNEnvironment = `
northbound:
  ovnDbIps: "10.0.0.11, 10.0.0.12,10.0.0.13"
  enableSsl: true
  port: "6643"
  tls:
    secretName: shardnet-nb-tls
    keys: {ca: ca.crt, cert: tls.crt, key: tls.key}
coordinationNamespace: network-coordination
createNamespace: false
image: {repository: registry.example/shardnet, tag: v9.9.9}
memoryLimit: auto
gcPercent: 50
`

// byKind indexes objects by kind, then by namespace/name.
func byKind(objs []*unstructured.Unstructured) map[string]map[string]*unstructured.Unstructured {
	out := map[string]map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if out[o.GetKind()] == nil {
			out[o.GetKind()] = map[string]*unstructured.Unstructured{}
		}
		out[o.GetKind()][o.GetNamespace()+"/"+o.GetName()] = o
	}
	return out
}

// one returns the only object of kind, failing unless there is exactly one.
func one(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

// named returns the object of kind and name, or nil.
func named(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// container is the StatefulSet's shardnet container.
func container(t *testing.T, sts *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "containers")
	if len(cs) != 1 {
		t.Fatalf("StatefulSet %s has %d containers, want 1", sts.GetName(), len(cs))
	}
	return cs[0].(map[string]any)
}

func containerArgs(t *testing.T, sts *unstructured.Unstructured) []string {
	t.Helper()
	args, _, err := unstructured.NestedStringSlice(container(t, sts), "args")
	if err != nil || len(args) == 0 || args[0] != "controller" {
		t.Fatalf("StatefulSet args %v (%v): want `controller` and its flags", args, err)
	}
	return args
}

// flagValue returns the value of --name=VALUE in args.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func hasFlag(args []string, name string) bool {
	_, ok := flagValue(args, name)
	return ok || slices.Contains(args, "--"+name)
}

func containerEnv(t *testing.T, sts *unstructured.Unstructured) map[string]string {
	t.Helper()
	env, _, _ := unstructured.NestedSlice(container(t, sts), "env")
	out := map[string]string{}
	for _, e := range env {
		m := e.(map[string]any)
		v, _ := m["value"].(string)
		out[m["name"].(string)] = v
	}
	return out
}

// checkFlagsParse runs `shardnet controller` with the chart's arguments and
// a --lease-duration that validation refuses: every flag the chart passes
// must be one the binary defines, so the parse succeeds and the replica
// stops at validation, before it starts anything. It runs in a process of
// its own (this test binary, as TestHelmChartFlagsChild), since the
// command sets klog's global flags.
func checkFlagsParse(t *testing.T, args []string) {
	t.Helper()
	b, err := json.Marshal(append(slices.Clone(args), "--lease-duration=0s"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelmChartFlagsChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), flagsChildEnv+"="+string(b))
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "--lease-duration") || strings.Contains(stderr.String(), "not defined") {
		t.Errorf("shardnet %s: %v, stderr %q; want exit 2 with the flags parsed and only --lease-duration refused", strings.Join(args, " "), err, stderr.String())
	}
}

// flagsChildEnv carries the arguments of checkFlagsParse's process.
const flagsChildEnv = "SHARDNET_HELM_FLAGS_CHILD"

// TestHelmChartFlagsChild is the process checkFlagsParse starts: it runs
// `shardnet` with the arguments of $SHARDNET_HELM_FLAGS_CHILD and exits with
// its code. Run directly, it does nothing.
func TestHelmChartFlagsChild(t *testing.T) {
	v := os.Getenv(flagsChildEnv)
	if v == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(v), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(app.Main(args, os.Stdout, os.Stderr))
}

// TestHelmChartRender renders the chart with its defaults, with every
// toggle on, and with the Northbound given in kube-ovn's names, and checks
// what each installs and how the replicas are started; values that
// contradict each other fail the render.
func TestHelmChartRender(t *testing.T) {
	ch, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatal(err)
	}
	appVersion := ch.Metadata.AppVersion

	t.Run("defaults", func(t *testing.T) {
		objs, notes, err := renderChart(t, helmRelease, helmNamespace, nil)
		if err != nil {
			t.Fatal(err)
		}
		kinds := byKind(objs)
		for _, k := range []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "StatefulSet", "Service", "PodDisruptionBudget"} {
			if len(kinds[k]) == 0 {
				t.Errorf("no %s", k)
			}
		}
		for _, k := range []string{"ServiceMonitor", "PrometheusRule", "ConfigMap"} {
			if len(kinds[k]) != 0 {
				t.Errorf("%s rendered with its toggle off", k)
			}
		}
		for _, o := range objs {
			if group, _, _ := unstructured.NestedString(o.Object, "spec", "group"); o.GetKind() == "CustomResourceDefinition" && group != "shardnet.io" {
				t.Errorf("CRD %s of group %s installed by default; only shardnet.io CRDs are", o.GetName(), group)
			}
			if strings.HasPrefix(o.GetAPIVersion(), "kubeovn.io/") {
				t.Errorf("%s %s is kube-ovn's", o.GetKind(), o.GetName())
			}
			switch o.GetKind() {
			case "Role", "RoleBinding":
				// The external gateway's are in kube-ovn's namespace.
				want := coordinationNS
				if strings.HasSuffix(o.GetName(), "-external-gateway") {
					want = "kube-system"
				}
				if o.GetNamespace() != want {
					t.Errorf("%s %s in %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), want)
				}
			case "ClusterRole":
				checkNoCoordinationRules(t, o)
				if strings.Contains(o.GetName(), "metrics") {
					t.Errorf("ClusterRole %s rendered without metrics.secure", o.GetName())
				}
			case "StatefulSet", "Service", "ServiceAccount", "PodDisruptionBudget":
				if o.GetNamespace() != helmNamespace {
					t.Errorf("%s %s in %q, want the release namespace %s", o.GetKind(), o.GetName(), o.GetNamespace(), helmNamespace)
				}
			}
		}
		if ns := one(t, objs, "Namespace"); ns.GetName() != coordinationNS {
			t.Errorf("Namespace %s, want %s", ns.GetName(), coordinationNS)
		}

		sts := one(t, objs, "StatefulSet")
		if sts.GetName() != "shardnet" {
			t.Errorf("StatefulSet %s, want shardnet (the pod names are the replicas' identities)", sts.GetName())
		}
		c := container(t, sts)
		if c["image"] != "shardnet:"+appVersion || c["imagePullPolicy"] != "IfNotPresent" {
			t.Errorf("image %v (%v), want shardnet:%s (IfNotPresent)", c["image"], c["imagePullPolicy"], appVersion)
		}
		if n, _, _ := unstructured.NestedFieldNoCopy(sts.Object, "spec", "replicas"); fmt.Sprint(n) != "3" {
			t.Errorf("replicas %v, want 3", n)
		}
		args := containerArgs(t, sts)
		for flag, want := range map[string]string{"namespace": coordinationNS, "shards": "64", "memory-limit": "512Mi", "nb-tls-dir": "/var/run/tls", "metrics-addr": ":9402", "health-addr": ":9403"} {
			if v, _ := flagValue(args, flag); v != want {
				t.Errorf("--%s=%q, want %q (args %v)", flag, v, want, args)
			}
		}
		for _, flag := range []string{"metrics-secure", "enable-pprof", "pprof-addr", "nb-endpoints", "ovn-nb-addr", "metrics-cert-dir", "gc-percent"} {
			if hasFlag(args, flag) {
				t.Errorf("--%s passed by default (args %v)", flag, args)
			}
		}
		checkFlagsParse(t, args)
		env := containerEnv(t, sts)
		if env["ENABLE_SSL"] != "false" {
			t.Errorf("ENABLE_SSL %q, want false", env["ENABLE_SSL"])
		}
		for _, name := range []string{"OVN_DB_IPS", "KUBE_OVN_NB_PORT"} {
			if _, ok := env[name]; ok {
				t.Errorf("%s set by default", name)
			}
		}
		checkNBTLSVolume(t, sts, "kube-ovn-tls", map[string]string{"cacert": "cacert", "cert": "cert", "key": "key"})
		res, _, _ := unstructured.NestedMap(c, "resources")
		wantRes := map[string]any{"requests": map[string]any{"cpu": "500m", "memory": "256Mi"}, "limits": map[string]any{"memory": "1Gi"}}
		if !reflect.DeepEqual(res, wantRes) {
			t.Errorf("resources %v, want %v", res, wantRes)
		}
		if !strings.Contains(notes, "docs/migrate-from-kube-ovn.md") {
			t.Errorf("NOTES.txt does not point to the takeover guide:\n%s", notes)
		}
	})

	t.Run("every toggle on", func(t *testing.T) {
		objs := mustRender(t, chartValues(t, everyToggleOn))
		checkKubeOVNCRDsRendered(t, objs)

		sts := one(t, objs, "StatefulSet")
		args := containerArgs(t, sts)
		if v, _ := flagValue(args, "nb-endpoints"); v != "ssl:10.0.0.11:6641,ssl:10.0.0.12:6641,ssl:10.0.0.13:6641" {
			t.Errorf("--nb-endpoints=%q", v)
		}
		for _, want := range []string{"--metrics-secure", "--metrics-cert-dir=/etc/shardnet/metrics-tls", "--nb-server-name=ovn", "--workers-per-shard=4"} {
			if !slices.Contains(args, want) {
				t.Errorf("no %s in %v", want, args)
			}
		}
		if hasFlag(args, "enable-pprof") {
			t.Errorf("--enable-pprof passed: %v", args)
		}
		checkFlagsParse(t, args)
		vols, _, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "volumes")
		if !slices.ContainsFunc(vols, func(v any) bool {
			s, _, _ := unstructured.NestedString(v.(map[string]any), "secret", "secretName")
			return s == "shardnet-metrics-tls"
		}) {
			t.Errorf("the metrics certificate Secret is not mounted: %v", vols)
		}

		for _, name := range []string{"shardnet-metrics-auth", "shardnet-metrics-reader"} {
			if named(objs, "ClusterRole", name) == nil {
				t.Errorf("no ClusterRole %s with metrics.secure", name)
			}
		}
		if b := named(objs, "ClusterRoleBinding", "shardnet-metrics-reader"); b == nil {
			t.Error("no ClusterRoleBinding for metrics.readerServiceAccounts")
		} else if subj, _, _ := unstructured.NestedSlice(b.Object, "subjects"); len(subj) != 1 || subj[0].(map[string]any)["name"] != "prometheus-k8s" {
			t.Errorf("metrics reader subjects %v", subj)
		}

		sm := one(t, objs, "ServiceMonitor")
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(eps) != 1 || eps[0].(map[string]any)["scheme"] != "https" || eps[0].(map[string]any)["bearerTokenFile"] == nil {
			t.Errorf("ServiceMonitor endpoints %v: want https with Prometheus' token under metrics.secure", eps)
		}
		if sm.GetLabels()["release"] != "prometheus" {
			t.Errorf("ServiceMonitor labels %v, want serviceMonitor.labels", sm.GetLabels())
		}
		checkSelects(t, sm, named(objs, "Service", "shardnet-metrics"))

		rule := one(t, objs, "PrometheusRule")
		var plain map[string]any
		b, err := os.ReadFile(filepath.Join(deployDir(t), "prometheus", "shardnet-rules.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &plain); err != nil {
			t.Fatal(err)
		}
		if groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups"); len(groups) == 0 || !reflect.DeepEqual(groups, plain["groups"]) {
			t.Errorf("the PrometheusRule's groups differ from deploy/prometheus/shardnet-rules.yaml's")
		}

		cm := one(t, objs, "ConfigMap")
		dash, err := os.ReadFile(filepath.Join(deployDir(t), "grafana", "shardnet-dashboard.json"))
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(cm.Object, "data", "shardnet-dashboard.json"); got != string(dash) {
			t.Errorf("the dashboard ConfigMap does not carry deploy/grafana/shardnet-dashboard.json as it is (%d bytes, want %d)", len(got), len(dash))
		}
		if cm.GetLabels()["grafana_dashboard"] != "1" || cm.GetNamespace() != "monitoring" || cm.GetAnnotations()["grafana_folder"] != "Networking" {
			t.Errorf("dashboard ConfigMap %s/%s labels %v annotations %v", cm.GetNamespace(), cm.GetName(), cm.GetLabels(), cm.GetAnnotations())
		}
	})

	t.Run("kube-ovn environment", func(t *testing.T) {
		objs, _, err := renderChart(t, "net", helmNamespace, chartValues(t, kubeOVNEnvironment))
		if err != nil {
			t.Fatal(err)
		}
		if ns := byKind(objs)["Namespace"]; len(ns) != 0 {
			t.Errorf("createNamespace: false rendered %v", slices.Collect(maps.Keys(ns)))
		}
		sts := one(t, objs, "StatefulSet")
		if sts.GetName() != "net-shardnet" {
			t.Errorf("StatefulSet %s, want net-shardnet", sts.GetName())
		}
		if img := container(t, sts)["image"]; img != "registry.example/shardnet:v9.9.9" {
			t.Errorf("image %v", img)
		}
		args := containerArgs(t, sts)
		if hasFlag(args, "nb-endpoints") {
			t.Errorf("--nb-endpoints with ovnDbIps: %v", args)
		}
		if v, _ := flagValue(args, "namespace"); v != "network-coordination" {
			t.Errorf("--namespace=%s", v)
		}
		if v, _ := flagValue(args, "memory-limit"); v != "auto" {
			t.Errorf("--memory-limit=%s", v)
		}
		if v, _ := flagValue(args, "gc-percent"); v != "50" {
			t.Errorf("--gc-percent=%s, want 50 (gcPercent)", v)
		}
		checkFlagsParse(t, args)
		env := containerEnv(t, sts)
		want := map[string]string{"ENABLE_SSL": "true", "OVN_DB_IPS": "10.0.0.11, 10.0.0.12,10.0.0.13", "KUBE_OVN_NB_PORT": "6643"}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("%s=%q, want %q", k, env[k], v)
			}
		}
		checkNBTLSVolume(t, sts, "shardnet-nb-tls", map[string]string{"ca.crt": "cacert", "tls.crt": "cert", "tls.key": "key"})
		for _, o := range objs {
			if (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") && !strings.HasSuffix(o.GetName(), "-external-gateway") {
				if o.GetNamespace() != "network-coordination" {
					t.Errorf("%s %s in %s, want network-coordination", o.GetKind(), o.GetName(), o.GetNamespace())
				}
			}
			if o.GetKind() == "RoleBinding" || o.GetKind() == "ClusterRoleBinding" {
				subj, _, _ := unstructured.NestedSlice(o.Object, "subjects")
				if len(subj) != 1 || subj[0].(map[string]any)["name"] != "net-shardnet" || subj[0].(map[string]any)["namespace"] != helmNamespace {
					t.Errorf("%s %s subjects %v, want the ServiceAccount net-shardnet in %s", o.GetKind(), o.GetName(), subj, helmNamespace)
				}
			}
		}
		checkSelects(t, named(objs, "Service", "net-shardnet"), sts)
	})

	t.Run("coordination namespace is the release namespace", func(t *testing.T) {
		objs := mustRender(t, map[string]any{"coordinationNamespace": helmNamespace})
		if ns := byKind(objs)["Namespace"]; len(ns) != 0 {
			t.Errorf("the chart creates the release's own namespace: %v", slices.Collect(maps.Keys(ns)))
		}
	})

	t.Run("no Northbound TLS Secret", func(t *testing.T) {
		objs := mustRender(t, chartValues(t, "northbound: {tls: {secretName: \"\"}}"))
		sts := one(t, objs, "StatefulSet")
		if vols, ok, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "volumes"); ok {
			t.Errorf("volumes %v without a TLS Secret", vols)
		}
		if hasFlag(containerArgs(t, sts), "nb-tls-dir") {
			t.Error("--nb-tls-dir without a TLS Secret")
		}
	})

	for _, bad := range []struct{ name, values, want string }{
		{"endpoints and ovnDbIps", "northbound: {endpoints: [tcp:10.0.0.1:6641], ovnDbIps: 10.0.0.1}", "not both"},
		{"enableSsl not a boolean", "northbound: {enableSsl: yes please}", "enableSsl"},
		{"shards out of range", "shards: 0", "shards"},
		{"no coordination namespace", "coordinationNamespace: \"\"", "coordinationNamespace"},
	} {
		t.Run("refused: "+bad.name, func(t *testing.T) {
			_, _, err := renderChart(t, helmRelease, helmNamespace, chartValues(t, bad.values))
			if err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("values %s: error %v, want one that mentions %q", bad.values, err, bad.want)
			}
		})
	}
}

// checkNBTLSVolume checks that the Northbound TLS Secret is mounted at
// /var/run/tls with its keys (key -> file name) under kube-ovn's file names,
// where --nb-tls-dir looks, and that a missing Secret does not keep the
// replicas from starting.
func checkNBTLSVolume(t *testing.T, sts *unstructured.Unstructured, secret string, items map[string]string) {
	t.Helper()
	vols, _, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "volumes")
	var vol map[string]any
	for _, v := range vols {
		if v.(map[string]any)["name"] == "nb-tls" {
			vol = v.(map[string]any)
		}
	}
	if vol == nil {
		t.Fatalf("no nb-tls volume in %v", vols)
	}
	if name, _, _ := unstructured.NestedString(vol, "secret", "secretName"); name != secret {
		t.Errorf("nb-tls volume of Secret %q, want %q", name, secret)
	}
	if opt, _, _ := unstructured.NestedBool(vol, "secret", "optional"); !opt {
		t.Error("the Northbound TLS Secret is not optional")
	}
	got := map[string]string{}
	list, _, _ := unstructured.NestedSlice(vol, "secret", "items")
	for _, it := range list {
		m := it.(map[string]any)
		got[m["key"].(string)] = m["path"].(string)
	}
	if !reflect.DeepEqual(got, items) {
		t.Errorf("nb-tls items %v, want %v", got, items)
	}
	mounts, _, _ := unstructured.NestedSlice(container(t, sts), "volumeMounts")
	if !slices.ContainsFunc(mounts, func(m any) bool {
		mm := m.(map[string]any)
		return mm["name"] == "nb-tls" && mm["mountPath"] == "/var/run/tls" && mm["readOnly"] == true
	}) {
		t.Errorf("nb-tls is not mounted read-only at /var/run/tls: %v", mounts)
	}
}

// checkSelects fails unless the selector of selector (a Service's
// spec.selector, or a ServiceMonitor's or StatefulSet's matchLabels)
// matches the labels of target (a StatefulSet's pod template, or a
// Service).
func checkSelects(t *testing.T, selector, target *unstructured.Unstructured) {
	t.Helper()
	if selector == nil || target == nil {
		t.Fatal("missing object to check a selector")
	}
	sel, _, _ := unstructured.NestedStringMap(selector.Object, "spec", "selector")
	if m, ok, _ := unstructured.NestedStringMap(selector.Object, "spec", "selector", "matchLabels"); ok {
		sel = m
	}
	labels := target.GetLabels()
	if target.GetKind() == "StatefulSet" {
		labels, _, _ = unstructured.NestedStringMap(target.Object, "spec", "template", "metadata", "labels")
	}
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("%s %s selects %s=%s; %s %s has %v", selector.GetKind(), selector.GetName(), k, v, target.GetKind(), target.GetName(), labels)
		}
	}
}

// checkKubeOVNCRDsRendered: with installKubeOVNCRDs the chart renders each
// CRD of deploy/kubeovn-crds as it is, kept by Helm on uninstall.
func checkKubeOVNCRDsRendered(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	want := map[string]*unstructured.Unstructured{}
	for _, f := range harness.CRDFiles(t, filepath.Join(deployDir(t), "kubeovn-crds")) {
		for _, o := range readObjects(t, f) {
			want[o.GetName()] = o
		}
	}
	got := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if group, _, _ := unstructured.NestedString(o.Object, "spec", "group"); o.GetKind() == "CustomResourceDefinition" && group == "kubeovn.io" {
			got[o.GetName()] = o
		}
	}
	if !reflect.DeepEqual(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("kubeovn.io CRDs rendered %v, want those of deploy/kubeovn-crds %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for name, g := range got {
		if g.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s is not kept on uninstall (annotations %v)", name, g.GetAnnotations())
		}
		// The chart adds its labels and the keep annotation, nothing else.
		g = g.DeepCopy()
		w := want[name].DeepCopy()
		ann := g.GetAnnotations()
		delete(ann, "helm.sh/resource-policy")
		if len(ann) == 0 {
			ann = nil
		}
		g.SetAnnotations(ann)
		g.SetLabels(nil)
		w.SetLabels(nil)
		if !reflect.DeepEqual(normalize(t, g.Object), normalize(t, w.Object)) {
			t.Errorf("CRD %s as rendered differs from deploy/kubeovn-crds", name)
		}
	}
}

// normalize round-trips v through JSON, so that numbers compare alike
// whichever decoder read them.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHelmChartFileCopies: the chart's copies of shardnet's CRD, the opt-in
// kubeovn.io CRDs, the alert rules and the dashboard are byte for byte
// their sources under deploy/, and the chart has no copy whose source is
// gone. With -sync-chart-copies they are rewritten first.
func TestHelmChartFileCopies(t *testing.T) {
	copies := chartCopies(t)
	if *syncChartCopies {
		for dst, src := range copies {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, dst := range slices.Sorted(maps.Keys(copies)) {
		src := copies[dst]
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Errorf("%v (copy it from %s, or run this test with -sync-chart-copies)", err, src)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s: run `go test ./test/e2e/ -run TestHelmChartFileCopies -sync-chart-copies`", dst, src)
		}
	}
	for _, sub := range []string{"crds", "crds-optional", "files"} {
		entries, err := os.ReadDir(filepath.Join(chartDir(t), sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, ok := copies[filepath.Join(chartDir(t), sub, e.Name())]; !ok {
				t.Errorf("%s/%s is a copy of no file under deploy/", sub, e.Name())
			}
		}
	}
}

// TestHelmChartRBACMatchesBase: rendered with its defaults, the chart's
// ClusterRole and Role grant exactly the rules of deploy/base/rbac.yaml (as
// kustomize builds the base), under the same names and bound to the same
// ServiceAccount; with metrics.secure its metrics ClusterRoles are those of
// deploy/optional/metrics-auth-rbac.yaml. The StatefulSet runs the replicas
// as the base does.
func TestHelmChartRBACMatchesBase(t *testing.T) {
	base := kustomizeResources(t, filepath.Join(deployDir(t), "base"))
	chart := mustRender(t, nil)
	compareRBAC(t, "deploy/base", base, chart, []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount", "Namespace"})

	optional := readObjects(t, filepath.Join(deployDir(t), "optional", "metrics-auth-rbac.yaml"))
	secure := mustRender(t, map[string]any{"metrics": map[string]any{"secure": true}})
	var secureOnly []*unstructured.Unstructured
	for _, o := range secure {
		if strings.Contains(o.GetName(), "metrics-") {
			secureOnly = append(secureOnly, o)
		}
	}
	compareRBAC(t, "deploy/optional/metrics-auth-rbac.yaml", optional, secureOnly, []string{"ClusterRole", "ClusterRoleBinding"})

	// The pod as the base runs it.
	bs, cs := one(t, base, "StatefulSet"), one(t, chart, "StatefulSet")
	for _, path := range [][]string{
		{"spec", "replicas"},
		{"spec", "podManagementPolicy"},
		{"spec", "template", "spec", "hostNetwork"},
		{"spec", "template", "spec", "dnsPolicy"},
		{"spec", "template", "spec", "priorityClassName"},
		{"spec", "template", "spec", "terminationGracePeriodSeconds"},
		{"spec", "template", "spec", "securityContext"},
		{"spec", "template", "spec", "tolerations"},
	} {
		b, _, _ := unstructured.NestedFieldNoCopy(bs.Object, path...)
		c, _, _ := unstructured.NestedFieldNoCopy(cs.Object, path...)
		if !reflect.DeepEqual(normalize(t, b), normalize(t, c)) {
			t.Errorf("StatefulSet %s: chart %v, base %v", strings.Join(path, "."), c, b)
		}
	}
	bc, cc := container(t, bs), container(t, cs)
	for _, field := range []string{"name", "ports", "livenessProbe", "readinessProbe", "resources", "securityContext"} {
		if !reflect.DeepEqual(normalize(t, bc[field]), normalize(t, cc[field])) {
			t.Errorf("container %s: chart %v, base %v", field, cc[field], bc[field])
		}
	}
	bargs, cargs := containerArgs(t, bs), containerArgs(t, cs)
	for _, flag := range []string{"namespace", "shards", "metrics-addr", "health-addr", "memory-limit", "gc-percent"} {
		b, _ := flagValue(bargs, flag)
		c, _ := flagValue(cargs, flag)
		if b != c {
			t.Errorf("--%s: chart %q, base %q", flag, c, b)
		}
	}
	bp, cp := one(t, base, "PodDisruptionBudget"), one(t, chart, "PodDisruptionBudget")
	if b, c := bp.Object["spec"].(map[string]any)["maxUnavailable"], cp.Object["spec"].(map[string]any)["maxUnavailable"]; !reflect.DeepEqual(normalize(t, b), normalize(t, c)) {
		t.Errorf("PodDisruptionBudget maxUnavailable: chart %v, base %v", c, b)
	}
	checkSelects(t, cp, cs)
	checkSelects(t, cs, cs)
}

// compareRBAC fails unless want and got hold the same objects of kinds (by
// kind, namespace and name), roles with the same rules, bindings with the
// same roleRef and subjects.
func compareRBAC(t *testing.T, source string, want, got []*unstructured.Unstructured, kinds []string) {
	t.Helper()
	w, g := byKind(want), byKind(got)
	for _, kind := range kinds {
		if len(w[kind]) == 0 {
			t.Errorf("%s has no %s", source, kind)
		}
		if !reflect.DeepEqual(slices.Sorted(maps.Keys(g[kind])), slices.Sorted(maps.Keys(w[kind]))) {
			t.Errorf("%s: chart %v, %s %v", kind, slices.Sorted(maps.Keys(g[kind])), source, slices.Sorted(maps.Keys(w[kind])))
			continue
		}
		for key, wo := range w[kind] {
			gobj := g[kind][key]
			switch kind {
			case "ClusterRole", "Role":
				var wr, gr rbacv1.ClusterRole
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(wo.Object, &wr); err != nil {
					t.Fatal(err)
				}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(gobj.Object, &gr); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(gr.Rules, wr.Rules) {
					t.Errorf("%s %s: the chart's rules differ from %s's: %s", kind, key, source, ruleDiff(gr.Rules, wr.Rules))
				}
			case "ClusterRoleBinding", "RoleBinding":
				var wb, gb rbacv1.RoleBinding
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(wo.Object, &wb); err != nil {
					t.Fatal(err)
				}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(gobj.Object, &gb); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(gb.RoleRef, wb.RoleRef) || !reflect.DeepEqual(gb.Subjects, wb.Subjects) {
					t.Errorf("%s %s: chart binds %v to %v, %s binds %v to %v", kind, key, gb.RoleRef, gb.Subjects, source, wb.RoleRef, wb.Subjects)
				}
			}
		}
	}
}

// ruleDiff says which rules only the chart has, which only the source has,
// and, when both have the same rules, that their order differs.
func ruleDiff(chart, source []rbacv1.PolicyRule) string {
	var out []string
	for _, r := range chart {
		if !slices.ContainsFunc(source, func(o rbacv1.PolicyRule) bool { return reflect.DeepEqual(o, r) }) {
			out = append(out, "only the chart: "+ruleName(r))
		}
	}
	for _, r := range source {
		if !slices.ContainsFunc(chart, func(o rbacv1.PolicyRule) bool { return reflect.DeepEqual(o, r) }) {
			out = append(out, "only the source: "+ruleName(r))
		}
	}
	if len(out) == 0 {
		return "the same rules in another order"
	}
	return strings.Join(out, "; ")
}

// installMonitoringCRD installs a stand-in for one of the Prometheus
// Operator's CRDs (monitoring.coreos.com/v1), so that the API server checks
// the shape of the chart's objects of that kind.
func installMonitoringCRD(t *testing.T, k *harness.Kube, kind, plural string) {
	t.Helper()
	crd := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: %[1]s, listKind: %[1]sList, plural: %[2]s, singular: %[3]s}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`, kind, plural, strings.ToLower(kind))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, plural+".yaml"), []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
	k.InstallCRDs(t, dir)
}

// TestHelmChartDryRun: every object the chart renders, with its defaults,
// with every toggle on, and with the Northbound in kube-ovn's names, passes
// a server-side apply dry run on a real API server that has the CRDs the
// objects need (shardnet's and the kubeovn.io ones, and stand-ins of the
// Prometheus Operator's). Rendered against that API server, the chart
// refuses installKubeOVNCRDs once kube-ovn's CNI DaemonSet is there.
func TestHelmChartDryRun(t *testing.T) {
	kube := harness.StartKube(t)
	installMonitoringCRD(t, kube, "ServiceMonitor", "servicemonitors")
	installMonitoringCRD(t, kube, "PrometheusRule", "prometheusrules")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ap := newApplier(t, kube.Config)

	for _, v := range []struct {
		name, release, values string
	}{
		{"defaults", helmRelease, ""},
		{"every toggle on", helmRelease, everyToggleOn},
		{"kube-ovn environment", "net", kubeOVNEnvironment},
	} {
		objs, _, err := renderChart(t, v.release, helmNamespace, chartValues(t, v.values))
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		// The namespaces first: those the chart installs into, and those
		// it creates (their dry run does not make them).
		for _, o := range objs {
			if ns := o.GetNamespace(); ns != "" {
				ensureNamespace(t, ctx, kube, ns)
			}
			if o.GetKind() == "Namespace" {
				ensureNamespace(t, ctx, kube, o.GetName())
			}
		}
		kinds := map[string]int{}
		for _, o := range objs {
			kinds[o.GetKind()]++
			if err := ap.apply(ctx, o, true); err != nil {
				t.Errorf("%s: dry run: %v", v.name, err)
			}
		}
		t.Logf("%s: %d objects passed the dry run: %v", v.name, len(objs), kinds)
	}

	// Rendered against the cluster, as helm install renders it, the
	// kubeovn.io CRDs are refused once kube-ovn runs there.
	withCRDs := map[string]any{"installKubeOVNCRDs": true}
	if _, _, err := renderChartWith(t, engine.New(kube.Config), helmRelease, helmNamespace, withCRDs); err != nil {
		t.Fatalf("installKubeOVNCRDs on a cluster without kube-ovn: %v", err)
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-ovn-cni", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kube-ovn-cni"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "kube-ovn-cni"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "cni-server", Image: "registry.invalid/kube-ovn"}}},
			},
		},
	}
	if _, err := kube.Client.AppsV1().DaemonSets("kube-system").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, _, err := renderChartWith(t, engine.New(kube.Config), helmRelease, helmNamespace, withCRDs)
	if err == nil || !strings.Contains(err.Error(), "runs kube-ovn") {
		t.Errorf("installKubeOVNCRDs on a cluster with kube-ovn-cni: error %v, want a refusal", err)
	}
	if _, _, err := renderChartWith(t, engine.New(kube.Config), helmRelease, helmNamespace, nil); err != nil {
		t.Errorf("the defaults on a cluster with kube-ovn: %v", err)
	}
}

// TestHelmChartRoutesPods applies the ServiceAccount, RBAC and Namespace
// the chart renders (with a coordination namespace of its own) for real,
// runs two replicas in-process with the chart's ServiceAccount token, named
// as the StatefulSet names its pods and with the chart's --namespace and
// --shards, and shows that they route pods, write the subnet counters and
// keep their Leases in the chart's coordination namespace: the chart's RBAC
// is enough for shardnet to work.
func TestHelmChartRoutesPods(t *testing.T) {
	c := startCluster(t)
	// With multus's CRD the replicas watch NetworkAttachmentDefinitions
	// too, so that rule is exercised as well.
	c.kube.InstallNADCRD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ap := newApplier(t, c.kube.Config)

	const coord = "shardnet-chart"
	objs := mustRender(t, map[string]any{"coordinationNamespace": coord, "shards": 8})
	ensureNamespace(t, ctx, c.kube, helmNamespace)
	applied := map[string]int{}
	for _, kind := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		for _, o := range objs {
			if o.GetKind() == kind {
				if err := ap.apply(ctx, o, false); err != nil {
					t.Fatal(err)
				}
				applied[kind]++
			}
		}
	}
	if applied["Namespace"] != 1 || applied["Role"] != 2 || applied["ServiceAccount"] != 1 {
		t.Fatalf("applied %v; want the coordination Namespace, two Roles (coordination, external gateway) and a ServiceAccount", applied)
	}
	sts := one(t, objs, "StatefulSet")
	sa, _, _ := unstructured.NestedString(sts.Object, "spec", "template", "spec", "serviceAccountName")
	saConfig := serviceAccountConfig(t, ctx, c.kube, sts.GetNamespace(), sa)
	args := containerArgs(t, sts)
	ns, _ := flagValue(args, "namespace")
	if ns != coord {
		t.Fatalf("--namespace=%s, want %s", ns, coord)
	}
	v, _ := flagValue(args, "shards")
	shards, err := strconv.Atoi(v)
	if err != nil || shards != 8 {
		t.Fatalf("--shards: %d (%v), want 8", shards, err)
	}

	// RBAC reaches the authorizer through its informers: wait until the
	// chart's ServiceAccount can list what every replica's caches list, so
	// that no replica starts into a forbidden list and its backoff.
	waitRBAC(t, ctx, saConfig, coord)

	node := c.kube.CreateNode(t, "kwok-node-helm", "")
	c.subnet("ovn-default", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	c.namespace("helm")
	for i := range 2 {
		id := fmt.Sprintf("%s-%d", sts.GetName(), i)
		opts := c.options(id)
		opts.Namespace, opts.Shards = ns, shards
		c.startReplicaWith(opts, saConfig)
	}
	const pods = 6
	c.createPods("helm", "pod", node.Name, pods)
	c.checkPods(ctx, c.waitRouted(ctx, "helm", pods))

	// The leader wrote the subnet counters (subnets/status), and the
	// coordination objects are in the chart's namespace.
	waitFor(t, ctx, "subnet status written with the chart's ServiceAccount", func() error {
		s, err := c.kube.Shardnet.KubeovnV1().Subnets().Get(ctx, "ovn-default", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Status.V4UsingIPs != pods {
			return errorf("v4usingIPs %v, want %d", s.Status.V4UsingIPs, pods)
		}
		return nil
	})
	leases, err := c.kube.Client.CoordinationV1().Leases(coord).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var holders []string
	for _, l := range leases.Items {
		holders = append(holders, l.Name)
	}
	if len(holders) == 0 {
		t.Errorf("no Lease in %s", coord)
	}
	t.Logf("Leases in %s: %v", coord, holders)
}

// waitRBAC waits until rc may list every resource a replica's caches
// list, and the Leases of its coordination namespace.
func waitRBAC(t *testing.T, ctx context.Context, rc *rest.Config, coord string) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(rc)
	gvrs := []schema.GroupVersionResource{
		{Version: "v1", Resource: "pods"}, {Version: "v1", Resource: "nodes"}, {Version: "v1", Resource: "namespaces"},
		{Group: "apps", Version: "v1", Resource: "statefulsets"},
		{Group: "kubeovn.io", Version: "v1", Resource: "subnets"}, {Group: "kubeovn.io", Version: "v1", Resource: "ippools"},
		{Group: "kubeovn.io", Version: "v1", Resource: "ips"}, {Group: "kubeovn.io", Version: "v1", Resource: "vips"},
		{Group: "kubeovn.io", Version: "v1", Resource: "vlans"},
		{Group: "shardnet.io", Version: "v1alpha1", Resource: "addressclaims"},
	}
	waitFor(t, ctx, "the ServiceAccount's RBAC in force", func() error {
		for _, gvr := range gvrs {
			if _, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return fmt.Errorf("%s: %w", gvr.Resource, err)
			}
		}
		_, err := dyn.Resource(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}).
			Namespace(coord).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
}
