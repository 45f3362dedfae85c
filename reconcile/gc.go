package reconcile

import (
	"sync"
	"time"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// DefaultGCGrace is how long a key must look orphaned, across passes,
// before the collector hands it to its shard's reconcile.
const DefaultGCGrace = time.Minute

// GC finds pod keys that hold claims, IP records or Northbound ports but
// have no pod in this replica's cache, so that a crash between writes, or
// a delete event that was missed, leaves nothing behind.
//
// It only reports keys; the owning shard's reconcile releases them, so the
// collector never writes for a shard this replica does not own, and never
// removes what a live or retained pod uses (the reconcile decides that, as
// for a delete event). A key must be orphaned in two passes at least Grace
// apart: a cache that lags another replica's (just after a handoff) cannot
// make a live pod look gone.
type GC struct {
	caches *Caches
	// portPods lists the pod keys that Northbound ports carry; nil skips
	// the Northbound.
	portPods func() []string
	grace    time.Duration
	// vmsKnown, when set and true, lets the reconcile decide about VM
	// keys (see CollectVMs); otherwise they are never candidates.
	vmsKnown func() bool

	// mu guards seen.
	mu sync.Mutex
	// seen is when each orphaned key was first found orphaned.
	seen map[string]time.Time
}

// NewGC returns a collector over the caches and, when portPods is set, the
// Northbound ports.
func NewGC(c *Caches, portPods func() []string, grace time.Duration) *GC {
	if grace <= 0 {
		grace = DefaultGCGrace
	}
	return &GC{caches: c, portPods: portPods, grace: grace, seen: map[string]time.Time{}}
}

// Pass returns the keys, among those owned reports true for, that have
// been orphaned for at least the grace period.
func (g *GC) Pass(now time.Time, owned func(key string) bool) []string {
	candidates := map[string]bool{}
	EachClaimPodKey(g.caches.ClaimIndex(), func(k string) { candidates[k] = true })
	// Keys of KubeVirt VMs: their port and IP record are named by the VM,
	// never by a pod, and outlive every launcher pod (kube-ovn keeps them
	// until the VM goes). Unless the VM cache can tell whether the VM is
	// there (CollectVMs), the collector leaves them alone; with it, the
	// reconcile keeps them while the VM exists and releases them after.
	vms := map[string]bool{}
	g.caches.EachIP(func(ip *kubeovnv1.IP) {
		if ip.Spec.PodName == "" || ip.Spec.Namespace == "" {
			return
		}
		key := ip.Spec.Namespace + "/" + ip.Spec.PodName
		if ip.Spec.PodType == "VirtualMachine" {
			vms[key] = true
			return
		}
		candidates[key] = true
	})
	if g.portPods != nil {
		for _, k := range g.portPods() {
			candidates[k] = true
		}
	}
	if g.vmsKnown == nil || !g.vmsKnown() {
		for k := range vms {
			delete(candidates, k)
		}
	} else {
		for k := range vms {
			candidates[k] = true
		}
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	var due []string
	next := make(map[string]time.Time, len(g.seen))
	for key := range candidates {
		if !owned(key) || g.hasPod(key) {
			continue
		}
		first, ok := g.seen[key]
		if !ok {
			first = now
		}
		next[key] = first
		if now.Sub(first) >= g.grace {
			due = append(due, key)
		}
	}
	g.seen = next
	return due
}

func (g *GC) hasPod(key string) bool {
	_, exists, err := g.caches.PodInformer.GetIndexer().GetByKey(key)
	return err != nil || exists || g.hasLauncherPod(key)
}
