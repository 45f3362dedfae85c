package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardnet/shardnet/internal/podwire"
	"github.com/shardnet/shardnet/shard"
)

// Reconciler processes one pod key ("namespace/name") of the shard it was
// made for. It is called by the shard's workers, never for the same key on
// two workers at once. Errors are retried with backoff; see queue.Permanent
// and queue.RetryAfter for the other outcomes.
type Reconciler interface {
	Reconcile(ctx context.Context, key string) error
}

// ShardHooks is implemented by a Reconciler that must act when its shard
// starts or stops, for example to record the epoch as the Northbound fence
// and to flush a batch before the handoff is acknowledged.
type ShardHooks interface {
	// OnAcquire is called before the shard's queue starts. An error leaves
	// the shard idle; acquiring is retried after RetryPeriod while the shard
	// stays assigned to this replica.
	OnAcquire(ctx context.Context, shard int, epoch uint64) error
	// OnRelease is called after the queue drained and no key is in flight,
	// before the release is acknowledged to the leader. ctx is already
	// cancelled when the shard was lost rather than handed over (this
	// replica's membership expired): another replica may own the shard by
	// now, so nothing should be written. An error is logged; the release is
	// acknowledged anyway, since the epoch fence keeps a late write out.
	OnRelease(ctx context.Context, shard int, epoch uint64) error
}

// Enqueuer adds keys to the queue of the shard a Reconciler was made for.
type Enqueuer interface {
	Add(key string)
	AddAfter(key string, d time.Duration)
}

// ShardContext is what a Reconciler of one shard term is made from.
type ShardContext struct {
	// Shard and Epoch name the ownership term; Epoch is the fence value.
	Shard int
	Epoch uint64
	// Shards is S, for shard.Of.
	Shards int
	// Informers are the shared caches (pods trimmed, see TrimPod).
	Informers *Informers
	// Queue is the shard's queue, for delayed re-adds.
	Queue Enqueuer
}

// NewReconciler makes the Reconciler of one shard term; it is called each
// time this replica acquires a shard.
type NewReconciler func(ShardContext) (Reconciler, error)

// QueueOptions tunes the per-shard queues; zero fields take queue.Config's
// defaults (5ms to 5m per-key backoff, a 50 qps / 500 burst bucket per
// shard).
type QueueOptions struct {
	BaseDelay time.Duration
	MaxDelay  time.Duration
	QPS       float64
	Burst     int
}

// Config configures a Controller. Zero values take the defaults documented
// on each field.
type Config struct {
	// RESTConfig is used as given when set. Otherwise Kubeconfig is loaded,
	// and when that is empty too the in-cluster config.
	RESTConfig *rest.Config
	// Kubeconfig is the path of a kubeconfig file.
	Kubeconfig string
	// Identity names this replica; required, stable and unique (the pod
	// name of a StatefulSet member).
	Identity string
	// Namespace holds the coordination Leases and ConfigMap; required.
	Namespace string
	// LeaseName prefixes the coordination objects. Default "shardnet".
	LeaseName string
	// Shards is S, fixed for a cluster. Default 64.
	Shards int
	// WorkersPerShard is how many keys of one shard are reconciled at once.
	// Default 2.
	WorkersPerShard int
	// LeaseDuration, RenewDeadline and RetryPeriod time the member Leases
	// and the election; see shard.Config. Defaults 15s, 10s, 2s. A replica
	// whose membership expires has its shards processed elsewhere after
	// about LeaseDuration.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// RenewInterval is how often an idle member renews. Default
	// LeaseDuration/3.
	RenewInterval time.Duration
	// DrainTimeout bounds how long a released shard keeps working through
	// its backlog before dropping it (the next owner reseeds from the
	// cache). Default 5s.
	DrainTimeout time.Duration
	// ShutdownTimeout bounds the handoff when Run's context ends. Default
	// LeaseDuration.
	ShutdownTimeout time.Duration
	// ExitOnLoss makes Run return shard.ErrMembershipLost once a lost
	// membership stopped every shard, rather than rejoining with caches
	// that may have missed changes meanwhile (shard.Config.ExitOnLoss).
	// The caller builds a new Controller to start afresh.
	ExitOnLoss bool
	// BurstGCPercent, if positive, is the collector's target (Go's GOGC)
	// while the caches load and while first passes run, once the live
	// heap is at least BurstHeapFloor; the target in force before comes
	// back when they are over. It lowers a large replica's peak on a
	// restart or a failover for some collector CPU during it (collect.go).
	// 0 leaves the target alone.
	BurstGCPercent int
	// Queue tunes the per-shard queues.
	Queue QueueOptions
	// NewReconciler makes the per-shard reconcilers; required.
	NewReconciler NewReconciler
	// OnLeading, if set, is called when this replica starts leading the
	// shard assignment, with a context that ends with the term; it must
	// return promptly (see shard.Config.OnLeading). The caches are synced
	// by then.
	OnLeading func(ctx context.Context)
	// BeforeJoin, if set, runs once the caches have synced and before the
	// replica joins the shard membership: work that must be done before
	// any shard runs here (adoption of the addresses already in use). The
	// replica is not ready until it returns; an error ends Run.
	BeforeJoin func(ctx context.Context) error
	// Setup, if set, is called once before the informers start, to add
	// event handlers (for example: a namespace change enqueues its pods
	// through Controller.Enqueue) or request more informers.
	Setup func(*Informers) error
	// PodKey, if set, is the queue key of a pod, from which its shard is
	// computed (shard.Of); nil means "namespace/name". It must depend only
	// on the pod's own fields, so that every replica, and every event of
	// the pod, derives the same key. The pod path sets it so that all
	// launcher pods of one KubeVirt VM share the VM's key. It receives the
	// pod's metadata: the cached pod is not a *corev1.Pod (TrimPod), and
	// the key is computed on every event.
	PodKey func(metav1.Object) string
	// ReadyChecks are extra conditions for Ready (a Northbound connection,
	// say).
	ReadyChecks []func() error
	// Registerer receives the workqueue metrics (labelled by shard) and the
	// shardnet_shard_* metrics. Nil registers nothing.
	Registerer prometheus.Registerer
	// ResyncPeriod of the informers. Default 0 (no resync).
	ResyncPeriod time.Duration
}

func (c *Config) complete() (*rest.Config, error) {
	if c.LeaseName == "" {
		c.LeaseName = "shardnet"
	}
	if c.Shards == 0 {
		c.Shards = shard.DefaultShards
	}
	if c.WorkersPerShard == 0 {
		c.WorkersPerShard = 2
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 5 * time.Second
	}
	var errs []error
	if c.Identity == "" {
		errs = append(errs, errors.New("identity is required"))
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("namespace is required"))
	}
	if c.NewReconciler == nil {
		errs = append(errs, errors.New("a reconciler factory is required"))
	}
	if c.Shards < 1 {
		errs = append(errs, fmt.Errorf("shards must be positive, got %d", c.Shards))
	}
	if c.WorkersPerShard < 1 {
		errs = append(errs, fmt.Errorf("workers per shard must be positive, got %d", c.WorkersPerShard))
	}
	if c.DrainTimeout < 0 || c.ResyncPeriod < 0 {
		errs = append(errs, errors.New("drain timeout and resync period must not be negative"))
	}
	if c.BurstGCPercent < 0 {
		errs = append(errs, fmt.Errorf("burst collector target must not be negative, got %d", c.BurstGCPercent))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rc := c.RESTConfig
	if rc == nil {
		var err error
		// An empty path falls back to the in-cluster config.
		if rc, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
			return nil, fmt.Errorf("loading kubeconfig %q: %w", c.Kubeconfig, err)
		}
	}
	rc = rest.CopyConfig(rc)
	// client-go's default of 5 qps would throttle the coordination writes
	// of a handoff behind the informers' lists.
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 50, 100
	}
	rest.AddUserAgent(rc, "shardnet/"+c.Identity)
	return rc, nil
}

// Protobuf is rc for clients of Kubernetes' built-in types: they speak
// protobuf, which the API server encodes and a replica decodes for a
// fraction of the CPU JSON costs (every replica watches every pod), and
// for the metadata client (PartialObjectMetadata is a built-in type, for
// custom resources too). The clients of custom resources in full keep
// rc's JSON: the API server serves them no protobuf.
func Protobuf(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return rc
}

// KubeClients are the typed client of the built-in types and the pod
// client whose answers decode only as far as the pod cache keeps a pod
// (podwire), both in protobuf (Protobuf) on one connection of rc.
func KubeClients(rc *rest.Config) (kubernetes.Interface, *podwire.Client, error) {
	prc := Protobuf(rc)
	httpClient, err := rest.HTTPClientFor(prc)
	if err != nil {
		return nil, nil, err
	}
	kube, err := kubernetes.NewForConfigAndClient(prc, httpClient)
	if err != nil {
		return nil, nil, err
	}
	pods, err := podwire.NewClient(prc, httpClient)
	if err != nil {
		return nil, nil, err
	}
	return kube, pods, nil
}
