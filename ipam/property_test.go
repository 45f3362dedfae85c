package ipam

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// model is the plain allocator the bitmap is checked against: a map of
// held addresses and the same next-fit rule, written the obvious way.
type model struct {
	base    netip.Addr
	size    uint64
	fixed   map[uint64]bool // network, broadcast, gateway
	skip    map[uint64]bool // fixed, excluded and pool offsets
	held    map[uint64]bool
	cursors []uint64
	// excluded are the excludeIps offsets; a pool pick skips them (and
	// fixed) but not other pool offsets.
	excluded map[uint64]bool
	// pool is the one pool's span, when hasPool, and its cursor.
	hasPool        bool
	poolLo, poolHi uint64
	poolCursor     uint64
}

// allocatePool is next-fit over the pool's span from its cursor.
func (m *model) allocatePool() (uint64, bool) {
	n := m.poolHi - m.poolLo + 1
	c := m.poolCursor
	if c < m.poolLo || c > m.poolHi {
		c = m.poolLo
	}
	for i := range n {
		off := m.poolLo + (c-m.poolLo+i)%n
		if !m.fixed[off] && !m.excluded[off] && !m.held[off] {
			m.held[off] = true
			m.poolCursor = off + 1
			return off, true
		}
	}
	return 0, false
}

func (m *model) allocate(shard int) (uint64, bool) {
	c := m.cursors[shard%len(m.cursors)]
	for i := range m.size {
		off := (c + i) % m.size
		if !m.skip[off] && !m.held[off] {
			m.held[off] = true
			m.cursors[shard%len(m.cursors)] = off + 1
			return off, true
		}
	}
	return 0, false
}

func (m *model) available() uint64 {
	var n uint64
	for off := range m.size {
		if !m.skip[off] && !m.held[off] {
			n++
		}
	}
	return n
}

type propCase struct {
	cfg   SubnetConfig
	model *model
}

func randomCase(r *rand.Rand) propCase {
	var cfg SubnetConfig
	var base netip.Addr
	var size uint64
	v4 := r.IntN(2) == 0
	if v4 {
		bits := 22 + r.IntN(9) // /22 .. /30
		size = 1 << (32 - bits)
		base = netip.AddrFrom4([4]byte{10, byte(r.IntN(256)), 0, 0})
		p, _ := base.Prefix(bits)
		base = p.Addr()
		cfg.CIDRBlock = p.String()
	} else {
		size = uint64(64 + r.IntN(700))
		base = mustAddrNoT("fd00:" + fmt.Sprint(r.IntN(9000)) + "::")
		cfg.CIDRBlock = base.String() + "/64"
		cfg.IPv6Window = size
	}
	cfg.Name = "prop"
	cfg.Shards = 1 + r.IntN(8)
	m := &model{base: base, size: size, fixed: map[uint64]bool{}, skip: map[uint64]bool{}, held: map[uint64]bool{},
		excluded: map[uint64]bool{}}
	gw := uint64(1)
	if size > 4 && r.IntN(2) == 0 {
		gw = 2 + r.Uint64N(size-3)
		cfg.Gateway = addrAt(base, gw).String()
	}
	m.fixed[0], m.fixed[gw] = true, true
	if v4 {
		m.fixed[size-1] = true
	}
	for off := range m.fixed {
		m.skip[off] = true
	}
	for range r.IntN(4) {
		lo := r.Uint64N(size)
		hi := min(size-1, lo+r.Uint64N(20))
		cfg.ExcludeIPs = append(cfg.ExcludeIPs, addrAt(base, lo).String()+".."+addrAt(base, hi).String())
		for off := lo; off <= hi; off++ {
			m.skip[off] = true
			m.excluded[off] = true
		}
	}
	if r.IntN(2) == 0 {
		lo := 1 + r.Uint64N(size-1)
		hi := min(size-1, lo+r.Uint64N(10))
		cfg.Pools = []PoolConfig{{Name: "p", IPs: []string{addrAt(base, lo).String() + ".." + addrAt(base, hi).String()}}}
		for off := lo; off <= hi; off++ {
			m.skip[off] = true
		}
		m.hasPool, m.poolLo, m.poolHi, m.poolCursor = true, lo, hi, lo
	}
	m.cursors = make([]uint64, cfg.Shards)
	for s := range m.cursors {
		m.cursors[s] = uint64(s) * size / uint64(cfg.Shards)
	}
	return propCase{cfg: cfg, model: m}
}

func mustAddrNoT(s string) netip.Addr { return netip.MustParseAddr(s) }

func pickOf(a Addresses) netip.Addr {
	if a.V4.IsValid() {
		return a.V4
	}
	return a.V6
}

// TestBitmapMatchesModel runs random allocate / pool / static / release /
// mark sequences against Subnet and the model and requires the same answers,
// address for address, and the same counters after every step.
func TestBitmapMatchesModel(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		pc := randomCase(r)
		s, err := NewSubnet(pc.cfg)
		if err != nil {
			t.Fatalf("seed %d: NewSubnet(%+v): %v", seed, pc.cfg, err)
		}
		m := pc.model
		for step := range 400 {
			where := fmt.Sprintf("seed %d step %d (%+v)", seed, step, pc.cfg)
			switch op := r.IntN(11); {
			case op == 10:
				if !m.hasPool {
					continue
				}
				got, err := s.AllocateFromPool("p")
				want, ok := m.allocatePool()
				if !ok {
					if !errors.Is(err, ErrFull) {
						t.Fatalf("%s: AllocateFromPool = %s, %v; model pool is full", where, got, err)
					}
					continue
				}
				if err != nil || pickOf(got) != addrAt(m.base, want) {
					t.Fatalf("%s: AllocateFromPool = %s, %v; model gives %s", where, got, err, addrAt(m.base, want))
				}
			case op < 4:
				shard := r.IntN(16)
				got, err := s.Allocate(shard)
				want, ok := m.allocate(shard)
				if !ok {
					if !errors.Is(err, ErrFull) {
						t.Fatalf("%s: Allocate = %s, %v; model is full", where, got, err)
					}
					continue
				}
				if err != nil || pickOf(got) != addrAt(m.base, want) {
					t.Fatalf("%s: Allocate(%d) = %s, %v; model gives %s", where, shard, got, err, addrAt(m.base, want))
				}
			case op < 6:
				off := r.Uint64N(m.size + 2)
				a := addrAt(m.base, off)
				err := s.AllocateStatic(one(a))
				switch {
				case off >= m.size:
					// Past an IPv4 prefix or beyond the IPv6 window.
					if m.base.Is4() {
						if !errors.Is(err, ErrNotInRange) {
							t.Fatalf("%s: AllocateStatic(%s) outside = %v", where, a, err)
						}
					} else if err != nil {
						t.Fatalf("%s: AllocateStatic(%s) beyond window = %v", where, a, err)
					} else {
						s.Release(one(a))
					}
				case m.fixed[off]:
					if !errors.Is(err, ErrReserved) {
						t.Fatalf("%s: AllocateStatic(%s) reserved = %v", where, a, err)
					}
				case m.held[off]:
					if !errors.Is(err, ErrAllocated) {
						t.Fatalf("%s: AllocateStatic(%s) held = %v", where, a, err)
					}
				default:
					if err != nil {
						t.Fatalf("%s: AllocateStatic(%s) = %v", where, a, err)
					}
					m.held[off] = true
				}
			case op < 9:
				off := r.Uint64N(m.size)
				n := s.Release(one(addrAt(m.base, off)))
				if (n == 1) != m.held[off] {
					t.Fatalf("%s: Release(%s) = %d, model held %v", where, addrAt(m.base, off), n, m.held[off])
				}
				delete(m.held, off)
			default:
				off := r.Uint64N(m.size)
				a := addrAt(m.base, off)
				if free := s.IsFree(a); free != (!m.fixed[off] && !m.held[off]) {
					t.Fatalf("%s: IsFree(%s) = %v", where, a, free)
				}
				s.Mark(a)
				if !m.fixed[off] {
					m.held[off] = true
				}
			}
			u := s.Usage()[0]
			if u.Used != uint64(len(m.held)) || u.Available != m.available() {
				t.Fatalf("%s: Usage = %+v; model used %d available %d", where, u, len(m.held), m.available())
			}
		}
	}
}
