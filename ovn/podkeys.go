package ovn

import (
	"context"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// PodKeys returns the distinct external_ids:pod values of the cached logical
// switch ports: every pod key that holds a port. It walks the port table
// once, so it is for the garbage collector's periodic pass, not per pod.
func (c *Client) PodKeys() []string {
	var ports []nbdb.LogicalSwitchPort
	if err := c.nb.List(context.Background(), &ports); err != nil {
		return nil
	}
	seen := make(map[string]struct{}, len(ports))
	out := make([]string, 0, len(ports))
	for i := range ports {
		k := ports[i].ExternalIDs[ExternalIDPod]
		if k == "" {
			continue
		}
		if _, dup := seen[k]; !dup {
			seen[k] = struct{}{}
			out = append(out, k)
		}
	}
	return out
}
