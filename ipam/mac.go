package ipam

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
)

// MAC is an Ethernet address.
type MAC [6]byte

// Derived MACs are locally administered unicast addresses (first octet
// 0x0a) whose second octet says what the other four encode. A static MAC
// in this space is accepted only where it equals the derived one, so a
// user cannot pick a MAC that a later derivation hands to someone else.
const (
	macPrefix = 0x0a
	// macFromV4: octets 2..5 are the IPv4 address (the ovn-kubernetes
	// convention), unique wherever the address is.
	macFromV4 = 0x58
	// macFromV6Offset: octets 2..5 are the IPv6 address's offset in the
	// window (< 2^24), unique within the subnet.
	macFromV6Offset = 0x59
	// macFromV6Low: octets 2..5 are the low 32 bits of an IPv6 address
	// beyond the window; such MACs are checked in the MAC table.
	macFromV6Low = 0x5a
)

// ParseMAC parses a unicast, non-zero 48-bit MAC. The usual forms,
// "xx:xx:xx:xx:xx:xx" and "xx-xx-xx-xx-xx-xx", are read without
// allocating (adoption parses every pod's, IP record's and port's MAC
// each pass); any other goes through net.ParseMAC.
func ParseMAC(s string) (MAC, error) {
	m, ok := parseColonMAC(s)
	if !ok {
		hw, err := net.ParseMAC(s)
		if err != nil {
			return MAC{}, parseErr("MAC", s, err)
		}
		if len(hw) != 6 {
			return MAC{}, parseErr("MAC", s, fmt.Errorf("%d bytes, want 6", len(hw)))
		}
		copy(m[:], hw)
	}
	if m == (MAC{}) {
		return MAC{}, parseErr("MAC", s, fmt.Errorf("all zero"))
	}
	if m[0]&1 != 0 {
		return MAC{}, parseErr("MAC", s, fmt.Errorf("multicast"))
	}
	return m, nil
}

// parseColonMAC reads six hex pairs joined by one separator, ':' or '-'
// throughout, as net.ParseMAC does; ok is false for anything else.
func parseColonMAC(s string) (m MAC, ok bool) {
	if len(s) != 17 || (s[2] != ':' && s[2] != '-') {
		return MAC{}, false
	}
	for i := range m {
		if i > 0 && s[3*i-1] != s[2] {
			return MAC{}, false
		}
		hi, ok1 := unhex(s[3*i])
		lo, ok2 := unhex(s[3*i+1])
		if !ok1 || !ok2 {
			return MAC{}, false
		}
		m[i] = hi<<4 | lo
	}
	return m, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func (m MAC) String() string { return net.HardwareAddr(m[:]).String() }

// IsZero reports whether m is unset.
func (m MAC) IsZero() bool { return m == MAC{} }

func (m MAC) derivedSpace() bool {
	return m[0] == macPrefix && m[1] >= macFromV4 && m[1] <= macFromV6Low
}

// DerivedMAC is the MAC an allocation of a gets when it has no static MAC:
// from the IPv4 address when there is one, else from the IPv6 address's
// window offset (or, beyond the window, its low 32 bits).
func (s *Subnet) DerivedMAC(a Addresses) MAC {
	m := MAC{0: macPrefix}
	switch {
	case a.V4.IsValid():
		m[1] = macFromV4
		b := a.V4.As4()
		copy(m[2:], b[:])
	case a.V6.IsValid():
		m[1] = macFromV6Low
		v := uint32(0)
		if s.v6 != nil {
			if off, ok := s.v6.offset(a.V6); ok {
				m[1], v = macFromV6Offset, uint32(off)
			}
		}
		if m[1] == macFromV6Low {
			_, lo := u128(a.V6)
			v = uint32(lo)
		}
		binary.BigEndian.PutUint32(m[2:], v)
	}
	return m
}

// macTable holds the MACs of a subnet that are not unique by construction:
// static ones and those derived beyond the IPv6 window.
type macTable struct {
	mu sync.Mutex
	// owner guarded by mu: MAC -> key of the owner holding it.
	owner map[MAC]string
}

// AssignMAC decides the MAC of an allocation of a for the owner named by
// ownerKey: static when not zero (checked and recorded as the owner's),
// else derived. It fails with ErrMACInUse when another owner holds the
// MAC, and with ErrInvalid for a static MAC in the derived space that is
// not a's own derived MAC.
func (s *Subnet) AssignMAC(static MAC, a Addresses, ownerKey string) (MAC, error) {
	derived := s.DerivedMAC(a)
	m := derived
	if !static.IsZero() {
		if static.derivedSpace() && static != derived {
			return MAC{}, parseErr("MAC", static.String(),
				fmt.Errorf("in the range %02x:%02x:*..%02x:%02x:* shardnet derives MACs from; only %s is allowed with %s", macPrefix, macFromV4, macPrefix, macFromV6Low, derived, a))
		}
		m = static
	}
	if m[0] == macPrefix && (m[1] == macFromV4 || m[1] == macFromV6Offset) {
		return m, nil
	}
	s.macs.mu.Lock()
	defer s.macs.mu.Unlock()
	if held, ok := s.macs.owner[m]; ok && held != ownerKey {
		return MAC{}, fmt.Errorf("subnet %s: MAC %s: %w", s.name, m, ErrMACInUse)
	}
	if s.macs.owner == nil {
		s.macs.owner = make(map[MAC]string)
	}
	s.macs.owner[m] = ownerKey
	return m, nil
}

// ReleaseMAC forgets m if ownerKey holds it.
func (s *Subnet) ReleaseMAC(m MAC, ownerKey string) {
	s.macs.mu.Lock()
	defer s.macs.mu.Unlock()
	if s.macs.owner[m] == ownerKey {
		delete(s.macs.owner, m)
	}
}
