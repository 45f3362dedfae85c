package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/cmd/shardnet/app"
	"github.com/shardnet/shardnet/reconcile"
)

// TestDeployRBACRulesAreNeeded removes one rule at a time from the deploy
// ClusterRole and Role and shows that shardnet, running with the
// ServiceAccount's token, then fails at something it must do: route a pod,
// warn about a malformed one, write the subnet counters, or give a pod the
// address its Vip reserved. With no rule removed all four succeed, so the
// check can tell the difference.
//
// The cluster has multus's NetworkAttachmentDefinition CRD and KubeVirt's
// VM and VMI CRDs, so the rules for them are exercised: without one, the
// replica's cache never syncs and it takes no shard.
func TestDeployRBACRulesAreNeeded(t *testing.T) {
	c := startCluster(t)
	c.kube.InstallNADCRD(t)
	c.kube.InstallCRDs(t, kubevirtCRDs())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ap := newApplier(t, c.kube.Config)
	objs := kustomizeResources(t, filepath.Join(deployDir(t), "base"))
	var (
		roles       []*rbacv1.Role
		clusterRole = &rbacv1.ClusterRole{}
	)
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRoleBinding", "RoleBinding":
			if err := ap.apply(ctx, o, false); err != nil {
				t.Fatal(err)
			}
		case "ClusterRole":
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, clusterRole); err != nil {
				t.Fatal(err)
			}
		case "Role":
			role := &rbacv1.Role{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
				t.Fatal(err)
			}
			roles = append(roles, role)
		}
	}
	node := c.kube.CreateNode(t, "kwok-node-probe", "")
	c.subnet("ovn-default", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true })

	type variant struct {
		name    string
		cluster []rbacv1.PolicyRule
		// roles are the rules of each Role, in the order of roles.
		roles [][]rbacv1.PolicyRule
	}
	all := func() [][]rbacv1.PolicyRule {
		out := make([][]rbacv1.PolicyRule, len(roles))
		for i, r := range roles {
			out[i] = r.Rules
		}
		return out
	}
	variants := []variant{{name: "complete", cluster: clusterRole.Rules, roles: all()}}
	for i, r := range clusterRole.Rules {
		variants = append(variants, variant{name: "without ClusterRole " + ruleName(r), cluster: without(clusterRole.Rules, i), roles: all()})
	}
	for j, role := range roles {
		for i, r := range role.Rules {
			rules := all()
			rules[j] = without(role.Rules, i)
			variants = append(variants, variant{name: "without Role " + role.Namespace + "/" + role.Name + " " + ruleName(r), cluster: clusterRole.Rules, roles: rules})
		}
	}
	for i, v := range variants {
		ok, detail := c.probeRBAC(t, ctx, i, node.Name, clusterRole, roles, v.cluster, v.roles)
		switch {
		case i == 0 && !ok:
			t.Fatalf("with the complete role shardnet failed: %s", detail)
		case i > 0 && ok:
			t.Errorf("%s: shardnet still did everything; the rule is not needed", v.name)
		default:
			t.Logf("%s: %s", v.name, detail)
		}
	}
}

// probeRBAC installs the given rules, runs one replica with the
// ServiceAccount's token, and reports whether it routed a pod, warned
// about a malformed one and wrote the subnet counters within the window.
func (c *cluster) probeRBAC(t *testing.T, ctx context.Context, i int, node string, cr *rbacv1.ClusterRole, roles []*rbacv1.Role, crRules []rbacv1.PolicyRule, roleRules [][]rbacv1.PolicyRule) (bool, string) {
	t.Helper()
	rbac := c.kube.Client.RbacV1()
	cr = cr.DeepCopy()
	cr.Rules = crRules
	_ = rbac.ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{}) // absent the first time
	cr.ResourceVersion = ""
	if _, err := rbac.ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for j, r := range roles {
		r = r.DeepCopy()
		r.Rules = roleRules[j]
		_ = rbac.Roles(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}) // absent the first time
		r.ResourceVersion = ""
		if _, err := rbac.Roles(r.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Coordination objects of the previous probe would make this replica
	// wait out their leases.
	_ = c.kube.Client.CoordinationV1().Leases(coordinationNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = c.kube.Client.CoreV1().ConfigMaps(coordinationNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: ""})
	// RBAC changes reach the authorizer through its informers: give them
	// a moment.
	time.Sleep(500 * time.Millisecond)

	ns := fmt.Sprintf("probe-%02d", i)
	c.namespace(ns)
	id := fmt.Sprintf("probe-%02d", i)
	opts := c.options(id)
	opts.Namespace = coordinationNS
	opts.Shards = 4
	rctx, stop := context.WithCancel(context.Background())
	rep, err := app.NewReplica(rctx, opts, serviceAccountConfig(t, ctx, c.kube, "kube-system", "shardnet"), prometheus.NewRegistry())
	if err != nil {
		stop()
		return false, "replica did not start: " + err.Error()
	}
	done := make(chan error, 1)
	go func() { done <- rep.Run(rctx) }()
	defer func() {
		stop()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Logf("probe replica %s did not stop in time", id)
		}
	}()

	good := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}}
	bad := good.DeepCopy()
	bad.Name = "bad"
	bad.Annotations = map[string]string{reconcile.DefaultKey(reconcile.KeyIPAddress): "not-an-address"}
	// A Vip, reserved by the leader, and a pod given its address (D14).
	vipName := fmt.Sprintf("probe-%02d", i)
	if _, err := c.kube.Shardnet.KubeovnV1().Vips().Create(ctx, &kubeovnv1.Vip{ObjectMeta: metav1.ObjectMeta{Name: vipName},
		Spec: kubeovnv1.VipSpec{Subnet: "ovn-default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	viaVip := good.DeepCopy()
	viaVip.Name = "via-vip"
	viaVip.Annotations = map[string]string{reconcile.DefaultKey(reconcile.KeyVIP): vipName}
	for _, p := range []*corev1.Pod{good, bad, viaVip} {
		if _, err := c.kube.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var routed, warned, counted, vipServed bool
	deadline := time.Now().Add(12 * time.Second)
	for time.Now().Before(deadline) && !(routed && warned && counted && vipServed) {
		if p, err := c.kube.Client.CoreV1().Pods(ns).Get(ctx, "via-vip", metav1.GetOptions{}); err == nil && isRouted(p) {
			v, err := c.kube.Shardnet.KubeovnV1().Vips().Get(ctx, vipName, metav1.GetOptions{})
			vipServed = err == nil && v.Status.V4ip != "" && p.Annotations[reconcile.DefaultKey(reconcile.KeyIPAddress)] == v.Status.V4ip
		}
		if p, err := c.kube.Client.CoreV1().Pods(ns).Get(ctx, "good", metav1.GetOptions{}); err == nil && isRouted(p) {
			routed = true
		}
		if evs, err := c.kube.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=bad"}); err == nil {
			for _, e := range evs.Items {
				warned = warned || e.Type == corev1.EventTypeWarning
			}
		}
		if routed {
			claims, err1 := c.kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
			s, err2 := c.kube.Shardnet.KubeovnV1().Subnets().Get(ctx, "ovn-default", metav1.GetOptions{})
			counted = err1 == nil && err2 == nil && s.Status.V4UsingIPs == float64(len(claims.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
	var missing []string
	for what, ok := range map[string]bool{"pod routed": routed, "warning recorded": warned, "subnet counted": counted, "Vip pod served": vipServed} {
		if !ok {
			missing = append(missing, what)
		}
	}
	if len(missing) == 0 {
		return true, "pod routed, warning recorded, subnet counted, Vip pod served"
	}
	return false, "failed: " + strings.Join(missing, ", ")
}

func without(rules []rbacv1.PolicyRule, i int) []rbacv1.PolicyRule {
	out := append([]rbacv1.PolicyRule(nil), rules[:i]...)
	return append(out, rules[i+1:]...)
}

func ruleName(r rbacv1.PolicyRule) string {
	return fmt.Sprintf("%v %v %v", r.APIGroups, r.Resources, r.Verbs)
}
