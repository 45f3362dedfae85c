package ipam

import (
	"math/bits"
	"sync/atomic"
)

// bitmap is a fixed-size set of offsets, one bit each, safe for concurrent
// use without locks. Bit i is word i/64, bit i%64.
type bitmap struct {
	// words holds the bits; a set bit means the offset is held. Words are
	// only changed by atomic CAS/Or/And, so concurrent pickers of the same
	// word serialise on the word and never both win one bit.
	words []atomic.Uint64
	// size is the number of meaningful bits; bits at and past size in the
	// last word stay zero here and are masked out of every scan.
	size uint64
}

func newBitmap(size uint64) bitmap {
	return bitmap{words: make([]atomic.Uint64, (size+63)/64), size: size}
}

// set sets bit i and reports whether it was clear before.
func (b *bitmap) set(i uint64) bool {
	m := uint64(1) << (i & 63)
	return b.words[i>>6].Or(m)&m == 0
}

// clear clears bit i and reports whether it was set before.
func (b *bitmap) clear(i uint64) bool {
	m := uint64(1) << (i & 63)
	return b.words[i>>6].And(^m)&m != 0
}

func (b *bitmap) isSet(i uint64) bool {
	return b.words[i>>6].Load()&(1<<(i&63)) != 0
}

// pick claims the first clear bit at or after start within [lo, hi],
// wrapping to lo, skipping bits set in mask (which must cover at least the
// words of [lo, hi]). It is next-fit: a caller that advances start past
// each pick does not see a just-cleared bit again until it wraps.
func (b *bitmap) pick(lo, hi, start uint64, mask []uint64) (uint64, bool) {
	if start < lo || start > hi {
		start = lo
	}
	if i, ok := b.pickIn(start, hi, mask); ok {
		return i, true
	}
	if start > lo {
		return b.pickIn(lo, start-1, mask)
	}
	return 0, false
}

// pickIn claims the lowest clear, unmasked bit in [a, b].
func (b *bitmap) pickIn(a, z uint64, mask []uint64) (uint64, bool) {
	first, last := a>>6, z>>6
	for wi := first; wi <= last; wi++ {
		m := ^mask[wi]
		if wi == first {
			m &= ^uint64(0) << (a & 63)
		}
		if wi == last {
			m &= ^uint64(0) >> (63 - z&63)
		}
		if m == 0 {
			continue
		}
		w := &b.words[wi]
		for {
			old := w.Load()
			free := ^old & m
			if free == 0 {
				break
			}
			bit := uint64(bits.TrailingZeros64(free))
			if w.CompareAndSwap(old, old|1<<bit) {
				return wi<<6 | bit, true
			}
		}
	}
	return 0, false
}
