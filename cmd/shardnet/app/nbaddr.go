package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/ovn"
)

// Where kube-ovn keeps what shardnet needs to reach the same Northbound:
// kube-ovn-controller takes --ovn-nb-addr, which its start script builds
// from these environment variables when it is not given, and it mounts the
// kube-ovn-tls Secret (keys cacert, cert, key) at /var/run/tls.
const (
	envOVNNBAddr     = "OVN_NB_ADDR"
	envOVNDBIPs      = "OVN_DB_IPS"
	envEnableSSL     = "ENABLE_SSL"
	envNBPort        = "KUBE_OVN_NB_PORT"
	envNBServiceHost = "OVN_NB_SERVICE_HOST" // the ovn-nb Service, injected by the kubelet
	envNBServicePort = "OVN_NB_SERVICE_PORT"
	defaultNBPort    = 6641

	// kubeOVNTLSDir is where kube-ovn mounts the kube-ovn-tls Secret.
	kubeOVNTLSDir = "/var/run/tls"
)

// Flag help of the Northbound options that say where their defaults come
// from.
const (
	nbEndpointsHelp = "OVN Northbound remotes, comma separated (tcp:HOST:PORT, ssl:HOST:PORT, unix:PATH; an IPv6 HOST in brackets), one per RAFT member. " +
		"Without it or --ovn-nb-addr they are found as kube-ovn-controller finds its own: $OVN_NB_ADDR; else one remote per address in $OVN_DB_IPS, " +
		"ssl when $ENABLE_SSL is true (else tcp), port $KUBE_OVN_NB_PORT (default 6641); else the ovn-nb Service ($OVN_NB_SERVICE_HOST, $OVN_NB_SERVICE_PORT). " +
		"The log line \"Northbound remotes\" says which source was used"
	nbTLSDirHelp = "directory of the client material for ssl: remotes, for what --nb-cert, --nb-key and --nb-ca leave unset: " +
		"kube-ovn's names (cacert, cert, key, the keys of the kube-ovn-tls Secret) or the kubernetes.io/tls names (ca.crt, tls.crt, tls.key); " +
		"empty means " + kubeOVNTLSDir + ", where kube-ovn mounts kube-ovn-tls"
	nbServerNameHelp = "host name the Northbound's certificate must carry (kube-ovn's current certificates carry \"ovn\"); " +
		"empty checks only that the certificate chains to the CA, as OVSDB's own clients do"
)

// nbEndpoints are the resolved Northbound remotes and where they came from.
type nbEndpoints struct {
	list []string
	// source names the flag or environment variable, for the log line.
	source string
}

// resolveNBEndpoints picks the Northbound remotes: --nb-endpoints or its
// alias --ovn-nb-addr (both only when they list the same remotes); without
// either, what kube-ovn-controller's start script would pass as its
// --ovn-nb-addr: $OVN_NB_ADDR, else one remote per $OVN_DB_IPS entry
// (<scheme>:[ENTRY]:$KUBE_OVN_NB_PORT, port 6641 by default, scheme ssl when
// $ENABLE_SSL is true), else the ovn-nb Service's $OVN_NB_SERVICE_HOST and
// port. No remote at all is not an error here: validate reports it.
func resolveNBEndpoints(nbEndpointsFlag, ovnNBAddrFlag string, getenv func(string) string) (nbEndpoints, error) {
	fromFlag, fromAlias := splitEndpoints(nbEndpointsFlag), splitEndpoints(ovnNBAddrFlag)
	switch {
	case len(fromFlag) > 0 && len(fromAlias) > 0:
		a, b := slices.Sorted(slices.Values(fromFlag)), slices.Sorted(slices.Values(fromAlias))
		if !slices.Equal(slices.Compact(a), slices.Compact(b)) {
			return nbEndpoints{}, fmt.Errorf("--nb-endpoints %q and --ovn-nb-addr %q name different Northbound remotes; give one of them", nbEndpointsFlag, ovnNBAddrFlag)
		}
		return nbEndpoints{fromFlag, "--nb-endpoints"}, nil
	case len(fromFlag) > 0:
		return nbEndpoints{fromFlag, "--nb-endpoints"}, nil
	case len(fromAlias) > 0:
		return nbEndpoints{fromAlias, "--ovn-nb-addr"}, nil
	}
	if eps := splitEndpoints(getenv(envOVNNBAddr)); len(eps) > 0 {
		return nbEndpoints{eps, "$" + envOVNNBAddr}, nil
	}
	scheme, err := sslScheme(getenv(envEnableSSL))
	if err != nil {
		return nbEndpoints{}, err
	}
	port := defaultNBPort
	if p := strings.TrimSpace(getenv(envNBPort)); p != "" {
		if port, err = parsePort(p); err != nil {
			return nbEndpoints{}, fmt.Errorf("$%s: %w", envNBPort, err)
		}
	}
	// kube-ovn's script drops every blank in the list before splitting it.
	ips := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, getenv(envOVNDBIPs))
	var list []string
	for _, host := range strings.Split(ips, ",") {
		if host == "" {
			continue
		}
		h, err := dbHost(host)
		if err != nil {
			return nbEndpoints{}, fmt.Errorf("$%s: %w", envOVNDBIPs, err)
		}
		list = append(list, fmt.Sprintf("%s:[%s]:%d", scheme, h, port))
	}
	if len(list) > 0 {
		return nbEndpoints{list, fmt.Sprintf("$%s (scheme %s from $%s, port %d)", envOVNDBIPs, scheme, envEnableSSL, port)}, nil
	}
	if host := strings.TrimSpace(getenv(envNBServiceHost)); host != "" {
		h, err := dbHost(host)
		if err != nil {
			return nbEndpoints{}, fmt.Errorf("$%s: %w", envNBServiceHost, err)
		}
		if p := strings.TrimSpace(getenv(envNBServicePort)); p != "" {
			if port, err = parsePort(p); err != nil {
				return nbEndpoints{}, fmt.Errorf("$%s: %w", envNBServicePort, err)
			}
		}
		return nbEndpoints{[]string{fmt.Sprintf("%s:[%s]:%d", scheme, h, port)}, fmt.Sprintf("$%s (the ovn-nb Service; scheme %s from $%s)", envNBServiceHost, scheme, envEnableSSL)}, nil
	}
	return nbEndpoints{}, nil
}

// splitEndpoints splits a comma-separated list of remotes, dropping blanks.
func splitEndpoints(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// sslScheme reads $ENABLE_SSL as kube-ovn's manifests set it: "true" means
// ssl, "false" or nothing tcp. Anything else is refused rather than
// guessed, since kube-ovn's script and its controller read such a value
// differently.
func sslScheme(v string) (string, error) {
	switch strings.TrimSpace(v) {
	case "true":
		return "ssl", nil
	case "false", "":
		return "tcp", nil
	}
	return "", fmt.Errorf("$%s %q: want true or false", envEnableSSL, v)
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("port %q: want 1..65535", s)
	}
	return p, nil
}

// dbHost checks one ovn-central host: an IP address (IPv6 with or without
// brackets) or a DNS name, never with a port of its own.
func dbHost(s string) (string, error) {
	h := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if _, err := netip.ParseAddr(h); err == nil {
		return h, nil
	}
	if h == "" || strings.ContainsAny(h, ":/[]") {
		return "", fmt.Errorf("%q is not an address or host name (give no scheme or port: the port is $%s, default %d)", s, envNBPort, defaultNBPort)
	}
	return h, nil
}

// validateNB reports what is wrong with the Northbound options.
func (o *Options) validateNB() []error {
	return o.checkNB(os.Getenv, kubeOVNTLSDir)
}

// checkNB is validateNB with the environment and kube-ovn's TLS mount
// given.
func (o *Options) checkNB(getenv func(string) string, defaultTLSDir string) []error {
	nb, err := resolveNBEndpoints(o.NBEndpoints, o.OVNNBAddr, getenv)
	if err != nil {
		return []error{err}
	}
	if len(nb.list) == 0 {
		return []error{errors.New("--nb-endpoints is required (or --ovn-nb-addr, $OVN_NB_ADDR, $OVN_DB_IPS)")}
	}
	var errs []error
	var ssl string
	for _, e := range nb.list {
		if !strings.HasPrefix(e, "tcp:") && !strings.HasPrefix(e, "ssl:") && !strings.HasPrefix(e, "unix:") {
			errs = append(errs, fmt.Errorf("%s: %q is not tcp:, ssl: or unix:", nb.source, e))
		}
		if strings.HasPrefix(e, "ssl:") && ssl == "" {
			ssl = e
		}
	}
	if ssl != "" {
		if _, err := resolveNBTLSFiles(o.NBCert, o.NBKey, o.NBCA, o.NBTLSDir, defaultTLSDir); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q needs --nb-cert, --nb-key and --nb-ca, or their files in --nb-tls-dir: %w", nb.source, ssl, err))
		}
	}
	return errs
}

// nbConfig is the Northbound client's configuration from the options,
// after validate; it logs where the remotes came from.
func (o *Options) nbConfig(logger klog.Logger) ovn.Config {
	eps, err := resolveNBEndpoints(o.NBEndpoints, o.OVNNBAddr, os.Getenv)
	if err != nil {
		// validate reported it; the client refuses an empty list.
		logger.Error(err, "Resolving the Northbound remotes")
	}
	logger.Info("Northbound remotes", "endpoints", eps.list, "from", eps.source)
	return ovn.Config{Endpoints: eps.list, LeaderOnly: o.NBLeaderOnly && len(eps.list) > 1, Logger: logger}
}

// nbTLSFiles are the resolved client certificate, key and CA files.
type nbTLSFiles struct {
	cert, key, ca string
	// source says where they came from, for the log line.
	source string
}

// A directory layout of TLS material: kube-ovn's Secret kube-ovn-tls, or a
// kubernetes.io/tls Secret with its CA.
type tlsLayout struct {
	name          string
	cert, key, ca string
}

var tlsLayouts = []tlsLayout{
	{name: "kube-ovn-tls names", cert: "cert", key: "key", ca: "cacert"},
	{name: "kubernetes.io/tls names", cert: "tls.crt", key: "tls.key", ca: "ca.crt"},
}

// resolveNBTLSFiles finds the client material for ssl: remotes. Each of
// --nb-cert, --nb-key and --nb-ca that is set is used as given; the files
// still missing come from dir (--nb-tls-dir), or, when dir is empty, from
// defaultDir (kube-ovn's /var/run/tls). A directory holds either kube-ovn's
// names (cacert, cert, key) or the kubernetes.io/tls names (ca.crt,
// tls.crt, tls.key); the first layout with every file needed wins, so a
// certificate is never paired with a key of the other layout. Every file
// returned exists.
func resolveNBTLSFiles(certFlag, keyFlag, caFlag, dir, defaultDir string) (nbTLSFiles, error) {
	f := nbTLSFiles{cert: certFlag, key: keyFlag, ca: caFlag}
	var errs []error
	for _, c := range []struct{ flag, path string }{{"--nb-cert", certFlag}, {"--nb-key", keyFlag}, {"--nb-ca", caFlag}} {
		if c.path != "" {
			if err := regularFile(c.path); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c.flag, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nbTLSFiles{}, err
	}
	if f.cert != "" && f.key != "" && f.ca != "" {
		f.source = "--nb-cert, --nb-key, --nb-ca"
		return f, nil
	}
	dirFlag := "--nb-tls-dir " + dir
	if dir == "" {
		dir, dirFlag = defaultDir, defaultDir+" (kube-ovn's mount of kube-ovn-tls, used when --nb-tls-dir is empty)"
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nbTLSFiles{}, fmt.Errorf("%s: not a readable directory, and %s not set", dirFlag, missingFlags(f))
	}
	best, bestFound := -1, -1
	for i, l := range tlsLayouts {
		found := 0
		for _, name := range l.needed(f) {
			if regularFile(filepath.Join(dir, name)) == nil {
				found++
			}
		}
		if found == len(l.needed(f)) {
			var fromDir []string
			if f.cert == "" {
				f.cert = filepath.Join(dir, l.cert)
				fromDir = append(fromDir, l.cert)
			}
			if f.key == "" {
				f.key = filepath.Join(dir, l.key)
				fromDir = append(fromDir, l.key)
			}
			if f.ca == "" {
				f.ca = filepath.Join(dir, l.ca)
				fromDir = append(fromDir, l.ca)
			}
			f.source = fmt.Sprintf("%s in %s (%s)", strings.Join(fromDir, ", "), dir, l.name)
			if len(fromDir) < 3 {
				f.source += ", the rest from the flags"
			}
			return f, nil
		}
		if found > bestFound {
			best, bestFound = i, found
		}
	}
	if bestFound == 0 {
		return nbTLSFiles{}, fmt.Errorf("%s holds neither %s nor %s, and %s not set",
			dirFlag, strings.Join(tlsLayouts[0].needed(f), ", "), strings.Join(tlsLayouts[1].needed(f), ", "), missingFlags(f))
	}
	l := tlsLayouts[best]
	var missing []string
	for _, name := range l.needed(f) {
		if err := regularFile(filepath.Join(dir, name)); err != nil {
			missing = append(missing, filepath.Join(dir, name))
		}
	}
	return nbTLSFiles{}, fmt.Errorf("%s has %s but is missing %s", dirFlag, l.name, strings.Join(missing, ", "))
}

// needed lists the layout's file names for the files no flag gave.
func (l tlsLayout) needed(f nbTLSFiles) []string {
	var out []string
	if f.ca == "" {
		out = append(out, l.ca)
	}
	if f.cert == "" {
		out = append(out, l.cert)
	}
	if f.key == "" {
		out = append(out, l.key)
	}
	return out
}

func missingFlags(f nbTLSFiles) string {
	var out []string
	if f.cert == "" {
		out = append(out, "--nb-cert")
	}
	if f.key == "" {
		out = append(out, "--nb-key")
	}
	if f.ca == "" {
		out = append(out, "--nb-ca")
	}
	if len(out) == 1 {
		return out[0] + " is"
	}
	return strings.Join(out, ", ") + " are"
}

// regularFile reports an error naming path unless it is a file that can
// be opened for reading.
func regularFile(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a directory, not a file", path)
	}
	return nil
}

// tlsFiles resolves the TLS material of o (see resolveNBTLSFiles).
func (o *Options) tlsFiles() (nbTLSFiles, error) {
	return resolveNBTLSFiles(o.NBCert, o.NBKey, o.NBCA, o.NBTLSDir, kubeOVNTLSDir)
}

// newNBTLSConfig loads the client certificate and the CA and returns the
// client TLS configuration for ssl: remotes.
//
// The server's certificate must chain to the CA. Its host names are checked
// only against serverName, when set: OVSDB's own clients (ovn-nbctl,
// ovn-controller, ovsdb-server between RAFT members) check only the chain,
// and the certificates kube-ovn issues name no address, so the remotes'
// addresses cannot be checked against them.
//
// The files are read again at every handshake, so a renewed Secret takes
// effect at the next reconnection; a read that fails keeps the material
// last loaded.
func newNBTLSConfig(f nbTLSFiles, serverName string) (*tls.Config, error) {
	m := &tlsMaterial{files: f}
	if err := m.reload(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: serverName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _ := m.current()
			return cert, nil
		},
		// The default verification would check the remote's address;
		// VerifyConnection does the checks described above instead.
		InsecureSkipVerify: true, //nolint:gosec // VerifyConnection verifies
		VerifyConnection: func(cs tls.ConnectionState) error {
			return m.verify(cs, serverName)
		},
	}, nil
}

// tlsMaterial is the last client certificate and CA pool read from files.
type tlsMaterial struct {
	files nbTLSFiles

	mu   sync.Mutex
	cert *tls.Certificate
	pool *x509.CertPool
}

// reload reads the files; on failure the material already loaded stays.
func (m *tlsMaterial) reload() error {
	cert, err := tls.LoadX509KeyPair(m.files.cert, m.files.key)
	if err != nil {
		return fmt.Errorf("loading the Northbound client certificate %s and key %s: %w", m.files.cert, m.files.key, err)
	}
	ca, err := os.ReadFile(m.files.ca)
	if err != nil {
		return fmt.Errorf("reading the Northbound CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("no PEM certificate in the Northbound CA %s", m.files.ca)
	}
	m.mu.Lock()
	m.cert, m.pool = &cert, pool
	m.mu.Unlock()
	return nil
}

func (m *tlsMaterial) current() (*tls.Certificate, *x509.CertPool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cert, m.pool
}

// verify checks the server's chain against the CA, and its name when
// serverName is set. It is called once per handshake and reads the files
// again first.
func (m *tlsMaterial) verify(cs tls.ConnectionState, serverName string) error {
	if err := m.reload(); err != nil {
		klog.ErrorS(err, "Reading the Northbound TLS files again; using the ones loaded before")
	}
	_, pool := m.current()
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the Northbound sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, DNSName: serverName,
		// OVSDB does not restrict key usages; kube-ovn's older
		// certificates carry none.
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	if err != nil {
		return fmt.Errorf("the Northbound's certificate: %w", err)
	}
	return nil
}
