package reconcile

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardnet/shardnet/queue"
)

// parsePortVIPs reads port_vips: comma-separated addresses, spaces around
// an entry ignored, empty entries skipped. One entry that is not an
// address drops the whole list, as kube-ovn drops it (docs/contract.md
// E3); the caller warns.
func parsePortVIPs(v string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, s := range splitComma(v) {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%q is not an address; no VIP is applied", s)
		}
		out = append(out, a.Unmap())
	}
	return out, nil
}

// settlePortRequest finishes the port half of a network's request once
// its subnet is known: VIPs outside the subnet are dropped, each with a
// Warning (docs/contract.md E3); an IPAM-only network has no port, so
// none of the port's annotations concern it.
func settlePortRequest(np *NetworkPlan) {
	r := &np.Request
	if np.Kind != AttachmentOVN {
		r.PortVIPs, r.SecurityGroups, r.Ignored = nil, nil, nil
		r.PortSecurity, r.Layer2Forward = false, false
		return
	}
	if len(r.PortVIPs) == 0 || np.Alloc == nil {
		return
	}
	kept := r.PortVIPs[:0:0]
	var out []string
	for _, a := range r.PortVIPs {
		if np.Alloc.Contains(a) {
			kept = append(kept, a)
		} else {
			out = append(out, a.String())
		}
	}
	if len(out) > 0 {
		key := Key(np.Provider, KeyPortVIPs)
		r.Ignored = append(r.Ignored, &InputError{key, joinAddrs(r.PortVIPs),
			fmt.Errorf("%s not in subnet %s; dropped", strings.Join(out, ","), np.Subnet.Name)})
	}
	r.PortVIPs = kept
}

func joinAddrs(as []netip.Addr) string {
	return strings.Join(addrList(as), ",")
}

// requestWarnings reports the values a served network did not follow
// (docs/contract.md E2-E4): a Warning each, and a permanent error so that
// the reconcile counts as invalid and waits for an edit of the pod.
func (t *Term) requestWarnings(pod *corev1.Pod, np *NetworkPlan) []error {
	var errs []error
	report := func(err error) {
		if np.Attachment != "" {
			err = fmt.Errorf("attachment %s: %w", np.Attachment, err)
		}
		t.warn(pod, ReasonInvalidAnnotation, err)
		errs = append(errs, queue.Permanent(err))
	}
	for _, ie := range np.Request.Ignored {
		report(ie)
	}
	if np.Request.RouteErr != nil && np.Port != "" {
		report(fmt.Errorf("the routed phase waits for an edit: %w", np.Request.RouteErr))
	}
	return errs
}
