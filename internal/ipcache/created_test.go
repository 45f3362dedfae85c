package ipcache

import (
	"testing"
	"time"

	kubeovnv1 "github.com/shardnet/shardnet/api/kubeovn/v1"
)

// TestCreated: a record created moments ago with the same spec and labels
// is pending; another spec, other labels, a forgotten record or one
// older than CreatedTTL is not, and old records are swept.
func TestCreated(t *testing.T) {
	now := time.Unix(1000, 0)
	c := NewCreated(func() time.Time { return now })
	spec := kubeovnv1.IPSpec{PodName: "p", Namespace: "ns", IPAddress: "10.16.0.5", V4IPAddress: "10.16.0.5", Subnet: "ovn-default"}
	labels := map[string]string{"ovn.kubernetes.io/subnet": "ovn-default"}
	if c.Pending("p.ns", spec, labels) {
		t.Fatal("a record never created is pending")
	}
	c.Add("p.ns", spec, labels)
	if !c.Pending("p.ns", spec, labels) {
		t.Fatal("a record created now is not pending")
	}
	other := spec
	other.IPAddress = "10.16.0.6"
	if c.Pending("p.ns", other, labels) {
		t.Error("a record created with another spec is pending")
	}
	if c.Pending("p.ns", spec, map[string]string{"ovn.kubernetes.io/subnet": "other"}) {
		t.Error("a record created with other labels is pending")
	}
	now = now.Add(CreatedTTL - time.Second)
	if !c.Pending("p.ns", spec, labels) {
		t.Error("a record created within the TTL is not pending")
	}
	now = now.Add(time.Second)
	if c.Pending("p.ns", spec, labels) {
		t.Error("a record created a TTL ago is pending")
	}
	if c.Len() != 0 {
		t.Errorf("%d records kept after the TTL, want 0", c.Len())
	}
	c.Add("p.ns", spec, labels)
	c.Forget("p.ns")
	if c.Pending("p.ns", spec, labels) {
		t.Error("a forgotten record is pending")
	}
	// Records never asked about again are swept as others are added.
	for _, name := range []string{"a", "b", "c"} {
		c.Add(name, spec, labels)
	}
	now = now.Add(CreatedTTL)
	for range 1024 {
		c.Add("last", spec, labels)
	}
	if c.Len() != 1 {
		t.Errorf("%d records kept after a sweep, want only the last one", c.Len())
	}
}
