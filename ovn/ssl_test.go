package ovn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardnet/shardnet/test/harness"
)

// The harness serves tcp: and unix: remotes only. This file starts one
// ovsdb-server with an ssl: remote itself, with a throwaway CA, to check
// the client's TLS path end to end.

type testPKI struct {
	dir                    string
	caPEM, keyPEM, certPEM string // server files
	client                 tls.Certificate
	pool                   *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "shardnet test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(cn string, serial int64, usage x509.ExtKeyUsage) ([]byte, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	}
	p := &testPKI{dir: dir, caPEM: filepath.Join(dir, "ca.pem"), keyPEM: filepath.Join(dir, "key.pem"), certPEM: filepath.Join(dir, "cert.pem")}
	srvCert, srvKey := issue("ovsdb-server", 2, x509.ExtKeyUsageServerAuth)
	cliCert, cliKey := issue("shardnet", 3, x509.ExtKeyUsageClientAuth)
	write := func(path string, b []byte) {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(p.caPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	write(p.certPEM, srvCert)
	write(p.keyPEM, srvKey)
	if p.client, err = tls.X509KeyPair(cliCert, cliKey); err != nil {
		t.Fatal(err)
	}
	p.pool = x509.NewCertPool()
	p.pool.AddCert(ca)
	return p
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestSSLEndpoint(t *testing.T) {
	pki := newTestPKI(t)
	db := filepath.Join(pki.dir, "nb.db")
	if out, err := exec.Command("ovsdb-tool", "create", db, harness.NBSchema(t)).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v: %s", err, out)
	}
	port := freeLoopbackPort(t)
	srv := exec.Command("ovsdb-server", db,
		fmt.Sprintf("--remote=pssl:%d:127.0.0.1", port),
		"--private-key="+pki.keyPEM, "--certificate="+pki.certPEM, "--ca-cert="+pki.caPEM,
		"--unixctl="+filepath.Join(pki.dir, "nb.ctl"),
		"--log-file="+filepath.Join(pki.dir, "nb.log"), "--no-chdir")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(pki.dir, "nb.log"))
			t.Fatalf("ssl ovsdb-server not listening: %v\n%s", err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := Config{
		Endpoints: []string{"ssl:" + addr},
		TLS:       &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.client}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12},
	}
	c, err := NewClient(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	makeSwitch(t, c, "over-tls")
	if got := c.Endpoint(); got != "ssl:"+addr {
		t.Errorf("endpoint %q", got)
	}

	// A client without the CA's trust must not connect.
	bad := cfg
	bad.TLS = &tls.Config{Certificates: []tls.Certificate{pki.client}, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	bctx, bcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer bcancel()
	if c2, err := NewClient(bctx, bad); err == nil {
		c2.Close()
		t.Error("a client that does not trust the server's CA connected")
	}
}
