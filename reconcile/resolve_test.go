package reconcile

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ipam"
)

type fakeCatalog struct {
	subnets    map[string]*kubeovnv1.Subnet
	pools      map[string]*kubeovnv1.IPPool
	namespaces map[string]*corev1.Namespace
}

func (c *fakeCatalog) Subnet(n string) (*kubeovnv1.Subnet, bool) { s, ok := c.subnets[n]; return s, ok }
func (c *fakeCatalog) IPPool(n string) (*kubeovnv1.IPPool, bool) { p, ok := c.pools[n]; return p, ok }
func (c *fakeCatalog) Namespace(n string) (*corev1.Namespace, bool) {
	ns, ok := c.namespaces[n]
	return ns, ok
}
func (c *fakeCatalog) Subnets() []*kubeovnv1.Subnet {
	var out []*kubeovnv1.Subnet
	for _, s := range c.subnets {
		out = append(out, s)
	}
	return out
}
func (c *fakeCatalog) IPPools() []*kubeovnv1.IPPool {
	var out []*kubeovnv1.IPPool
	for _, p := range c.pools {
		out = append(out, p)
	}
	return out
}

func subnet(name, cidr string, mod func(*kubeovnv1.SubnetSpec)) *kubeovnv1.Subnet {
	s := &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: cidr}}
	if mod != nil {
		mod(&s.Spec)
	}
	return s
}

func testCatalog() *fakeCatalog {
	c := &fakeCatalog{
		subnets: map[string]*kubeovnv1.Subnet{},
		pools:   map[string]*kubeovnv1.IPPool{},
		namespaces: map[string]*corev1.Namespace{
			"plain":    {ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
			"team-a":   {ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			"labelled": {ObjectMeta: metav1.ObjectMeta{Name: "labelled", Labels: map[string]string{"tier": "db"}}},
			"pooled": {ObjectMeta: metav1.ObjectMeta{Name: "pooled",
				Annotations: map[string]string{DefaultKey(KeyIPPool): "pool-b"}}},
		},
	}
	for _, s := range []*kubeovnv1.Subnet{
		subnet("default", "10.16.0.0/16", func(s *kubeovnv1.SubnetSpec) { s.Default = true }),
		subnet("a1", "10.17.0.0/24", func(s *kubeovnv1.SubnetSpec) { s.Namespaces = []string{"team-a"} }),
		subnet("a2", "10.18.0.0/24", func(s *kubeovnv1.SubnetSpec) { s.Namespaces = []string{"team-a"} }),
		subnet("db", "10.19.0.0/24", func(s *kubeovnv1.SubnetSpec) {
			s.NamespaceSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"tier": "db"}}}
		}),
		subnet("b", "10.20.0.0/24", nil),
		subnet("attach", "10.21.0.0/24", func(s *kubeovnv1.SubnetSpec) {
			s.Namespaces = []string{"plain"}
			s.Provider = "net1.plain.ovn"
		}),
	} {
		c.subnets[s.Name] = s
	}
	c.pools["pool-b"] = &kubeovnv1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: "pool-b"},
		Spec: kubeovnv1.IPPoolSpec{Subnet: "b", IPs: []string{"10.20.0.10..10.20.0.20"}}}
	c.pools["pool-ghost"] = &kubeovnv1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: "pool-ghost"},
		Spec: kubeovnv1.IPPoolSpec{Subnet: "nope", IPs: []string{"10.99.0.1"}}}
	return c
}

func pod(ns string, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, Annotations: ann}}
}

func TestResolve(t *testing.T) {
	full := map[string]bool{}
	r := &Resolver{Catalog: testCatalog(), HasFree: func(s string) bool { return !full[s] }}
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		full   []string
		want   string
		source string
		err    error
	}{
		{name: "default subnet", pod: pod("plain", nil), want: "default", source: "default"},
		{name: "annotation wins", pod: pod("team-a", map[string]string{DefaultKey(KeyLogicalSwitch): "b"}), want: "b", source: "annotation"},
		{name: "unknown annotated subnet", pod: pod("plain", map[string]string{DefaultKey(KeyLogicalSwitch): "ghost"}), err: ErrUnknownSubnet},
		{name: "namespace subnets in name order", pod: pod("team-a", nil), want: "a1", source: "namespace"},
		{name: "next namespace subnet when first is full", pod: pod("team-a", nil), full: []string{"a1"}, want: "a2", source: "namespace"},
		{name: "all namespace subnets full gives the first", pod: pod("team-a", nil), full: []string{"a1", "a2"}, want: "a1", source: "namespace"},
		{name: "static address picks the namespace subnet holding it",
			pod: pod("team-a", map[string]string{DefaultKey(KeyIPAddress): "10.18.0.7"}), want: "a2", source: "namespace"},
		{name: "namespace selector", pod: pod("labelled", nil), want: "db", source: "namespace"},
		{name: "pod pool", pod: pod("plain", map[string]string{DefaultKey(KeyIPPool): "pool-b"}), want: "b", source: "pool"},
		{name: "namespace pool", pod: pod("pooled", nil), want: "b", source: "pool"},
		{name: "unknown pool", pod: pod("plain", map[string]string{DefaultKey(KeyIPPool): "ghost"}), err: ErrUnknownPool},
		{name: "pool naming unknown subnet", pod: pod("plain", map[string]string{DefaultKey(KeyIPPool): "pool-ghost"}), err: ErrUnknownSubnet},
		{name: "pool of another subnet than annotated",
			pod: pod("plain", map[string]string{DefaultKey(KeyIPPool): "pool-b", DefaultKey(KeyLogicalSwitch): "a1"}), err: ErrUnknownPool},
		{name: "address-list pool keeps subnet rules",
			pod: pod("team-a", map[string]string{DefaultKey(KeyIPPool): "10.17.0.5,10.17.0.6"}), want: "a1", source: "namespace"},
		{name: "malformed pool list", pod: pod("plain", map[string]string{DefaultKey(KeyIPPool): "10.0.0.1,,10.0.0.2"}), err: ipam.ErrInvalid},
		{name: "attachment subnets are not namespace subnets of the default network", pod: pod("plain", nil), want: "default", source: "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clear(full)
			for _, s := range tc.full {
				full[s] = true
			}
			got, err := r.Resolve(tc.pod)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Subnet.Name != tc.want || got.Source != tc.source {
				t.Fatalf("got %s (%s), want %s (%s)", got.Subnet.Name, got.Source, tc.want, tc.source)
			}
		})
	}
}

func TestResolveNoDefault(t *testing.T) {
	c := testCatalog()
	delete(c.subnets, "default")
	r := &Resolver{Catalog: c}
	if _, err := r.Resolve(pod("plain", nil)); !errors.Is(err, ErrNoSubnet) {
		t.Fatalf("err = %v, want ErrNoSubnet", err)
	}
	r.DefaultSubnet = "gone"
	if _, err := r.Resolve(pod("plain", nil)); !errors.Is(err, ErrUnknownSubnet) {
		t.Fatalf("err = %v, want ErrUnknownSubnet for a missing --default-subnet", err)
	}
	r.DefaultSubnet = "b"
	if got, err := r.Resolve(pod("plain", nil)); err != nil || got.Subnet.Name != "b" {
		t.Fatalf("got %v, %v; want the flag's subnet b", got.Subnet, err)
	}
}

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		ann  map[string]string
		bad  string // annotation key expected in the InputError
	}{
		{name: "bad ip", ann: map[string]string{DefaultKey(KeyIPAddress): "10.0.0.300"}, bad: DefaultKey(KeyIPAddress)},
		{name: "two v4", ann: map[string]string{DefaultKey(KeyIPAddress): "10.0.0.1,10.0.0.2"}, bad: DefaultKey(KeyIPAddress)},
		{name: "bad mac", ann: map[string]string{DefaultKey(KeyMACAddress): "zz:00:00:00:00:01"}, bad: DefaultKey(KeyMACAddress)},
		{name: "bad pool list", ann: map[string]string{DefaultKey(KeyIPPool): "10.0.0.1;"}, bad: DefaultKey(KeyIPPool)},
		{name: "good", ann: map[string]string{
			DefaultKey(KeyIPAddress): "10.0.0.5,fd00::5", DefaultKey(KeyMACAddress): "0a:00:00:00:00:05",
			DefaultKey(KeyPortSecurity): "true", DefaultKey(KeyPortVIPs): "10.0.0.100, 10.0.0.101",
			DefaultKey(KeySecurityGroups): "sg1,sg2", DefaultKey(KeyIPPool): "10.0.0.5;10.0.0.6",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRequest(pod("plain", tc.ann), nil)
			if tc.bad == "" {
				if err != nil {
					t.Fatal(err)
				}
				if r.Static.String() != "10.0.0.5,fd00::5" || r.MAC.String() != "0a:00:00:00:00:05" || !r.PortSecurity ||
					len(r.PortVIPs) != 2 || len(r.SecurityGroups) != 2 || len(r.PoolList) != 2 {
					t.Fatalf("parsed %+v", r)
				}
				return
			}
			var ie *InputError
			if !errors.As(err, &ie) || ie.Key != tc.bad || !errors.Is(err, ErrInvalidAnnotation) {
				t.Fatalf("err = %v, want an InputError on %s", err, tc.bad)
			}
		})
	}
}

// TestParseRequestLenient pins the values that do not fail the network
// (docs/contract.md E2-E4): each is taken as absent or false and reported
// on the key it was read from.
func TestParseRequestLenient(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ann   map[string]string
		key   string // the annotation reported
		route bool   // reported as RouteErr rather than Ignored
	}{
		{name: "port_security yes", ann: map[string]string{DefaultKey(KeyPortSecurity): "yes"}, key: DefaultKey(KeyPortSecurity)},
		{name: "port_security TRUE", ann: map[string]string{DefaultKey(KeyPortSecurity): "TRUE"}, key: DefaultKey(KeyPortSecurity)},
		{name: "layer2_forward 1", ann: map[string]string{DefaultKey(KeyLayer2Forward): "1"}, key: DefaultKey(KeyLayer2Forward)},
		{name: "bad vip", ann: map[string]string{DefaultKey(KeyPortVIPs): "10.0.0.1,nope"}, key: DefaultKey(KeyPortVIPs)},
		{name: "vip with a zone", ann: map[string]string{DefaultKey(KeyPortVIPs): "fe80::1%eth0"}, key: DefaultKey(KeyPortVIPs)},
		{name: "bad north gateway", ann: map[string]string{DefaultKey(KeyNorthGateway): "gw"}, key: DefaultKey(KeyNorthGateway), route: true},
		{name: "bad eip", ann: map[string]string{DefaultKey(KeyEIP): "1.2.3"}, key: DefaultKey(KeyEIP), route: true},
		{name: "bad snat", ann: map[string]string{DefaultKey(KeySNAT): "x"}, key: DefaultKey(KeySNAT), route: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRequest(pod("plain", tc.ann), nil)
			if err != nil {
				t.Fatalf("err = %v, want the network served", err)
			}
			if r.PortSecurity || r.Layer2Forward || len(r.PortVIPs) != 0 || r.NorthGateway.IsValid() || r.EIP.IsValid() || r.SNAT.IsValid() {
				t.Fatalf("parsed %+v, want the bad value dropped", r)
			}
			var got error
			if tc.route {
				got = r.RouteErr
				if len(r.Ignored) != 0 {
					t.Fatalf("ignored %v, want only a RouteErr", r.Ignored)
				}
			} else if len(r.Ignored) == 1 {
				got = r.Ignored[0]
				if r.RouteErr != nil {
					t.Fatalf("RouteErr %v, want none", r.RouteErr)
				}
			}
			var ie *InputError
			if !errors.As(got, &ie) || ie.Key != tc.key {
				t.Fatalf("reported %v, want an InputError on %s", got, tc.key)
			}
		})
	}
	r, err := ParseRequest(pod("plain", map[string]string{DefaultKey(KeySecurityGroups): " sg-a , sg b,,sg-a"}), nil)
	if err != nil || strings.Join(r.SecurityGroups, "|") != "sg-a|sgb" {
		t.Fatalf("security groups %q, %v; want spaces ignored, empties and repeats dropped", r.SecurityGroups, err)
	}
}

func TestAliveAndOwners(t *testing.T) {
	now := time.Now()
	grace := int64(30)
	deleted := metav1.NewTime(now.Add(-time.Minute))
	for _, tc := range []struct {
		name  string
		pod   corev1.Pod
		alive bool
	}{
		{"running", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, true},
		{"succeeded never", corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, false},
		{"succeeded always", corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, true},
		{"failed onfailure", corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure}, Status: corev1.PodStatus{Phase: corev1.PodFailed}}, true},
		{"evicted", corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways}, Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}}, false},
		{"grace over", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: &grace}}, false},
	} {
		if got := Alive(&tc.pod, now); got != tc.alive {
			t.Errorf("%s: Alive = %v, want %v", tc.name, got, tc.alive)
		}
	}

	sts := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-3", OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web"}}}}
	if name, ord, ok := StatefulSetOwner(sts); !ok || name != "web" || ord != 3 {
		t.Fatalf("StatefulSetOwner = %q %d %v", name, ord, ok)
	}
	sts.Name = "other-3"
	if _, _, ok := StatefulSetOwner(sts); ok {
		t.Fatal("a pod whose name does not start with the StatefulSet's is not its pod")
	}
	if PortName("p", "ns", "ovn") != "p.ns" || PortName("p", "ns", "net1.ns.ovn") != "p.ns.net1.ns.ovn" {
		t.Fatal("port names differ from kube-ovn's")
	}
}

func TestBehindOwnPatch(t *testing.T) {
	now := time.Unix(1000, 0)
	p := (&Pods{cfg: PodConfig{Now: func() time.Time { return now }}}).NewTerm(0, nil, nil)
	pod := func(uid, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: types.UID(uid), ResourceVersion: rv}}
	}
	if p.behindOwnPatch("ns/a", pod("u1", "5")) {
		t.Fatal("behind with no patch recorded")
	}
	p.patched.Store("ns/a", patchedVersion{uid: "u1", version: "120", at: now})
	for _, c := range []struct {
		uid, rv string
		want    bool
	}{
		{"u1", "99", true},   // older, fewer digits
		{"u1", "119", true},  // older
		{"u1", "120", false}, // the patch itself
		{"u1", "121", false}, // a later change: reconcile it
		{"u2", "99", false},  // another incarnation of the name
		{"u1", "x9", false},  // versions that do not compare
	} {
		if got := p.behindOwnPatch("ns/a", pod(c.uid, c.rv)); got != c.want {
			t.Errorf("uid %s version %s: behind = %v, want %v", c.uid, c.rv, got, c.want)
		}
		p.patched.Store("ns/a", patchedVersion{uid: "u1", version: "120", at: now})
	}
	now = now.Add(cacheLagTolerance)
	if p.behindOwnPatch("ns/a", pod("u1", "99")) {
		t.Fatal("a record older than the cache-lag tolerance still holds")
	}
	if _, ok := p.patched.Load("ns/a"); ok {
		t.Fatal("an expired record was kept")
	}
}
