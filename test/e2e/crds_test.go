package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/shardnet/shardnet/test/harness"
)

// kubeOVNObjects are objects as kube-ovn writes them, one per kind of
// deploy/kubeovn-crds. Their spec and status use fields of kube-ovn's CRDs
// (test/crds/kubeovn) that shardnet's types do not have: ACLs, load
// balancer and multicast switches, U2O interconnection, NAT policy rules,
// BFD, policy routes, VPC peerings, the extra fields of static routes, the
// address ranges and conflict flags of the status. kube-ovn's IP has no
// field shardnet's lacks; every one of its fields is set.
var kubeOVNObjects = []string{`
apiVersion: kubeovn.io/v1
kind: Subnet
metadata:
  name: tenant-a
  labels: {app.kubernetes.io/managed-by: kube-ovn}
  annotations: {kube-ovn.io/note: created by kube-ovn}
spec:
  default: false
  vpc: tenant-a
  protocol: IPv4
  provider: ovn
  cidrBlock: 10.66.0.0/16
  gateway: 10.66.0.1
  excludeIps: [10.66.0.1, 10.66.0.2..10.66.0.9]
  namespaces: [tenant-a]
  namespaceSelectors:
  - matchLabels: {tenant: a}
  gatewayType: centralized
  gatewayNode: node-1,node-2
  gatewayNodeSelectors:
  - matchLabels: {node-role.kubernetes.io/gateway: ""}
  natOutgoing: true
  natOutgoingPolicyRules:
  - action: forward
    match: {srcIPs: 10.66.1.0/24, dstIPs: 10.0.0.0/8}
  externalEgressGateway: 172.18.0.1
  policyRoutingPriority: 31000
  policyRoutingTableID: 1000
  mtu: 1400
  private: true
  allowSubnets: [10.16.0.0/16]
  allowEWTraffic: true
  disableGatewayCheck: true
  disableInterConnection: true
  enableDHCP: true
  dhcpV4Options: lease_time=3600,router=10.66.0.1,server_id=169.254.0.254
  dhcpV6Options: server_id=00:00:00:2e:2f:b8
  enableIPv6RA: true
  ipv6RAConfigs: address_mode=dhcpv6_stateful,max_interval=30
  acls:
  - direction: to-lport
    priority: 1010
    match: ip4.src == 10.66.0.10
    action: drop
  enableLb: true
  enableEcmp: true
  enableMulticastSnoop: true
  enableExternalLBAddress: true
  routeTable: rtb-1
  vips: [10.66.0.100]
  u2oInterconnection: true
  u2oInterconnectionIP: 10.66.255.254
  u2oFeatures: {overlayOnlyRouting: true}
  nodeNetwork: underlay-1
status:
  conditions:
  - type: Ready
    status: "True"
    reason: ResetLogicalSwitchAclSuccess
    message: ok
    lastUpdateTime: "2026-01-02T03:04:05Z"
    lastTransitionTime: "2026-01-02T03:04:05Z"
    observedGeneration: 1
  v4availableIPs: 65524
  v4availableIPrange: 10.66.0.10-10.66.255.253
  v4usingIPs: 1
  v4usingIPrange: 10.66.255.254
  v6availableIPs: 0
  v6usingIPs: 0
  activateGateway: node-1
  dhcpV4OptionsUUID: 5c1f6e4c-0000-4000-8000-000000000001
  dhcpV6OptionsUUID: 5c1f6e4c-0000-4000-8000-000000000002
  u2oInterconnectionIP: 10.66.255.254
  u2oInterconnectionMAC: 00:00:00:0a:0b:0c
  u2oInterconnectionVPC: tenant-a
  natOutgoingPolicyRules:
  - action: forward
    match: {srcIPs: 10.66.1.0/24, dstIPs: 10.0.0.0/8}
    ruleID: 3c5e77a1
  mcastQuerierIP: 10.66.0.253
  mcastQuerierMAC: 00:00:00:0d:0e:0f
`, `
apiVersion: kubeovn.io/v1
kind: IP
metadata:
  name: web-0.tenant-a
  labels: {ovn.kubernetes.io/subnet: tenant-a}
spec:
  podName: web-0
  namespace: tenant-a
  subnet: tenant-a
  attachSubnets: [attach-1]
  nodeName: node-1
  ipAddress: 10.66.0.20
  v4IpAddress: 10.66.0.20
  attachIps: [192.168.10.20]
  macAddress: 00:00:00:11:22:33
  attachMacs: [00:00:00:44:55:66]
  containerID: 0123456789abcdef
  podType: pod
`, `
apiVersion: kubeovn.io/v1
kind: IPPool
metadata:
  name: tenant-a-pool
spec:
  subnet: tenant-a
  namespaces: [tenant-a]
  ips: [10.66.2.0/24, 10.66.3.1..10.66.3.9]
  enableAddressSet: true
status:
  v4AvailableIPs: 263
  v4AvailableIPRange: 10.66.2.0-10.66.2.255,10.66.3.1-10.66.3.9
  v4UsingIPs: 2
  v4UsingIPRange: 10.66.2.1-10.66.2.2
  v6AvailableIPs: 0
  v6AvailableIPRange: ""
  v6UsingIPs: 0
  v6UsingIPRange: ""
  conditions:
  - type: Ready
    status: "True"
    reason: Reconciled
    lastTransitionTime: "2026-01-02T03:04:05Z"
`, `
apiVersion: kubeovn.io/v1
kind: Vip
metadata:
  name: tenant-a-vip
spec:
  namespace: tenant-a
  subnet: tenant-a
  type: switch_lb_vip
  v4ip: 10.66.0.50
  macAddress: 00:00:00:77:88:99
  attachSubnets: [attach-1]
  selector: [web-0, web-1]
status:
  type: switch_lb_vip
  v4ip: 10.66.0.50
  mac: 00:00:00:77:88:99
  selector: [web-0, web-1]
  conditions:
  - type: Ready
    status: "True"
    reason: Allocated
    lastUpdateTime: "2026-01-02T03:04:05Z"
`, `
apiVersion: kubeovn.io/v1
kind: Vlan
metadata:
  name: vlan-100
spec:
  id: 100
  provider: underlay-1
  vlanId: 100
  providerInterfaceName: eth1
status:
  subnets: [tenant-a]
  conflict: true
  conditions:
  - type: Ready
    status: "False"
    reason: Conflict
    message: vlan 100 is used by another provider
    lastTransitionTime: "2026-01-02T03:04:05Z"
    observedGeneration: 1
`, `
apiVersion: kubeovn.io/v1
kind: Vpc
metadata:
  name: tenant-a
spec:
  namespaces: [tenant-a]
  defaultSubnet: tenant-a
  enableExternal: true
  enableBfd: true
  extraExternalSubnets: [external-2]
  staticRoutes:
  - policy: policyDst
    cidr: 0.0.0.0/0
    nextHopIP: 10.66.0.254
    ecmpMode: hash
    bfdId: 8e1e3bd5
    routeTable: rtb-1
  policyRoutes:
  - priority: 1000
    match: ip4.src == 10.66.0.0/24
    action: reroute
    nextHopIP: 10.66.0.253
  vpcPeerings:
  - remoteVpc: tenant-b
    localConnectIP: 169.254.10.1/30
  bfdPort:
    enabled: true
    ip: 10.255.255.255
    nodeSelector:
      matchLabels: {node-role.kubernetes.io/gateway: ""}
status:
  conditions:
  - type: Ready
    status: "True"
    lastUpdateTime: "2026-01-02T03:04:05Z"
  standby: true
  default: false
  defaultLogicalSwitch: tenant-a
  router: tenant-a
  tcpLoadBalancer: vpc-tenant-a-tcp-load
  tcpSessionLoadBalancer: vpc-tenant-a-tcp-sess-load
  udpLoadBalancer: vpc-tenant-a-udp-load
  udpSessionLoadBalancer: vpc-tenant-a-udp-sess-load
  sctpLoadBalancer: vpc-tenant-a-sctp-load
  sctpSessionLoadBalancer: vpc-tenant-a-sctp-sess-load
  subnets: [tenant-a]
  vpcPeerings: [tenant-b]
  enableExternal: true
  enableBfd: true
  extraExternalSubnets: [external-2]
  bfdPort:
    ip: 10.255.255.255
    name: bfd-tenant-a
    nodes: [node-1, node-2]
`}

// crdsByKind reads the CRD files of dir.
func crdsByKind(t *testing.T, dir string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range harness.CRDFiles(t, dir) {
		crd := harness.ReadCRD(t, f)
		out[crd.Spec.Names.Kind] = crd
	}
	return out
}

// servedSchema is the schema of the CRD's storage version.
func servedSchema(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceValidation {
	t.Helper()
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				t.Fatalf("CRD %s: version %s has no schema", crd.Name, v.Name)
			}
			return v.Schema
		}
	}
	t.Fatalf("CRD %s has no storage version", crd.Name)
	return nil
}

func preserves(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// prunedSubsets lists the objects of shardnet's schema sn whose kube-ovn
// counterpart ko has properties sn lacks, unless sn preserves unknown
// fields there: the API server would drop those fields of kube-ovn's.
func prunedSubsets(path string, sn, ko *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	var missing []string
	for name := range ko.Properties {
		if _, ok := sn.Properties[name]; !ok {
			missing = append(missing, name)
		}
	}
	if ko.XPreserveUnknownFields != nil && *ko.XPreserveUnknownFields && !preserves(sn) {
		missing = append(missing, "(unknown fields)")
	}
	if len(missing) > 0 && !preserves(sn) {
		sort.Strings(missing)
		out = append(out, fmt.Sprintf("%s: %s", path, strings.Join(missing, ", ")))
	}
	for name, p := range sn.Properties {
		if kp, ok := ko.Properties[name]; ok {
			out = append(out, prunedSubsets(path+"."+name, &p, &kp)...)
		}
	}
	if sn.Items != nil && sn.Items.Schema != nil && ko.Items != nil && ko.Items.Schema != nil {
		out = append(out, prunedSubsets(path+"[]", sn.Items.Schema, ko.Items.Schema)...)
	}
	if sn.AdditionalProperties != nil && sn.AdditionalProperties.Schema != nil && ko.AdditionalProperties != nil && ko.AdditionalProperties.Schema != nil {
		out = append(out, prunedSubsets(path+"{}", sn.AdditionalProperties.Schema, ko.AdditionalProperties.Schema)...)
	}
	sort.Strings(out)
	return out
}

// TestKubeOVNCRDSchemasKeepKubeOVNFields compares the schemas of the opt-in
// kubeovn.io CRDs (deploy/kubeovn-crds) with kube-ovn's published ones
// (test/crds/kubeovn): the spec and status of every kind preserve unknown
// fields, and so does every object that lists fewer properties than
// kube-ovn's.
func TestKubeOVNCRDSchemasKeepKubeOVNFields(t *testing.T) {
	shardnet := crdsByKind(t, filepath.Join(deployDir(t), "kubeovn-crds"))
	kubeovn := crdsByKind(t, harness.KubeOVNCRDDir(t))
	for kind, sn := range shardnet {
		ko, ok := kubeovn[kind]
		if !ok {
			t.Errorf("%s: no pinned kube-ovn CRD in test/crds/kubeovn", kind)
			continue
		}
		if sn.Name != ko.Name || sn.Spec.Scope != ko.Spec.Scope {
			t.Errorf("%s: CRD %s (%s), kube-ovn's is %s (%s)", kind, sn.Name, sn.Spec.Scope, ko.Name, ko.Spec.Scope)
		}
		snSchema := servedSchema(t, sn).OpenAPIV3Schema
		for _, field := range []string{"spec", "status"} {
			if p, ok := snSchema.Properties[field]; ok && !preserves(&p) {
				t.Errorf("%s: .%s does not set x-kubernetes-preserve-unknown-fields", kind, field)
			}
		}
		for _, p := range prunedSubsets(kind, snSchema, servedSchema(t, ko).OpenAPIV3Schema) {
			t.Errorf("shardnet's CRD would prune kube-ovn's fields of %s", p)
		}
	}
}

// TestKubeOVNCRDsNeverPruned stands for a cluster that runs kube-ovn: with
// kube-ovn's published CRDs installed, it creates one object of each kind
// with kube-ovn's fields, then applies shardnet's opt-in CRDs over kube-ovn's
// (replacing each CRD's spec, as `kubectl apply` replaces its versions) and
// reads every object back, updates it (a label), updates its status where
// shardnet's CRD has that subresource, and reads it again. Every field the
// object had must still be there with its value.
func TestKubeOVNCRDsNeverPruned(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kube := harness.StartKubeWithCRDs(t, filepath.Join(deployDir(t), "base", "crds"), harness.KubeOVNCRDDir(t))
	dyn := dynamic.NewForConfigOrDie(kube.Config)
	crdClient := apiextensions.NewForConfigOrDie(kube.Config).ApiextensionsV1().CustomResourceDefinitions()

	shardnet := crdsByKind(t, filepath.Join(deployDir(t), "kubeovn-crds"))
	kubeovn := crdsByKind(t, harness.KubeOVNCRDDir(t))

	type object struct {
		gvr      schema.GroupVersionResource
		sent     *unstructured.Unstructured
		baseline *unstructured.Unstructured
	}
	objects := map[string]*object{}
	for _, doc := range kubeOVNObjects {
		o := &unstructured.Unstructured{}
		if err := decodeYAML(doc, &o.Object); err != nil {
			t.Fatal(err)
		}
		kind := o.GetKind()
		ko, sn := kubeovn[kind], shardnet[kind]
		if ko == nil || sn == nil {
			t.Fatalf("%s: no CRD in test/crds/kubeovn or deploy/kubeovn-crds", kind)
		}
		// The object must exercise what shardnet's schema does not list,
		// as far as kube-ovn's has such fields.
		snSchema := servedSchema(t, sn).OpenAPIV3Schema
		unknown := unknownPaths("", o.Object, snSchema)
		want := min(3, len(unknownPaths("", schemaSkeleton(servedSchema(t, ko).OpenAPIV3Schema), snSchema)))
		if len(unknown) < want {
			t.Fatalf("%s: the object uses %d fields shardnet's CRD does not list (%v), want at least %d", kind, len(unknown), unknown, want)
		}
		if len(unknown) == 0 {
			unknown = []string{"none (kube-ovn's CRD has no field shardnet's lacks)"}
		}
		t.Logf("%s: fields shardnet's CRD does not list: %s", kind, strings.Join(unknown, " "))
		gvr := schema.GroupVersionResource{Group: ko.Spec.Group, Version: "v1", Resource: ko.Spec.Names.Plural}
		objects[kind] = &object{gvr: gvr, sent: o}
	}
	for kind := range shardnet {
		if objects[kind] == nil {
			t.Fatalf("no kube-ovn object of kind %s in kubeOVNObjects", kind)
		}
	}

	// Under kube-ovn's CRDs: create, write the status where kube-ovn's CRD
	// has that subresource, read back. Every field sent must be kept, or
	// the object does not use kube-ovn's fields as kube-ovn's schema has
	// them.
	for kind, o := range objects {
		ri := dyn.Resource(o.gvr)
		created, err := ri.Create(ctx, o.sent.DeepCopy(), metav1.CreateOptions{FieldManager: "kube-ovn"})
		if err != nil {
			t.Fatalf("%s: create under kube-ovn's CRD: %v", kind, err)
		}
		if status, ok := o.sent.Object["status"]; ok && hasStatusSubresource(kubeovn[kind]) {
			created.Object["status"] = status
			if _, err := ri.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "kube-ovn"}); err != nil {
				t.Fatalf("%s: status under kube-ovn's CRD: %v", kind, err)
			}
		}
		o.baseline, err = ri.Get(ctx, o.sent.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if missing := missingFields(kind, o.sent.Object, o.baseline.Object); len(missing) > 0 {
			t.Fatalf("kube-ovn's own CRD dropped fields of %s: %s", kind, strings.Join(missing, "; "))
		}
	}

	// Apply shardnet's CRDs over kube-ovn's. The API server changes a
	// CRD's serving storage when its informer sees the update, in order;
	// once a CRD applied later serves its new printer columns, every CRD
	// applied before it serves its new schema too. So the kinds whose
	// columns do not tell the two CRDs apart go first.
	kinds := make([]string, 0, len(shardnet))
	for kind := range shardnet {
		kinds = append(kinds, kind)
	}
	distinct := func(kind string) bool {
		return !slices.Equal(columnNames(shardnet[kind]), columnNames(kubeovn[kind]))
	}
	sort.Slice(kinds, func(i, j int) bool {
		if distinct(kinds[i]) != distinct(kinds[j]) {
			return !distinct(kinds[i])
		}
		return kinds[i] < kinds[j]
	})
	if !distinct(kinds[len(kinds)-1]) {
		t.Fatalf("no kind's printer columns differ between kube-ovn's CRDs and shardnet's: cannot tell when shardnet's take effect")
	}
	for _, kind := range kinds {
		sn := shardnet[kind]
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := crdClient.Get(ctx, sn.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec = *sn.Spec.DeepCopy()
			if cur.Annotations == nil {
				cur.Annotations = map[string]string{}
			}
			for k, v := range sn.Annotations {
				cur.Annotations[k] = v
			}
			_, err = crdClient.Update(ctx, cur, metav1.UpdateOptions{FieldManager: "shardnet-e2e"})
			return err
		})
		if err != nil {
			t.Fatalf("%s: applying shardnet's CRD: %v", kind, err)
		}
	}
	for _, kind := range kinds {
		if !distinct(kind) {
			continue
		}
		want := columnNames(shardnet[kind])
		waitFor(t, ctx, kind+": shardnet's CRD served", func() error {
			got, err := servedColumnNames(ctx, kube, objects[kind].gvr)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("printer columns %v, want %v", got, want)
			}
			return nil
		})
	}

	// Under shardnet's CRDs: every field must survive reading, an update
	// and a status update.
	const touched = "shardnet.io/e2e-touched"
	for _, kind := range kinds {
		o := objects[kind]
		ri := dyn.Resource(o.gvr)
		name := o.sent.GetName()
		got, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkSameContent(t, kind+" read under shardnet's CRD", o.baseline, got, nil)

		labels := got.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[touched] = "true"
		got.SetLabels(labels)
		updated, err := ri.Update(ctx, got, metav1.UpdateOptions{FieldManager: "shardnet-e2e"})
		if err != nil {
			t.Fatalf("%s: update under shardnet's CRD: %v", kind, err)
		}
		addLabel := map[string]string{touched: "true"}
		checkSameContent(t, kind+" as the update returned it", o.baseline, updated, addLabel)
		if hasStatusSubresource(shardnet[kind]) {
			updated, err = ri.UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: "shardnet-e2e"})
			if err != nil {
				t.Fatalf("%s: status update under shardnet's CRD: %v", kind, err)
			}
			checkSameContent(t, kind+" as the status update returned it", o.baseline, updated, addLabel)
		}
		got, err = ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkSameContent(t, kind+" read after the updates", o.baseline, got, addLabel)
	}
}

// decodeYAML decodes YAML into v with JSON's integer handling of
// unstructured objects (int64 for integers).
func decodeYAML(doc string, v *map[string]any) error {
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return err
	}
	return utiljson.Unmarshal(j, v)
}

func hasStatusSubresource(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Subresources != nil && v.Subresources.Status != nil
		}
	}
	return false
}

// columnNames are the printer columns the API server serves for crd's
// storage version after Name: its additionalPrinterColumns, or Age when it
// has none.
func columnNames(crd *apiextensionsv1.CustomResourceDefinition) []string {
	for _, v := range crd.Spec.Versions {
		if !v.Storage {
			continue
		}
		if len(v.AdditionalPrinterColumns) == 0 {
			return []string{"Age"}
		}
		var out []string
		for _, c := range v.AdditionalPrinterColumns {
			out = append(out, c.Name)
		}
		return out
	}
	return nil
}

// servedColumnNames asks the API server for a Table of gvr and returns its
// column names after Name.
func servedColumnNames(ctx context.Context, kube *harness.Kube, gvr schema.GroupVersionResource) ([]string, error) {
	raw, err := kube.Client.Discovery().RESTClient().Get().
		AbsPath("/apis", gvr.Group, gvr.Version, gvr.Resource).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		return nil, err
	}
	var out []string
	for _, c := range table.ColumnDefinitions {
		if c.Name != "Name" {
			out = append(out, c.Name)
		}
	}
	return out, nil
}

// checkSameContent fails unless got has exactly want's content: the same
// spec, status and every other top-level field, and the same labels and
// annotations (labels plus addLabels).
func checkSameContent(t *testing.T, what string, want, got *unstructured.Unstructured, addLabels map[string]string) {
	t.Helper()
	content := func(u *unstructured.Unstructured, extra map[string]string) map[string]any {
		m := map[string]any{}
		for k, v := range u.Object {
			if k != "metadata" {
				m[k] = v
			}
		}
		labels := map[string]any{}
		for k, v := range u.GetLabels() {
			labels[k] = v
		}
		for k, v := range extra {
			labels[k] = v
		}
		annotations := map[string]any{}
		for k, v := range u.GetAnnotations() {
			annotations[k] = v
		}
		m["labels"], m["annotations"] = labels, annotations
		return m
	}
	w, g := content(want, addLabels), content(got, nil)
	if reflect.DeepEqual(w, g) {
		return
	}
	t.Errorf("%s: content changed:\n  %s", what, strings.Join(diffValues("", w, g), "\n  "))
}

// diffValues lists where got differs from want.
func diffValues(path string, want, got any) []string {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		var out []string
		for k, wv := range wm {
			gv, ok := gm[k]
			if !ok {
				out = append(out, path+"."+k+": missing")
				continue
			}
			out = append(out, diffValues(path+"."+k, wv, gv)...)
		}
		for k := range gm {
			if _, ok := wm[k]; !ok {
				out = append(out, path+"."+k+": not there before")
			}
		}
		sort.Strings(out)
		return out
	}
	wl, wok := want.([]any)
	gl, gok := got.([]any)
	if wok && gok && len(wl) == len(gl) {
		var out []string
		for i := range wl {
			out = append(out, diffValues(fmt.Sprintf("%s[%d]", path, i), wl[i], gl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(want, got) {
		return nil
	}
	return []string{fmt.Sprintf("%s: %#v, was %#v", path, got, want)}
}

// missingFields lists the fields of sent's spec and status that are not in
// got with the same value.
func missingFields(kind string, sent, got map[string]any) []string {
	var out []string
	for _, top := range []string{"spec", "status"} {
		if v, ok := sent[top]; ok {
			out = append(out, missingIn(kind+"."+top, v, got[top])...)
		}
	}
	return out
}

func missingIn(path string, sent, got any) []string {
	if sm, ok := sent.(map[string]any); ok {
		gm, _ := got.(map[string]any)
		var out []string
		for k, v := range sm {
			gv, ok := gm[k]
			if !ok {
				out = append(out, path+"."+k+": missing")
				continue
			}
			out = append(out, missingIn(path+"."+k, v, gv)...)
		}
		sort.Strings(out)
		return out
	}
	if sl, ok := sent.([]any); ok {
		gl, _ := got.([]any)
		if len(gl) != len(sl) {
			return []string{fmt.Sprintf("%s: %d items, sent %d", path, len(gl), len(sl))}
		}
		var out []string
		for i := range sl {
			out = append(out, missingIn(fmt.Sprintf("%s[%d]", path, i), sl[i], gl[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(sent, got) {
		return []string{fmt.Sprintf("%s: %#v, sent %#v", path, got, sent)}
	}
	return nil
}

// unknownPaths lists the fields of v that schema s does not list (whether
// or not s preserves unknown fields), without descending into them.
func unknownPaths(path string, v any, s *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			for k, e := range v {
				out = append(out, unknownPaths(path+"."+k, e, s.AdditionalProperties.Schema)...)
			}
			break
		}
		for k, e := range v {
			p, ok := s.Properties[k]
			if !ok {
				if len(s.Properties) > 0 {
					out = append(out, path+"."+k)
				}
				continue
			}
			out = append(out, unknownPaths(path+"."+k, e, &p)...)
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for _, e := range v {
				out = append(out, unknownPaths(path+"[]", e, s.Items.Schema)...)
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// schemaSkeleton is a value with every object property of s (arrays with
// one item), for unknownPaths to count the fields a schema lists.
func schemaSkeleton(s *apiextensionsv1.JSONSchemaProps) any {
	switch {
	case len(s.Properties) > 0:
		m := map[string]any{}
		for k, p := range s.Properties {
			m[k] = schemaSkeleton(&p)
		}
		return m
	case s.Items != nil && s.Items.Schema != nil:
		return []any{schemaSkeleton(s.Items.Schema)}
	}
	return nil
}
