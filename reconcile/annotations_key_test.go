package reconcile

import (
	"fmt"
	"sync"
	"testing"
)

// TestKey: the full key of every provider, the default network's kept
// after its first use (no allocation), at most maxDefaultKeys of them,
// and the same under concurrent first uses.
func TestKey(t *testing.T) {
	if got := Key("attach.ns", KeyIPAddress); got != "attach.ns.kubernetes.io/ip_address" {
		t.Fatalf("attachment key %q", got)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2 * maxDefaultKeys {
				k := fmt.Sprintf("k%d", (i+g)%(2*maxDefaultKeys))
				if got := Key(DefaultProvider, k); got != "ovn.kubernetes.io/"+k {
					t.Errorf("Key(ovn, %s) = %q", k, got)
				}
			}
		})
	}
	wg.Wait()
	if n := len(*defaultKeys.Load()); n > maxDefaultKeys {
		t.Fatalf("%d default keys kept, bound %d", n, maxDefaultKeys)
	}
	defaultKeys.Store(nil)
	Key(DefaultProvider, KeyIPAddress)
	if allocs := testing.AllocsPerRun(100, func() { _ = Key(DefaultProvider, KeyIPAddress) }); allocs != 0 {
		t.Fatalf("a kept default key allocates %v times", allocs)
	}
	if got := Key(DefaultProvider, KeyRouted); got != DefaultKey(KeyRouted) {
		t.Fatalf("default key %q", got)
	}
}
