package uid

import (
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// TestRoundTrip: every UID the API server makes packs and renders back
// to the same string, and no two pack alike; "" packs to the zero value.
func TestRoundTrip(t *testing.T) {
	seen := map[Packed]types.UID{}
	for range 10000 {
		u := uuid.NewUUID()
		p, ok := Pack(u)
		if !ok {
			t.Fatalf("Pack(%q) refused", u)
		}
		if got := p.UID(); got != u {
			t.Fatalf("Pack(%q).UID() = %q", u, got)
		}
		if prev, dup := seen[p]; dup {
			t.Fatalf("%q and %q pack alike", prev, u)
		}
		seen[p] = u
	}
	if p, ok := Pack(""); !ok || p != (Packed{}) || p.UID() != "" {
		t.Fatalf(`Pack("") = %v, %v`, p, ok)
	}
}

// TestRefuses: what would not render back the same is refused, so that
// the caller keeps it as it is.
func TestRefuses(t *testing.T) {
	u := string(uuid.NewUUID())
	for _, bad := range []string{
		"u1", "s1", strings.ToUpper(u), u[:35], u + "0", "00000000-0000-0000-0000-000000000000",
		strings.Replace(u, "-", "x", 1), u[:8] + "0" + u[9:], "g" + u[1:], " " + u[1:],
	} {
		if p, ok := Pack(types.UID(bad)); ok || p != (Packed{}) {
			t.Errorf("Pack(%q) = %v, true; want it refused", bad, p)
		}
	}
}

// TestAnyBytes: every 16 bytes but zero render to a UID that packs back
// to them.
func TestAnyBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		var p Packed
		for i := range p {
			p[i] = byte(r.UintN(256))
		}
		if p == (Packed{}) {
			continue
		}
		q, ok := Pack(p.UID())
		if !ok || q != p {
			t.Fatalf("%x renders %q, which packs to %x, %v", p, p.UID(), q, ok)
		}
	}
}

// BenchmarkRender is the cost of building a UID's string from its packed
// form, which readers of a cached object pay per read:
// go test -run '^$' -bench Render ./internal/uid/
func BenchmarkRender(b *testing.B) {
	p, _ := Pack(uuid.NewUUID())
	b.ReportAllocs()
	for b.Loop() {
		_ = p.UID()
	}
}
