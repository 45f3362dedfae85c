package reconcile

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/shardnet/shardnet/ipam"
)

// External gateway settings, as kube-ovn names them (docs/contract.md G11).
const (
	// ExternalGatewayConfigMap is the ConfigMap whose ExternalGatewayKey
	// names the next hop of the source routes of pods with eip or snat.
	ExternalGatewayConfigMap = "ovn-external-gw-config"
	// ExternalGatewayKey is the ConfigMap's key of that next hop.
	ExternalGatewayKey = "external-gw-addr"
	// DefaultExternalGatewayNamespace is kube-ovn's
	// --external-gateway-config-ns.
	DefaultExternalGatewayNamespace = "kube-system"
	// DefaultExternalGatewaySwitch is kube-ovn's --external-gateway-switch:
	// the Subnet whose spec.gateway is the next hop when the ConfigMap
	// names none.
	DefaultExternalGatewaySwitch = "ovn-external"
)

// ReasonExternalGateway is the Warning of a pod with eip or snat whose
// routed phase waits for the external gateway to be configured.
const ReasonExternalGateway = "ExternalGatewayUnavailable"

// ErrNoExternalGateway is an external gateway that is not configured, or
// not an address: the routed phase of a pod with eip or snat waits for it
// (docs/contract.md G11, E25; docs/decisions/0018-external-gateway.md).
var ErrNoExternalGateway = errors.New("no external gateway")

// ExternalGatewayCatalog serves the external gateway: one next hop per
// family, or an error wrapping ErrNoExternalGateway that says what is
// missing.
type ExternalGatewayCatalog interface {
	ExternalGateway() (ipam.Addresses, error)
}

// ExternalGatewayConfig is the ExternalGatewayCatalog over the ConfigMap
// lister (the namespace's ConfigMap of that name only) and the subnet
// catalog, as kube-ovn reads them: the ConfigMap must exist; its
// external-gw-addr is the next hop, else the spec.gateway of Switch. A
// prefix length after the address is dropped.
type ExternalGatewayConfig struct {
	ConfigMaps corelisters.ConfigMapLister
	// Namespace holds the ConfigMap (--external-gateway-config-ns).
	Namespace string
	Subnets   Catalog
	// Switch is the fallback Subnet (--external-gateway-switch).
	Switch string
}

var _ ExternalGatewayCatalog = ExternalGatewayConfig{}

// ExternalGateway implements ExternalGatewayCatalog.
func (c ExternalGatewayConfig) ExternalGateway() (ipam.Addresses, error) {
	cm, err := c.ConfigMaps.ConfigMaps(c.Namespace).Get(ExternalGatewayConfigMap)
	if apierrors.IsNotFound(err) {
		return ipam.Addresses{}, fmt.Errorf("%w: ConfigMap %s/%s not found", ErrNoExternalGateway, c.Namespace, ExternalGatewayConfigMap)
	}
	if err != nil {
		return ipam.Addresses{}, fmt.Errorf("%w: ConfigMap %s/%s: %w", ErrNoExternalGateway, c.Namespace, ExternalGatewayConfigMap, err)
	}
	if v := cm.Data[ExternalGatewayKey]; v != "" {
		a, err := parseNextHops(v)
		if err != nil {
			return a, fmt.Errorf("%w: ConfigMap %s/%s %s=%q: %w", ErrNoExternalGateway, c.Namespace, ExternalGatewayConfigMap, ExternalGatewayKey, v, err)
		}
		return a, nil
	}
	s, ok := c.Subnets.Subnet(c.Switch)
	if !ok {
		return ipam.Addresses{}, fmt.Errorf("%w: ConfigMap %s/%s has no %s and Subnet %s is not found",
			ErrNoExternalGateway, c.Namespace, ExternalGatewayConfigMap, ExternalGatewayKey, c.Switch)
	}
	if s.Spec.Gateway == "" {
		return ipam.Addresses{}, fmt.Errorf("%w: ConfigMap %s/%s has no %s and Subnet %s has no spec.gateway",
			ErrNoExternalGateway, c.Namespace, ExternalGatewayConfigMap, ExternalGatewayKey, c.Switch)
	}
	a, err := parseNextHops(s.Spec.Gateway)
	if err != nil {
		return a, fmt.Errorf("%w: Subnet %s spec.gateway %q: %w", ErrNoExternalGateway, c.Switch, s.Spec.Gateway, err)
	}
	return a, nil
}

// parseNextHops reads "addr[/len][,addr[/len]]": at most one address per
// family.
func parseNextHops(v string) (ipam.Addresses, error) {
	var a ipam.Addresses
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if i := strings.IndexByte(part, '/'); i >= 0 {
			part = part[:i]
		}
		ip, err := netip.ParseAddr(part)
		if err != nil {
			return ipam.Addresses{}, err
		}
		ip = ip.Unmap()
		dst := &a.V4
		if ip.Is6() {
			dst = &a.V6
		}
		if dst.IsValid() {
			return ipam.Addresses{}, fmt.Errorf("two addresses of one family")
		}
		*dst = ip
	}
	return a, nil
}

// externalGateway records the next hop of an OVN network's source routes
// when its pod asks for eip or snat on the cluster router (G11). A gateway
// that cannot be read holds back the routed phase only (RouteWait).
func (pl *Planner) externalGateway(np *NetworkPlan) {
	req := np.Request
	if np.Kind != AttachmentOVN || (!req.EIP.IsValid() && !req.SNAT.IsValid()) || !pl.routedOnClusterRouter(np.Subnet) {
		return
	}
	if pl.ExternalGateway == nil {
		np.RouteWait = fmt.Errorf("%w: not configured", ErrNoExternalGateway)
		return
	}
	np.ExternalGateway, np.RouteWait = pl.ExternalGateway.ExternalGateway()
}

// routeWait reports a network whose routed phase waits for the external
// gateway (E25): a Warning, and a slow retry that the ConfigMap's or the
// fallback Subnet's appearance brings forward.
func (t *Term) routeWait(pod *corev1.Pod, np *NetworkPlan) error {
	if np.RouteWait == nil || np.Port == "" || pod.Spec.NodeName == "" {
		return nil
	}
	err := fmt.Errorf("the routed phase of eip/snat waits for the external gateway: %w", np.RouteWait)
	if np.Attachment != "" {
		err = fmt.Errorf("attachment %s: %w", np.Attachment, err)
	}
	t.warn(pod, ReasonExternalGateway, err)
	return retryWith(err, retryUnknownSubnet)
}
