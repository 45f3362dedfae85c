package ipam

import (
	"math/big"
	"net/netip"
	"sync"
)

// baseline is the allocator the bitmap is measured against: the classic
// mutex around a big.Int (as in Kubernetes' service IP allocator), with
// the same next-fit rule per shard, so only the mechanism differs.
type baseline struct {
	mu sync.Mutex
	// bits guarded by mu: a set bit is a held or reserved offset.
	bits big.Int
	// cursors guarded by mu: next-fit position per shard.
	cursors []int
	size    int
	base    netip.Addr
}

func newBaseline(p netip.Prefix, shards int) *baseline {
	size := 1 << (p.Addr().BitLen() - p.Bits())
	b := &baseline{size: size, base: p.Addr(), cursors: make([]int, shards)}
	for s := range b.cursors {
		b.cursors[s] = s * size / shards
	}
	b.bits.SetBit(&b.bits, 0, 1)
	b.bits.SetBit(&b.bits, 1, 1)
	b.bits.SetBit(&b.bits, size-1, 1)
	return b
}

func (b *baseline) allocate(shard int) (netip.Addr, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := &b.cursors[shard%len(b.cursors)]
	for i := range b.size {
		off := (*c + i) % b.size
		if b.bits.Bit(off) == 0 {
			b.bits.SetBit(&b.bits, off, 1)
			*c = off + 1
			return addrAt(b.base, uint64(off)), true
		}
	}
	return netip.Addr{}, false
}

func (b *baseline) take(a netip.Addr) bool {
	off, ok := offsetOf(b.base, a)
	if !ok || off >= uint64(b.size) {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bits.Bit(int(off)) != 0 {
		return false
	}
	b.bits.SetBit(&b.bits, int(off), 1)
	return true
}

func (b *baseline) release(a netip.Addr) {
	off, ok := offsetOf(b.base, a)
	if !ok || off >= uint64(b.size) {
		return
	}
	b.mu.Lock()
	b.bits.SetBit(&b.bits, int(off), 0)
	b.mu.Unlock()
}
