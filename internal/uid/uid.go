// Package uid keeps a Kubernetes object's UID in 16 bytes instead of a
// string of 36 characters (a 48-byte allocation and a 16-byte header):
// the API server makes every UID a random UUID in its lowercase text
// form, and the caches keep one per cached object, three per pod (the
// pod's, its IP record's and its claim's), about 7 MiB at 50,000 pods.
//
// Only what renders back to the very same string is packed: "" and the
// lowercase 8-4-4-4-12 form of any UUID but the nil one (whose packed
// form is the zero value, kept for ""). A caller keeps anything else as
// the string it is.
package uid

import (
	"k8s.io/apimachinery/pkg/types"
)

// Packed is a UID that Pack could pack; the zero value is "".
type Packed [16]byte

// dashes are the positions of the dashes in a UUID's text form.
var dashes = [4]int{8, 13, 18, 23}

// Pack returns u packed, or false when it cannot be (see the package
// doc); then the zero Packed.
func Pack(u types.UID) (Packed, bool) {
	var p Packed
	if u == "" {
		return p, true
	}
	if len(u) != 36 {
		return Packed{}, false
	}
	j := 0
	for i := 0; i < 36; i++ {
		if i == dashes[0] || i == dashes[1] || i == dashes[2] || i == dashes[3] {
			if u[i] != '-' {
				return Packed{}, false
			}
			continue
		}
		hi, ok1 := nibble(u[i])
		lo, ok2 := nibble(u[i+1])
		if !ok1 || !ok2 {
			return Packed{}, false
		}
		p[j] = hi<<4 | lo
		j++
		i++
	}
	if p == (Packed{}) {
		// The nil UUID: its packed form would read as "".
		return Packed{}, false
	}
	return p, true
}

// nibble is the value of a lowercase hex digit.
func nibble(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

const hexDigits = "0123456789abcdef"

// UID returns the UID p was packed from. Each call but for "" builds a
// new string.
func (p Packed) UID() types.UID {
	if p == (Packed{}) {
		return ""
	}
	var b [36]byte
	j := 0
	for i := 0; i < 36; i++ {
		if i == dashes[0] || i == dashes[1] || i == dashes[2] || i == dashes[3] {
			b[i] = '-'
			continue
		}
		b[i], b[i+1] = hexDigits[p[j]>>4], hexDigits[p[j]&0xf]
		j++
		i++
	}
	return types.UID(b[:])
}
