package reconcile

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

const podNS = "pod-ns"

func TestParseNetworkSelections(t *testing.T) {
	long253 := strings.Repeat("a", 253)
	long254 := strings.Repeat("a", 254)
	ns63 := strings.Repeat("n", 63)
	ns64 := strings.Repeat("n", 64)

	type sels = []NetworkSelection
	cases := []struct {
		name    string
		key     string // AnnotationNetworks when empty
		value   string
		podNS   string // podNS when empty
		want    sels
		wantErr string // a part of the error; "" for success
	}{
		// Empty values ask for nothing.
		{name: "empty", value: "", want: nil},
		{name: "only spaces", value: "  \t ", want: nil},
		{name: "only commas", value: " , ,, ", want: nil},
		{name: "empty JSON list", value: " [ ] ", want: nil},

		// Text form.
		{name: "text name", value: "net1", want: sels{{Namespace: podNS, Name: "net1"}}},
		{name: "text namespace/name", value: "other/net1", want: sels{{Namespace: "other", Name: "net1"}}},
		{name: "text name@iface", value: "net1@eth1", want: sels{{Namespace: podNS, Name: "net1", Interface: "eth1"}}},
		{name: "text namespace/name@iface", value: "other/net1@net9",
			want: sels{{Namespace: "other", Name: "net1", Interface: "net9"}}},
		{name: "text spaces around parts and entries", value: "  other / net1 @ eth1 ,net2 ,, ",
			want: sels{{Namespace: "other", Name: "net1", Interface: "eth1"}, {Namespace: podNS, Name: "net2"}}},
		{name: "text keeps order", value: "c,a,b",
			want: sels{{Namespace: podNS, Name: "c"}, {Namespace: podNS, Name: "a"}, {Namespace: podNS, Name: "b"}}},
		{name: "text empty interface is none", value: "net1@", want: sels{{Namespace: podNS, Name: "net1"}}},
		{name: "text longest name", value: long253, want: sels{{Namespace: podNS, Name: long253}}},
		{name: "text longest namespace", value: ns63 + "/net1", want: sels{{Namespace: ns63, Name: "net1"}}},
		{name: "text interface of 15 bytes", value: "net1@abcdefghijklmno",
			want: sels{{Namespace: podNS, Name: "net1", Interface: "abcdefghijklmno"}}},
		{name: "text same NAD on two interfaces", value: "net1@eth1,net1@eth2",
			want: sels{{Namespace: podNS, Name: "net1", Interface: "eth1"}, {Namespace: podNS, Name: "net1", Interface: "eth2"}}},
		{name: "text same name in two namespaces", value: "net1,other/net1",
			want: sels{{Namespace: podNS, Name: "net1"}, {Namespace: "other", Name: "net1"}}},

		{name: "text two slashes", value: "a/b/c", wantErr: `more than one "/"`},
		{name: "text two ats", value: "net1@eth1@eth2", wantErr: `more than one "@"`},
		{name: "text empty namespace", value: "/net1", wantErr: "empty namespace"},
		{name: "text blank namespace", value: "  /net1", wantErr: "empty namespace"},
		{name: "text empty name after namespace", value: "other/", wantErr: "empty network name"},
		{name: "text empty name before at", value: "@eth1", wantErr: "empty network name"},
		{name: "text empty name between", value: "other/ @eth1", wantErr: "empty network name"},
		{name: "text upper case name", value: "Net1", wantErr: `network name "Net1"`},
		{name: "text underscore name", value: "net_1", wantErr: `network name "net_1"`},
		{name: "text leading dash", value: "-net1", wantErr: `network name "-net1"`},
		{name: "text trailing dash", value: "net1-", wantErr: `network name "net1-"`},
		{name: "text dotted name", value: "net.v1", wantErr: "allows no dots"},
		{name: "text name too long", value: long254, wantErr: "network name"},
		{name: "text upper case namespace", value: "Other/net1", wantErr: `namespace "Other"`},
		{name: "text dotted namespace", value: "a.b/net1", wantErr: `namespace "a.b"`},
		{name: "text namespace too long", value: ns64 + "/net1", wantErr: "namespace"},
		{name: "text at in namespace", value: "ns@x/net1", wantErr: `namespace "ns@x"`},
		{name: "text interface after slash", value: "net1@eth1/x", wantErr: `namespace "net1@eth1"`},
		{name: "text interface too long", value: "net1@abcdefghijklmnop", wantErr: "longer than 15"},
		{name: "text interface with colon", value: "net1@eth0:1", wantErr: "interface"},
		{name: "text interface dot", value: "net1@.", wantErr: "not a name"},
		{name: "text interface dotdot", value: "net1@..", wantErr: "not a name"},
		{name: "text quote", value: `"net1"`, wantErr: "outside a JSON list"},
		{name: "text JSON characters in interface", value: `net1@eth{1`, wantErr: "outside a JSON list"},
		{name: "text bracket later", value: `net1, [net2]`, wantErr: "outside a JSON list"},
		{name: "text bad entry among good", value: "net1,Bad,net2", wantErr: `entry "Bad"`},
		{name: "lone JSON object", value: `{"name":"net1"}`, wantErr: "wrap the object"},
		{name: "pod namespace empty", value: "net1", podNS: "-", wantErr: "namespace"},

		// Duplicates.
		{name: "dup text", value: "net1,net1", wantErr: "asked for twice"},
		{name: "dup text with pod namespace written", value: "net1, pod-ns/net1", wantErr: "pod-ns/net1 is asked for twice"},
		{name: "dup text interface", value: "net1@eth1,other/x,net1@eth1", wantErr: "pod-ns/net1@eth1 is asked for twice"},
		{name: "dup JSON", value: `[{"name":"net1"},{"name":"net1","namespace":"pod-ns"}]`, wantErr: "asked for twice"},
		{name: "dup JSON interfaceRequest", value: `[{"name":"net1","interface":"e1"},{"name":"net1","interfaceRequest":"e1"}]`,
			wantErr: "asked for twice"},

		// The default network.
		{name: "default network", key: AnnotationDefaultNetwork, value: "other/ovn-net",
			want: sels{{Namespace: "other", Name: "ovn-net"}}},
		{name: "default network in pod namespace", key: AnnotationDefaultNetwork, value: `[{"name":"ovn-net"}]`,
			want: sels{{Namespace: podNS, Name: "ovn-net"}}},
		{name: "default network empty", key: AnnotationDefaultNetwork, value: "", want: nil},
		{name: "two default networks", key: AnnotationDefaultNetwork, value: "a,b", wantErr: "one default network"},
		{name: "two networks are fine", value: "a,b",
			want: sels{{Namespace: podNS, Name: "a"}, {Namespace: podNS, Name: "b"}}},

		// JSON form.
		{name: "JSON name", value: `[{"name":"net1"}]`, want: sels{{Namespace: podNS, Name: "net1"}}},
		{name: "JSON leading space", value: "\n  [{\"name\":\"net1\"}]\n", want: sels{{Namespace: podNS, Name: "net1"}}},
		{name: "JSON empty namespace is the pod's", value: `[{"name":"net1","namespace":""}]`,
			want: sels{{Namespace: podNS, Name: "net1"}}},
		{name: "JSON every field", value: `[{"name":"net1","namespace":"other","interface":"eth1",` +
			`"ips":["10.0.0.5","fd00::5/64","10.1.0.7/24","::ffff:10.0.0.9"],"mac":"02:00:00:00:00:01"}]`,
			want: sels{{Namespace: "other", Name: "net1", Interface: "eth1",
				IPs: []string{"10.0.0.5", "fd00::5/64", "10.1.0.7/24", "::ffff:10.0.0.9"}, MAC: "02:00:00:00:00:01"}}},
		{name: "JSON MAC as written", value: `[{"name":"net1","mac":"02-00-00-AA-BB-01"}]`,
			want: sels{{Namespace: podNS, Name: "net1", MAC: "02-00-00-AA-BB-01"}}},
		{name: "JSON other multus fields ignored", value: `[{"name":"net1","default-route":["10.0.0.1"],` +
			`"cni-args":{"a":[1,{"b":null}]},"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}],` +
			`"bandwidth":{"ingressRate":1000},"deviceID":"0000:00:01.0","infiniband-guid":"c2:11:22:33:44:55:66:77","x-unknown":true}]`,
			want: sels{{Namespace: podNS, Name: "net1"}}},
		{name: "JSON interfaceRequest", value: `[{"name":"net1","interfaceRequest":"eth9"}]`,
			want: sels{{Namespace: podNS, Name: "net1", Interface: "eth9"}}},
		{name: "JSON interface beats interfaceRequest", value: `[{"name":"net1","interface":"eth1","interfaceRequest":"eth9"}]`,
			want: sels{{Namespace: podNS, Name: "net1", Interface: "eth1"}}},
		{name: "JSON dotted name", value: `[{"name":"net.v1","namespace":"other"}]`,
			want: sels{{Namespace: "other", Name: "net.v1"}}},
		{name: "JSON empty ips", value: `[{"name":"net1","ips":[]}]`, want: sels{{Namespace: podNS, Name: "net1"}}},
		{name: "JSON several", value: `[{"name":"a"},{"name":"b","namespace":"other","interface":"net2"}]`,
			want: sels{{Namespace: podNS, Name: "a"}, {Namespace: "other", Name: "b", Interface: "net2"}}},

		{name: "JSON missing name", value: `[{"namespace":"other"}]`, wantErr: `element 0: missing "name"`},
		{name: "JSON empty name", value: `[{"name":"a"},{"name":""}]`, wantErr: `element 1: missing "name"`},
		{name: "JSON null element", value: `[null]`, wantErr: `missing "name"`},
		{name: "JSON truncated", value: `[{"name":"net1"}`, wantErr: "JSON form"},
		{name: "JSON trailing data", value: `[{"name":"net1"}] net2`, wantErr: "JSON form"},
		{name: "JSON name not a string", value: `[{"name":5}]`, wantErr: "JSON form"},
		{name: "JSON list of strings", value: `["net1"]`, wantErr: "JSON form"},
		{name: "JSON ips not a list", value: `[{"name":"net1","ips":"10.0.0.1"}]`, wantErr: "JSON form"},
		{name: "JSON bad address", value: `[{"name":"net1","ips":["10.0.0.300"]}]`, wantErr: `"10.0.0.300" is not an address`},
		{name: "JSON empty address", value: `[{"name":"net1","ips":[""]}]`, wantErr: "is not an address"},
		{name: "JSON address with space", value: `[{"name":"net1","ips":[" 10.0.0.1"]}]`, wantErr: "is not an address"},
		{name: "JSON zoned address", value: `[{"name":"net1","ips":["fe80::1%eth0"]}]`, wantErr: "is not an address"},
		{name: "JSON bad prefix length", value: `[{"name":"net1","ips":["10.0.0.1/33"]}]`, wantErr: "not an address/prefix"},
		{name: "JSON bad prefix address", value: `[{"name":"net1","ips":["10.0.0/24"]}]`, wantErr: "not an address/prefix"},
		{name: "JSON one bad address of two", value: `[{"name":"net1","ips":["10.0.0.1","x"]}]`, wantErr: `"x" is not an address`},
		{name: "JSON bad MAC", value: `[{"name":"net1","mac":"02:00:00:00:00"}]`, wantErr: "not a MAC"},
		{name: "JSON bad name", value: `[{"name":"Net1"}]`, wantErr: `network name "Net1"`},
		{name: "JSON name with slash", value: `[{"name":"a/b"}]`, wantErr: `network name "a/b"`},
		{name: "JSON interface with brackets", value: `[{"name":"net1","interface":"e[1]"}]`,
			want: sels{{Namespace: podNS, Name: "net1", Interface: "e[1]"}}},
		{name: "JSON bad namespace", value: `[{"name":"net1","namespace":"a.b"}]`, wantErr: `namespace "a.b"`},
		{name: "JSON bad interface", value: `[{"name":"net1","interface":"a/b"}]`, wantErr: `interface "a/b"`},
		{name: "JSON interface with space", value: `[{"name":"net1","interface":"eth 1"}]`, wantErr: "interface"},
		{name: "JSON interface too long", value: `[{"name":"net1","interface":"abcdefghijklmnop"}]`, wantErr: "longer than 15"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := tc.key
			if key == "" {
				key = AnnotationNetworks
			}
			ns := podNS
			switch tc.podNS {
			case "":
			case "-":
				ns = ""
			default:
				ns = tc.podNS
			}
			got, err := ParseNetworkSelections(key, tc.value, ns)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseNetworkSelections(%q) error: %v", tc.value, err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("ParseNetworkSelections(%q)\n got %#v\nwant %#v", tc.value, got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseNetworkSelections(%q) = %#v, want an error with %q", tc.value, got, tc.wantErr)
			}
			if got != nil {
				t.Errorf("ParseNetworkSelections(%q) returned %#v with its error", tc.value, got)
			}
			var ie *InputError
			if !errors.As(err, &ie) || ie.Key != key || ie.Value != tc.value || !errors.Is(err, ErrInvalidAnnotation) {
				t.Fatalf("error %v is not an *InputError for %s=%q", err, key, tc.value)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %q does not say %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseNetConf(t *testing.T) {
	cases := []struct {
		name    string
		config  string
		want    NetConf
		kind    AttachmentKind
		wantErr string
	}{
		// Single configs.
		{name: "kube-ovn with provider",
			config: `{"cniVersion":"0.3.1","type":"kube-ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock","provider":"net1.ns1.ovn"}`,
			want:   NetConf{Type: "kube-ovn", Provider: "net1.ns1.ovn"}, kind: AttachmentOVN},
		{name: "kube-ovn without provider", config: `{"type":"kube-ovn"}`,
			want: NetConf{Type: "kube-ovn"}, kind: AttachmentOVN},
		{name: "kube-ovn with its ipam", config: `{"type":"kube-ovn","provider":"p.ovn","ipam":{"type":"kube-ovn","provider":"p.ovn","server_socket":"/s"}}`,
			want: NetConf{Type: "kube-ovn", Provider: "p.ovn", IPAMType: "kube-ovn", IPAMProvider: "p.ovn"}, kind: AttachmentOVN},
		{name: "macvlan with kube-ovn ipam", config: `{"cniVersion":"0.3.0","type":"macvlan","master":"eth0","mode":"bridge",` +
			`"ipam":{"type":"kube-ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock","provider":"mv.ns1"}}`,
			want: NetConf{Type: "macvlan", IPAMType: "kube-ovn", IPAMProvider: "mv.ns1"}, kind: AttachmentIPAMOnly},
		{name: "kube-ovn ipam without provider", config: `{"type":"macvlan","ipam":{"type":"kube-ovn"}}`,
			want: NetConf{Type: "macvlan", IPAMType: "kube-ovn"}, kind: AttachmentIPAMOnly},
		{name: "ipam-only ignores a foreign plugin's provider", config: `{"type":"sriov","provider":{"x":1},"ipam":{"type":"kube-ovn"}}`,
			want: NetConf{Type: "sriov", IPAMType: "kube-ovn"}, kind: AttachmentIPAMOnly},
		{name: "foreign with host-local", config: `{"type":"macvlan","ipam":{"type":"host-local","subnet":"10.1.0.0/16"}}`,
			want: NetConf{Type: "macvlan", IPAMType: "host-local"}, kind: AttachmentForeign},
		{name: "foreign without ipam", config: `{"type":"bridge"}`,
			want: NetConf{Type: "bridge"}, kind: AttachmentForeign},
		{name: "foreign with odd provider", config: `{"type":"sriov","provider":{"vendor":"x"}}`,
			want: NetConf{Type: "sriov"}, kind: AttachmentForeign},
		{name: "foreign with odd ipam", config: `{"type":"x","ipam":"dhcp"}`,
			want: NetConf{Type: "x"}, kind: AttachmentForeign},
		{name: "foreign with odd ipam fields", config: `{"type":"x","ipam":{"type":["a"],"provider":1}}`,
			want: NetConf{Type: "x"}, kind: AttachmentForeign},
		{name: "unknown fields ignored", config: `{"type":"kube-ovn","whatever":{"a":[1,2,{"b":null}]},"dns":{"nameservers":["10.96.0.10"]}}`,
			want: NetConf{Type: "kube-ovn"}, kind: AttachmentOVN},
		{name: "null provider is none", config: `{"type":"kube-ovn","provider":null,"ipam":null}`,
			want: NetConf{Type: "kube-ovn"}, kind: AttachmentOVN},
		{name: "type wins over plugins", config: `{"type":"bridge","plugins":[{"type":"kube-ovn"}]}`,
			want: NetConf{Type: "bridge"}, kind: AttachmentForeign},
		{name: "type case matters", config: `{"type":"Kube-OVN"}`,
			want: NetConf{Type: "Kube-OVN"}, kind: AttachmentForeign},

		// Conflists.
		{name: "conflist kube-ovn first", config: `{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"kube-ovn","provider":"p.ovn"},{"type":"portmap","capabilities":{"portMappings":true}}]}`,
			want: NetConf{Type: "kube-ovn", Provider: "p.ovn"}, kind: AttachmentOVN},
		{name: "conflist kube-ovn later", config: `{"plugins":[{"type":"tuning"},{"type":"kube-ovn"}]}`,
			want: NetConf{Type: "kube-ovn"}, kind: AttachmentOVN},
		{name: "conflist kube-ovn beats earlier kube-ovn ipam", config: `{"plugins":[{"type":"macvlan","ipam":{"type":"kube-ovn","provider":"a"}},{"type":"kube-ovn","provider":"b"}]}`,
			want: NetConf{Type: "kube-ovn", Provider: "b"}, kind: AttachmentOVN},
		{name: "conflist kube-ovn ipam later", config: `{"plugins":[{"type":"bridge","ipam":{"type":"host-local"}},{"type":"macvlan","ipam":{"type":"kube-ovn","provider":"mv.ns"}}]}`,
			want: NetConf{Type: "macvlan", IPAMType: "kube-ovn", IPAMProvider: "mv.ns"}, kind: AttachmentIPAMOnly},
		{name: "conflist first kube-ovn ipam of two", config: `{"plugins":[{"type":"a","ipam":{"type":"kube-ovn","provider":"first"}},{"type":"b","ipam":{"type":"kube-ovn","provider":"second"}}]}`,
			want: NetConf{Type: "a", IPAMType: "kube-ovn", IPAMProvider: "first"}, kind: AttachmentIPAMOnly},
		{name: "conflist foreign takes the first plugin", config: `{"plugins":[{"type":"bridge","ipam":{"type":"host-local"}},{"type":"portmap"}]}`,
			want: NetConf{Type: "bridge", IPAMType: "host-local"}, kind: AttachmentForeign},
		{name: "conflist odd ipam elsewhere", config: `{"plugins":[{"type":"tuning","ipam":"x"},{"type":"kube-ovn"}]}`,
			want: NetConf{Type: "kube-ovn"}, kind: AttachmentOVN},
		{name: "conflist with empty type at top", config: `{"type":"","plugins":[{"type":"kube-ovn"}]}`,
			want: NetConf{Type: "kube-ovn"}, kind: AttachmentOVN},

		// Errors.
		{name: "empty", config: "", wantErr: "unexpected end"},
		{name: "not JSON", config: "type: kube-ovn", wantErr: "invalid character"},
		{name: "truncated", config: `{"type":"kube-ovn"`, wantErr: "unexpected end"},
		{name: "trailing data", config: `{"type":"kube-ovn"} {}`, wantErr: "invalid character"},
		{name: "a list", config: `[{"type":"kube-ovn"}]`, wantErr: "cannot unmarshal"},
		{name: "a string", config: `"kube-ovn"`, wantErr: "cannot unmarshal"},
		{name: "null", config: `null`, wantErr: "neither"},
		{name: "empty object", config: `{}`, wantErr: "neither"},
		{name: "no type no plugins", config: `{"cniVersion":"1.0.0","name":"n","ipam":{"type":"kube-ovn"}}`, wantErr: "neither"},
		{name: "null plugins", config: `{"plugins":null}`, wantErr: "neither"},
		{name: "no plugins", config: `{"cniVersion":"1.0.0","name":"n","plugins":[]}`, wantErr: "no plugins"},
		{name: "plugin without type", config: `{"plugins":[{"type":"bridge"},{"ipam":{"type":"kube-ovn"}}]}`, wantErr: `plugin 1 has no "type"`},
		{name: "null plugin", config: `{"plugins":[null]}`, wantErr: `plugin 0 has no "type"`},
		{name: "type not a string", config: `{"type":5}`, wantErr: "cannot unmarshal"},
		{name: "plugins not a list", config: `{"plugins":{"type":"kube-ovn"}}`, wantErr: "cannot unmarshal"},
		{name: "plugin type not a string", config: `{"plugins":[{"type":true}]}`, wantErr: "cannot unmarshal"},
		{name: "kube-ovn provider not a string", config: `{"type":"kube-ovn","provider":5}`, wantErr: `"provider" is not a string`},
		{name: "kube-ovn ipam not an object", config: `{"type":"kube-ovn","ipam":"x"}`, wantErr: "not an object of strings"},
		{name: "kube-ovn ipam provider not a string", config: `{"type":"kube-ovn","ipam":{"provider":[]}}`, wantErr: "not an object of strings"},
		{name: "ipam-only provider not a string", config: `{"type":"macvlan","ipam":{"type":"kube-ovn","provider":["a"]}}`,
			wantErr: `"ipam.provider" is not a string`},
		{name: "conflist chosen plugin bad", config: `{"plugins":[{"type":"tuning"},{"type":"kube-ovn","provider":{}}]}`,
			wantErr: `"provider" is not a string`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNetConf(tc.config)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseNetConf(%s) error: %v", tc.config, err)
				}
				if got != tc.want || got.Kind() != tc.kind {
					t.Fatalf("ParseNetConf(%s) = %+v (%v), want %+v (%v)", tc.config, got, got.Kind(), tc.want, tc.kind)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseNetConf(%s) = %+v, want an error with %q", tc.config, got, tc.wantErr)
			}
			if !errors.Is(err, ErrNetConf) {
				t.Fatalf("error %v does not match ErrNetConf", err)
			}
			if got != (NetConf{}) {
				t.Errorf("ParseNetConf(%s) returned %+v with its error", tc.config, got)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %q does not say %q", err, tc.wantErr)
			}
		})
	}
}

// TestMultusAttachmentProvider checks the provider names against the ones
// kube-ovn derives, since they key the annotations kube-ovn's CNI reads.
func TestMultusAttachmentProvider(t *testing.T) {
	sel := NetworkSelection{Namespace: "ns1", Name: "net1", Interface: "eth1"}
	cases := []struct {
		name string
		conf NetConf
		want string
	}{
		{"ovn default", NetConf{Type: "kube-ovn"}, "net1.ns1.ovn"},
		{"ovn own provider", NetConf{Type: "kube-ovn", Provider: "custom.prov.ovn"}, "custom.prov.ovn"},
		{"ovn ignores ipam provider", NetConf{Type: "kube-ovn", IPAMType: "kube-ovn", IPAMProvider: "other"}, "net1.ns1.ovn"},
		{"ipam-only default", NetConf{Type: "macvlan", IPAMType: "kube-ovn"}, "net1.ns1"},
		{"ipam-only own provider", NetConf{Type: "macvlan", IPAMType: "kube-ovn", IPAMProvider: "mv.custom"}, "mv.custom"},
		{"ipam-only ignores plugin provider", NetConf{Type: "macvlan", Provider: "x", IPAMType: "kube-ovn"}, "net1.ns1"},
		{"foreign", NetConf{Type: "macvlan", IPAMType: "host-local"}, ""},
		{"foreign with providers", NetConf{Type: "sriov", Provider: "a", IPAMType: "whereabouts", IPAMProvider: "b"}, ""},
		{"empty", NetConf{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := AttachmentProvider(sel, tc.conf); got != tc.want {
				t.Fatalf("AttachmentProvider(%+v, %+v) = %q, want %q", sel, tc.conf, got, tc.want)
			}
		})
	}
}

// TestMultusEndToEnd runs an annotation and NAD configs through both
// parsers, as the reconciler does.
func TestMultusEndToEnd(t *testing.T) {
	nads := map[string]string{
		"ns1/ovn-a":  `{"cniVersion":"0.3.1","type":"kube-ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock"}`,
		"ns1/ovn-b":  `{"cniVersion":"0.3.1","type":"kube-ovn","provider":"b-custom.ovn"}`,
		"pod-ns/mv":  `{"cniVersion":"0.3.1","type":"macvlan","master":"eth0","ipam":{"type":"kube-ovn","server_socket":"/s"}}`,
		"pod-ns/hl":  `{"cniVersion":"0.3.1","type":"macvlan","ipam":{"type":"host-local","subnet":"10.9.0.0/16"}}`,
		"ns1/chain":  `{"cniVersion":"1.0.0","name":"chain","plugins":[{"type":"kube-ovn","provider":"chain.ns1.ovn"},{"type":"portmap"}]}`,
		"pod-ns/ipc": `{"plugins":[{"type":"ipvlan","ipam":{"type":"kube-ovn","provider":"ipc.fixed"}},{"type":"tuning"}]}`,
	}
	want := []struct {
		kind     AttachmentKind
		provider string
	}{
		{AttachmentOVN, "ovn-a.ns1.ovn"},
		{AttachmentOVN, "b-custom.ovn"},
		{AttachmentIPAMOnly, "mv.pod-ns"},
		{AttachmentForeign, ""},
		{AttachmentOVN, "chain.ns1.ovn"},
		{AttachmentIPAMOnly, "ipc.fixed"},
	}
	for _, tc := range []struct{ name, value string }{
		{"text", "ns1/ovn-a@net1, ns1/ovn-b, mv@net3, hl, ns1/chain, ipc"},
		{"JSON", `[{"name":"ovn-a","namespace":"ns1","interface":"net1","ips":["10.16.0.9"]},{"name":"ovn-b","namespace":"ns1"},` +
			`{"name":"mv","interface":"net3","mac":"02:00:00:00:00:03"},{"name":"hl"},{"name":"chain","namespace":"ns1"},{"name":"ipc"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sels, err := ParseNetworkSelections(AnnotationNetworks, tc.value, podNS)
			if err != nil {
				t.Fatal(err)
			}
			if len(sels) != len(want) {
				t.Fatalf("got %d selections, want %d", len(sels), len(want))
			}
			for i, sel := range sels {
				conf, err := ParseNetConf(nads[sel.Namespace+"/"+sel.Name])
				if err != nil {
					t.Fatalf("%s/%s: %v", sel.Namespace, sel.Name, err)
				}
				if k, p := conf.Kind(), AttachmentProvider(sel, conf); k != want[i].kind || p != want[i].provider {
					t.Errorf("%s/%s: kind %v provider %q, want %v %q", sel.Namespace, sel.Name, k, p, want[i].kind, want[i].provider)
				}
			}
		})
	}
}

func TestMultusAttachmentKindString(t *testing.T) {
	for k, want := range map[AttachmentKind]string{
		AttachmentForeign:  "foreign",
		AttachmentOVN:      "ovn",
		AttachmentIPAMOnly: "ipam-only",
		AttachmentKind(7):  "AttachmentKind(7)",
		AttachmentKind(-1): "AttachmentKind(-1)",
	} {
		t.Run(want, func(t *testing.T) {
			if got := k.String(); got != want {
				t.Fatalf("AttachmentKind(%d).String() = %q, want %q", int(k), got, want)
			}
		})
	}
}

// selectionsToJSON writes sels back in multus's JSON form, every namespace
// explicit.
func selectionsToJSON(t *testing.T, sels []NetworkSelection) string {
	type elem struct {
		Name      string   `json:"name"`
		Namespace string   `json:"namespace"`
		Interface string   `json:"interface,omitempty"`
		IPs       []string `json:"ips,omitempty"`
		MAC       string   `json:"mac,omitempty"`
	}
	out := make([]elem, len(sels))
	for i, s := range sels {
		out[i] = elem{s.Name, s.Namespace, s.Interface, s.IPs, s.MAC}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// selectionsToText writes sels back in the text form, or reports that the
// text form cannot carry them.
func selectionsToText(sels []NetworkSelection) (string, bool) {
	parts := make([]string, len(sels))
	for i, s := range sels {
		if s.IPs != nil || s.MAC != "" || strings.Contains(s.Name, ".") || strings.ContainsAny(s.Interface, `,/@[{"`) {
			return "", false
		}
		parts[i] = s.Namespace + "/" + s.Name
		if s.Interface != "" {
			parts[i] += "@" + s.Interface
		}
	}
	return strings.Join(parts, ", "), true
}

func FuzzParseNetworkSelections(f *testing.F) {
	for _, v := range []string{
		"", " ", ",,", "net1", "ns/net1", "net1@eth1", "ns/net1@eth1", " ns / net1 @ eth1 , net2 ",
		"a,b,c", "net1@", "a/b/c", "a@b@c", "/net", "ns/", "@eth1", "Net1", "net.v1", "net1,net1",
		"net1@eth1,net1@eth2", "ns@x/net", "net1@eth0:1", "net1@abcdefghijklmnop", `{"name":"net1"}`,
		`[]`, `[{"name":"net1"}]`, `[{"name":"net1","namespace":"other","interface":"eth1","ips":["10.0.0.5","fd00::5/64"],"mac":"02:00:00:00:00:01"}]`,
		`[{"name":"net1","default-route":["10.0.0.1"],"cni-args":{"a":1},"portMappings":[{"hostPort":80}]}]`,
		`[{"name":"net1","interfaceRequest":"eth9"}]`, `[{"namespace":"x"}]`, `[null]`, `[{"name":"a"},{"name":"a"}]`,
		`[{"name":"net1","ips":["fe80::1%eth0"]}]`, `[{"name":"net1","mac":"zz"}]`, `[{"name":"net.v1","interface":"a,b"}]`,
		`[{"name":"n","ips":["10.0.0.1/33"]}]`, `["net1"]`, `[{"name":"net1"}`, "0/0@\x8a",
	} {
		f.Add(v, podNS, false)
		f.Add(v, "", true)
	}
	f.Add("net1", "Bad_NS", false)
	f.Fuzz(func(t *testing.T, value, podNamespace string, defaultNet bool) {
		key := AnnotationNetworks
		if defaultNet {
			key = AnnotationDefaultNetwork
		}
		sels, err := ParseNetworkSelections(key, value, podNamespace)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) || ie.Key != key || ie.Value != value || !errors.Is(err, ErrInvalidAnnotation) {
				t.Fatalf("ParseNetworkSelections(%q, %q) error %v is not an *InputError for the annotation", value, podNamespace, err)
			}
			if sels != nil {
				t.Fatalf("ParseNetworkSelections(%q, %q) returned %v with its error", value, podNamespace, sels)
			}
			return
		}
		if defaultNet && len(sels) > 1 {
			t.Fatalf("%d default networks from %q", len(sels), value)
		}
		isJSON := strings.HasPrefix(strings.TrimSpace(value), "[")
		seen := map[[3]string]bool{}
		for _, s := range sels {
			if s.Name == "" || s.Namespace == "" {
				t.Fatalf("ParseNetworkSelections(%q, %q): selection %+v lacks a name or namespace", value, podNamespace, s)
			}
			if len(validation.IsDNS1123Label(s.Namespace)) > 0 || len(validation.IsDNS1123Subdomain(s.Name)) > 0 {
				t.Fatalf("ParseNetworkSelections(%q, %q): selection %+v names no possible object", value, podNamespace, s)
			}
			if len(s.Interface) > maxIfName {
				t.Fatalf("ParseNetworkSelections(%q, %q): interface %q too long", value, podNamespace, s.Interface)
			}
			if !isJSON && (s.IPs != nil || s.MAC != "") {
				t.Fatalf("text form %q gave addresses: %+v", value, s)
			}
			k := [3]string{s.Namespace, s.Name, s.Interface}
			if seen[k] {
				t.Fatalf("ParseNetworkSelections(%q) let %v through twice", value, k)
			}
			seen[k] = true
		}
		// What was accepted is accepted again, unchanged, when written out in
		// either form. Only interface names can hold bytes that are not
		// UTF-8 (the kernel takes them), and JSON cannot carry those.
		for _, s := range sels {
			if !utf8.ValidString(s.Interface) {
				return
			}
		}
		js := selectionsToJSON(t, sels)
		back, err := ParseNetworkSelections(key, js, "elsewhere")
		if err != nil || !reflect.DeepEqual(back, sels) {
			t.Fatalf("%q parsed to %+v; as JSON %s it parses to %+v, %v", value, sels, js, back, err)
		}
		if text, ok := selectionsToText(sels); ok {
			back, err := ParseNetworkSelections(key, text, "elsewhere")
			if err != nil || !reflect.DeepEqual(back, sels) {
				t.Fatalf("%q parsed to %+v; as text %q it parses to %+v, %v", value, sels, text, back, err)
			}
		}
	})
}

func FuzzParseNetConf(f *testing.F) {
	for _, c := range []string{
		`{"cniVersion":"0.3.1","type":"kube-ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock","provider":"net1.ns1.ovn"}`,
		`{"type":"kube-ovn"}`,
		`{"type":"macvlan","master":"eth0","ipam":{"type":"kube-ovn","provider":"mv.ns1"}}`,
		`{"type":"macvlan","ipam":{"type":"host-local","subnet":"10.1.0.0/16"}}`,
		`{"type":"sriov","provider":{"x":1}}`, `{"type":"x","ipam":"dhcp"}`,
		`{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"kube-ovn","provider":"p"},{"type":"portmap"}]}`,
		`{"plugins":[{"type":"bridge","ipam":{"type":"host-local"}},{"type":"macvlan","ipam":{"type":"kube-ovn"}}]}`,
		`{"plugins":[{"type":"tuning"},{"type":"kube-ovn","provider":{}}]}`,
		`{"type":"bridge","plugins":[{"type":"kube-ovn"}]}`,
		"", "null", "{}", "[]", `{"plugins":[]}`, `{"plugins":[{}]}`, `{"type":5}`, `{"type":"kube-ovn","ipam":"x"}`,
		`{"type":"kube-ovn","provider":5}`, `{"type":"macvlan","ipam":{"type":"kube-ovn","provider":["a"]}}`,
	} {
		f.Add(c)
	}
	sel := NetworkSelection{Namespace: "ns1", Name: "net1"}
	f.Fuzz(func(t *testing.T, config string) {
		c, err := ParseNetConf(config)
		if err != nil {
			if !errors.Is(err, ErrNetConf) {
				t.Fatalf("ParseNetConf(%q) error %v does not match ErrNetConf", config, err)
			}
			if c != (NetConf{}) {
				t.Fatalf("ParseNetConf(%q) returned %+v with its error", config, c)
			}
			return
		}
		if c.Type == "" {
			t.Fatalf("ParseNetConf(%q) = %+v: no type", config, c)
		}
		k := c.Kind()
		switch {
		case c.Type == "kube-ovn" && k != AttachmentOVN,
			c.Type != "kube-ovn" && c.IPAMType == "kube-ovn" && k != AttachmentIPAMOnly,
			c.Type != "kube-ovn" && c.IPAMType != "kube-ovn" && k != AttachmentForeign:
			t.Fatalf("ParseNetConf(%q) = %+v classified %v", config, c, k)
		}
		if strings.HasPrefix(k.String(), "AttachmentKind(") {
			t.Fatalf("kind %d has no name", int(k))
		}
		if p := AttachmentProvider(sel, c); (p == "") != (k == AttachmentForeign) {
			t.Fatalf("ParseNetConf(%q) = %+v (%v) has provider %q", config, c, k, p)
		}
		// A single config means the same as a conflist of just it.
		var probe struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(config), &probe) == nil && probe.Type != "" {
			list := `{"plugins":[` + config + `]}`
			if lc, err := ParseNetConf(list); err != nil || lc != c {
				t.Fatalf("ParseNetConf(%q) = %+v, but as a conflist %+v, %v", config, c, lc, err)
			}
		}
	})
}
