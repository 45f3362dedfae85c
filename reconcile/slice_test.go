package reconcile

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/shardnet/shardnet/api/client/informers/externalversions"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/controller"
	"github.com/shardnet/shardnet/netattach"
	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/queue"
	"github.com/shardnet/shardnet/test/harness"
)

// slice is one replica's reconcilers driven by a plain workqueue on a
// single shard: the pod path end to end against real servers, without the
// sharding runtime.
// laterCall is one delayed re-add the term asked for.
type laterCall struct {
	key   string
	after time.Duration
}

type slice struct {
	// laterMu guards laterCalls, the term's delayed re-adds.
	laterMu    sync.Mutex
	laterCalls []laterCall

	t    testing.TB
	kube *harness.Kube
	nb   *ovn.Client
	// view is a second client that monitors every column, for checks of
	// what the reconciler's trimmed cache does not hold.
	view    client.Client
	caches  *Caches
	batcher *ovn.Batcher
	pods    *Pods
	// dyn creates NetworkAttachmentDefinitions.
	dyn dynamic.Interface
	// term is the single shard term the slice's pod worker runs.
	term    *Term
	subnets *SubnetReconciler
	// stages counts the reconcile stages the pod reconciler reported.
	stages *stageCounts
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// broadcaster is shut down after the workers that record events.
	broadcaster record.EventBroadcaster
}

func startSlice(t testing.TB) *slice {
	t.Helper()
	kube := harness.StartKube(t)
	kube.StartKwok(t)
	nbServer := harness.StartNB(t)
	ctx, cancel := context.WithCancel(context.Background())
	s := &slice{t: t, kube: kube, cancel: cancel, stages: &stageCounts{n: map[string]int{}}}
	t.Cleanup(s.stop)

	// Every slice serves attachments as a cluster with multus does.
	kube.InstallNADCRD(t)
	s.dyn = dynamic.NewForConfigOrDie(kube.Config)
	nads := netattach.New(discovery.NewDiscoveryClientForConfigOrDie(kube.Config), s.dyn, 0, klog.Background())
	nads.Start(ctx)
	// Cleanups run last-registered first: the context must end before
	// Shutdown waits for the goroutines it ends.
	t.Cleanup(func() { cancel(); nads.Shutdown() })

	nb, err := ovn.NewClient(ctx, ovn.Config{Endpoints: []string{nbServer.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Close)
	s.nb = nb
	s.view = harness.NBView(t, client.WithEndpoint(nbServer.Endpoint))
	if err := nb.TakeOver(ctx, 0, 1); err != nil {
		t.Fatal(err)
	}
	batcher, err := nb.NewBatcher(ovn.BatcherConfig{Fence: &ovn.Fence{Shard: 0, Epoch: 1}})
	if err != nil {
		t.Fatal(err)
	}
	kubeFactory := informers.NewSharedInformerFactoryWithOptions(kube.Client, 0, informers.WithTransform(controller.TrimPod))
	crdFactory := externalversions.NewSharedInformerFactory(kube.Shardnet, 0)
	caches, err := NewCaches(kubeFactory, crdFactory, kube.Shardnet, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.batcher = batcher
	s.caches = caches
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.Client.CoreV1().Events("")})
	s.broadcaster = broadcaster
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "shardnet"})

	// The external gateway, as the replica reads it (G11).
	extGW := ExternalGatewayConfig{ConfigMaps: kubeFactory.Core().V1().ConfigMaps().Lister(),
		Namespace: DefaultExternalGatewayNamespace, Subnets: caches, Switch: DefaultExternalGatewaySwitch}
	s.pods, err = NewPods(PodConfig{
		ExternalGateway: extGW,
		Writes:          ClientWrites{Kube: kube.Client, Shardnet: kube.Shardnet}, NB: nb,
		Pods: caches.Pods, StatefulSets: caches.StatefulSets, IPs: caches.IPs,
		ClaimIndex: caches.ClaimIndex(), Catalog: caches, Subnets: caches.Registry, Claims: caches.Allocator,
		Recorder: recorder, IPRecords: true, NADs: nads, Metrics: s.stages,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.subnets, err = NewSubnetReconciler(SubnetConfig{
		NB: nb, Shardnet: kube.Shardnet, Subnets: caches.SubnetLister, Nodes: caches.Nodes,
		Claims: caches.Claims, Registry: caches.Registry, Recorder: recorder,
	})
	if err != nil {
		t.Fatal(err)
	}

	podQ := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 2*time.Second))
	subnetQ := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 2*time.Second))
	s.term = s.pods.NewTerm(0, batcher, func(key string, after time.Duration) {
		s.laterMu.Lock()
		s.laterCalls = append(s.laterCalls, laterCall{key: key, after: after})
		s.laterMu.Unlock()
		podQ.AddAfter(key, after)
	})
	enqueue := func(q workqueue.TypedRateLimitingInterface[string]) cache.ResourceEventHandlerFuncs {
		add := func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				q.Add(key)
			}
		}
		return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, o any) { add(o) }, DeleteFunc: add}
	}
	if _, err := caches.PodInformer.AddEventHandler(enqueue(podQ)); err != nil {
		t.Fatal(err)
	}
	subnetInformer := caches.shardnet.Kubeovn().V1().Subnets().Informer()
	if _, err := subnetInformer.AddEventHandler(enqueue(subnetQ)); err != nil {
		t.Fatal(err)
	}
	// A new node needs its port groups: re-run every subnet.
	if _, err := caches.kube.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {
		for _, sn := range caches.Subnets() {
			subnetQ.Add(sn.Name)
		}
	}}); err != nil {
		t.Fatal(err)
	}
	caches.Start(ctx)
	if err := caches.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if !cache.WaitForCacheSync(ctx.Done(), nads.HasSynced) {
		t.Fatal("NetworkAttachmentDefinitions never synced")
	}
	work := func(q workqueue.TypedRateLimitingInterface[string], h func(context.Context, string) error) {
		defer s.wg.Done()
		for {
			key, quit := q.Get()
			if quit {
				return
			}
			switch err := h(ctx, key); {
			case err == nil, queue.IsPermanent(err):
				q.Forget(key)
			default:
				q.AddRateLimited(key)
			}
			q.Done(key)
		}
	}
	for range 8 {
		s.wg.Add(1)
		go work(podQ, func(ctx context.Context, key string) error { return s.term.Reconcile(ctx, key) })
	}
	s.wg.Add(1)
	go work(subnetQ, s.subnets.Reconcile)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = s.subnets.RefreshStatus(ctx, s.caches.Registry.Refresh())
			}
		}
	}()
	go func() {
		<-ctx.Done()
		podQ.ShutDown()
		subnetQ.ShutDown()
	}()
	t.Cleanup(func() { _ = batcher.Close(context.Background()) })
	return s
}

func (s *slice) stop() {
	s.cancel()
	s.wg.Wait()
	if s.broadcaster != nil {
		s.broadcaster.Shutdown()
	}
}

func (s *slice) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	s.t.Cleanup(cancel)
	return ctx
}

func (s *slice) createSubnet(name, cidr string, mod func(*kubeovnv1.SubnetSpec)) {
	s.t.Helper()
	sn := &kubeovnv1.Subnet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kubeovnv1.SubnetSpec{CIDRBlock: cidr}}
	if mod != nil {
		mod(&sn.Spec)
	}
	if _, err := s.kube.Shardnet.KubeovnV1().Subnets().Create(context.Background(), sn, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("creating subnet %s: %v", name, err)
	}
}

func (s *slice) createNamespace(name string) {
	s.t.Helper()
	if _, err := s.kube.Client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

func newPod(ns, name, node string, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}},
	}
}

// networkUnderTest prepares the network a row test runs on: the default
// subnet "main" (mainCIDR) in a new namespace ns and, for an attachment
// (provider other than the default), the subnet "att" (attCIDR) of its
// provider and the NAD net1 of type kube-ovn. It returns the subnet the
// network is on and the annotations a pod needs to ask for it.
func (s *slice) networkUnderTest(ns, provider, mainCIDR, attCIDR string) (subnet string, base map[string]string) {
	s.createSubnet("main", mainCIDR, func(sp *kubeovnv1.SubnetSpec) { sp.Default = true })
	s.createNamespace(ns)
	if provider == DefaultProvider {
		return "main", map[string]string{}
	}
	s.createSubnet("att", attCIDR, func(sp *kubeovnv1.SubnetSpec) { sp.Provider = provider })
	s.createNAD(ns, "net1", `{"cniVersion":"0.3.1","type":"kube-ovn","server_socket":"/run/openvswitch/kube-ovn-daemon.sock"}`)
	return "att", map[string]string{AnnotationNetworks: "net1"}
}

func (s *slice) createPods(pods []*corev1.Pod) {
	s.t.Helper()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	errs := make(chan error, len(pods))
	for _, p := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := s.kube.Client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		s.t.Fatalf("creating pod: %v", err)
	}
}

// waitPods waits until cond holds for the listed pods of ns, polling the
// API server (not the informer), and returns them.
func (s *slice) waitPods(ctx context.Context, ns string, want int, cond func(*corev1.Pod) bool) []corev1.Pod {
	s.t.Helper()
	for {
		list, err := s.kube.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			s.t.Fatal(err)
		}
		ok := 0
		for i := range list.Items {
			if cond(&list.Items[i]) {
				ok++
			}
		}
		if ok == want && len(list.Items) == want {
			return list.Items
		}
		select {
		case <-ctx.Done():
			s.t.Fatalf("namespace %s: %d of %d pods (of %d) met the condition before the deadline", ns, ok, want, len(list.Items))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func routed(p *corev1.Pod) bool {
	return p.Annotations[DefaultKey(KeyAllocated)] == "true" && p.Annotations[DefaultKey(KeyRouted)] == "true"
}

// checkPorts asserts that every pod's port carries exactly its annotated
// MAC and addresses, in the annotated switch, and that no address is
// annotated twice.
func (s *slice) checkPorts(pods []corev1.Pod) {
	s.t.Helper()
	seen := map[string]string{}
	for _, p := range pods {
		key := p.Namespace + "/" + p.Name
		ips := p.Annotations[DefaultKey(KeyIPAddress)]
		mac := p.Annotations[DefaultKey(KeyMACAddress)]
		for _, ip := range strings.Split(ips, ",") {
			id := p.Annotations[DefaultKey(KeyLogicalSwitch)] + "/" + ip
			if other, dup := seen[id]; dup {
				s.t.Fatalf("address %s given to %s and %s", id, other, key)
			}
			seen[id] = key
		}
		want := strings.Join(append([]string{mac}, strings.Split(ips, ",")...), " ")
		port := s.waitPort(PortName(p.Name, p.Namespace, DefaultProvider), want)
		if port.ExternalIDs[ovn.ExternalIDPod] != key || port.ExternalIDs[ovn.ExternalIDSwitch] != p.Annotations[DefaultKey(KeyLogicalSwitch)] {
			s.t.Fatalf("port of %s has external ids %v", key, port.ExternalIDs)
		}
	}
}

func (s *slice) waitPort(name, addresses string) portView {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, ok := s.nb.Port(name)
		if ok && len(p.Addresses) == 1 && p.Addresses[0] == addresses {
			return portView{ExternalIDs: p.ExternalIDs, Addresses: p.Addresses}
		}
		if time.Now().After(deadline) {
			got := "no port"
			if ok {
				got = fmt.Sprint(p.Addresses)
			}
			s.t.Fatalf("port %s: want addresses %q, have %s", name, addresses, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type portView struct {
	ExternalIDs map[string]string
	Addresses   []string
}

func (s *slice) warnings(ctx context.Context, ns, pod string) []string {
	s.t.Helper()
	list, err := s.kube.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if err != nil {
		s.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeWarning {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

func TestPodSliceEndToEnd(t *testing.T) {
	s := startSlice(t)
	ctx := s.ctx()
	node := s.kube.CreateNode(t, "node-a", "10.20.0.9") // a node address inside subnet "blue"
	s.kube.WaitNodeReady(t, node.Name, time.Minute)

	s.createSubnet("red", "10.16.0.0/24", func(sp *kubeovnv1.SubnetSpec) {
		sp.Default = true
		sp.ExcludeIps = []string{"10.16.0.2..10.16.0.20"}
	})
	s.createSubnet("blue", "10.20.0.0/24", func(sp *kubeovnv1.SubnetSpec) { sp.Namespaces = []string{"team-b"} })
	s.createSubnet("dual", "10.30.0.0/24,fd00:30::/120", func(sp *kubeovnv1.SubnetSpec) {
		sp.Protocol = kubeovnv1.ProtocolDual
		sp.Namespaces = []string{"team-d"}
	})
	for _, ns := range []string{"team-a", "team-b", "team-d"} {
		s.createNamespace(ns)
	}

	const perNS = 60
	var pods []*corev1.Pod
	for _, ns := range []string{"team-a", "team-b", "team-d"} {
		for i := range perNS {
			pods = append(pods, newPod(ns, fmt.Sprintf("p-%03d", i), node.Name, nil))
		}
	}
	s.createPods(pods)

	var all []corev1.Pod
	for ns, subnet := range map[string]string{"team-a": "red", "team-b": "blue", "team-d": "dual"} {
		got := s.waitPods(ctx, ns, perNS, routed)
		for _, p := range got {
			if p.Annotations[DefaultKey(KeyLogicalSwitch)] != subnet {
				t.Fatalf("pod %s/%s on subnet %s, want %s", p.Namespace, p.Name, p.Annotations[DefaultKey(KeyLogicalSwitch)], subnet)
			}
			ip := p.Annotations[DefaultKey(KeyIPAddress)]
			if subnet == "dual" && !strings.Contains(ip, ":") {
				t.Fatalf("dual-stack pod %s has %q", p.Name, ip)
			}
			if ip == "10.20.0.9" {
				t.Fatalf("pod %s was given the node's InternalIP", p.Name)
			}
			if a, err := netip.ParseAddr(strings.Split(ip, ",")[0]); err == nil && subnet == "red" {
				if a.Compare(netip.MustParseAddr("10.16.0.2")) >= 0 && a.Compare(netip.MustParseAddr("10.16.0.20")) <= 0 {
					t.Fatalf("pod %s was given excluded address %s", p.Name, a)
				}
			}
		}
		all = append(all, got...)
	}
	s.checkPorts(all)

	// Every pod is in its node's port group.
	waitView(t, ctx, func() error {
		pg := &nbdb.PortGroup{Name: NodePortGroupName("red", node.Name)}
		if err := s.view.Get(ctx, pg); err != nil {
			return err
		}
		if len(pg.Ports) != perNS {
			return fmt.Errorf("node port group of red has %d ports, want %d", len(pg.Ports), perNS)
		}
		return nil
	})

	// Subnet counters follow the claims without per-pod writes.
	waitSubnet(t, ctx, s, "blue", func(sn *kubeovnv1.Subnet) bool {
		// 256 - network - broadcast - gateway = 253 usable; one is the
		// node's address, perNS are pods.
		return sn.Status.V4UsingIPs == perNS+1 && sn.Status.V4AvailableIPs == 253-perNS-1
	})
	waitSubnet(t, ctx, s, "dual", func(sn *kubeovnv1.Subnet) bool {
		return sn.Status.V4UsingIPs == perNS && sn.Status.V6UsingIPs == perNS
	})

	// IP records exist for every pod.
	ips, err := s.kube.Shardnet.KubeovnV1().IPs().List(ctx, metav1.ListOptions{})
	if err != nil || len(ips.Items) != 3*perNS {
		t.Fatalf("IP records: %d, %v; want %d", len(ips.Items), err, 3*perNS)
	}

	// Delete everything: nothing is left behind.
	for _, ns := range []string{"team-a", "team-b", "team-d"} {
		if err := s.kube.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitEmpty(t, ctx, s)
}

func waitSubnet(t *testing.T, ctx context.Context, s *slice, name string, cond func(*kubeovnv1.Subnet) bool) {
	t.Helper()
	for {
		sn, err := s.kube.Shardnet.KubeovnV1().Subnets().Get(ctx, name, metav1.GetOptions{})
		if err == nil && cond(sn) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("subnet %s never met the condition: status %+v, err %v", name, sn.Status, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitEmpty waits until no pod port, claim or IP record is left.
func waitEmpty(t *testing.T, ctx context.Context, s *slice) {
	t.Helper()
	for {
		claims, err1 := s.kube.Shardnet.ShardnetV1alpha1().AddressClaims().List(ctx, metav1.ListOptions{})
		ips, err2 := s.kube.Shardnet.KubeovnV1().IPs().List(ctx, metav1.ListOptions{})
		var lsps []nbdb.LogicalSwitchPort
		_ = s.view.List(ctx, &lsps)
		ports := len(lsps)
		// Each overlay subnet keeps its router port.
		routerPorts := len(s.caches.Subnets())
		if err1 == nil && err2 == nil && len(claims.Items) == 0 && len(ips.Items) == 0 && ports == routerPorts {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("left behind: %d claims, %d IP records, %d switch ports (router ports: %d)", len(claims.Items), len(ips.Items), ports, routerPorts)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitView polls check until it passes or ctx ends.
func waitView(t testing.TB, ctx context.Context, check func() error) {
	t.Helper()
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal(err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
