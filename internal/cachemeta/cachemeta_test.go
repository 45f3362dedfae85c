package cachemeta

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestUID: a UID the API server made is kept packed, anything else as
// it is, and both read back the same through GetUID and ObjectMeta,
// whichever form a SetUID left before.
func TestUID(t *testing.T) {
	const made = types.UID("0b6f6c1e-6d2a-4c55-9d3e-3f1f2a7c9e10")
	for _, u := range []types.UID{made, "u-1", "", "0B6F6C1E-6D2A-4C55-9D3E-3F1F2A7C9E10"} {
		m := From(&metav1.ObjectMeta{Name: "n", UID: u})
		if got := m.GetUID(); got != u {
			t.Errorf("From(%q).GetUID() = %q", u, got)
		}
		if got := m.ObjectMeta().UID; got != u {
			t.Errorf("From(%q).ObjectMeta().UID = %q", u, got)
		}
		if packed := m.uidText == nil; packed != (u == made || u == "") {
			t.Errorf("From(%q): packed %v", u, packed)
		}
		for _, next := range []types.UID{"u-2", made, ""} {
			m.SetUID(next)
			if got := m.GetUID(); got != next {
				t.Errorf("SetUID(%q) after %q: GetUID() = %q", next, u, got)
			}
		}
	}
}
