package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/test/harness"
)

// NBCeiling is the Northbound's own port insert rate at one batch size:
// plain transactions of Batch port inserts each, NBCeilingInFlight of
// them in flight at once, against a database of its own.
type NBCeiling struct {
	Batch                 int     `json:"batch"`
	Ports                 int     `json:"ports"`
	Seconds               float64 `json:"seconds"`
	PortsPerSecond        float64 `json:"portsPerSecond"`
	TransactionsPerSecond float64 `json:"transactionsPerSecond"`
}

// NBCeilingBatches are the batch sizes the ceiling is measured at.
var NBCeilingBatches = []int{1, 10, 100, 1000}

// NBCeilingInFlight is how many transactions the ceiling keeps in flight:
// as many as a few busy shards of one replica.
const NBCeilingInFlight = 8

// measureNBCeiling inserts ports ports at every batch size of
// NBCeilingBatches into a fresh Northbound (Debian's ovsdb-server when
// installed), one switch per batch size, and times each.
func measureNBCeiling(ctx context.Context, ports int) ([]NBCeiling, error) {
	p, err := harness.NewProgram()
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var out []NBCeiling
	err = p.Run(func() error {
		var nb *harness.NB
		if harness.HaveOVSDBServer() {
			nb = harness.StartNB(p)
		} else {
			nb = harness.StartEmbeddedNB(p)
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		c, err := ovn.NewClient(cctx, ovn.Config{Endpoints: []string{nb.Endpoint}})
		cancel()
		if err != nil {
			return err
		}
		defer c.Close()
		for _, batch := range NBCeilingBatches {
			r, err := insertPorts(ctx, c, fmt.Sprintf("ceiling-%d", batch), batch, ports)
			if err != nil {
				return fmt.Errorf("batch %d: %w", batch, err)
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// insertPorts makes switch sw and inserts n ports into it (rounded up to
// whole batches), NBCeilingInFlight transactions at a time.
func insertPorts(ctx context.Context, c *ovn.Client, sw string, batch, n int) (NBCeiling, error) {
	ops, _, _, err := c.EnsureSwitch(ovn.SwitchSpec{Name: sw, CIDRs: []string{"10.0.0.0/8"}})
	if err != nil {
		return NBCeiling{}, err
	}
	if _, err := c.Transact(ctx, ops...); err != nil {
		return NBCeiling{}, err
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, ok := c.Switch(sw); ok {
			break
		}
		if time.Now().After(deadline) {
			return NBCeiling{}, fmt.Errorf("switch %s never reached the cache", sw)
		}
	}
	txns := (n + batch - 1) / batch
	// The ops are built before the clock starts: the ceiling is the
	// server's, not the op builders'.
	requests := make([][]ovsdb.Operation, txns)
	for t := range txns {
		for i := t * batch; i < (t+1)*batch; i++ {
			ops, _, err := c.EnsurePort(ovn.PortSpec{
				Name: fmt.Sprintf("p-%06d.%s", i, sw), Switch: sw, Pod: fmt.Sprintf("%s/p-%06d", sw, i),
				MAC: fmt.Sprintf("00:00:0a:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff),
				IPs: []string{fmt.Sprintf("10.%d.%d.%d", 1+i>>16&0xff, i>>8&0xff, i&0xff)},
			})
			if err != nil {
				return NBCeiling{}, err
			}
			requests[t] = append(requests[t], ops...)
		}
	}
	work := make(chan []ovsdb.Operation)
	errs := make(chan error, NBCeilingInFlight)
	var wg sync.WaitGroup
	start := time.Now()
	for range NBCeilingInFlight {
		wg.Go(func() {
			for ops := range work {
				if _, err := c.Transact(ctx, ops...); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var failed error
feed:
	for _, ops := range requests {
		select {
		case work <- ops:
		case failed = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	took := time.Since(start)
	if failed == nil {
		select {
		case failed = <-errs:
		default:
		}
	}
	if failed != nil {
		return NBCeiling{}, failed
	}
	ports := txns * batch
	return NBCeiling{
		Batch: batch, Ports: ports, Seconds: took.Seconds(),
		PortsPerSecond:        float64(ports) / took.Seconds(),
		TransactionsPerSecond: float64(txns) / took.Seconds(),
	}, nil
}

// bestNBCeiling is the highest port rate measured, 0 without any.
func bestNBCeiling(cs []NBCeiling) NBCeiling {
	var best NBCeiling
	for _, c := range cs {
		if c.PortsPerSecond > best.PortsPerSecond {
			best = c
		}
	}
	return best
}
