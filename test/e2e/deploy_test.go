package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/test/harness"
)

// deployDir is the module's deploy folder.
func deployDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// kustomizeResources builds the kustomization in dir with kustomize's own
// engine (as `kubectl kustomize` does, with its default load restrictions:
// every file must be in or below dir) and returns the objects.
func kustomizeResources(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	b, err := m.AsYaml()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	objs := decodeObjects(t, dir, b)
	if len(objs) == 0 {
		t.Fatalf("kustomize build %s: no objects", dir)
	}
	return objs
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeObjects(t, path, b)
}

// decodeObjects decodes the YAML documents of b (from source) into objects.
func decodeObjects(t *testing.T, source string, b []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("%s: %v", source, err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: obj})
	}
	return out
}

type applier struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func newApplier(t *testing.T, rc *rest.Config) *applier {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dynamic.NewForConfigOrDie(rc), mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// apply server-side-applies obj, as a dry run when dryRun is set.
func (a *applier) apply(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) error {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = a.dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: "shardnet-e2e", Force: new(bool)}
	*opts.Force = true
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := ri.Patch(ctx, obj.GetName(), "application/apply-patch+yaml", data, opts); err != nil {
		return fmt.Errorf("%s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// coordinationNS is shardnet's own namespace: its Leases and shard
// assignment ConfigMap, and the only place its Role applies.
const coordinationNS = "shardnet-system"

// checkNoCoordinationRules fails when a cluster-wide role grants Leases or
// ConfigMaps: those belong to shardnet's own namespace only.
func checkNoCoordinationRules(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
	for _, r := range rules {
		res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
		for _, name := range res {
			if name == "leases" || name == "configmaps" || name == "*" {
				t.Errorf("base: %s %s grants %s cluster-wide", o.GetKind(), o.GetName(), name)
			}
		}
	}
}

// TestKustomizeBuilds builds deploy/base and deploy/kubeovn-crds with
// kustomize's engine and checks what each installs: the base only what
// shardnet owns (its AddressClaim CRD and the objects that run it, all in
// kube-system), the opt-in directory only the kubeovn.io CRDs, every one of
// the generated CRD files of each.
func TestKustomizeBuilds(t *testing.T) {
	dir := deployDir(t)

	base := kustomizeResources(t, filepath.Join(dir, "base"))
	kinds := map[string]int{}
	for _, o := range base {
		kinds[o.GetKind()]++
		gv, err := schema.ParseGroupVersion(o.GetAPIVersion())
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case gv.Group == "kubeovn.io":
			t.Errorf("base: %s %s is kube-ovn's", o.GetKind(), o.GetName())
		case o.GetKind() == "CustomResourceDefinition":
			if group, _, _ := unstructured.NestedString(o.Object, "spec", "group"); group != "shardnet.io" {
				t.Errorf("base: CRD %s of group %q; the base installs shardnet.io CRDs only", o.GetName(), group)
			}
		case o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding" || o.GetKind() == "Namespace":
			checkNoCoordinationRules(t, o)
		case (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") && strings.HasSuffix(o.GetName(), "-external-gateway"):
			// kube-ovn's external gateway ConfigMap, read by name only.
			if o.GetNamespace() != "kube-system" {
				t.Errorf("base: %s %s in namespace %q, want kube-system", o.GetKind(), o.GetName(), o.GetNamespace())
			}
			if o.GetKind() == "Role" {
				rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
				want := []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"},
					"resourceNames": []any{"ovn-external-gw-config"}, "verbs": []any{"get", "list", "watch"}}}
				if !reflect.DeepEqual(rules, want) {
					t.Errorf("base: Role %s rules %v, want %v", o.GetName(), rules, want)
				}
			}
		case o.GetKind() == "Role" || o.GetKind() == "RoleBinding":
			// Leases and ConfigMaps only in shardnet's own namespace.
			if o.GetNamespace() != coordinationNS {
				t.Errorf("base: %s %s in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), coordinationNS)
			}
		default:
			if o.GetNamespace() != "kube-system" {
				t.Errorf("base: %s %s in namespace %q, want kube-system", o.GetKind(), o.GetName(), o.GetNamespace())
			}
		}
		if o.GetKind() == "StatefulSet" {
			args, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			if len(args) == 0 || !slices.Contains(args[0].(map[string]any)["args"].([]any), any("--namespace="+coordinationNS)) {
				t.Errorf("base: the StatefulSet does not pass --namespace=%s", coordinationNS)
			}
		}
	}
	for _, k := range []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "StatefulSet", "Service", "PodDisruptionBudget"} {
		if kinds[k] == 0 {
			t.Errorf("base: no %s (kinds: %v)", k, kinds)
		}
	}
	checkBuildHasFiles(t, base, harness.CRDFiles(t, filepath.Join(dir, "base", "crds")))

	crds := kustomizeResources(t, filepath.Join(dir, "kubeovn-crds"))
	for _, o := range crds {
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		if o.GetKind() != "CustomResourceDefinition" || group != "kubeovn.io" {
			t.Errorf("kubeovn-crds: %s %s (group %q); want kubeovn.io CRDs only", o.GetKind(), o.GetName(), group)
		}
	}
	checkBuildHasFiles(t, crds, harness.CRDFiles(t, filepath.Join(dir, "kubeovn-crds")))
}

// checkBuildHasFiles fails unless a kustomize build holds the CRD of each
// generated file: a kind added to the API must be listed in the
// kustomization too.
func checkBuildHasFiles(t *testing.T, built []*unstructured.Unstructured, files []string) {
	t.Helper()
	names := map[string]bool{}
	for _, o := range built {
		names[o.GetKind()+"/"+o.GetName()] = true
	}
	for _, f := range files {
		crd := harness.ReadCRD(t, f)
		if !names["CustomResourceDefinition/"+crd.Name] {
			t.Errorf("%s: CRD %s is not in the kustomize build", f, crd.Name)
		}
	}
}

// TestDeployManifests: every manifest, as kustomize builds it (the base, the
// opt-in kubeovn.io CRDs, the optional ServiceMonitor and the example
// Secret), passes a server-side apply dry run on the real API server, and
// shardnet running with the deploy ServiceAccount's token (RBAC on)
// reconciles 500 pods, which proves the ClusterRole and Role sufficient.
func TestDeployManifests(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := deployDir(t)
	ap := newApplier(t, c.kube.Config)

	objs := kustomizeResources(t, filepath.Join(dir, "base"))
	objs = append(objs, kustomizeResources(t, filepath.Join(dir, "kubeovn-crds"))...)
	objs = append(objs, readObjects(t, filepath.Join(dir, "base", "nb-secret.example.yaml"))...)
	// The ServiceMonitor's and PrometheusRule's CRDs belong to the
	// Prometheus Operator; stand-ins let the API server check the
	// manifests' shape.
	installServiceMonitorCRD(t, c.kube)
	// With multus's CRD present the replicas watch NetworkAttachmentDefinitions
	// too, so the run below proves that rule sufficient as well.
	c.kube.InstallNADCRD(t)
	for _, f := range []string{"servicemonitor.yaml", "prometheusrule.yaml", "metrics-auth-rbac.yaml"} {
		objs = append(objs, readObjects(t, filepath.Join(dir, "optional", f))...)
	}
	for _, o := range readObjects(t, filepath.Join(dir, "grafana", "dashboard-configmap.yaml")) {
		o.SetNamespace("monitoring") // applied in Grafana's namespace
		objs = append(objs, o)
	}
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" {
			ensureNamespace(t, ctx, c.kube, ns)
		}
	}
	for _, o := range objs {
		if err := ap.apply(ctx, o, true); err != nil {
			t.Errorf("dry run: %v", err)
		}
	}
	if t.Failed() {
		return
	}

	// For real now: the ServiceAccount and its RBAC (the CRDs are there).
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if err := ap.apply(ctx, o, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	saConfig := serviceAccountConfig(t, ctx, c.kube, "kube-system", "shardnet")

	node := c.kube.CreateNode(t, "kwok-node-rbac", "")
	c.subnet("ovn-default", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true })
	c.namespace("rbac")
	for _, id := range []string{"shardnet-0", "shardnet-1", "shardnet-2"} {
		opts := c.options(id)
		opts.Namespace = coordinationNS
		c.startReplicaWith(opts, saConfig)
	}
	c.createPods("rbac", "pod", node.Name, 500)
	pods := c.waitRouted(ctx, "rbac", 500)
	c.checkPods(ctx, pods)

	// Nothing shardnet did was refused: a denied request would show up as
	// a Forbidden in the replicas' retries, and the pods would not all be
	// routed; check the subnet counters too (subnets/status).
	sctx, scancel := context.WithTimeout(ctx, 90*time.Second)
	defer scancel()
	waitFor(t, sctx, "subnet status written with the ServiceAccount", func() error {
		s, err := c.kube.Shardnet.KubeovnV1().Subnets().Get(ctx, "ovn-default", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Status.V4UsingIPs != 500 {
			return fmt.Errorf("v4usingIPs %v, want 500", s.Status.V4UsingIPs)
		}
		return nil
	})
}

// ensureNamespace creates namespace ns unless it exists.
func ensureNamespace(t *testing.T, ctx context.Context, k *harness.Kube, ns string) {
	t.Helper()
	_, err := k.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("namespace %s: %v", ns, err)
	}
}

// serviceAccountConfig returns a client config that authenticates as the
// ServiceAccount with a token from the TokenRequest API.
func serviceAccountConfig(t *testing.T, ctx context.Context, k *harness.Kube, ns, name string) *rest.Config {
	t.Helper()
	tr, err := k.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64)},
	}, metav1.CreateOptions{})
	if err != nil {
		// Zero means the server default; retry with an explicit hour if
		// the server insists on a minimum.
		exp := int64(3600)
		tr, err = k.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s/%s: %v", ns, name, err)
		}
	}
	rc := rest.CopyConfig(k.Config)
	rc.BearerToken = tr.Status.Token
	return rc
}

func installServiceMonitorCRD(t *testing.T, k *harness.Kube) {
	t.Helper()
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`
	pr := strings.NewReplacer("servicemonitors", "prometheusrules", "ServiceMonitor", "PrometheusRule", "servicemonitor", "prometheusrule").Replace(crd)
	dir := t.TempDir()
	for name, body := range map[string]string{"sm.yaml": crd, "pr.yaml": pr} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k.InstallCRDs(t, dir)
}
