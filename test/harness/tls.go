package harness

import "crypto/tls"

// insecureTLS is used only to poll readiness of a server on loopback whose
// self-signed certificate does not exist before it starts.
func insecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback readiness probe only
}
