package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/reconcile"
)

// maxConflictsLogged bounds the conflicting addresses one pass logs.
const maxConflictsLogged = 20

// nbPorts lists the Northbound ports for adoption; it fails while the
// Northbound cache is not ready, so that no pass takes a partial table
// for the whole.
func (r *incarnation) nbPorts() ([]ovn.PortAddress, error) {
	if err := r.nb.Ready(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.nb.PortAddresses(ctx)
}

// adopt runs before the replica joins the shard membership, so before it
// allocates anything: it waits for the Northbound cache, then holds every
// address already in use (pod annotations of every provider, IP records,
// Vips, Northbound ports, whoever wrote them) in its subnet's allocator
// (docs/contract.md §15). The pods' own shard owners then claim their
// addresses as adoption; the statusLoop reports that progress.
func (r *incarnation) adopt(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	start := time.Now()
	if err := r.nb.WaitReady(ctx); err != nil {
		return fmt.Errorf("waiting for the Northbound cache: %w", err)
	}
	nbWait := time.Since(start)
	r.caches.SyncRegistry()
	registry := time.Since(start) - nbWait
	for {
		passStart := time.Now()
		st, err := r.caches.Registry.AdoptSpaced()
		if err == nil {
			took := time.Since(start)
			r.adoption.Took(took)
			r.reportAdoption(ctx, st)
			// The parts of took: the wait for the Northbound cache, the
			// allocators rebuilt from the claims, the last pass.
			logger.Info("Addresses in use held before the first allocation",
				"held", st.HeldTotal(), "toClaim", st.PendingTotal(), "conflicts", len(st.Conflicts),
				"subnets", len(st.Held), "took", took, "northbound", nbWait, "allocators", registry, "pass", time.Since(passStart))
			return nil
		}
		logger.Info("Waiting to read the addresses in use", "err", err)
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// reportAdoption exports one adoption pass and logs what changed: the
// addresses still to claim while adoption runs, and each conflict once.
func (r *incarnation) reportAdoption(ctx context.Context, st reconcile.AdoptStats) {
	r.adoptMu.Lock()
	defer r.adoptMu.Unlock()
	r.adoption.Set(st.Held, st.Pending, len(st.Conflicts))
	logger := klog.FromContext(ctx)
	pending := st.PendingTotal()
	if pending != r.lastPending {
		if pending == 0 {
			logger.Info("Adoption done: every address live pods hold is claimed")
		} else {
			logger.Info("Adoption progress: addresses live pods hold without a claim", "toClaim", pending)
		}
		r.lastPending = pending
	}
	logged := 0
	seen := make(map[string]bool, len(st.Conflicts))
	for _, c := range st.Conflicts {
		id := c.Subnet + "/" + c.Addr.String()
		seen[id] = true
		if r.conflictsLogged[id] || logged >= maxConflictsLogged {
			continue
		}
		logged++
		logger.Info("Address named by more than one holder; only the first keeps it",
			"subnet", c.Subnet, "address", c.Addr, "kept", c.Kept, "others", c.Others)
	}
	r.conflictsLogged = seen
}
