package app

import (
	"context"
	"strings"

	"github.com/ovn-kubernetes/libovsdb/client"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// nbView is a read-only Northbound client monitoring every port column,
// for the demo's and benchmarks' checks.
type nbView struct{ c client.Client }

func newNBView(ctx context.Context, endpoint string) (*nbView, error) {
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		return nil, err
	}
	c, err := client.NewOVSDBClient(m, client.WithEndpoint(endpoint))
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx); err != nil {
		return nil, err
	}
	var lsp nbdb.LogicalSwitchPort
	if _, err := c.Monitor(ctx, c.NewMonitor(client.WithTable(&lsp))); err != nil {
		c.Close()
		return nil, err
	}
	return &nbView{c: c}, nil
}

// addresses is the port's addresses column joined by spaces ("" when the
// port does not exist or has several entries).
func (v *nbView) addresses(port string) string {
	p := &nbdb.LogicalSwitchPort{Name: port}
	if err := v.c.Get(context.Background(), p); err != nil || len(p.Addresses) != 1 {
		return ""
	}
	return strings.TrimSpace(p.Addresses[0])
}

func (v *nbView) close() { v.c.Close() }
