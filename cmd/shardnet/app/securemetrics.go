package app

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// With --metrics-secure the metrics port speaks HTTPS and serves a request
// only to a client the API server vouches for, as controller-runtime's
// secure metrics and kube-rbac-proxy do: the bearer token is checked with
// a TokenReview, then the client's right to `get` the request's path (a
// non-resource URL such as /metrics) with a SubjectAccessReview. Both
// answers are cached, so a scrape costs the API server nothing most of the
// time. The replica's own ServiceAccount needs `create` on tokenreviews and
// subjectaccessreviews (deploy/optional/metrics-auth-rbac.yaml); a scraper
// needs `get` on the non-resource URL /metrics.
const (
	// authnCacheTTL is how long a TokenReview's answer is kept.
	authnCacheTTL = time.Minute
	// authzAllowTTL and authzDenyTTL are how long a SubjectAccessReview's
	// allow and deny are kept: a revoked right lasts at most authzAllowTTL,
	// a granted one is seen within authzDenyTTL.
	authzAllowTTL = time.Minute
	authzDenyTTL  = 10 * time.Second
	// reviewTimeout bounds one TokenReview.
	reviewTimeout = 10 * time.Second
	// metricsCertFile and metricsKeyFile are the names in --metrics-cert-dir
	// (those of a kubernetes.io/tls Secret).
	metricsCertFile = "tls.crt"
	metricsKeyFile  = "tls.key"
)

// reviewBackoff retries a review the API server failed to answer; the
// values are those of k8s.io/apiserver's delegating authentication
// (DefaultAuthWebhookRetryBackoff).
func reviewBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// secureMetrics puts h behind the API server's authentication and
// authorisation and returns the TLS configuration of its listener. rc is
// the replica's API server (nil: --kubeconfig or the in-cluster config).
func secureMetrics(opts Options, rc *rest.Config, h http.Handler) (http.Handler, *tls.Config, error) {
	if rc == nil {
		var err error
		if rc, err = restConfig(opts.Kubeconfig); err != nil {
			return nil, nil, err
		}
	}
	authn, authz, err := delegatedAuth(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-secure: %w", err)
	}
	tlsConf, err := metricsTLSConfig(opts.MetricsCertDir)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-secure: %w", err)
	}
	return withDelegatedAuth(authn, authz, h, klog.Background().WithName("metrics-auth")), tlsConf, nil
}

// delegatedAuth builds the TokenReview authenticator and the
// SubjectAccessReview authorizer against rc's server (reviewauth.go).
func delegatedAuth(rc *rest.Config) (requestAuthenticator, requestAuthorizer, error) {
	rc = rest.CopyConfig(rc)
	rc.UserAgent = rest.DefaultKubernetesUserAgent() + " metrics-auth"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	authn, authz := reviewers(cs.AuthenticationV1().TokenReviews().Create, cs.AuthorizationV1().SubjectAccessReviews().Create)
	return authn, authz, nil
}

// withDelegatedAuth serves h to requests that authn authenticates and
// authz allows: 401 without a token the API server accepts, 403 when the
// user may not use the request's verb (its method, lower-cased) on its
// path, 500 when the API server could not answer the SubjectAccessReview.
func withDelegatedAuth(authn requestAuthenticator, authz requestAuthorizer, h http.Handler, logger klog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		who, ok, err := authn.authenticate(req)
		if err != nil || !ok {
			// As in kube-apiserver, a token the TokenReview rejects and a
			// TokenReview that failed both answer 401.
			logger.V(2).Info("Unauthenticated metrics request", "remote", req.RemoteAddr, "err", err)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb, path := strings.ToLower(req.Method), req.URL.Path
		allowed, reason, err := authz.authorize(req.Context(), who, verb, path)
		if err != nil {
			logger.Error(err, "Authorizing a metrics request", "user", who.name)
			http.Error(w, "authorization failed", http.StatusInternalServerError)
			return
		}
		if !allowed {
			logger.V(4).Info("Forbidden metrics request", "user", who.name, "path", path, "reason", reason)
			http.Error(w, fmt.Sprintf("user %q may not %s %s", who.name, verb, path), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, req)
	})
}

// metricsTLSConfig serves the key pair of dir (tls.crt, tls.key), read
// again whenever either file changes, or, when dir is empty, a self-signed
// certificate made in memory now. Only HTTP/1.1 is offered.
func metricsTLSConfig(dir string) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if dir == "" {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", nil, nil)
		if err != nil {
			return nil, fmt.Errorf("self-signed certificate: %w", err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("self-signed certificate: %w", err)
		}
		conf.Certificates = []tls.Certificate{pair}
		return conf, nil
	}
	kp := &keyPairFiles{cert: filepath.Join(dir, metricsCertFile), key: filepath.Join(dir, metricsKeyFile)}
	if _, err := kp.GetCertificate(nil); err != nil {
		return nil, fmt.Errorf("--metrics-cert-dir: %w", err)
	}
	conf.GetCertificate = kp.GetCertificate
	return conf, nil
}

// keyPairFiles is a certificate and key on disk, loaded again when either
// file is replaced or rewritten (a Secret volume's update or a renewal by
// cert-manager): another file, size or modification time. A pair that fails
// to load keeps the previous one in service.
type keyPairFiles struct {
	cert, key string

	mu        sync.Mutex
	stamp     [2]os.FileInfo // of the pair in service
	pair      *tls.Certificate
	lastError string // logged since the pair in service was loaded
}

// sameFiles reports whether a and b stat the same unchanged files.
func sameFiles(a, b [2]os.FileInfo) bool {
	for i := range a {
		if a[i] == nil || b[i] == nil || !os.SameFile(a[i], b[i]) ||
			a[i].Size() != b[i].Size() || !a[i].ModTime().Equal(b[i].ModTime()) {
			return false
		}
	}
	return true
}

// GetCertificate is tls.Config.GetCertificate.
func (k *keyPairFiles) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var stamp [2]os.FileInfo
	var err error
	for i, path := range []string{k.cert, k.key} {
		if stamp[i], err = os.Stat(path); err != nil {
			break
		}
	}
	if err == nil && k.pair != nil && sameFiles(stamp, k.stamp) {
		return k.pair, nil
	}
	var pair tls.Certificate
	if err == nil {
		pair, err = tls.LoadX509KeyPair(k.cert, k.key)
	}
	if err != nil {
		if k.pair == nil {
			return nil, err
		}
		if msg := err.Error(); msg != k.lastError {
			k.lastError = msg
			klog.ErrorS(err, "Reloading the metrics certificate; serving the previous one", "cert", k.cert, "key", k.key)
		}
		return k.pair, nil
	}
	k.pair, k.stamp, k.lastError = &pair, stamp, ""
	return k.pair, nil
}
