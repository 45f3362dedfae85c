package reconcile

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Annotation keys multus defines.
const (
	AnnotationNetworks       = "k8s.v1.cni.cncf.io/networks"
	AnnotationDefaultNetwork = "v1.multus-cni.io/default-network"
)

// cniTypeKubeOVN is the CNI type (and IPAM type) under which kube-ovn's
// plugin is installed; NADs naming it are the ones shardnet serves.
const cniTypeKubeOVN = "kube-ovn"

// maxIfName is the longest interface name Linux takes (IFNAMSIZ less the
// terminating NUL).
const maxIfName = 15

// NetworkSelection is one attachment a pod asks for.
type NetworkSelection struct {
	Namespace string   // the NAD's namespace; the pod's when not written
	Name      string   // the NAD's name
	Interface string   // requested interface name, "" when not written
	IPs       []string // requested addresses as written (JSON form only)
	MAC       string   // requested MAC as written (JSON form only)
}

// selectionJSON is one element of the JSON form. Fields multus defines but
// shardnet has no use for (default-route, cni-args, portMappings, bandwidth,
// deviceID, infiniband-guid) are left to encoding/json to skip, so a
// selection written for multus is never refused for carrying them.
type selectionJSON struct {
	Name      string   `json:"name"`
	Namespace string   `json:"namespace"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips"`
	MAC       string   `json:"mac"`
	// InterfaceRequest is the spelling of interface before multus 3.2;
	// multus still honours it when interface is absent, so a pod written
	// that way gets the name it asked for and shardnet must agree on it.
	InterfaceRequest string `json:"interfaceRequest"`
}

// ParseNetworkSelections parses the value of annotation key (AnnotationNetworks or
// AnnotationDefaultNetwork) of a pod in podNamespace. Every failure is an
// *InputError{Key: key, Value: value, Err: ...} (so errors.Is(err, ErrInvalidAnnotation)).
//
// The rules are multus's, so that shardnet allocates for exactly the
// attachments multus will create, plus checks whose failure multus would
// only report later and less clearly (a NAD name no object can have, an
// interface name the kernel refuses) and the rejection of the same
// attachment asked for twice. The default network, unlike multus, is looked
// up in the pod's namespace when none is written, as kube-ovn does: the
// providers kube-ovn derives, and so the annotations shardnet writes, are
// keyed by that namespace.
func ParseNetworkSelections(key, value, podNamespace string) ([]NetworkSelection, error) {
	sels, err := parseNetworkSelections(value, podNamespace)
	if err == nil {
		err = checkDuplicates(sels)
	}
	if err == nil && key == AnnotationDefaultNetwork && len(sels) > 1 {
		// multus replaces the pod's one default network with this
		// attachment, so it refuses a list of them.
		err = fmt.Errorf("%d networks named; a pod has one default network", len(sels))
	}
	if err != nil {
		return nil, &InputError{Key: key, Value: value, Err: err}
	}
	if len(sels) == 0 {
		return nil, nil
	}
	return sels, nil
}

func parseNetworkSelections(value, podNamespace string) ([]NetworkSelection, error) {
	trimmed := strings.TrimSpace(value)
	switch {
	case trimmed == "":
		return nil, nil
	case strings.HasPrefix(trimmed, "["):
		return parseSelectionsJSON(trimmed, podNamespace)
	case strings.HasPrefix(trimmed, "{"):
		// Would otherwise be read as a (bad) name; saying what is wrong
		// helps whoever wrote a lone object where multus wants a list.
		return nil, errors.New("the JSON form is a list of objects: wrap the object in [ ]")
	case strings.ContainsAny(trimmed, `[{"`):
		// multus takes any value with one of these for JSON, and refuses
		// it when it is not a JSON list; the text form's interface part
		// would otherwise let them through.
		return nil, errors.New(`[, { or " outside a JSON list`)
	}
	var sels []NetworkSelection
	for _, entry := range splitComma(trimmed) {
		sel, err := parseSelectionText(entry, podNamespace)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", entry, err)
		}
		sels = append(sels, sel)
	}
	return sels, nil
}

// parseSelectionText reads one entry of the text form:
// [namespace/]name[@interface], spaces around each part ignored as multus
// ignores them.
func parseSelectionText(entry, podNamespace string) (NetworkSelection, error) {
	if strings.Count(entry, "/") > 1 {
		return NetworkSelection{}, errors.New(`more than one "/"`)
	}
	if strings.Count(entry, "@") > 1 {
		return NetworkSelection{}, errors.New(`more than one "@"`)
	}
	sel := NetworkSelection{Namespace: podNamespace}
	rest := entry
	if ns, after, ok := strings.Cut(entry, "/"); ok {
		if sel.Namespace = strings.TrimSpace(ns); sel.Namespace == "" {
			return NetworkSelection{}, errors.New(`empty namespace before "/"`)
		}
		rest = after
	}
	// An "@" with nothing after it is no interface request: multus and
	// kube-ovn both read "net@" as "net", and refusing it would leave
	// shardnet without addresses for a pod multus runs.
	name, iface, _ := strings.Cut(rest, "@")
	sel.Name, sel.Interface = strings.TrimSpace(name), strings.TrimSpace(iface)
	if sel.Name == "" {
		return NetworkSelection{}, errors.New("empty network name")
	}
	// multus holds the text form to DNS-1123 label characters, so a NAD
	// whose name has dots can only be named in the JSON form.
	if strings.Contains(sel.Name, ".") {
		return NetworkSelection{}, fmt.Errorf("network name %q: the text form allows no dots; use the JSON form", sel.Name)
	}
	if err := checkSelection(sel); err != nil {
		return NetworkSelection{}, err
	}
	return sel, nil
}

func parseSelectionsJSON(value, podNamespace string) ([]NetworkSelection, error) {
	var elems []selectionJSON
	if err := json.Unmarshal([]byte(value), &elems); err != nil {
		return nil, fmt.Errorf("JSON form: %w", err)
	}
	sels := make([]NetworkSelection, 0, len(elems))
	for i, e := range elems {
		sel := NetworkSelection{
			Namespace: e.Namespace,
			Name:      e.Name,
			Interface: e.Interface,
			IPs:       e.IPs,
			MAC:       e.MAC,
		}
		if sel.Namespace == "" {
			sel.Namespace = podNamespace
		}
		if sel.Interface == "" {
			sel.Interface = e.InterfaceRequest
		}
		if len(sel.IPs) == 0 {
			sel.IPs = nil // "ips": [] asks for nothing, like no "ips"
		}
		if err := checkSelectionJSON(sel); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		sels = append(sels, sel)
	}
	return sels, nil
}

func checkSelectionJSON(sel NetworkSelection) error {
	if sel.Name == "" {
		return errors.New(`missing "name"`)
	}
	if err := checkSelection(sel); err != nil {
		return err
	}
	// multus accepts an address with or without a prefix length here and
	// refuses anything else; the value is kept as written because it is
	// passed on to the plugin in that form.
	for _, ip := range sel.IPs {
		if strings.Contains(ip, "/") {
			if _, err := netip.ParsePrefix(ip); err != nil {
				return fmt.Errorf("ips: %q is not an address/prefix", ip)
			}
			continue
		}
		// A zone (fe80::1%eth0) parses but names an interface of some
		// other host; multus refuses it too.
		if a, err := netip.ParseAddr(ip); err != nil || a.Zone() != "" {
			return fmt.Errorf("ips: %q is not an address", ip)
		}
	}
	// Any length net.ParseMAC takes, as multus does: this parser also reads
	// attachments that are not kube-ovn's, and their MACs are not shardnet's
	// to restrict. Whoever allocates on OVN checks for 48 bits.
	if sel.MAC != "" {
		if _, err := net.ParseMAC(sel.MAC); err != nil {
			return fmt.Errorf("mac: %q is not a MAC address", sel.MAC)
		}
	}
	return nil
}

// checkSelection holds every selection, whichever form it came in, to what
// the objects it names can be: a namespace is a DNS-1123 label and a NAD
// name a DNS-1123 subdomain, so anything else can never resolve. The
// namespace is checked even when it is the pod's, so that no selection
// leaves here without one.
func checkSelection(sel NetworkSelection) error {
	if errs := validation.IsDNS1123Label(sel.Namespace); len(errs) > 0 {
		return fmt.Errorf("namespace %q: %s", sel.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(sel.Name); len(errs) > 0 {
		return fmt.Errorf("network name %q: %s", sel.Name, strings.Join(errs, "; "))
	}
	if sel.Interface != "" {
		if err := checkIfName(sel.Interface); err != nil {
			return fmt.Errorf("interface %q: %w", sel.Interface, err)
		}
	}
	return nil
}

// checkIfName applies the kernel's rule for interface names. multus checks
// only part of it; a name the kernel refuses would fail the pod's sandbox
// after shardnet had allocated for it.
func checkIfName(s string) error {
	if len(s) > maxIfName {
		return fmt.Errorf("longer than %d bytes", maxIfName)
	}
	if s == "." || s == ".." {
		return errors.New("not a name")
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '/', ':', 0, ' ', '\t', '\n', '\v', '\f', '\r':
			return fmt.Errorf("contains %q", s[i])
		}
	}
	return nil
}

// checkDuplicates refuses the same attachment (NAD and interface) twice:
// multus would create two interfaces of one network, and kube-ovn would
// write both under the one provider's annotations. The pod's namespace has
// been filled in by now, so "net" and "<pod ns>/net" are the same.
func checkDuplicates(sels []NetworkSelection) error {
	type key struct{ ns, name, iface string }
	seen := make(map[key]struct{}, len(sels))
	for _, s := range sels {
		k := key{s.Namespace, s.Name, s.Interface}
		if _, dup := seen[k]; dup {
			if s.Interface != "" {
				return fmt.Errorf("%s/%s@%s is asked for twice", s.Namespace, s.Name, s.Interface)
			}
			return fmt.Errorf("%s/%s is asked for twice", s.Namespace, s.Name)
		}
		seen[k] = struct{}{}
	}
	return nil
}

// NetConf is what shardnet reads from a NetworkAttachmentDefinition's spec.config.
type NetConf struct {
	Type         string // the CNI type of the plugin that matters (see below)
	Provider     string // that plugin's "provider", if any
	IPAMType     string // that plugin's ipam.type
	IPAMProvider string // that plugin's ipam.provider, if any
}

// AttachmentKind says what an attachment is to shardnet.
type AttachmentKind int

const (
	AttachmentForeign  AttachmentKind = iota // not kube-ovn's: ignored
	AttachmentOVN                            // type kube-ovn: port, routed phase, full annotations
	AttachmentIPAMOnly                       // ipam.type kube-ovn only: addresses and a few annotations
)

func (k AttachmentKind) String() string {
	switch k {
	case AttachmentForeign:
		return "foreign"
	case AttachmentOVN:
		return "ovn"
	case AttachmentIPAMOnly:
		return "ipam-only"
	}
	return fmt.Sprintf("AttachmentKind(%d)", int(k))
}

// ErrNetConf is matched (errors.Is) by every error ParseNetConf returns.
var ErrNetConf = errors.New("invalid NetworkAttachmentDefinition config")

// pluginJSON is one CNI plugin config. Only type is read strictly, since
// CNI requires it to be a string. provider and ipam belong to the plugin
// (and the IPAM plugin) that defines them, so they are kept raw and read
// only when the plugin turns out to be kube-ovn's: a foreign plugin that
// uses either name for something else is not shardnet's to refuse.
type pluginJSON struct {
	Type     string          `json:"type"`
	Provider json.RawMessage `json:"provider"`
	IPAM     json.RawMessage `json:"ipam"`
}

// confJSON is a single plugin config or a conflist.
type confJSON struct {
	pluginJSON
	Plugins []pluginJSON `json:"plugins"`
}

// ipamJSON is the part of a plugin's ipam section shardnet reads.
type ipamJSON struct {
	Type     json.RawMessage `json:"type"`
	Provider json.RawMessage `json:"provider"`
}

// ParseNetConf reads a NAD config: a single CNI config or a conflist ("plugins": [...]).
// For a conflist the plugin that matters is the first with type "kube-ovn", else the first
// whose ipam.type is "kube-ovn", else the first plugin. Errors wrap ErrNetConf.
//
// A config with a non-empty "type" is a single config even if it also has
// "plugins", which is how kube-ovn and multus load a delegate.
func ParseNetConf(config string) (NetConf, error) {
	var c confJSON
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		return NetConf{}, fmt.Errorf("%w: %w", ErrNetConf, err)
	}
	if c.Type != "" {
		return readPlugin(c.pluginJSON)
	}
	if c.Plugins == nil {
		return NetConf{}, fmt.Errorf(`%w: neither "type" nor "plugins"`, ErrNetConf)
	}
	if len(c.Plugins) == 0 {
		return NetConf{}, fmt.Errorf("%w: a conflist with no plugins", ErrNetConf)
	}
	for i, p := range c.Plugins {
		// libcni refuses such a list, so multus never runs it.
		if p.Type == "" {
			return NetConf{}, fmt.Errorf(`%w: plugin %d has no "type"`, ErrNetConf, i)
		}
	}
	chosen := c.Plugins[0]
	if i := firstPlugin(c.Plugins, func(p pluginJSON) bool { return p.Type == cniTypeKubeOVN }); i >= 0 {
		chosen = c.Plugins[i]
	} else if i := firstPlugin(c.Plugins, func(p pluginJSON) bool { return ipamType(p) == cniTypeKubeOVN }); i >= 0 {
		chosen = c.Plugins[i]
	}
	return readPlugin(chosen)
}

func firstPlugin(ps []pluginJSON, match func(pluginJSON) bool) int {
	for i, p := range ps {
		if match(p) {
			return i
		}
	}
	return -1
}

// ipamType is p's ipam.type, or "" when p has none or one that is not a
// string (so, not kube-ovn's).
func ipamType(p pluginJSON) string {
	var ipam ipamJSON
	if json.Unmarshal(p.IPAM, &ipam) != nil {
		return ""
	}
	t, _ := rawString(ipam.Type)
	return t
}

// readPlugin fills a NetConf from the plugin that matters. For a kube-ovn
// plugin or IPAM, a provider that is not a string is an error, since the
// provider decides which annotations and subnets the attachment uses; for
// anything else the fields are read where they are strings and otherwise
// left empty.
func readPlugin(p pluginJSON) (NetConf, error) {
	nc := NetConf{Type: p.Type}
	var ipam ipamJSON
	ipamOK := len(p.IPAM) == 0 || json.Unmarshal(p.IPAM, &ipam) == nil
	var typeOK, ipamProvOK, provOK bool
	nc.IPAMType, typeOK = rawString(ipam.Type)
	nc.IPAMProvider, ipamProvOK = rawString(ipam.Provider)
	nc.Provider, provOK = rawString(p.Provider)

	switch nc.Kind() {
	case AttachmentOVN:
		if !provOK {
			return NetConf{}, fmt.Errorf(`%w: "provider" is not a string`, ErrNetConf)
		}
		if !ipamOK || !typeOK || !ipamProvOK {
			return NetConf{}, fmt.Errorf(`%w: "ipam" of a kube-ovn plugin is not an object of strings`, ErrNetConf)
		}
	case AttachmentIPAMOnly:
		if !ipamProvOK {
			return NetConf{}, fmt.Errorf(`%w: "ipam.provider" is not a string`, ErrNetConf)
		}
	}
	return nc, nil
}

// rawString reads an optional JSON string: absent or null is "", true; a
// string is itself, true; anything else is "", false.
func rawString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// Kind classifies a parsed config.
func (c NetConf) Kind() AttachmentKind {
	switch {
	case c.Type == cniTypeKubeOVN:
		return AttachmentOVN
	case c.IPAMType == cniTypeKubeOVN:
		return AttachmentIPAMOnly
	}
	return AttachmentForeign
}

// AttachmentProvider is the provider name of attachment sel with config c:
// OVN: c.Provider if set, else "<name>.<namespace>.ovn"; IPAM-only: c.IPAMProvider if set,
// else "<name>.<namespace>"; foreign: "".
//
// These are the names kube-ovn derives, so the per-provider annotations
// shardnet writes are the ones kube-ovn's CNI reads.
func AttachmentProvider(sel NetworkSelection, c NetConf) string {
	switch c.Kind() {
	case AttachmentOVN:
		if c.Provider != "" {
			return c.Provider
		}
		return sel.Name + "." + sel.Namespace + ".ovn"
	case AttachmentIPAMOnly:
		if c.IPAMProvider != "" {
			return c.IPAMProvider
		}
		return sel.Name + "." + sel.Namespace
	}
	return ""
}
