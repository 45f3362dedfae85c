package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// stubAuthn accepts the token "good" as user "scraper" and "other" as
// "stranger"; "broken" fails as a TokenReview the API server did not
// answer would.
type stubAuthn struct{}

func (stubAuthn) authenticate(req *http.Request) (*identity, bool, error) {
	switch req.Header.Get("Authorization") {
	case "Bearer good":
		return &identity{name: "scraper"}, true, nil
	case "Bearer other":
		return &identity{name: "stranger"}, true, nil
	case "Bearer broken":
		return nil, false, errors.New("connection refused")
	case "":
		return nil, false, nil
	}
	return nil, false, errors.New("invalid bearer token")
}

// stubAuthz lets "scraper" get /metrics and fails for /fail; it records
// the verbs it was asked about.
type stubAuthz struct{ asked []string }

func (a *stubAuthz) authorize(_ context.Context, who *identity, verb, path string) (bool, string, error) {
	a.asked = append(a.asked, verb)
	if path == "/fail" {
		return false, "", errors.New("timeout")
	}
	if who.name == "scraper" && verb == "get" && path == "/metrics" {
		return true, "", nil
	}
	return false, "no RBAC", nil
}

func TestWithDelegatedAuth(t *testing.T) {
	authz := &stubAuthz{}
	h := withDelegatedAuth(stubAuthn{}, authz, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "metrics\n")
	}), klog.Background())
	for _, tc := range []struct {
		method, path, token string
		code                int
	}{
		{"GET", "/metrics", "", http.StatusUnauthorized},
		{"GET", "/metrics", "bad", http.StatusUnauthorized},
		{"GET", "/metrics", "broken", http.StatusUnauthorized},
		{"GET", "/metrics", "other", http.StatusForbidden},
		{"GET", "/debug/pprof/", "good", http.StatusForbidden},
		{"POST", "/metrics", "good", http.StatusForbidden},
		{"GET", "/fail", "good", http.StatusInternalServerError},
		{"GET", "/metrics", "good", http.StatusOK},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code {
			t.Errorf("%s %s with token %q = %d %q, want %d", tc.method, tc.path, tc.token, rec.Code, rec.Body.String(), tc.code)
		}
		if tc.code == http.StatusOK && rec.Body.String() != "metrics\n" {
			t.Errorf("allowed request answered %q", rec.Body.String())
		}
	}
	// Only authenticated requests are authorised, with the method as verb.
	if len(authz.asked) != 5 || authz.asked[2] != "post" {
		t.Errorf("authorizer asked %d times (want 5), verbs %v", len(authz.asked), authz.asked)
	}
}

// writeKeyPair writes a self-signed certificate for host as tls.crt and
// tls.key in dir, replacing files that are there with new ones, as a
// Secret volume's update does, and returns the certificate PEM.
func writeKeyPair(t *testing.T, dir, host string) []byte {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{metricsCertFile: certPEM, metricsKeyFile: keyPEM} {
		tmp := filepath.Join(dir, "."+name+".new")
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return certPEM
}

func leafName(t *testing.T, c *tls.Certificate) string {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.Subject.CommonName
}

// TestMetricsCertDirReload: the pair of --metrics-cert-dir is served, a
// replaced pair is served from the next handshake on, and a broken one
// leaves the last good pair in service.
func TestMetricsCertDirReload(t *testing.T) {
	dir := t.TempDir()
	if _, err := metricsTLSConfig(dir); err == nil || !strings.Contains(err.Error(), metricsCertFile) {
		t.Fatalf("an empty --metrics-cert-dir: %v, want an error naming %s", err, metricsCertFile)
	}
	writeKeyPair(t, dir, "first.example")
	conf, err := metricsTLSConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	get := func() string {
		t.Helper()
		c, err := conf.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return leafName(t, c)
	}
	if got := get(); !strings.HasPrefix(got, "first.example") {
		t.Fatalf("serving %q, want first.example", got)
	}
	writeKeyPair(t, dir, "second.example")
	if got := get(); !strings.HasPrefix(got, "second.example") {
		t.Fatalf("after the pair was replaced: serving %q, want second.example", got)
	}
	// A key that does not parse, rewritten in place with a later time.
	key := filepath.Join(dir, metricsKeyFile)
	if err := os.WriteFile(key, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(key, later, later); err != nil {
		t.Fatal(err)
	}
	if got := get(); !strings.HasPrefix(got, "second.example") {
		t.Fatalf("after a broken key: serving %q, want the previous second.example", got)
	}
	writeKeyPair(t, dir, "third.example")
	if got := get(); !strings.HasPrefix(got, "third.example") {
		t.Fatalf("after a good pair again: serving %q, want third.example", got)
	}
}

// TestMetricsSelfSigned: without --metrics-cert-dir the metrics port
// speaks TLS with a certificate made at start.
func TestMetricsSelfSigned(t *testing.T) {
	conf, err := metricsTLSConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if len(conf.Certificates) != 1 || conf.MinVersion != tls.VersionTLS12 {
		t.Fatalf("%d certificates, min version %x", len(conf.Certificates), conf.MinVersion)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	srv.TLS = conf
	srv.StartTLS()
	defer srv.Close()
	// The chain is the certificate for localhost and the CA that signed it.
	roots := x509.NewCertPool()
	for _, der := range conf.Certificates[0].Certificate {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		roots.AddCert(cert)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}}}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.TLS == nil || resp.ProtoMajor != 1 {
		t.Errorf("TLS %v, protocol %s; want TLS with HTTP/1.1", resp.TLS != nil, resp.Proto)
	}
}

// TestMetricsFlags: --metrics-cert-dir is refused without --metrics-secure,
// rather than ignored.
func TestMetricsFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Main([]string{"controller", "-identity", "r0", "-nb-endpoints", "tcp:127.0.0.1:6641",
		"-metrics-cert-dir", "/etc/shardnet/metrics"}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--metrics-cert-dir is read only with --metrics-secure") {
		t.Errorf("-metrics-cert-dir alone = %d, %q", code, stderr.String())
	}
	o := flagOptions(t, "-metrics-secure", "-metrics-cert-dir", "/etc/shardnet/metrics")
	if !o.MetricsSecure || o.MetricsCertDir != "/etc/shardnet/metrics" {
		t.Errorf("flags gave %+v", o)
	}
}
