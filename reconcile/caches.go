package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/api/client/clientset/versioned"
	"github.com/shardnet/shardnet/api/client/informers/externalversions"
	kubeovnlisters "github.com/shardnet/shardnet/api/client/listers/kubeovn/v1"
	claimlisters "github.com/shardnet/shardnet/api/client/listers/shardnet/v1alpha1"
	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/claimcache"
	"github.com/shardnet/shardnet/internal/ipcache"
	"github.com/shardnet/shardnet/internal/metawatch"
	"github.com/shardnet/shardnet/internal/podcache"
	"github.com/shardnet/shardnet/ipam"
	"github.com/shardnet/shardnet/ovn"
)

// Caches are the informers the reconcilers read from, shared by every
// shard of a replica, and the subnet registry they keep current.
type Caches struct {
	kube     informers.SharedInformerFactory
	shardnet externalversions.SharedInformerFactory

	PodInformer   cache.SharedIndexInformer
	ClaimInformer cache.SharedIndexInformer
	// ipIndexer is the IP record informer's store, which holds
	// ipcache.IP objects (and *kubeovnv1.IP ones of uncommon shape).
	ipIndexer cache.Indexer

	Pods         corelisters.PodLister
	Namespaces   corelisters.NamespaceLister
	Nodes        corelisters.NodeLister
	StatefulSets appslisters.StatefulSetLister
	SubnetLister kubeovnlisters.SubnetLister
	IPPoolLister kubeovnlisters.IPPoolLister
	IPs          kubeovnlisters.IPLister
	Vips         kubeovnlisters.VipLister
	Vlans        kubeovnlisters.VlanLister
	Claims       claimlisters.AddressClaimLister

	// Registry holds one allocator per Subnet, rebuilt from Subnet, IPPool
	// and Node events.
	Registry *Subnets
	// Allocator is the claim layer the registry's subnets are tracked by.
	Allocator *ipam.Claims

	synced []cache.InformerSynced
}

var _ Catalog = (*Caches)(nil)

// NewCaches builds the informers the reconcilers need from the shared
// factories (call it before the factories start) and the subnet registry.
// The pod informer's transform is the factory's. shards is the number of
// virtual shards (one IPAM cursor each).
func NewCaches(kube informers.SharedInformerFactory, crds externalversions.SharedInformerFactory, sn versioned.Interface, shards int) (*Caches, error) {
	c := &Caches{kube: kube, shardnet: crds}
	pods := c.kube.Core().V1().Pods()
	c.PodInformer = pods.Informer()
	// The transform caches podcache.Pod, not *corev1.Pod.
	c.Pods = podcache.NewLister(c.PodInformer.GetIndexer())
	c.Namespaces = c.kube.Core().V1().Namespaces().Lister()
	c.Nodes = c.kube.Core().V1().Nodes().Lister()
	c.StatefulSets = c.kube.Apps().V1().StatefulSets().Lister()
	c.SubnetLister = c.shardnet.Kubeovn().V1().Subnets().Lister()
	c.IPPoolLister = c.shardnet.Kubeovn().V1().IPPools().Lister()
	// IP records and Vips are read by every replica: addresses they name
	// are in use (adoption) whether or not this replica writes records.
	// The transform caches most of them as ipcache.IP.
	c.ipIndexer = c.shardnet.Kubeovn().V1().IPs().Informer().GetIndexer()
	c.IPs = ipcache.NewLister(c.ipIndexer)
	c.Vips = c.shardnet.Kubeovn().V1().Vips().Lister()
	c.Vlans = c.shardnet.Kubeovn().V1().Vlans().Lister()
	claims := c.shardnet.Shardnet().V1alpha1().AddressClaims()
	c.ClaimInformer = claims.Informer()
	if err := c.ClaimInformer.AddIndexers(ClaimIndexers()); err != nil {
		return nil, fmt.Errorf("adding the claim index: %w", err)
	}
	if err := c.PodInformer.AddIndexers(VMPodIndexers()); err != nil {
		return nil, fmt.Errorf("adding the VM launcher pod index: %w", err)
	}
	// The transform caches most claims as claimcache.Claim.
	c.Claims = claimcache.NewLister(c.ClaimInformer.GetIndexer())

	alloc, err := ipam.NewClaims(ipam.NewClientStore(sn))
	if err != nil {
		return nil, err
	}
	c.Allocator = alloc
	c.Registry = NewSubnets(alloc, c.Claims, shards)
	if _, err := c.ClaimInformer.AddEventHandler(alloc.EventHandler()); err != nil {
		return nil, err
	}
	resync := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.SyncRegistry() },
		UpdateFunc: func(oldObj, newObj any) { c.SyncRegistry() },
		DeleteFunc: func(any) { c.SyncRegistry() },
	}
	for _, inf := range []cache.SharedIndexInformer{
		c.shardnet.Kubeovn().V1().Subnets().Informer(),
		c.shardnet.Kubeovn().V1().IPPools().Informer(),
	} {
		if _, err := inf.AddEventHandler(resync); err != nil {
			return nil, err
		}
	}
	// Nodes change their heartbeat every few seconds: only an address
	// change is worth a registry pass.
	if _, err := c.kube.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.SyncRegistry() },
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Node), newObj.(*corev1.Node)
			if fmt.Sprint(o.Status.Addresses) != fmt.Sprint(n.Status.Addresses) {
				c.SyncRegistry()
			}
		},
		DeleteFunc: func(any) { c.SyncRegistry() },
	}); err != nil {
		return nil, err
	}

	for _, inf := range []cache.SharedIndexInformer{
		c.PodInformer, c.ClaimInformer,
		c.kube.Core().V1().Namespaces().Informer(),
		c.kube.Core().V1().Nodes().Informer(),
		c.kube.Apps().V1().StatefulSets().Informer(),
		c.shardnet.Kubeovn().V1().Subnets().Informer(),
		c.shardnet.Kubeovn().V1().IPPools().Informer(),
		c.shardnet.Kubeovn().V1().IPs().Informer(),
		c.shardnet.Kubeovn().V1().Vips().Informer(),
		c.shardnet.Kubeovn().V1().Vlans().Informer(),
	} {
		c.synced = append(c.synced, inf.HasSynced)
	}
	return c, nil
}

// EachIP calls f with every cached IP record; f must not keep the record
// it is given (ipcache.Each).
func (c *Caches) EachIP(f func(*kubeovnv1.IP)) {
	if c.ipIndexer != nil {
		ipcache.Each(c.ipIndexer, f)
		return
	}
	if c.IPs != nil {
		ips, _ := c.IPs.List(labels.Everything())
		for _, ip := range ips {
			f(ip)
		}
	}
}

// Start starts every informer; WaitForSync waits for their first lists.
func (c *Caches) Start(ctx context.Context) {
	c.kube.Start(ctx.Done())
	c.shardnet.Start(ctx.Done())
}

// WaitForSync waits until every informer has listed once and the subnet
// registry has been built from them.
func (c *Caches) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("informers not synced: %w", ctx.Err())
	}
	c.SyncRegistry()
	return nil
}

// Synced reports whether every informer has listed once.
func (c *Caches) Synced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// SyncRegistry rebuilds the allocators whose Subnet, IP pools or node
// addresses changed and drops those of deleted Subnets. It is cheap when
// nothing changed.
func (c *Caches) SyncRegistry() {
	subnets, err := c.SubnetLister.List(labels.Everything())
	if err != nil {
		return
	}
	pools, _ := c.IPPoolLister.List(labels.Everything())
	nodes, _ := c.Nodes.List(labels.Everything())
	var nodeIPs []netip.Addr
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				nodeIPs = append(nodeIPs, ip.Unmap())
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range subnets {
		seen[s.Name] = true
		if err := c.Registry.Sync(s, pools, nodeIPsIn(s, nodeIPs)); err != nil {
			klog.Background().V(2).Info("Subnet cannot be allocated from", "subnet", s.Name, "err", err)
		}
	}
	for _, name := range c.Registry.Names() {
		if !seen[name] {
			c.Registry.Remove(name)
		}
	}
}

// nodeIPsIn are the node addresses inside the subnet's CIDRs, sorted, so
// that an unrelated node change does not rebuild the subnet.
func nodeIPsIn(s *kubeovnv1.Subnet, ips []netip.Addr) []netip.Addr {
	prefixes, err := parseCIDRBlock(s.Spec.CIDRBlock)
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, ip := range ips {
		for _, p := range prefixes {
			if p.Contains(ip) {
				out = append(out, ip)
			}
		}
	}
	sortAddrs(out)
	return out
}

// Subnet implements Catalog.
func (c *Caches) Subnet(name string) (*kubeovnv1.Subnet, bool) {
	s, err := c.SubnetLister.Get(name)
	return s, err == nil
}

// Subnets implements Catalog.
func (c *Caches) Subnets() []*kubeovnv1.Subnet {
	s, _ := c.SubnetLister.List(labels.Everything())
	return s
}

// MarkOldIPs writes the spec of cached IP records whose metadata does
// not carry it into their metadata (ipcache.MarkOld).
func (c *Caches) MarkOldIPs(ctx context.Context, patch metawatch.Patcher, max int) (marked, left int, err error) {
	if c.ipIndexer == nil {
		return 0, 0, nil
	}
	return ipcache.MarkOld(ctx, c.ipIndexer, patch, max)
}

// IPPool implements Catalog.
func (c *Caches) IPPool(name string) (*kubeovnv1.IPPool, bool) {
	p, err := c.IPPoolLister.Get(name)
	return p, err == nil
}

// IPPools implements Catalog.
func (c *Caches) IPPools() []*kubeovnv1.IPPool {
	p, _ := c.IPPoolLister.List(labels.Everything())
	return p
}

// Namespace implements Catalog.
func (c *Caches) Namespace(name string) (*corev1.Namespace, bool) {
	ns, err := c.Namespaces.Get(name)
	return ns, err == nil
}

// ClaimIndex is the claim informer's indexer.
func (c *Caches) ClaimIndex() cache.Indexer { return c.ClaimInformer.GetIndexer() }

func sortAddrs(a []netip.Addr) { slices.SortFunc(a, func(x, y netip.Addr) int { return x.Compare(y) }) }

// HoldSource returns what Subnets.Adopt reads: every Subnet, pod, IP
// record and Vip in the caches and the Northbound ports ports lists
// (which fails while the Northbound cache is not ready). vmOwner, when
// not nil, resolves the VM of a launcher pod (HoldVMOwner).
func (c *Caches) HoldSource(ports func() ([]ovn.PortAddress, error), now func() time.Time, vmOwner func(*corev1.Pod) (v1alpha1.ClaimOwner, bool)) func() (HoldInputs, error) {
	return func() (HoldInputs, error) {
		if !c.Synced() {
			return HoldInputs{}, errors.New("caches not synced")
		}
		pts, err := ports()
		if err != nil {
			return HoldInputs{}, fmt.Errorf("reading the Northbound ports: %w", err)
		}
		in := HoldInputs{Subnets: c.Subnets(), Ports: pts, Now: now(), VMOwner: vmOwner}
		// The cached pods as they are, not built into *corev1.Pod.
		for _, o := range c.PodInformer.GetIndexer().List() {
			switch p := o.(type) {
			case *podcache.Pod:
				in.Cached = append(in.Cached, p)
			case *corev1.Pod:
				in.Pods = append(in.Pods, p)
			}
		}
		// The cached records as they are, likewise.
		switch {
		case c.ipIndexer != nil:
			for _, o := range c.ipIndexer.List() {
				switch r := o.(type) {
				case *ipcache.IP:
					in.CachedIPs = append(in.CachedIPs, r)
				case *kubeovnv1.IP:
					in.IPs = append(in.IPs, r)
				}
			}
		case c.IPs != nil:
			if in.IPs, err = c.IPs.List(labels.Everything()); err != nil {
				return HoldInputs{}, err
			}
		}
		if in.Vips, err = c.Vips.List(labels.Everything()); err != nil {
			return HoldInputs{}, err
		}
		return in, nil
	}
}
