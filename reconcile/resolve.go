package reconcile

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/ipam"
)

// Catalog is the read-only view of the objects subnet resolution reads,
// served from informer caches. Implementations return shared objects:
// callers must not change them.
type Catalog interface {
	Subnet(name string) (*kubeovnv1.Subnet, bool)
	Subnets() []*kubeovnv1.Subnet
	IPPool(name string) (*kubeovnv1.IPPool, bool)
	IPPools() []*kubeovnv1.IPPool
	Namespace(name string) (*corev1.Namespace, bool)
}

// ErrUnknownSubnet is returned (wrapped) when a pod or pool names a subnet
// that does not exist. It is an input error: retrying helps only once the
// subnet is created.
var ErrUnknownSubnet = errors.New("unknown subnet")

// ErrUnknownPool is returned (wrapped) when an ip_pool annotation names an
// IPPool that does not exist.
var ErrUnknownPool = errors.New("unknown IP pool")

// ErrNoSubnet is returned when nothing selects a subnet for the pod and no
// default subnet exists.
var ErrNoSubnet = errors.New("no subnet for pod")

// Resolution is the subnet chosen for a pod's default network and why.
type Resolution struct {
	Subnet *kubeovnv1.Subnet
	// Pool is the IPPool the pod draws from, when one applies.
	Pool *kubeovnv1.IPPool
	// Source says which rule chose the subnet, for events and logs:
	// "annotation", "pool", "namespace" or "default".
	Source string
}

// Resolver picks the subnet of a pod's default network in the order of
// docs/contract.md §4 (S1-S7).
type Resolver struct {
	Catalog Catalog
	// DefaultSubnet is the --default-subnet name; when empty, the first
	// subnet (by name) with spec.default is the default.
	DefaultSubnet string
	// HasFree reports whether a subnet still has a free address for a
	// dynamic allocation. Nil means every subnet has.
	HasFree func(subnet string) bool
}

// isDefaultNetwork reports whether s serves the default (ovn) network.
func isDefaultNetwork(s *kubeovnv1.Subnet) bool {
	return s.Spec.Provider == "" || s.Spec.Provider == DefaultProvider
}

// Resolve returns the subnet for pod's default network. It fails with
// ErrUnknownSubnet, ErrUnknownPool or ErrNoSubnet (wrapped, naming the
// input), or with an ipam parse error for a malformed ip_pool annotation.
func (r *Resolver) Resolve(pod *corev1.Pod) (Resolution, error) {
	ann := pod.Annotations
	ns, _ := r.Catalog.Namespace(pod.Namespace)

	pool, err := r.pool(pod, ns)
	if err != nil {
		return Resolution{}, err
	}

	if name := ann[DefaultKey(KeyLogicalSwitch)]; name != "" {
		s, ok := r.Catalog.Subnet(name)
		if !ok {
			return Resolution{}, fmt.Errorf("annotation %s=%q: %w", DefaultKey(KeyLogicalSwitch), name, ErrUnknownSubnet)
		}
		if pool != nil && pool.Spec.Subnet != s.Name {
			return Resolution{}, fmt.Errorf("IP pool %s belongs to subnet %s, but the pod asks for subnet %s: %w",
				pool.Name, pool.Spec.Subnet, s.Name, ErrUnknownPool)
		}
		return Resolution{Subnet: s, Pool: pool, Source: "annotation"}, nil
	}

	if pool != nil {
		s, ok := r.Catalog.Subnet(pool.Spec.Subnet)
		if !ok {
			return Resolution{}, fmt.Errorf("IP pool %s names subnet %q: %w", pool.Name, pool.Spec.Subnet, ErrUnknownSubnet)
		}
		return Resolution{Subnet: s, Pool: pool, Source: "pool"}, nil
	}

	if s := r.namespaceSubnet(pod, ns); s != nil {
		return Resolution{Subnet: s, Source: "namespace"}, nil
	}

	if s := r.defaultSubnet(); s != nil {
		return Resolution{Subnet: s, Source: "default"}, nil
	}
	if r.DefaultSubnet != "" {
		return Resolution{}, fmt.Errorf("default subnet %q: %w", r.DefaultSubnet, ErrUnknownSubnet)
	}
	return Resolution{}, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, ErrNoSubnet)
}

// pool returns the IPPool object the pod's (or else its namespace's)
// ip_pool annotation names, or an IPPool that lists the namespace. An
// ip_pool annotation that is an address list names no pool object.
func (r *Resolver) pool(pod *corev1.Pod, ns *corev1.Namespace) (*kubeovnv1.IPPool, error) {
	key := DefaultKey(KeyIPPool)
	for _, src := range []struct {
		what string
		ann  map[string]string
	}{{"pod", pod.Annotations}, {"namespace", nsAnnotations(ns)}} {
		v := src.ann[key]
		if v == "" {
			continue
		}
		ref, err := ipam.ParseIPPoolAnnotation(v)
		if err != nil {
			return nil, fmt.Errorf("%s annotation %s: %w", src.what, key, err)
		}
		if ref.Pool == "" {
			return nil, nil
		}
		p, ok := r.Catalog.IPPool(ref.Pool)
		if !ok {
			return nil, fmt.Errorf("%s annotation %s=%q: %w", src.what, key, ref.Pool, ErrUnknownPool)
		}
		return p, nil
	}
	for _, p := range sortedPools(r.Catalog.IPPools()) {
		for _, n := range p.Spec.Namespaces {
			if n == pod.Namespace {
				return p, nil
			}
		}
	}
	return nil, nil
}

// namespaceSubnet returns the first subnet (by name) that lists the pod's
// namespace or selects it by label and still has a free address, or that
// contains the pod's static address; if every such subnet is full, the
// first of them, so the pod gets a clear "subnet full" error.
func (r *Resolver) namespaceSubnet(pod *corev1.Pod, ns *corev1.Namespace) *kubeovnv1.Subnet {
	var static ipam.Addresses
	if v := pod.Annotations[DefaultKey(KeyIPAddress)]; v != "" {
		static, _ = ipam.ParseAddresses(v)
	}
	var first *kubeovnv1.Subnet
	for _, s := range sortedSubnets(r.Catalog.Subnets()) {
		if !isDefaultNetwork(s) || !selectsNamespace(s, pod.Namespace, ns) {
			continue
		}
		if !static.IsZero() {
			if subnetContains(s, static) {
				return s
			}
			continue
		}
		if first == nil {
			first = s
		}
		if r.HasFree == nil || r.HasFree(s.Name) {
			return s
		}
	}
	return first
}

func (r *Resolver) defaultSubnet() *kubeovnv1.Subnet {
	if r.DefaultSubnet != "" {
		s, _ := r.Catalog.Subnet(r.DefaultSubnet)
		return s
	}
	for _, s := range sortedSubnets(r.Catalog.Subnets()) {
		if s.Spec.Default && isDefaultNetwork(s) {
			return s
		}
	}
	return nil
}

func selectsNamespace(s *kubeovnv1.Subnet, name string, ns *corev1.Namespace) bool {
	for _, n := range s.Spec.Namespaces {
		if n == name {
			return true
		}
	}
	if ns == nil {
		return false
	}
	for i := range s.Spec.NamespaceSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&s.Spec.NamespaceSelectors[i])
		if err != nil || sel.Empty() {
			// A malformed selector selects nothing; an empty one would
			// select every namespace, which no user means.
			continue
		}
		if sel.Matches(labels.Set(ns.Labels)) {
			return true
		}
	}
	return false
}

// subnetContains reports whether every address of a lies in one of s's
// CIDRs.
func subnetContains(s *kubeovnv1.Subnet, a ipam.Addresses) bool {
	prefixes, err := parseCIDRBlock(s.Spec.CIDRBlock)
	if err != nil {
		return false
	}
	for _, addr := range a.List() {
		in := false
		for _, p := range prefixes {
			if p.Contains(addr) {
				in = true
			}
		}
		if !in {
			return false
		}
	}
	return true
}

func parseCIDRBlock(block string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range splitComma(block) {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func nsAnnotations(ns *corev1.Namespace) map[string]string {
	if ns == nil {
		return nil
	}
	return ns.Annotations
}

func sortedSubnets(in []*kubeovnv1.Subnet) []*kubeovnv1.Subnet {
	out := append([]*kubeovnv1.Subnet(nil), in...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func sortedPools(in []*kubeovnv1.IPPool) []*kubeovnv1.IPPool {
	out := append([]*kubeovnv1.IPPool(nil), in...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
