package ipam

import (
	"errors"
	"net/netip"
	"sync"
	"testing"
)

// TestConcurrentExhaustion: 64 goroutines drain a /20; every usable address
// comes out exactly once and the counters agree.
func TestConcurrentExhaustion(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "10.20.16.0/20", Shards: 16})
	const workers = 64
	got := make([][]netip.Addr, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			for {
				a, err := s.Allocate(w)
				if errors.Is(err, ErrFull) {
					return
				}
				if err != nil {
					errs[w] = err
					return
				}
				got[w] = append(got[w], a.V4)
			}
		})
	}
	close(start)
	wg.Wait()
	seen := make(map[netip.Addr]int, 4096)
	for w := range workers {
		if errs[w] != nil {
			t.Fatalf("worker %d: %v", w, errs[w])
		}
		for _, a := range got[w] {
			seen[a]++
		}
	}
	for a, n := range seen {
		if n != 1 {
			t.Fatalf("%s handed out %d times", a, n)
		}
		if !s.Contains(a) || a == mustAddr(t, "10.20.16.0") || a == mustAddr(t, "10.20.16.1") || a == mustAddr(t, "10.20.31.255") {
			t.Fatalf("handed out %s", a)
		}
	}
	const usable = 4096 - 3
	if len(seen) != usable {
		t.Fatalf("handed out %d distinct addresses, want %d", len(seen), usable)
	}
	if u := s.Usage()[0]; u.Used != usable || u.Available != 0 {
		t.Fatalf("Usage() = %+v", u)
	}
}

// TestConcurrentChurn: goroutines allocate and release (dynamic, static and
// pool, dual-stack) at once; no address is ever held by two of them, and
// after everyone released, the subnet is empty again.
func TestConcurrentChurn(t *testing.T) {
	s := mustSubnet(t, SubnetConfig{CIDRBlock: "10.0.0.0/26,fd00::/64", IPv6Window: 128, Shards: 4,
		Pools: []PoolConfig{{Name: "p", IPs: []string{"10.0.0.40..10.0.0.47", "fd00::40..fd00::47"}}}})
	var holders sync.Map // address -> worker
	const workers = 16
	var wg sync.WaitGroup
	fail := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			var mine []Addresses
			for i := range 3000 {
				var a Addresses
				var err error
				switch i % 5 {
				case 0:
					a, err = s.AllocateFromPool("p")
				case 1:
					a = Addresses{V4: netip.AddrFrom4([4]byte{10, 0, 0, byte(2 + i%60)})}
					err = s.AllocateStatic(a)
				default:
					a, err = s.Allocate(w)
				}
				if err == nil {
					for _, ip := range a.List() {
						if prev, loaded := holders.LoadOrStore(ip, w); loaded {
							fail <- errors.New(ip.String() + " held twice")
							_ = prev
							return
						}
					}
					mine = append(mine, a)
				}
				if len(mine) > 4 || (err != nil && len(mine) > 0) {
					r := mine[0]
					mine = mine[1:]
					for _, ip := range r.List() {
						holders.Delete(ip)
					}
					s.Release(r)
				}
			}
			for _, r := range mine {
				for _, ip := range r.List() {
					holders.Delete(ip)
				}
				s.Release(r)
			}
		})
	}
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Fatal(err)
	}
	for _, u := range s.Usage() {
		if u.Used != 0 {
			t.Fatalf("after every release Usage() = %+v", u)
		}
	}
}
