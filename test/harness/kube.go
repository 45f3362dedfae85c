package harness

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
)

// AdminToken is the bearer token of the harness's cluster admin (a member
// of system:masters).
const AdminToken = "shardnet-harness-admin-token"

// Kube is a running etcd and kube-apiserver on loopback.
type Kube struct {
	// Config is the cluster admin's client config, with QPS and Burst high
	// enough that client-side rate limiting does not hide server speed.
	Config *rest.Config
	// Client is a typed client for the built-in API.
	Client kubernetes.Interface
	// Shardnet is a typed client for kubeovn.io and shardnet.io.
	Shardnet versioned.Interface
	// Kubeconfig is the path of a kubeconfig file for the admin.
	Kubeconfig string
	// URL is the API server's https address.
	URL string
	// Dir holds the servers' data, certificates and logs.
	Dir string

	etcd, apiserver *Process
	// kwok is the kwok process StartKwok started, for StopKwok.
	kwok *Process
	// etcdURL is etcd's client URL, for StartEtcd.
	etcdURL string
	// extraArgs are added to kube-apiserver's flags (KubeOptions).
	extraArgs []string
	// cpus are the CPUs etcd, kube-apiserver and kwok run on
	// (KubeOptions.CPUs); empty: any.
	cpus []int
}

// KubeOptions changes the cluster StartKubeWith starts.
type KubeOptions struct {
	// CRDDirs are installed as by StartKubeWithCRDs; nil means
	// DefaultCRDDirs.
	CRDDirs []string
	// APIServerArgs are added to kube-apiserver's flags, e.g.
	// --watch-cache=false for a fault test that needs watches served from
	// etcd (and so answered 410 Gone once etcd compacted past them).
	APIServerArgs []string
	// CPUs, when set, are the CPUs etcd, kube-apiserver and kwok run on,
	// as a cluster's control plane has cores of its own: the benchmark
	// keeps them apart from the CPUs of what it measures (PinProcess).
	CPUs []int
}

// StartKube starts etcd and kube-apiserver, waits until the API server is
// ready, and installs the CRDs of DefaultCRDDirs (shardnet's AddressClaim
// and the opt-in kubeovn.io CRDs), waiting until they are Established. Both
// servers are stopped at cleanup.
func StartKube(t TB) *Kube {
	t.Helper()
	return StartKubeWithCRDs(t, DefaultCRDDirs(t)...)
}

// StartKubeWithCRDs is StartKube with the CRDs of dirs instead of the
// default ones (see InstallCRDs); together they must define the kubeovn.io
// Subnet and the shardnet.io AddressClaim.
func StartKubeWithCRDs(t TB, dirs ...string) *Kube {
	t.Helper()
	return StartKubeWith(t, KubeOptions{CRDDirs: dirs})
}

// StartKubeWith is StartKube with the changes of opts.
func StartKubeWith(t TB, opts KubeOptions) *Kube {
	t.Helper()
	dirs := opts.CRDDirs
	if dirs == nil {
		dirs = DefaultCRDDirs(t)
	}
	etcdBin := testBinary(t, "etcd")
	apiserverBin := testBinary(t, "kube-apiserver")
	k := &Kube{Dir: t.TempDir(), extraArgs: slices.Clone(opts.APIServerArgs), cpus: slices.Clone(opts.CPUs)}

	etcdURL := k.startEtcd(t, etcdBin)
	k.etcdURL = etcdURL
	k.startAPIServer(t, apiserverBin, etcdURL)
	k.InstallCRDs(t, dirs...)
	return k
}

// DefaultCRDDirs are the directories of the CRDs a cluster without kube-ovn
// needs for shardnet: deploy/base/crds (shardnet's AddressClaim, part of the
// kustomize base) and deploy/kubeovn-crds (the opt-in kubeovn.io CRDs).
func DefaultCRDDirs(t TB) []string {
	t.Helper()
	root := repoRoot(t)
	return []string{
		filepath.Join(root, "deploy", "base", "crds"),
		filepath.Join(root, "deploy", "kubeovn-crds"),
	}
}

// KubeOVNCRDDir is the directory of the pinned copies of kube-ovn's
// published kubeovn.io CRDs (test/crds/kubeovn), as a cluster that runs
// kube-ovn has them.
func KubeOVNCRDDir(t TB) string {
	t.Helper()
	return filepath.Join(repoRoot(t), "test", "crds", "kubeovn")
}

func (k *Kube) startEtcd(t TB, bin string) string {
	t.Helper()
	dir := filepath.Join(k.Dir, "etcd")
	for attempt := 0; ; attempt++ {
		client := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		k.etcd = newProcess("etcd", filepath.Join(k.Dir, "etcd.log"), nil, bin,
			"--name=harness",
			"--data-dir="+dir,
			"--listen-client-urls="+client,
			"--advertise-client-urls="+client,
			"--listen-peer-urls="+peer,
			"--initial-advertise-peer-urls="+peer,
			"--initial-cluster=harness="+peer,
			"--unsafe-no-fsync",
			"--quota-backend-bytes=8589934592",
			"--log-level=warn")
		k.etcd.cpus = k.cpus
		k.etcd.start(t)
		err := waitHTTP(k.etcd, client+"/health", "", 20*time.Second)
		if err == nil {
			t.Cleanup(k.etcd.Stop)
			return client
		}
		k.etcd.Kill()
		if attempt >= 2 {
			t.Fatalf("harness: etcd not healthy: %v\n%s", err, k.etcd.tail())
		}
		_ = os.RemoveAll(dir)
	}
}

func (k *Kube) startAPIServer(t TB, bin, etcdURL string) {
	t.Helper()
	certDir := filepath.Join(k.Dir, "certs")
	if err := os.MkdirAll(certDir, 0o755); err != nil {
		t.Fatalf("harness: %v", err)
	}
	saKey := filepath.Join(k.Dir, "sa.key")
	writeServiceAccountKey(t, saKey)
	tokens := filepath.Join(k.Dir, "tokens.csv")
	mustWrite(t, tokens, []byte(AdminToken+",harness-admin,harness-admin-uid,system:masters\n"), 0o600)

	for attempt := 0; ; attempt++ {
		port := freePort(t)
		k.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
		args := append([]string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--cert-dir=" + certDir,
			"--token-auth-file=" + tokens,
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + saKey,
			"--service-account-signing-key-file=" + saKey,
			// An address range for Service objects only: nothing is sent
			// to it, no service proxy runs.
			"--service-cluster-ip-range=10.96.0.0/16",
			"--endpoint-reconciler-type=none",
			// No controller-manager creates default ServiceAccounts, so
			// the admission plugin that requires them is off.
			"--disable-admission-plugins=ServiceAccount",
			"--allow-privileged=true",
			"--max-requests-inflight=1600",
			"--max-mutating-requests-inflight=800",
			// /debug/pprof, for the bench to show where the server spends
			// its time (admin client only).
			"--profiling=true",
			"--v=0"}, k.extraArgs...)
		k.apiserver = newProcess("kube-apiserver", filepath.Join(k.Dir, "kube-apiserver.log"), nil, append([]string{bin}, args...)...)
		k.apiserver.cpus = k.cpus
		k.apiserver.start(t)
		err := waitHTTP(k.apiserver, k.URL+"/readyz", AdminToken, 60*time.Second)
		if err == nil {
			t.Cleanup(k.apiserver.Stop)
			break
		}
		k.apiserver.Kill()
		if attempt >= 2 {
			t.Fatalf("harness: kube-apiserver not ready: %v\n%s", err, k.apiserver.tail())
		}
	}

	caFile := filepath.Join(certDir, "apiserver.crt")
	k.Config = &rest.Config{
		Host:            k.URL,
		BearerToken:     AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAFile: caFile},
		QPS:             5000,
		Burst:           10000,
	}
	k.Client = kubernetes.NewForConfigOrDie(k.Config)
	k.Shardnet = versioned.NewForConfigOrDie(k.Config)
	k.Kubeconfig = filepath.Join(k.Dir, "kubeconfig")
	writeKubeconfig(t, k.Kubeconfig, k.URL, caFile, AdminToken)
}

// Stop stops the API server and etcd (before cleanup would).
func (k *Kube) Stop() {
	k.apiserver.Stop()
	k.etcd.Stop()
}

// StopAPIServer stops kube-apiserver (SIGTERM, SIGKILL after 10 s) and
// keeps etcd running; StartAPIServer starts it again. For fault tests.
func (k *Kube) StopAPIServer() { k.apiserver.Stop() }

// CPUSeconds is the CPU the API server, etcd and kwok (when started) have
// used so far, by process name.
func (k *Kube) CPUSeconds() map[string]float64 {
	out := map[string]float64{}
	for _, p := range []*Process{k.apiserver, k.etcd, k.kwok} {
		if p != nil {
			out[p.Name] = p.CPUSeconds()
		}
	}
	return out
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, with
// the flags it first ran with: the same port, etcd, token file and
// certificate directory (kube-apiserver keeps a serving certificate it
// finds there), so that Config, Client, Shardnet and Kubeconfig keep
// working. It waits until /readyz answers 200; the cleanup StartKube
// registered stops it.
func (k *Kube) StartAPIServer(t TB) {
	t.Helper()
	if k.apiserver.Running() {
		t.Fatalf("harness: kube-apiserver is still running")
	}
	k.apiserver.start(t)
	if err := waitHTTP(k.apiserver, k.URL+"/readyz", AdminToken, 60*time.Second); err != nil {
		t.Fatalf("harness: restarted kube-apiserver not ready: %v\n%s", err, k.apiserver.tail())
	}
}

// StopEtcd stops etcd (SIGTERM, SIGKILL after 10 s) and keeps
// kube-apiserver running; StartEtcd starts it again. For fault tests.
func (k *Kube) StopEtcd() { k.etcd.Stop() }

// StartEtcd starts etcd again after StopEtcd, on its data directory and
// ports, and waits until /health answers 200; the cleanup StartKube
// registered stops it.
func (k *Kube) StartEtcd(t TB) {
	t.Helper()
	if k.etcd.Running() {
		t.Fatalf("harness: etcd is still running")
	}
	k.etcd.start(t)
	if err := waitHTTP(k.etcd, k.etcdURL+"/health", "", 30*time.Second); err != nil {
		t.Fatalf("harness: restarted etcd not healthy: %v\n%s", err, k.etcd.tail())
	}
}

// InstallCRDs creates every CustomResourceDefinition in the YAML files of
// dirs (one per file; a kustomization.yaml is skipped), waits until each is
// Established, then until the kubeovn.io Subnets and shardnet.io
// AddressClaims can be listed.
func (k *Kube) InstallCRDs(t TB, dirs ...string) {
	t.Helper()
	files := CRDFiles(t, dirs...)
	k.createCRDs(t, files)
	// Discovery of the new groups lags Established by a moment: wait until
	// the typed client can list each group.
	waitFor(t, nil, 60*time.Second, func(ctx context.Context) error {
		if _, err := k.Shardnet.KubeovnV1().Subnets().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return err
		}
		_, err := k.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
}

// CRDFiles returns the CRD manifests of dirs: every *.yaml file but a
// kustomization.yaml. It fails the test when a directory has none.
func CRDFiles(t TB, dirs ...string) []string {
	t.Helper()
	var files []string
	for _, dir := range dirs {
		matches, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		n := 0
		for _, f := range matches {
			if filepath.Base(f) != "kustomization.yaml" {
				files = append(files, f)
				n++
			}
		}
		if err != nil || n == 0 {
			t.Fatalf("harness: no CRD manifests in %s (run `make generate`): %v", dir, err)
		}
	}
	return files
}

// ReadCRD parses the CustomResourceDefinition of file (one per file).
func ReadCRD(t TB, file string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		t.Fatalf("harness: parsing %s: %v", file, err)
	}
	return crd
}

// NADResource is multus's NetworkAttachmentDefinition resource.
var NADResource = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}

// InstallNADCRD installs the pinned copy of multus's
// NetworkAttachmentDefinition CRD (test/crds/multus), as a cluster with
// multus has it, and waits until NADResource can be listed.
func (k *Kube) InstallNADCRD(t TB) {
	t.Helper()
	k.InstallServedCRD(t, filepath.Join(repoRoot(t), "test", "crds", "multus", "k8s.cni.cncf.io_network-attachment-definitions.yaml"), NADResource)
}

// InstallServedCRD creates the CustomResourceDefinition in file, waits
// until it is Established, then until gvr can be listed through a dynamic
// client in every namespace.
func (k *Kube) InstallServedCRD(t TB, file string, gvr schema.GroupVersionResource) {
	t.Helper()
	k.createCRDs(t, []string{file})
	dyn := dynamic.NewForConfigOrDie(k.Config)
	waitFor(t, nil, 60*time.Second, func(ctx context.Context) error {
		_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
}

// createCRDs creates the CustomResourceDefinition of each file (one per
// file) and waits until each is Established.
func (k *Kube) createCRDs(t TB, files []string) {
	t.Helper()
	cs := apiextensions.NewForConfigOrDie(k.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var names []string
	for _, f := range files {
		crd := ReadCRD(t, f)
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("harness: creating CRD %s: %v", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	for _, name := range names {
		waitFor(t, nil, 60*time.Second, func(ctx context.Context) error {
			crd, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("CRD %s not Established yet", name)
		})
	}
}

func writeServiceAccountKey(t TB, path string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("harness: generating service-account key: %v", err)
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	mustWrite(t, path, b, 0o600)
}

func writeKubeconfig(t TB, path, server, caFile, token string) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["harness"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: caFile}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["harness"] = &clientcmdapi.Context{Cluster: "harness", AuthInfo: "admin"}
	cfg.CurrentContext = "harness"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("harness: writing kubeconfig: %v", err)
	}
}

// waitHTTP polls url until it answers 200. The API server's certificate is
// not known before it starts, so readiness is checked without verifying it;
// clients built from Config verify it.
func waitHTTP(p *Process, url, token string, timeout time.Duration) error {
	tr := &http.Transport{TLSClientConfig: insecureTLS()}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if !p.Running() {
			return fmt.Errorf("%s exited", p.Name)
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %s: %v", timeout, last)
}
