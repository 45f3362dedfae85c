package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/test/harness"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestResolveNBEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name         string
		flag, alias  string
		env          func(string) string
		want         []string
		source, fail string // source contains; fail: the error contains
	}{
		{name: "--nb-endpoints", flag: "tcp:10.0.0.1:6641, tcp:10.0.0.2:6641", env: envOf(),
			want: []string{"tcp:10.0.0.1:6641", "tcp:10.0.0.2:6641"}, source: "--nb-endpoints"},
		{name: "--ovn-nb-addr alone, bracketed hosts", alias: "tcp:[10.0.0.1]:6641,tcp:[fd00::2]:6641", env: envOf(),
			want: []string{"tcp:[10.0.0.1]:6641", "tcp:[fd00::2]:6641"}, source: "--ovn-nb-addr"},
		{name: "both, the same remotes in another order", flag: "ssl:b:6641,ssl:a:6641", alias: " ssl:a:6641 ,ssl:b:6641", env: envOf(),
			want: []string{"ssl:b:6641", "ssl:a:6641"}, source: "--nb-endpoints"},
		{name: "both, different", flag: "tcp:a:6641", alias: "tcp:b:6641", env: envOf(),
			fail: `--nb-endpoints "tcp:a:6641" and --ovn-nb-addr "tcp:b:6641" name different Northbound remotes`},
		{name: "a flag wins over the environment", alias: "tcp:[10.0.0.9]:6641", env: envOf("OVN_DB_IPS", "10.0.0.1", "OVN_NB_ADDR", "tcp:x:1"),
			want: []string{"tcp:[10.0.0.9]:6641"}, source: "--ovn-nb-addr"},
		{name: "$OVN_NB_ADDR before $OVN_DB_IPS", env: envOf("OVN_NB_ADDR", "ssl:[ovn-nb.example]:16641", "OVN_DB_IPS", "10.0.0.1"),
			want: []string{"ssl:[ovn-nb.example]:16641"}, source: "$OVN_NB_ADDR"},
		{name: "$OVN_DB_IPS, no $ENABLE_SSL", env: envOf("OVN_DB_IPS", "10.0.0.1,10.0.0.2,10.0.0.3"),
			want: []string{"tcp:[10.0.0.1]:6641", "tcp:[10.0.0.2]:6641", "tcp:[10.0.0.3]:6641"}, source: "$OVN_DB_IPS (scheme tcp"},
		{name: "$OVN_DB_IPS with blanks and a stray comma, ENABLE_SSL=false", env: envOf("OVN_DB_IPS", " 10.0.0.1 ,\t10.0.0.2,, ", "ENABLE_SSL", "false"),
			want: []string{"tcp:[10.0.0.1]:6641", "tcp:[10.0.0.2]:6641"}, source: "$OVN_DB_IPS"},
		{name: "$OVN_DB_IPS IPv6 with ENABLE_SSL=true", env: envOf("OVN_DB_IPS", "fd00::1,[fd00::2]", "ENABLE_SSL", "true"),
			want: []string{"ssl:[fd00::1]:6641", "ssl:[fd00::2]:6641"}, source: "scheme ssl from $ENABLE_SSL, port 6641"},
		{name: "$OVN_DB_IPS host names, $KUBE_OVN_NB_PORT", env: envOf("OVN_DB_IPS", "ovn-central-0.ovn-central.kube-system.svc", "KUBE_OVN_NB_PORT", "16641"),
			want: []string{"tcp:[ovn-central-0.ovn-central.kube-system.svc]:16641"}, source: "port 16641"},
		{name: "the ovn-nb Service when $OVN_DB_IPS is empty", env: envOf("OVN_DB_IPS", "", "OVN_NB_SERVICE_HOST", "10.96.0.20", "OVN_NB_SERVICE_PORT", "6641", "ENABLE_SSL", "true"),
			want: []string{"ssl:[10.96.0.20]:6641"}, source: "$OVN_NB_SERVICE_HOST"},
		{name: "the ovn-nb Service, IPv6", env: envOf("OVN_NB_SERVICE_HOST", "fd00:10:96::20"),
			want: []string{"tcp:[fd00:10:96::20]:6641"}, source: "$OVN_NB_SERVICE_HOST"},
		{name: "nothing at all", env: envOf(), want: nil},
		{name: "ENABLE_SSL neither true nor false", env: envOf("OVN_DB_IPS", "10.0.0.1", "ENABLE_SSL", "yes"), fail: `$ENABLE_SSL "yes": want true or false`},
		{name: "ENABLE_SSL in another case", env: envOf("OVN_DB_IPS", "10.0.0.1", "ENABLE_SSL", "True"), fail: `$ENABLE_SSL "True"`},
		{name: "bad port", env: envOf("OVN_DB_IPS", "10.0.0.1", "KUBE_OVN_NB_PORT", "70000"), fail: `$KUBE_OVN_NB_PORT: port "70000"`},
		{name: "an entry with its own port", env: envOf("OVN_DB_IPS", "10.0.0.1:6641"), fail: `$OVN_DB_IPS: "10.0.0.1:6641" is not an address`},
		{name: "an entry with a scheme", env: envOf("OVN_DB_IPS", "tcp:10.0.0.1"), fail: `$OVN_DB_IPS: "tcp:10.0.0.1"`},
		{name: "bad Service port", env: envOf("OVN_NB_SERVICE_HOST", "10.96.0.20", "OVN_NB_SERVICE_PORT", "x"), fail: `$OVN_NB_SERVICE_PORT`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveNBEndpoints(tc.flag, tc.alias, tc.env)
			if tc.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fail) {
					t.Fatalf("error %v; want one saying %q", err, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.list, tc.want) {
				t.Errorf("endpoints %q; want %q", got.list, tc.want)
			}
			if !strings.Contains(got.source, tc.source) {
				t.Errorf("source %q; want it to say %q", got.source, tc.source)
			}
		})
	}
}

// TestNBFlags parses the Northbound flags as the command line gives them
// and validates them, the environment set as a pod's would be.
func TestNBFlags(t *testing.T) {
	tlsDir := t.TempDir()
	writeFiles(t, tlsDir, "cacert", "cert", "key")
	for _, tc := range []struct {
		name string
		args []string
		env  []string // name, value pairs for t.Setenv
		want []string // endpoints when valid
		fail string   // validate's error contains
	}{
		{name: "--ovn-nb-addr is an alias", args: []string{"-ovn-nb-addr", "tcp:[10.0.0.1]:6641,tcp:[10.0.0.2]:6641"},
			want: []string{"tcp:[10.0.0.1]:6641", "tcp:[10.0.0.2]:6641"}},
		{name: "both flags, equal", args: []string{"-nb-endpoints", "tcp:a:6641", "--ovn-nb-addr=tcp:a:6641"}, want: []string{"tcp:a:6641"}},
		{name: "both flags, different", args: []string{"-nb-endpoints", "tcp:a:6641", "-ovn-nb-addr", "tcp:b:6641"},
			fail: "name different Northbound remotes"},
		{name: "no flag: $OVN_DB_IPS", env: []string{"OVN_DB_IPS", "10.0.0.1,fd00::1"},
			want: []string{"tcp:[10.0.0.1]:6641", "tcp:[fd00::1]:6641"}},
		{name: "no flag, no environment", fail: "--nb-endpoints is required"},
		{name: "ssl from the environment, material from --nb-tls-dir", args: []string{"-nb-tls-dir", tlsDir},
			env: []string{"OVN_DB_IPS", "10.0.0.1", "ENABLE_SSL", "true"}, want: []string{"ssl:[10.0.0.1]:6641"}},
		{name: "ssl, empty --nb-tls-dir", args: []string{"-nb-tls-dir", t.TempDir()}, env: []string{"OVN_DB_IPS", "10.0.0.1", "ENABLE_SSL", "true"},
			fail: `$OVN_DB_IPS (scheme ssl from $ENABLE_SSL, port 6641): "ssl:[10.0.0.1]:6641" needs --nb-cert, --nb-key and --nb-ca`},
		{name: "a bad scheme names its source", args: []string{"-ovn-nb-addr", "http://nb:6641"}, fail: `--ovn-nb-addr: "http://nb:6641" is not tcp:`},
		{name: "a bad environment", env: []string{"OVN_DB_IPS", "10.0.0.1", "ENABLE_SSL", "1"}, fail: `$ENABLE_SSL "1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{envOVNNBAddr, envOVNDBIPs, envEnableSSL, envNBPort, envNBServiceHost, envNBServicePort} {
				t.Setenv(k, "")
			}
			for i := 0; i+1 < len(tc.env); i += 2 {
				t.Setenv(tc.env[i], tc.env[i+1])
			}
			var o Options
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			o.bind(fs)
			if err := fs.Parse(append([]string{"-identity", "shardnet-0"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			err := o.validate()
			if tc.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fail) {
					t.Fatalf("validate: %v; want an error saying %q", err, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatalf("validate: %v", err)
			}
			if got := o.endpoints(); !slices.Equal(got, tc.want) {
				t.Errorf("endpoints %q; want %q", got, tc.want)
			}
		})
	}
}

func writeFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestResolveNBTLSFiles(t *testing.T) {
	// Directories the cases share, each holding what its name says.
	root := t.TempDir()
	dir := func(name string, files ...string) string {
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		writeFiles(t, d, files...)
		return d
	}
	kubeOVN := dir("kube-ovn", "cacert", "cert", "key")
	kubeTLS := dir("tls", "ca.crt", "tls.crt", "tls.key")
	both := dir("both", "cacert", "cert", "key", "ca.crt", "tls.crt", "tls.key")
	halfKubeOVN := dir("half", "cacert", "cert", "tls.key")
	empty := dir("empty")
	tlsNoCA := dir("tls-no-ca", "tls.crt", "tls.key")
	flags := dir("flags", "my.crt", "my.key", "my-ca.crt")
	missing := filepath.Join(root, "missing")
	f := func(d, n string) string { return filepath.Join(d, n) }

	for _, tc := range []struct {
		name                     string
		cert, key, ca, dir, dflt string
		want                     [3]string // cert, key, ca
		source                   string    // contains
		fail                     []string  // the error contains each
	}{
		{name: "kube-ovn names", dir: kubeOVN,
			want: [3]string{f(kubeOVN, "cert"), f(kubeOVN, "key"), f(kubeOVN, "cacert")}, source: "kube-ovn-tls names"},
		{name: "kubernetes.io/tls names", dir: kubeTLS,
			want: [3]string{f(kubeTLS, "tls.crt"), f(kubeTLS, "tls.key"), f(kubeTLS, "ca.crt")}, source: "kubernetes.io/tls names"},
		{name: "both layouts: kube-ovn's first", dir: both,
			want: [3]string{f(both, "cert"), f(both, "key"), f(both, "cacert")}, source: "kube-ovn-tls"},
		{name: "the default directory when --nb-tls-dir is empty", dflt: kubeOVN,
			want: [3]string{f(kubeOVN, "cert"), f(kubeOVN, "key"), f(kubeOVN, "cacert")}, source: "in " + kubeOVN},
		{name: "--nb-tls-dir wins over the default", dir: kubeTLS, dflt: kubeOVN,
			want: [3]string{f(kubeTLS, "tls.crt"), f(kubeTLS, "tls.key"), f(kubeTLS, "ca.crt")}},
		{name: "the three flags win; no directory is read", cert: f(flags, "my.crt"), key: f(flags, "my.key"), ca: f(flags, "my-ca.crt"), dir: missing, dflt: missing,
			want: [3]string{f(flags, "my.crt"), f(flags, "my.key"), f(flags, "my-ca.crt")}, source: "--nb-cert, --nb-key, --nb-ca"},
		{name: "one flag wins, the directory gives the rest", ca: f(flags, "my-ca.crt"), dir: kubeOVN,
			want: [3]string{f(kubeOVN, "cert"), f(kubeOVN, "key"), f(flags, "my-ca.crt")}, source: "the rest from the flags"},
		{name: "a flag fills the file a layout lacks", ca: f(flags, "my-ca.crt"), dir: tlsNoCA,
			want: [3]string{f(tlsNoCA, "tls.crt"), f(tlsNoCA, "tls.key"), f(flags, "my-ca.crt")}, source: "kubernetes.io/tls"},
		{name: "missing key in kube-ovn's layout", dir: halfKubeOVN,
			fail: []string{"has kube-ovn-tls names but is missing " + f(halfKubeOVN, "key")}},
		{name: "missing CA in the kubernetes.io/tls layout", dir: tlsNoCA,
			fail: []string{"missing " + f(tlsNoCA, "ca.crt")}},
		{name: "an empty directory", dir: empty,
			fail: []string{"--nb-tls-dir " + empty + " holds neither cacert, cert, key nor ca.crt, tls.crt, tls.key", "--nb-cert, --nb-key, --nb-ca are not set"}},
		{name: "--nb-tls-dir does not exist", dir: missing, fail: []string{"--nb-tls-dir " + missing + ": not a readable directory"}},
		{name: "no flags and no kube-ovn mount", dflt: missing,
			fail: []string{missing + " (kube-ovn's mount of kube-ovn-tls, used when --nb-tls-dir is empty): not a readable directory", "--nb-cert, --nb-key, --nb-ca are not set"}},
		{name: "a flag names a missing file", cert: f(flags, "nope.crt"), key: f(flags, "my.key"), ca: f(flags, "my-ca.crt"),
			fail: []string{"--nb-cert: open " + f(flags, "nope.crt")}},
		{name: "a flag names a directory", ca: flags, dir: kubeOVN, fail: []string{"--nb-ca: " + flags + " is a directory"}},
		{name: "two flags given, the directory lacks the third", cert: f(flags, "my.crt"), key: f(flags, "my.key"), dir: empty,
			fail: []string{"holds neither cacert nor ca.crt", "--nb-ca is not set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveNBTLSFiles(tc.cert, tc.key, tc.ca, tc.dir, tc.dflt)
			if len(tc.fail) > 0 {
				if err == nil {
					t.Fatalf("resolved %+v; want an error", got)
				}
				for _, w := range tc.fail {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := [3]string{got.cert, got.key, got.ca}; g != tc.want {
				t.Errorf("files %q; want %q", g, tc.want)
			}
			if !strings.Contains(got.source, tc.source) {
				t.Errorf("source %q; want it to say %q", got.source, tc.source)
			}
		})
	}
}

// testCA issues certificates the way kube-ovn's are issued: the server and
// the clients share one certificate whose only names are a common name
// and, in current releases, the DNS name "ovn"; no address.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key for cn with the DNS names given.
func (ca *testCA) issue(t *testing.T, cn string, dns ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// kubeOVNTLSDirFor writes a kube-ovn-tls Secret's files (cacert, cert,
// key) into a new directory.
func kubeOVNTLSDirFor(t *testing.T, ca *testCA, certPEM, keyPEM []byte) string {
	t.Helper()
	d := t.TempDir()
	for name, b := range map[string][]byte{"cacert": ca.pem, "cert": certPEM, "key": keyPEM} {
		if err := os.WriteFile(filepath.Join(d, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// TestNBTLSHandshake connects with newNBTLSConfig to a TLS server on
// 127.0.0.1 that, like ovsdb-server with kube-ovn's material, presents a
// certificate naming no address and requires a client certificate from
// the same CA.
func TestNBTLSHandshake(t *testing.T) {
	ca := newTestCA(t, "ovn-ca")
	srvCert, srvKey := ca.issue(t, "ovn", "ovn")
	srvPair, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	clientPool := x509.NewCertPool()
	clientPool.AddCert(ca.cert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{srvPair}, ClientCAs: clientPool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
				_, _ = c.Write([]byte("ok"))
			}()
		}
	}()

	cliCert, cliKey := ca.issue(t, "ovn", "ovn")
	good := kubeOVNTLSDirFor(t, ca, cliCert, cliKey)
	other := newTestCA(t, "another-ca")
	otherCert, otherKey := other.issue(t, "ovn", "ovn")
	foreign := kubeOVNTLSDirFor(t, other, otherCert, otherKey)

	for _, tc := range []struct {
		name       string
		dir        string
		serverName string
		fail       string
	}{
		{name: "kube-ovn's material, chain checked, no address in the certificate", dir: good},
		{name: "the name kube-ovn's certificates carry", dir: good, serverName: "ovn"},
		{name: "a name the certificate does not carry", dir: good, serverName: "nb.example", fail: "nb.example"},
		{name: "a server certificate from another CA", dir: foreign, fail: "certificate signed by unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := resolveNBTLSFiles("", "", "", tc.dir, "")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := newNBTLSConfig(files, tc.serverName)
			if err != nil {
				t.Fatal(err)
			}
			d := &net.Dialer{Timeout: 5 * time.Second}
			conn, err := tls.DialWithDialer(d, "tcp", ln.Addr().String(), cfg)
			if err == nil {
				buf := make([]byte, 2)
				_, err = conn.Read(buf)
				_ = conn.Close()
			}
			if tc.fail == "" && err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)) {
				t.Fatalf("handshake: %v; want an error saying %q", err, tc.fail)
			}
		})
	}
}

func TestNBTLSConfigErrors(t *testing.T) {
	ca := newTestCA(t, "ovn-ca")
	certPEM, keyPEM := ca.issue(t, "ovn")
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		fail  string
	}{
		{"a CA file without a certificate", func(d string) { _ = os.WriteFile(filepath.Join(d, "cacert"), []byte("not PEM"), 0o600) }, "no PEM certificate in the Northbound CA " + "%DIR%/cacert"},
		{"a key that does not match", func(d string) {
			_, other := ca.issue(t, "ovn")
			_ = os.WriteFile(filepath.Join(d, "key"), other, 0o600)
		}, "loading the Northbound client certificate %DIR%/cert and key %DIR%/key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := kubeOVNTLSDirFor(t, ca, certPEM, keyPEM)
			tc.setup(d)
			files, err := resolveNBTLSFiles("", "", "", d, "")
			if err != nil {
				t.Fatal(err)
			}
			_, err = newNBTLSConfig(files, "")
			want := strings.ReplaceAll(tc.fail, "%DIR%", d)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("newNBTLSConfig: %v; want an error saying %q", err, want)
			}
		})
	}
}

// TestNBTLSReload checks that a renewed certificate is read at the next
// handshake, and that a broken file keeps the one loaded before.
func TestNBTLSReload(t *testing.T) {
	ca := newTestCA(t, "ovn-ca")
	first, firstKey := ca.issue(t, "first")
	d := kubeOVNTLSDirFor(t, ca, first, firstKey)
	files, err := resolveNBTLSFiles("", "", "", d, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := newNBTLSConfig(files, "")
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey := ca.issue(t, "ovn")
	srvPair, _ := tls.X509KeyPair(srvCert, srvKey)
	leaf, _ := x509.ParseCertificate(srvPair.Certificate[0])
	handshake := func() string {
		t.Helper()
		// VerifyConnection rereads the files, then the client picks its
		// certificate.
		if err := cfg.VerifyConnection(tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}); err != nil {
			t.Fatal(err)
		}
		c, err := cfg.GetClientCertificate(&tls.CertificateRequestInfo{})
		if err != nil {
			t.Fatal(err)
		}
		x, _ := x509.ParseCertificate(c.Certificate[0])
		return x.Subject.CommonName
	}
	if got := handshake(); got != "first" {
		t.Fatalf("client certificate %q; want first", got)
	}
	second, secondKey := ca.issue(t, "second")
	if err := os.WriteFile(filepath.Join(d, "cert"), second, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "key"), secondKey, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := handshake(); got != "second" {
		t.Fatalf("after renewal, client certificate %q; want second", got)
	}
	if err := os.WriteFile(filepath.Join(d, "key"), []byte("torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := handshake(); got != "second" {
		t.Fatalf("with a broken key file, client certificate %q; want the last good one", got)
	}
}

// TestNBKubeOVNSSL reaches an ovsdb-server set up as kube-ovn sets up
// ovn-central with ENABLE_SSL=true: one certificate naming no address for
// the server and its clients, the remotes from $OVN_DB_IPS, the material
// in a directory with kube-ovn-tls's key names.
func TestNBKubeOVNSSL(t *testing.T) {
	var server, tool string
	for _, name := range []string{"ovsdb-server", "ovsdb-tool"} {
		p, err := exec.LookPath(name)
		if err != nil {
			p = filepath.Join("/usr/sbin", name)
			if _, serr := os.Stat(p); serr != nil {
				t.Fatalf("%s not found: install Debian's ovn-central package (apt-get install ovn-central)", name)
			}
		}
		if name == "ovsdb-server" {
			server = p
		} else {
			tool = p
		}
	}
	ca := newTestCA(t, "ovn-ca")
	certPEM, keyPEM := ca.issue(t, "ovn", "ovn")
	tlsDir := kubeOVNTLSDirFor(t, ca, certPEM, keyPEM)
	work := t.TempDir()
	db := filepath.Join(work, "nb.db")
	if out, err := exec.Command(tool, "create", db, harness.NBSchema(t)).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v: %s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	srv := exec.Command(server, db, fmt.Sprintf("--remote=pssl:%d:127.0.0.1", port),
		"--private-key="+filepath.Join(tlsDir, "key"), "--certificate="+filepath.Join(tlsDir, "cert"), "--ca-cert="+filepath.Join(tlsDir, "cacert"),
		"--unixctl="+filepath.Join(work, "nb.ctl"), "--log-file="+filepath.Join(work, "nb.log"), "--no-chdir")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(work, "nb.log"))
			t.Fatalf("ovsdb-server is not listening: %v\n%s", err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}

	for _, k := range []string{envOVNNBAddr, envNBServiceHost, envNBServicePort} {
		t.Setenv(k, "")
	}
	t.Setenv(envOVNDBIPs, "127.0.0.1")
	t.Setenv(envEnableSSL, "true")
	t.Setenv(envNBPort, fmt.Sprint(port))
	var o Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.bind(fs)
	if err := fs.Parse([]string{"-identity", "shardnet-0", "-nb-tls-dir", tlsDir}); err != nil {
		t.Fatal(err)
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	cfg := o.nbConfig(klog.Background())
	if cfg.TLS, err = nbTLS(&o, cfg.Logger); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ovn.NewClient(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, want := c.Endpoint(), fmt.Sprintf("ssl:[127.0.0.1]:%d", port); got != want {
		t.Errorf("connected to %q; want %q", got, want)
	}
}
