package ipam

import (
	"fmt"
	"strconv"
	"strings"
)

// IPPoolRef is what an ip_pool annotation asks for: the name of an IPPool,
// or a list of addresses (each entry one allocation: one address, or a
// dual-stack pair).
type IPPoolRef struct {
	// Pool is the IPPool's name; empty when List is given.
	Pool string
	// List is the address list, in annotation order.
	List []Addresses
}

// ParseIPPoolAnnotation parses an ip_pool annotation as kube-ovn does:
// entries separated by ";" (each "v4", "v6" or "v4,v6"), or by "," (where
// exactly two addresses of different families form one dual-stack entry);
// a single entry that is not an address is a pool name.
func ParseIPPoolAnnotation(s string) (IPPoolRef, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return IPPoolRef{}, parseErr("ip_pool", s, fmt.Errorf("empty"))
	}
	if !strings.ContainsAny(s, ",;") {
		if _, err := parseAddr(s); err != nil {
			return IPPoolRef{Pool: s}, nil
		}
	}
	list, err := ParseAddressList(s)
	if err != nil {
		return IPPoolRef{}, err
	}
	return IPPoolRef{List: list}, nil
}

// ParseAddressList parses the list form of an ip_pool annotation (see
// ParseIPPoolAnnotation). Empty entries are errors, since they would shift
// every later StatefulSet ordinal.
func ParseAddressList(s string) ([]Addresses, error) {
	var entries []string
	if strings.Contains(s, ";") {
		entries = strings.Split(s, ";")
	} else {
		entries = strings.Split(s, ",")
		if len(entries) == 2 {
			a, errA := parseAddr(entries[0])
			b, errB := parseAddr(entries[1])
			if errA == nil && errB == nil && a.Is4() != b.Is4() {
				entries = []string{s}
			}
		}
	}
	out := make([]Addresses, 0, len(entries))
	for _, e := range entries {
		if strings.TrimSpace(e) == "" {
			return nil, parseErr("address list", s, fmt.Errorf("empty entry"))
		}
		a, err := ParseAddresses(e)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// StatefulSetOrdinal is the ordinal of a StatefulSet pod: the decimal
// number after the last "-" of its name.
func StatefulSetOrdinal(podName string) (int, bool) {
	i := strings.LastIndexByte(podName, '-')
	if i < 0 || i == len(podName)-1 {
		return 0, false
	}
	n, err := strconv.Atoi(podName[i+1:])
	if err != nil || n < 0 || podName[i+1] == '+' {
		return 0, false
	}
	return n, true
}

// AtOrdinal is the entry of list for a StatefulSet pod's ordinal; an
// ordinal past the end fails with ErrOrdinal.
func AtOrdinal(list []Addresses, ordinal int) (Addresses, error) {
	if ordinal < 0 || ordinal >= len(list) {
		return Addresses{}, fmt.Errorf("ordinal %d, list of %d: %w", ordinal, len(list), ErrOrdinal)
	}
	return list[ordinal], nil
}
