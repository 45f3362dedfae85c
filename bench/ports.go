package bench

import (
	"context"
	"fmt"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn"
	"github.com/shardnet/shardnet/ovn/nbdb"
	"github.com/shardnet/shardnet/test/harness"
)

// createSecurityGroupPortGroup makes security group sg's port group in
// the Northbound, named and marked as kube-ovn's SecurityGroup controller
// makes it, so that pods naming sg join it instead of waiting (contract
// E24).
func createSecurityGroupPortGroup(ctx context.Context, p *harness.Program, nb *harness.NB, sg string) error {
	view := harness.NBView(p, client.WithEndpoint(nb.Endpoint))
	defer view.Close()
	ops, err := view.Create(&nbdb.PortGroup{Name: ovn.SecurityGroupPortGroup(sg), ExternalIDs: map[string]string{"sg": sg, "vendor": "kube-ovn"}})
	if err != nil {
		return err
	}
	res, err := view.Transact(ctx, ops...)
	if err == nil {
		_, err = ovsdb.CheckOperationResults(res, ops)
	}
	if err != nil {
		return fmt.Errorf("creating the port group of security group %s: %w", sg, err)
	}
	return nil
}
