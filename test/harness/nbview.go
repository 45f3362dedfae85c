package harness

import (
	"context"
	"time"

	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// NBView connects a libovsdb client that monitors the whole Northbound
// database, for checks of what shardnet's own trimmed cache does not hold
// (port group members, a switch's ports). opts name the endpoints and any
// other client option. It is closed at cleanup.
func NBView(t TB, opts ...client.Option) client.Client {
	t.Helper()
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		t.Fatalf("harness: NB model: %v", err)
	}
	c, err := client.NewOVSDBClient(m, opts...)
	if err != nil {
		t.Fatalf("harness: NB view: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("harness: connecting the NB view: %v", err)
	}
	t.Cleanup(c.Close)
	if _, err := c.MonitorAll(ctx); err != nil {
		t.Fatalf("harness: NB view monitor: %v", err)
	}
	return c
}
