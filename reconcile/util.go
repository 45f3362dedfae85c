package reconcile

import (
	"net/netip"
	"slices"
	"strings"
)

// splitComma splits a comma-separated annotation value, trimming spaces
// and dropping empty entries.
func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func sortAddrs(a []netip.Addr) { slices.SortFunc(a, func(x, y netip.Addr) int { return x.Compare(y) }) }
