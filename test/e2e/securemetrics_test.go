package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	"github.com/shardnet/shardnet/cmd/shardnet/app"
	"github.com/shardnet/shardnet/test/harness"
)

// TestSecureMetrics runs a replica with --metrics-secure and --enable-pprof
// as the deploy ServiceAccount, with the RBAC of deploy/base and of
// deploy/optional/metrics-auth-rbac.yaml, against the real kube-apiserver.
// On the metrics port, over TLS with the certificate of --metrics-cert-dir:
// no token and a bad token get 401; a ServiceAccount the API server knows
// but that may not get /metrics gets 403; one bound to the file's
// shardnet-metrics-reader ClusterRole gets 200 and the metrics, build info
// included. /debug/pprof/ is not on the metrics port, even for an admin,
// and is served on the loopback pprof listener.
func TestSecureMetrics(t *testing.T) {
	kube := harness.StartKube(t)
	nb := harness.StartEmbeddedNB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The replica's ServiceAccount and RBAC as deployed, with the rules
	// for delegated authentication and authorisation.
	ap := newApplier(t, kube.Config)
	objs := kustomizeResources(t, filepath.Join(deployDir(t), "base"))
	objs = append(objs, readObjects(t, filepath.Join(deployDir(t), "optional", "metrics-auth-rbac.yaml"))...)
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if ns := o.GetNamespace(); ns != "" {
				ensureNamespace(t, ctx, kube, ns)
			}
			if err := ap.apply(ctx, o, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Two scrapers: one bound to shardnet-metrics-reader, one not.
	ensureNamespace(t, ctx, kube, "monitoring")
	for _, name := range []string{"prometheus", "stranger"} {
		if _, err := kube.Client.CoreV1().ServiceAccounts("monitoring").Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kube.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-shardnet-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "shardnet-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: "monitoring"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The binding reaches the API server's authorizer through an
	// informer: wait until the API server itself allows the scrape, so
	// that the replica's first review is not a denial it would cache.
	waitFor(t, ctx, "RBAC lets monitoring:prometheus get /metrics", func() error {
		return allowedToScrape(ctx, kube, "system:serviceaccount:monitoring:prometheus")
	})

	certDir, roots := writeServingCert(t)
	opts := app.Options{
		Identity: "shardnet-0", Namespace: "kube-system",
		NBEndpoints: nb.Endpoint, NBLeaderOnly: true,
		Shards: 4, WorkersPerShard: 2,
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
		ClusterRouter: "ovn-cluster", PodNICType: "veth-pair", IPRecords: true,
		BatchLinger: time.Millisecond, BatchMaxOps: 600,
		GCInterval: time.Minute, GCGrace: time.Minute, StatusInterval: time.Second,
		MetricsAddr: "127.0.0.1:0", MetricsSecure: true, MetricsCertDir: certDir,
		EnablePprof: true, PprofAddr: "127.0.0.1:0",
	}
	s, err := app.NewServer(ctx, opts, serviceAccountConfig(t, ctx, kube, "kube-system", "shardnet"))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	t.Cleanup(func() {
		stop()
		// Stopped before its caches synced, the replica says so.
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("server: %v", err)
		}
	})

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12},
	}}
	metricsURL := "https://" + s.MetricsAddr() + "/metrics"
	get := func(url, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		return resp.StatusCode, string(b)
	}
	prometheus := saToken(t, ctx, kube, "monitoring", "prometheus")
	for _, tc := range []struct {
		name, url, token string
		code             int
	}{
		{"no token", metricsURL, "", http.StatusUnauthorized},
		{"a token the API server rejects", metricsURL, "not-a-token", http.StatusUnauthorized},
		{"a ServiceAccount without RBAC for /metrics", metricsURL, saToken(t, ctx, kube, "monitoring", "stranger"), http.StatusForbidden},
		{"pprof with the scraper's token", "https://" + s.MetricsAddr() + "/debug/pprof/", prometheus, http.StatusForbidden},
		{"pprof as cluster admin", "https://" + s.MetricsAddr() + "/debug/pprof/", harness.AdminToken, http.StatusNotFound},
	} {
		if code, body := get(tc.url, tc.token); code != tc.code {
			t.Errorf("%s: GET %s = %d %q, want %d", tc.name, tc.url, code, firstLine(body), tc.code)
		}
	}
	code, body := get(metricsURL, prometheus)
	if code != http.StatusOK {
		t.Fatalf("a ServiceAccount bound to shardnet-metrics-reader: GET /metrics = %d %q, want 200", code, firstLine(body))
	}
	for _, want := range []string{
		fmt.Sprintf("shardnet_build_info{commit=%q,go_version=%q,version=%q} 1\n", app.Commit, runtime.Version(), app.Version),
		"\ngo_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %q", want)
		}
	}

	// Profiles: on the loopback listener only, plain HTTP.
	host, _, err := net.SplitHostPort(s.PprofAddr())
	if err != nil || !net.ParseIP(host).IsLoopback() {
		t.Fatalf("pprof listener %q is not on loopback (%v)", s.PprofAddr(), err)
	}
	if code, body := get("http://"+s.PprofAddr()+"/debug/pprof/", ""); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("GET /debug/pprof/ on the pprof listener = %d %q, want 200 with the profile index", code, firstLine(body))
	}
}

// allowedToScrape asks the API server whether user may get /metrics.
func allowedToScrape(ctx context.Context, kube *harness.Kube, user string) error {
	sar, err := kube.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  user,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if !sar.Status.Allowed {
		return fmt.Errorf("not allowed yet: %s", sar.Status.Reason)
	}
	return nil
}

// saToken is a token of ServiceAccount ns/name from the TokenRequest API.
func saToken(t *testing.T, ctx context.Context, kube *harness.Kube, ns, name string) string {
	t.Helper()
	return serviceAccountConfig(t, ctx, kube, ns, name).BearerToken
}

// writeServingCert writes a certificate for localhost and 127.0.0.1 and
// its key as tls.crt and tls.key in a new directory, and returns it with a
// pool that trusts the certificate.
func writeServingCert(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatal("no certificate in the generated PEM")
	}
	return dir, roots
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
