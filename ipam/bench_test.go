package ipam

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"testing"
)

// benchPrefix is the subnet of the allocation benchmarks: a /16.
var benchPrefix = netip.MustParsePrefix("10.9.0.0/16")

// benchFill is the same random set of held addresses for both allocators:
// fill percent of the usable range.
func benchFill(fill int) []netip.Addr {
	r := rand.New(rand.NewPCG(uint64(fill), 42))
	size := uint64(1) << 16
	want := int(uint64(fill) * (size - 3) / 100)
	seen := make(map[uint64]bool, want)
	out := make([]netip.Addr, 0, want)
	for len(out) < want {
		off := 2 + r.Uint64N(size-3)
		if !seen[off] {
			seen[off] = true
			out = append(out, addrAt(benchPrefix.Addr(), off))
		}
	}
	return out
}

// BenchmarkAllocRelease measures one allocation plus the release of what
// it got, on a /16 held at 50% and 95%, serially and in parallel (one
// shard per goroutine), for the bitmap and for the mutex+big.Int baseline
// in the same run. The bitmap cases report "speedup": baseline ns/op over
// bitmap ns/op for the same fill and mode (run the baseline case first,
// which the default order does).
func BenchmarkAllocRelease(b *testing.B) {
	const shards = 64
	for _, fill := range []int{50, 95} {
		held := benchFill(fill)
		for _, mode := range []string{"serial", "parallel"} {
			key := fmt.Sprintf("fill=%d%%/%s", fill, mode)
			var baselineNs float64
			b.Run(key+"/impl=baseline", func(b *testing.B) {
				bl := newBaseline(benchPrefix, shards)
				for _, a := range held {
					bl.take(a)
				}
				run(b, mode, func(shard int) {
					a, ok := bl.allocate(shard)
					if !ok {
						b.Fatal("baseline full")
					}
					bl.release(a)
				})
				baselineNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			})
			b.Run(key+"/impl=bitmap", func(b *testing.B) {
				s, err := NewSubnet(SubnetConfig{Name: "bench", CIDRBlock: benchPrefix.String(), Shards: shards})
				if err != nil {
					b.Fatal(err)
				}
				for _, a := range held {
					if err := s.AllocateStatic(Addresses{V4: a}); err != nil {
						b.Fatal(err)
					}
				}
				run(b, mode, func(shard int) {
					a, err := s.Allocate(shard)
					if err != nil {
						b.Fatal(err)
					}
					s.Release(a)
				})
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				if baselineNs > 0 && ns > 0 {
					b.ReportMetric(baselineNs/ns, "speedup")
				}
				if u := s.Usage()[0]; u.Used != uint64(len(held)) {
					b.Fatalf("fill drifted: %d held, want %d", u.Used, len(held))
				}
			})
		}
	}
}

// run drives op serially (shard 0) or from RunParallel's goroutines, each
// with its own shard.
func run(b *testing.B, mode string, op func(shard int)) {
	b.ReportAllocs()
	if mode == "serial" {
		for b.Loop() {
			op(0)
		}
		return
	}
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		shard := int(next.Add(1) - 1)
		for pb.Next() {
			op(shard)
		}
	})
}

// BenchmarkAllocateDualStack is one dual-stack allocation and release on a
// half-full /16 plus a /64 with the default window.
func BenchmarkAllocateDualStack(b *testing.B) {
	s, err := NewSubnet(SubnetConfig{Name: "bench", CIDRBlock: "10.9.0.0/16,fd00::/64", Shards: 64})
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range benchFill(50) {
		if err := s.AllocateStatic(Addresses{V4: a}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		a, err := s.Allocate(0)
		if err != nil {
			b.Fatal(err)
		}
		s.Release(a)
	}
}
