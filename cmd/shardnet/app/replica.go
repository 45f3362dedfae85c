package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	crdscheme "github.com/shardnet/shardnet/api/client/clientset/versioned/scheme"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/controller"
	"github.com/shardnet/shardnet/internal/claimcache"
	"github.com/shardnet/shardnet/internal/podcache"
	"github.com/shardnet/shardnet/internal/podwire"
	"github.com/shardnet/shardnet/metrics"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/queue"
	"github.com/shardnet/shardnet/reconcile"
	"github.com/shardnet/shardnet/shard"
)

// incarnation is one run of a replica: the sharded runtime with the pod
// reconciler on every owned shard, and, while it leads, the subnet
// reconciler and the status writer, over caches and a Northbound connection
// of its own. A Replica starts a new one after losing its membership.
type incarnation struct {
	opts    Options
	kube    kubernetes.Interface
	podAPI  *podwire.Client
	sn      versioned.Interface
	nb      *ovn.Client
	ctrl    *controller.Controller
	caches  *reconcile.Caches
	pods    *reconcile.Pods
	subnets *reconcile.SubnetReconciler
	gc      *reconcile.GC
	met     *metrics.Metrics
	events  record.EventBroadcaster
	// extGW serves the external gateway (extgw.go); nil with
	// --enable-eip-snat=false.
	extGW reconcile.ExternalGatewayCatalog

	// subnetQ holds subnet names for the leader's subnet reconciler.
	subnetQ workqueue.TypedRateLimitingInterface[string]
	// vips is the leader's Vip reconciler and its queue (vips.go).
	vips *vipPath

	// adoption exports the addresses found in use; lastPending and
	// conflictsLogged keep its log lines to changes (statusLoop only).
	adoption        *metrics.Adoption
	adoptMu         sync.Mutex
	lastPending     int
	conflictsLogged map[string]bool

	// fencedTerm is the leadership term recorded in the Northbound by
	// onLeading; the leader's writes wait for it (leaderTerm).
	fencedTerm atomic.Uint64
}

// nbStartMemory remembers, across a replica's incarnations, that one
// started its caches when a Northbound endpoint accepted and then failed
// to connect (an endpoint that accepts and never answers): the next ones
// start theirs only once the Northbound answers, until one connects, so
// that such an endpoint does not cost the API server a cache load at
// every retry. A nil memory always starts on accept.
type nbStartMemory struct{ wait atomic.Bool }

// startOnAccept reports whether the next connect starts the caches on
// accept (ovn.Config.StartOnAccept).
func (m *nbStartMemory) startOnAccept() bool { return m == nil || !m.wait.Load() }

// failed records a failed connect; started says whether the caches had
// started.
func (m *nbStartMemory) failed(started bool) {
	if m != nil && started {
		m.wait.Store(true)
	}
}

// connected records a connect that succeeded.
func (m *nbStartMemory) connected() {
	if m != nil {
		m.wait.Store(false)
	}
}

// newIncarnation builds a run of the replica from validated options. rc,
// when not nil, replaces --kubeconfig; reg receives every metric.
// nbStart, when not nil, is the replica's memory across incarnations of
// how the last one's Northbound connect went (see below).
func newIncarnation(ctx context.Context, opts Options, rc *rest.Config, reg prometheus.Registerer, nbStart *nbStartMemory) (*incarnation, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if rc == nil {
		var err error
		if rc, err = restConfig(opts.Kubeconfig); err != nil {
			return nil, err
		}
	}
	rc = rest.CopyConfig(rc)
	rc.DisableCompression = !opts.KubeCompression
	if rc.QPS == 0 {
		// The pod path makes a few writes per pod; client-side limits
		// would cap it far below what the API server takes.
		rc.QPS, rc.Burst = 2000, 4000
	}
	r := &incarnation{opts: opts}
	var err error
	// The pod patches' answers decoded only as far as the pod cache
	// keeps a pod (reconcile.ClientWrites), on the typed client's
	// connection.
	if r.kube, r.podAPI, err = controller.KubeClients(rc); err != nil {
		return nil, err
	}
	if r.sn, err = controller.CRDClient(rc); err != nil {
		return nil, err
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if r.met, err = metrics.New(reg); err != nil {
		return nil, err
	}
	r.met.SetShards(opts.Shards)
	if r.adoption, err = metrics.NewAdoption(reg); err != nil {
		return nil, err
	}
	if r.vips, err = newVipPath(reg); err != nil {
		return nil, err
	}
	nbCfg := opts.nbConfig(klog.FromContext(ctx).WithName("nb"))
	if opts.usesSSL() {
		if nbCfg.TLS, err = nbTLS(&opts, nbCfg.Logger); err != nil {
			return nil, err
		}
	}

	r.events = record.NewBroadcaster()
	r.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.kube.CoreV1().Events("")})
	es, err := eventScheme()
	if err != nil {
		return nil, err
	}
	recorder := r.events.NewRecorder(es, corev1.EventSource{Component: "shardnet", Host: opts.Identity})
	r.subnetQ = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "subnets"})

	r.ctrl, err = controller.New(controller.Config{
		RESTConfig:      rc,
		Identity:        opts.Identity,
		Namespace:       opts.Namespace,
		Shards:          opts.Shards,
		WorkersPerShard: opts.WorkersPerShard,
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		Registerer:      reg,
		ReadyChecks:     []func() error{func() error { return r.nb.Ready() }, r.cachesSynced},
		NewReconciler:   r.newShard,
		OnLeading:       r.onLeading,
		BeforeJoin:      r.adopt,
		ExitOnLoss:      true,
		BurstGCPercent:  opts.BurstGCPercent,
		PodKey:          podKey(opts.KeepVMIP),
		Setup: func(inf *controller.Informers) error {
			c, err := reconcile.NewCaches(inf.Kube, inf.CRDs, r.sn, opts.Shards)
			if err != nil {
				return err
			}
			r.caches = c
			c.Registry.SetAdoptSpacing(adoptSpacing)
			c.Registry.SetAdoptRunner(controller.RoomForPass("the addresses in use re-read"))
			c.Registry.SetHoldSource(c.HoldSource(r.nbPorts, time.Now, reconcile.HoldVMOwner(inf.VMs, opts.KeepVMIP)))
			if err := r.vips.watch(r, inf); err != nil {
				return err
			}
			if r.extGW, err = r.externalGateway(inf, c); err != nil {
				return err
			}
			return r.watchSubnets(inf)
		},
	})
	if err != nil {
		r.events.Shutdown()
		return nil, err
	}
	// A pod waiting for a NetworkAttachmentDefinition is served as soon
	// as it comes, not at its next retry.
	r.ctrl.Informers().NADs.OnChange(r.enqueueNADUsers)
	if err := r.watchWaitedFor(r.ctrl.Informers()); err != nil {
		r.events.Shutdown()
		return nil, err
	}
	// The caches load while the Northbound sends its own (at 10,000 pods
	// the two took 9 s and 1.4 s one after the other); they start once
	// the Northbound accepts a connection, so that an incarnation that
	// cannot reach it (retried every retry period) does not load them each
	// time. Accepting is enough: at 50,000 ports, ovsdb-server answered
	// the second and third replicas of a restart about a second after
	// they connected, once it had sent the first one's monitor reply. An
	// endpoint that accepted and never answered makes the next
	// incarnations wait for the answer, until one connects.
	connecting := time.Now()
	started := false
	nbCfg.StartOnAccept = nbStart.startOnAccept()
	nbCfg.OnConnected = func() {
		started = true
		klog.FromContext(ctx).Info("Northbound connected; loading the caches", "connect", time.Since(connecting), "onAccept", nbCfg.StartOnAccept)
		r.ctrl.StartInformers(ctx)
	}
	ok := false
	defer func() {
		if !ok {
			r.ctrl.StopInformers()
			r.events.Shutdown()
			if r.nb != nil {
				r.nb.Close()
			}
		}
	}()
	if r.nb, err = ovn.NewClient(ctx, nbCfg); err != nil {
		nbStart.failed(started)
		return nil, fmt.Errorf("%w: %w", errNBConnect, err)
	}
	nbStart.connected()
	c := r.caches
	if r.pods, err = reconcile.NewPods(reconcile.PodConfig{
		Writes: r.writes(), NB: r.nb,
		Pods: c.Pods, StatefulSets: c.StatefulSets, IPs: c.IPs,
		ClaimIndex: c.ClaimIndex(), Catalog: c, Subnets: c.Registry, Claims: c.Allocator, Recorder: recorder,
		NADs:          r.ctrl.Informers().NADs,
		DefaultSubnet: opts.DefaultSubnet, ClusterRouter: opts.ClusterRouter, PodNICType: opts.PodNICType,
		IPRecords: opts.IPRecords, DisableEIPSNAT: opts.DisableEIPSNAT, Metrics: r.met,
		Vips: c.Vips, Vlans: c.Vlans, VipWrites: r.writes(), VipMetrics: r.vips.met,
		ExternalGateway: r.extGW,
		KeepVMIP:        opts.KeepVMIP, PodIndex: c.PodInformer.GetIndexer(), VMs: r.ctrl.Informers().VMs,
	}); err != nil {
		return nil, err
	}
	if r.subnets, err = reconcile.NewSubnetReconciler(reconcile.SubnetConfig{
		NB: r.nb, Shardnet: r.sn, Subnets: c.SubnetLister, Nodes: c.Nodes, Claims: c.Claims,
		Registry: c.Registry, Recorder: recorder, ClusterRouter: opts.ClusterRouter, NetworkType: opts.NetworkType, Metrics: r.met,
		Term: r.leaderTerm,
	}); err != nil {
		return nil, err
	}
	if err := r.vips.start(r, recorder); err != nil {
		return nil, err
	}
	// The leader's subnet reconciler keeps each subnet's virtual ports,
	// whose parents are the ports with port_vips (docs/contract.md N14).
	r.nb.OnVIPPortChange(func(sw string) { r.subnetQ.Add(sw) })
	r.gc = reconcile.NewGC(c, r.nb.PodKeys, opts.GCGrace)
	watchVMs(r.ctrl, r.gc, opts.KeepVMIP)
	ok = true
	return r, nil
}

// watchWaitedFor retries at once the pods put off for an object that was
// missing (docs/contract.md E2, E19: a Subnet, an IPPool, a Vlan) when
// such an object appears or a Vlan changes, instead of at their next slow
// retry.
func (r *incarnation) watchWaitedFor(inf *controller.Informers) error {
	retry := func(any) {
		if n := r.ctrl.RetryDelayed(); n > 0 {
			klog.Background().V(2).Info("An object pods may wait for appeared: retrying the pods put off", "keys", n)
		}
	}
	kubeovn := inf.CRDs.Kubeovn().V1()
	for _, i := range []cache.SharedIndexInformer{kubeovn.Subnets().Informer(), kubeovn.IPPools().Informer()} {
		if _, err := i.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: retry}); err != nil {
			return err
		}
	}
	_, err := kubeovn.Vlans().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: retry,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*kubeovnv1.Vlan)
			c, ok2 := cur.(*kubeovnv1.Vlan)
			if ok1 && ok2 && o.Spec.ID == c.Spec.ID && o.Spec.Provider == c.Spec.Provider {
				return
			}
			retry(cur)
		},
	})
	return err
}

// enqueueNADUsers queues the pods whose network annotations may name the
// NetworkAttachmentDefinition namespace/name; the shard owner of each
// reconciles it (others drop the key). A cheap substring match: a false
// positive costs one no-op reconcile.
func (r *incarnation) enqueueNADUsers(_, name string) {
	pods, err := r.caches.Pods.List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if strings.Contains(p.Annotations[reconcile.AnnotationNetworks], name) ||
			strings.Contains(p.Annotations[reconcile.AnnotationDefaultNetwork], name) {
			r.ctrl.Enqueue(reconcile.PodKey(p, r.opts.KeepVMIP))
		}
	}
}

func (r *incarnation) cachesSynced() error {
	if r.caches == nil || !r.caches.Synced() {
		return errors.New("caches not synced")
	}
	return nil
}

// watchSubnets feeds the leader's subnet queue: Subnet events, and every
// subnet when a node comes (its port groups) or goes.
func (r *incarnation) watchSubnets(inf *controller.Informers) error {
	add := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			r.subnetQ.Add(key)
		}
	}
	update := func(old, cur any) {
		add(cur)
		r.dhcpChanged(inf, old, cur)
	}
	if _, err := inf.CRDs.Kubeovn().V1().Subnets().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: add, UpdateFunc: update, DeleteFunc: add,
	}); err != nil {
		return err
	}
	all := func(any) { r.enqueueSubnets() }
	_, err := inf.Kube.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: all, DeleteFunc: all})
	return err
}

// dhcpChanged queues the pods of a subnet whose DHCP options rows were
// recorded anew (enableDHCP turned on, or a row re-created): their ports
// are pointed at the rows (docs/contract.md N4). Only the shards this
// replica runs take them; the others see the same event. A row deleted
// needs nothing: ports lose the reference with it.
func (r *incarnation) dhcpChanged(inf *controller.Informers, old, cur any) {
	o, ok1 := old.(*kubeovnv1.Subnet)
	s, ok2 := cur.(*kubeovnv1.Subnet)
	if !ok1 || !ok2 || !s.Spec.EnableDHCP {
		return
	}
	v4, v6 := s.Status.DHCPv4OptionsUUID, s.Status.DHCPv6OptionsUUID
	if (v4 == "" || v4 == o.Status.DHCPv4OptionsUUID) && (v6 == "" || v6 == o.Status.DHCPv6OptionsUUID) {
		return
	}
	pods, err := podcache.NewLister(inf.Pods.GetIndexer()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if !onSubnet(p, s.Name) {
			continue
		}
		if key, err := inf.PodKey(p); err == nil {
			r.ctrl.Enqueue(key)
		}
	}
}

// onSubnet reports whether any network of the pod is annotated with the
// subnet's switch.
func onSubnet(p *corev1.Pod, subnet string) bool {
	for k, v := range p.Annotations {
		if v == subnet && strings.HasSuffix(k, ".kubernetes.io/"+reconcile.KeyLogicalSwitch) {
			return true
		}
	}
	return false
}

func (r *incarnation) enqueueSubnets() {
	for _, s := range r.caches.Subnets() {
		r.subnetQ.Add(s.Name)
	}
}

// run runs this incarnation until ctx ends, then hands its shards over and
// returns. It returns early with an error if the runtime fails, and with
// shard.ErrMembershipLost once a lost membership stopped every shard.
func (r *incarnation) run(ctx context.Context) error {
	defer r.nb.Close()
	defer r.events.Shutdown()
	loops, stopLoops := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(5)
	go func() { defer wg.Done(); r.nbRecoveryLoop(loops) }()
	go func() { defer wg.Done(); r.vips.work(loops, r) }()
	go func() { defer wg.Done(); r.statusLoop(loops) }()
	go func() { defer wg.Done(); r.subnetWorker(loops) }()
	go func() { defer wg.Done(); r.gcLoop(loops) }()
	err := r.ctrl.Run(ctx)
	stopLoops()
	r.subnetQ.ShutDown()
	r.vips.q.ShutDown()
	wg.Wait()
	return err
}

// nbPoll is how often nbRecoveryLoop reads the Northbound client's state
// (a local check, no request).
const nbPoll = 100 * time.Millisecond

// nbRecoveryLoop watches the Northbound connection and, when it is ready
// again after it was not, retries at once the keys that failed meanwhile
// instead of letting them wait out retry delays that doubled during the
// outage (controller.Controller.RetryWaiting).
func (r *incarnation) nbRecoveryLoop(ctx context.Context) {
	logger := klog.FromContext(ctx)
	t := time.NewTicker(nbPoll)
	defer t.Stop()
	ready := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := r.nb.Ready() == nil
		if now && !ready {
			n := r.ctrl.RetryWaiting()
			logger.Info("Northbound ready again: retrying the keys that failed meanwhile", "keys", n)
		}
		ready = now
	}
}

// onLeading starts a leadership term: the new leader re-runs every
// subnet, and the leader metric follows the term.
func (r *incarnation) onLeading(ctx context.Context) {
	logger := klog.FromContext(ctx)
	r.met.SetLeader(true)
	go func() {
		defer r.met.SetLeader(false)
		r.recordTerm(ctx, logger)
		<-ctx.Done()
	}()
}

// adoptSpacing keeps the status loop's re-read of the addresses in use
// (reconcile.Subnets.SetAdoptSpacing) to about a twentieth of a core: at
// 50,000 pods a pass takes about half a second, so it runs every ten
// seconds or so instead of every status interval.
const adoptSpacing = 20

// termPoll is how often recordTerm looks for the leadership term.
const termPoll = 50 * time.Millisecond

// recordTerm records this leadership term in the Northbound, which fences
// off every earlier leader's switch, router port and port group writes,
// then queues every subnet and Vip. It gives up when the term ends or a later
// leader's term is recorded already.
func (r *incarnation) recordTerm(ctx context.Context, logger klog.Logger) {
	for ctx.Err() == nil {
		term, err := r.ctrl.LeaderTerm()
		if err != nil {
			// The term is read from the leader Lease just after the
			// election: a local check, polled briefly.
			logger.V(4).Info("Leadership term not known yet", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(termPoll):
			}
			continue
		}
		err = r.nb.TakeOver(ctx, ovn.LeaderShard, term)
		if err == nil {
			r.fencedTerm.Store(term)
			logger.Info("Leading: reconciling every subnet and Vip", "term", term)
			r.enqueueSubnets()
			r.vips.enqueueAll(r)
			return
		}
		if errors.Is(err, ovn.ErrStaleEpoch) {
			logger.Error(err, "A later leader's term is recorded in the Northbound: this replica was deposed (or the nodes' clocks differ by more than a lease duration); it makes no leader writes")
			return
		}
		logger.Error(err, "Recording the leadership term; retrying", "after", r.opts.RetryPeriod)
		select {
		case <-ctx.Done():
		case <-time.After(r.opts.RetryPeriod):
		}
	}
}

// leaderTerm is the term the subnet reconciler writes under: this
// replica's current term once recorded in the Northbound.
func (r *incarnation) leaderTerm() (uint64, error) {
	term, err := r.ctrl.LeaderTerm()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", reconcile.ErrDeposed, err)
	}
	if r.fencedTerm.Load() != term {
		return 0, fmt.Errorf("leadership term %d not recorded in the Northbound yet", term)
	}
	return term, nil
}

// statusLoop exports this replica's IPAM usage every StatusInterval (each
// replica sees every claim) and, while it leads, writes the subnet
// counters.
func (r *incarnation) statusLoop(ctx context.Context) {
	tick := time.NewTicker(r.opts.StatusInterval)
	defer tick.Stop()
	var repaired, freed uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if !r.caches.Synced() {
				continue
			}
			usage := r.caches.Registry.Refresh()
			r.reportAdoption(ctx, r.caches.Registry.LastAdopt())
			if r.ctrl.IsLeader() {
				_ = r.subnets.RefreshStatus(ctx, usage)
				r.markOld(ctx)
			}
			r.met.SetUsage(usage)
			if n := r.caches.Registry.Repaired(); n > repaired {
				r.met.BitmapRepaired(n - repaired)
				repaired = n
			}
			if n := r.caches.Registry.StraysFreed(); n > freed {
				r.met.BitmapStraysFreed(n - freed)
				freed = n
			}
		}
	}
}

// markPerPass bounds the claims and the IP records one status pass of
// the leader marks (markOld): at the default client rate, a few seconds
// of writes.
const markPerPass = 100

// markOld writes the spec of claims and IP records whose metadata does
// not carry it (of an older version, or of kube-ovn) into their metadata
// (claimcache.MarkOld, ipcache.MarkOld), a bounded batch of each per
// status pass, so that replicas stop reading them in full. It logs each
// pass that marks or fails.
func (r *incarnation) markOld(ctx context.Context) {
	logger := klog.FromContext(ctx)
	claims := r.sn.ShardnetV1alpha1().AddressClaims()
	ips := r.sn.KubeovnV1().IPs()
	for _, m := range []struct {
		what string
		mark func() (int, int, error)
	}{
		{"claims", func() (int, int, error) {
			return claimcache.MarkOld(ctx, r.caches.Claims, func(ctx context.Context, name string, patch []byte) error {
				_, err := claims.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
				return err
			}, markPerPass)
		}},
		{"IP records", func() (int, int, error) {
			return r.caches.MarkOldIPs(ctx, func(ctx context.Context, name string, patch []byte) error {
				_, err := ips.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
				return err
			}, markPerPass)
		}},
	} {
		marked, left, err := m.mark()
		if err != nil {
			logger.Error(err, "Writing the spec of "+m.what+" into their metadata", "marked", marked, "left", left)
		} else if marked > 0 {
			logger.Info("Wrote the spec of "+m.what+" into their metadata", "marked", marked, "left", left)
		}
	}
}

// subnetWorker runs the subnet reconciler for queued subnets while this
// replica leads (leaderWorker).
func (r *incarnation) subnetWorker(ctx context.Context) {
	leaderWorker(ctx, r.subnetQ, "subnet", r.ctrl.IsLeader, r.subnets.Reconcile)
}

// leaderWorker runs run for the keys of q while leading() says this
// replica leads; keys that arrive while it does not are dropped, as are
// keys whose reconcile found the replica deposed (the next leader re-runs
// every object). A permanent error forgets the key; others retry with
// the queue's backoff or the delay the error asks for.
func leaderWorker(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], what string, leading func() bool, run func(context.Context, string) error) {
	for {
		name, quit := q.Get()
		if quit {
			return
		}
		if !leading() {
			q.Forget(name)
			q.Done(name)
			continue
		}
		err := run(ctx, name)
		delay, retry := queue.RetryDelay(err)
		switch {
		case err == nil, queue.IsPermanent(err), errors.Is(err, reconcile.ErrDeposed):
			q.Forget(name)
		case retry:
			q.Forget(name)
			q.AddAfter(name, delay)
		default:
			klog.FromContext(ctx).V(2).Info("Retrying", "kind", what, "name", name, "err", err)
			q.AddRateLimited(name)
		}
		q.Done(name)
	}
}

// gcLoop hands orphaned keys of owned shards to their queues.
func (r *incarnation) gcLoop(ctx context.Context) {
	tick := time.NewTicker(r.opts.GCInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if !r.caches.Synced() {
				continue
			}
			owned := r.ctrl.Owned()
			due := r.gc.Pass(now, func(key string) bool {
				_, ok := owned[shard.Of(key, r.opts.Shards)]
				return ok
			})
			n := 0
			for _, key := range due {
				if r.ctrl.Enqueue(key) {
					n++
				}
			}
			if n > 0 {
				klog.FromContext(ctx).Info("Collecting orphaned pod keys", "keys", n)
				r.met.Collected(n)
			}
		}
	}
}

// newShard makes the reconciler of one shard term.
func (r *incarnation) newShard(sc controller.ShardContext) (controller.Reconciler, error) {
	return &shardReconciler{r: r, shard: sc.Shard, epoch: sc.Epoch, queue: sc.Queue}, nil
}

// shardReconciler is the pod reconciler bound to one shard term: its
// Northbound writes go through a batcher fenced by the term's epoch.
type shardReconciler struct {
	r     *incarnation
	shard int
	epoch uint64
	// batcher is set by OnAcquire, before any Reconcile, and closed by
	// OnRelease, after the last.
	batcher *ovn.Batcher
	// term reconciles the shard's keys through batcher; set with it.
	term *reconcile.Term
	// queue is the shard term's queue (delayed re-adds).
	queue controller.Enqueuer
}

var (
	_ controller.Reconciler = (*shardReconciler)(nil)
	_ controller.ShardHooks = (*shardReconciler)(nil)
)

func (s *shardReconciler) Reconcile(ctx context.Context, key string) error {
	return s.term.Reconcile(ctx, key)
}

// OnAcquire records the epoch in the Northbound, which fences off every
// earlier owner's writes, and starts the shard's batcher.
func (s *shardReconciler) OnAcquire(ctx context.Context, shard int, epoch uint64) error {
	if err := s.r.nb.TakeOver(ctx, shard, epoch); err != nil {
		return err
	}
	b, err := s.r.nb.NewBatcher(ovn.BatcherConfig{
		Fence:   &ovn.Fence{Shard: shard, Epoch: epoch},
		Linger:  s.r.opts.BatchLinger,
		MaxOps:  s.r.opts.BatchMaxOps,
		Metrics: s.r.met,
	})
	if err != nil {
		return err
	}
	s.batcher = b
	var later func(string, time.Duration)
	if s.queue != nil {
		later = s.queue.AddAfter
	}
	s.term = s.r.pods.NewTerm(shard, b, later)
	return nil
}

// OnRelease flushes the batcher before the release is acknowledged.
func (s *shardReconciler) OnRelease(ctx context.Context, _ int, _ uint64) error {
	if s.batcher == nil {
		return nil
	}
	return s.batcher.Close(ctx)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	rc, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no --kubeconfig and not in a cluster: %w", err)
	}
	return rc, nil
}

// nbTLS is the client TLS configuration for ssl: remotes, from the
// certificate flags or a directory (resolveNBTLSFiles, newNBTLSConfig); it
// logs which files it took.
func nbTLS(opts *Options, logger klog.Logger) (*tls.Config, error) {
	files, err := opts.tlsFiles()
	if err != nil {
		return nil, fmt.Errorf("the Northbound's TLS material: %w", err)
	}
	logger.Info("Northbound TLS material", "cert", files.cert, "key", files.key, "ca", files.ca, "from", files.source, "serverName", opts.NBServerName)
	return newNBTLSConfig(files, opts.NBServerName)
}

// eventScheme knows the kinds Events are recorded on: the core kinds and
// kubeovn.io's and shardnet.io's (a Subnet's TopologyDiffers, a Vip's),
// which a recorder on client-go's scheme alone drops.
func eventScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := crdscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// writes are the pod path's Kubernetes writes.
func (r *incarnation) writes() reconcile.ClientWrites {
	return reconcile.ClientWrites{Kube: r.kube, Shardnet: r.sn, Pods: r.podAPI}
}
