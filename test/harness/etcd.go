package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// EtcdRevision reads etcd's current revision through its JSON gateway.
func (k *Kube) EtcdRevision(ctx context.Context) (int64, error) {
	// A range over one key that need not exist: the answer's header
	// carries the store's revision either way. "AA==" is the key "\x00".
	var out struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := k.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": "AA=="}, &out); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(out.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd range: revision %q: %w", out.Header.Revision, err)
	}
	return rev, nil
}

// CompactEtcd compacts etcd's history up to its current revision and
// returns that revision: a watch from an older resource version can no
// longer be served from etcd, and kube-apiserver answers it with 410 Gone
// when it serves watches from etcd (KubeOptions, --watch-cache=false).
func (k *Kube) CompactEtcd(ctx context.Context) (int64, error) {
	rev, err := k.EtcdRevision(ctx)
	if err != nil {
		return 0, err
	}
	if err := k.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

func (k *Kube) etcdCall(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.etcdURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	return nil
}

// CAFile is the file of the API server's serving certificate, which
// clients of the harness trust.
func (k *Kube) CAFile() string { return k.Config.TLSClientConfig.CAFile }

// WriteKubeconfig writes a kubeconfig for the admin that reaches the API
// server at server (a proxy in front of it, say) and trusts caFile.
func WriteKubeconfig(t TB, path, server, caFile string) {
	t.Helper()
	writeKubeconfig(t, path, server, caFile, AdminToken)
}
