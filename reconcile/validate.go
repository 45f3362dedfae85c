package reconcile

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardnet/shardnet/ipam"
)

// ErrInvalidAnnotation is matched (errors.Is) by every *InputError.
var ErrInvalidAnnotation = errors.New("invalid annotation")

// InputError is a pod annotation that cannot be honoured as written. It is
// the user's to fix: the reconciler reports it with a Warning Event and
// retries only slowly, since nothing but an edit of the pod changes it.
type InputError struct {
	// Key is the full annotation key.
	Key string
	// Value is the annotation's value as written.
	Value string
	// Err says what is wrong with it.
	Err error
}

func (e *InputError) Error() string {
	return fmt.Sprintf("annotation %s=%q: %v", e.Key, e.Value, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// Is makes every InputError match ErrInvalidAnnotation.
func (e *InputError) Is(target error) bool { return target == ErrInvalidAnnotation }

// Request is what a pod asks of its default network, parsed and checked.
type Request struct {
	// Static is the ip_address annotation, if any.
	Static ipam.Addresses
	// MAC is the mac_address annotation, if any.
	MAC ipam.MAC
	// PoolList is an ip_pool annotation (the pod's, else its namespace's)
	// that lists addresses rather than naming an IPPool.
	PoolList []ipam.Addresses
	// PortSecurity, Layer2Forward: the booleans of the same annotations.
	PortSecurity  bool
	Layer2Forward bool
	// PortVIPs are extra addresses allowed on the port.
	PortVIPs []netip.Addr
	// SecurityGroups are SecurityGroup names recorded on the port.
	SecurityGroups []string
	// NorthGateway is the next hop for the pod's egress, if set.
	NorthGateway netip.Addr
	// EIP and SNAT are the NAT addresses, if set.
	EIP, SNAT netip.Addr
	// Ignored are values that do not stop the network from being served:
	// a boolean other than "true"/"false", taken as false (E2), and a
	// port_vips list with an entry that is not an address, dropped whole
	// as kube-ovn drops it (E3). The pod gets a Warning for each.
	Ignored []*InputError
	// RouteErr is a malformed north_gateway, eip or snat (E4): the
	// network is allocated, its routed phase waits for an edit.
	RouteErr error
	// routeErrs are RouteErr's parts, by key.
	routeErrs []*InputError
}

// withoutNAT is the request with eip and snat left out, as when EIP/SNAT
// handling is off (--enable-eip-snat=false): neither is read, and a
// malformed one holds nothing back.
func (r Request) withoutNAT(provider string) Request {
	r.EIP, r.SNAT = netip.Addr{}, netip.Addr{}
	var errs []error
	var kept []*InputError
	for _, e := range r.routeErrs {
		if e.Key == Key(provider, KeyEIP) || e.Key == Key(provider, KeySNAT) {
			continue
		}
		kept = append(kept, e)
		errs = append(errs, e)
	}
	r.routeErrs, r.RouteErr = kept, errors.Join(errs...)
	return r
}

// ParseRequest reads and checks the default-network annotations of pod
// (and its namespace's ip_pool). Every failure is an *InputError.
func ParseRequest(pod *corev1.Pod, ns *corev1.Namespace) (Request, error) {
	return ParseRequestFor(pod, ns, DefaultProvider)
}

// ParseRequestFor reads and checks the annotations of pod's network of
// provider. The namespace's ip_pool serves the default network only
// (docs/contract.md §4). Every failure is an *InputError.
func ParseRequestFor(pod *corev1.Pod, ns *corev1.Namespace, provider string) (Request, error) {
	var r Request
	ann := pod.Annotations
	get := func(k string) (string, string) { key := Key(provider, k); return key, ann[key] }

	if key, v := get(KeyIPAddress); v != "" {
		a, err := ipam.ParseAddresses(v)
		if err != nil {
			return r, &InputError{key, v, err}
		}
		r.Static = a
	}
	if key, v := get(KeyMACAddress); v != "" {
		m, err := ipam.ParseMAC(v)
		if err != nil {
			return r, &InputError{key, v, err}
		}
		r.MAC = m
	}
	key, v := get(KeyIPPool)
	if v == "" && provider == DefaultProvider {
		key, v = DefaultKey(KeyIPPool), nsAnnotations(ns)[DefaultKey(KeyIPPool)]
	}
	if v != "" {
		ref, err := ipam.ParseIPPoolAnnotation(v)
		if err != nil {
			return r, &InputError{key, v, err}
		}
		r.PoolList = ref.List
	}
	var err error
	if r.PortSecurity, err = parseBool(ann, Key(provider, KeyPortSecurity)); err != nil {
		r.Ignored = append(r.Ignored, err.(*InputError))
	}
	if r.Layer2Forward, err = parseBool(ann, Key(provider, KeyLayer2Forward)); err != nil {
		r.Ignored = append(r.Ignored, err.(*InputError))
	}
	if key, v := get(KeyPortVIPs); v != "" {
		if r.PortVIPs, err = parsePortVIPs(v); err != nil {
			r.Ignored = append(r.Ignored, &InputError{key, v, err})
		}
	}
	if _, v := get(KeySecurityGroups); v != "" {
		r.SecurityGroups = parseSecurityGroups(v)
	}
	for _, f := range []struct {
		key  string
		dest *netip.Addr
	}{{KeyNorthGateway, &r.NorthGateway}, {KeyEIP, &r.EIP}, {KeySNAT, &r.SNAT}} {
		if key, v := get(f.key); v != "" {
			a, err := netip.ParseAddr(v)
			if err != nil {
				// Only the routed phase needs it (E4).
				ie := &InputError{key, v, err}
				r.routeErrs = append(r.routeErrs, ie)
				r.RouteErr = errors.Join(r.RouteErr, ie)
				continue
			}
			*f.dest = a.Unmap()
		}
	}
	return r, nil
}

// parseBool reads a boolean annotation as kube-ovn does: "true" is true,
// anything else false; a value other than "" and "false" also comes back
// as an *InputError to warn about (E2).
func parseBool(ann map[string]string, key string) (bool, error) {
	switch v := ann[key]; v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, &InputError{key, v, errors.New(`want "true" or "false"; taken as false`)}
	}
}

// splitComma splits a comma-separated annotation value, trimming spaces
// and dropping empty entries.
func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
