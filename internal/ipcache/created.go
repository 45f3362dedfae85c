package ipcache

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// CreatesAwaited counts the IP record creates a replica did not send
// again because it had created the record itself moments before and its
// informer had not delivered it yet (Created). Register it with the
// process's registry (metrics.RegisterClientGo does).
var CreatesAwaited = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "shardnet_ip_record_creates_awaited_total",
	Help: "IP record creates not sent again because this replica had just created the record and its informer had not delivered it yet.",
})

// CreatedTTL is how long Created vouches for a record it was told of: an
// informer delivers a record within a second or two, even under load.
const CreatedTTL = 15 * time.Second

// Created remembers the IP records this replica created, by name, with
// the spec and labels it created them with, until its informer delivers
// them or CreatedTTL passes. A pod is reconciled again right after its
// first reconcile (its own patch's event, the kubelet's status); when the
// informer of IP records lags its create, the record is not in the cache
// yet, and without Created the reconcile would send the create again and
// be answered AlreadyExists: a wasted write on an API server that is
// already behind, and a retry of the pod. The replica's own deletes
// forget a record; one another writer deletes within CreatedTTL of its
// create is written again at the pod's first reconcile after that.
// Created is safe for concurrent use.
type Created struct {
	now func() time.Time

	mu      sync.Mutex
	records map[string]created
	adds    int
}

type created struct {
	at     time.Time
	spec   kubeovnv1.IPSpec
	labels map[string]string
}

// NewCreated returns an empty Created; now is time.Now when nil.
func NewCreated(now func() time.Time) *Created {
	if now == nil {
		now = time.Now
	}
	return &Created{now: now, records: map[string]created{}}
}

// Add records that the record name was created with spec and labels.
func (c *Created) Add(name string, spec kubeovnv1.IPSpec, labels map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.records[name] = created{at: now, spec: spec, labels: labels}
	// Records whose pod is not reconciled again are swept now and then.
	if c.adds++; c.adds%1024 == 0 {
		for n, r := range c.records {
			if now.Sub(r.at) >= CreatedTTL {
				delete(c.records, n)
			}
		}
	}
}

// Pending reports whether the record name, missing from the informer's
// cache, was created by this replica less than CreatedTTL ago with the
// same spec and labels: the create is done, and only its delivery is
// awaited. A different spec or labels, or an older create, is not
// pending, and the caller writes as it would have.
func (c *Created) Pending(name string, spec kubeovnv1.IPSpec, labels map[string]string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.records[name]
	if !ok {
		return false
	}
	if c.now().Sub(r.at) >= CreatedTTL {
		delete(c.records, name)
		return false
	}
	if !equality.Semantic.DeepEqual(r.spec, spec) || !equality.Semantic.DeepEqual(r.labels, labels) {
		return false
	}
	CreatesAwaited.Inc()
	return true
}

// Forget drops name: the informer has it, or it is being deleted.
func (c *Created) Forget(name string) {
	c.mu.Lock()
	delete(c.records, name)
	c.mu.Unlock()
}

// Len is how many records Created remembers.
func (c *Created) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.records)
}
