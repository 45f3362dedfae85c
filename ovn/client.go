package ovn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-logr/logr"
	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/shardnet/shardnet/ovn/nbdb"
)

// Config configures a Client. Zero durations take the documented defaults.
type Config struct {
	// Endpoints are OVSDB remotes ("tcp:HOST:PORT", "ssl:HOST:PORT",
	// "unix:PATH"), one per member of a RAFT cluster. Required.
	Endpoints []string
	// TLS is required when any endpoint is "ssl:".
	TLS *tls.Config
	// LeaderOnly makes the client connect only to the cluster leader and
	// reconnect when that member loses leadership. Writes to a follower
	// are forwarded by ovsdb-server anyway, but reads from a follower's
	// cache can lag, so a writer of a clustered database should set it.
	LeaderOnly bool
	// ConnectTimeout bounds NewClient's connection attempt (default 5s).
	ConnectTimeout time.Duration
	// ReconnectTimeout bounds each reconnection attempt after a lost
	// connection (default 60s, at least ConnectTimeout). An attempt is
	// the connection and the monitor's reply, the whole database: one
	// cut short is abandoned and started again from nothing, so a bound
	// below what the reply takes never reconnects. At 50,000 ports on
	// this machine's loaded server the reply took longer than 5 s, and a
	// replica that had lost its connection retried for minutes. A server
	// that is down refuses at once whatever the bound.
	ReconnectTimeout time.Duration
	// MinBackoff and MaxBackoff bound the delay between reconnection
	// attempts (defaults 100ms and 1s). The client never stops retrying.
	// The bound is what a replica may lose after the server is back: a
	// reconnect attempt a second costs ovsdb-server one TCP connect, and
	// work waits no longer than that for a Northbound that returned.
	MinBackoff, MaxBackoff time.Duration
	// InactivityProbe sends an echo after this much silence from the
	// server and reconnects if it is not answered within the same time
	// (default 15s, negative disables). It must exceed ConnectTimeout.
	InactivityProbe time.Duration
	// Logger receives libovsdb's connection logs. The zero value discards.
	Logger logr.Logger
	// OnConnected, when set, is called once NewClient has connected and
	// before it loads the database: a caller starts its other loads then,
	// so that they overlap the Northbound's, and starts none of them when
	// the Northbound cannot be reached.
	OnConnected func()
	// StartOnAccept calls OnConnected as soon as an endpoint accepts a
	// connection, if that comes first: ovsdb-server answers a new client
	// only once it has written the monitor replies it is sending, about a
	// second at 50,000 ports when replicas start together. OnConnected
	// may then run on another goroutine than NewClient's (never after
	// NewClient returns), and also when NewClient then fails, against an
	// endpoint that accepts and never answers: the caller stops what it
	// started, and should not ask for this again until a connect has
	// succeeded.
	StartOnAccept bool
}

func (cfg *Config) setDefaults() {
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	if cfg.ReconnectTimeout == 0 {
		cfg.ReconnectTimeout = max(60*time.Second, cfg.ConnectTimeout)
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = 100 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = time.Second
	}
	if cfg.InactivityProbe == 0 {
		cfg.InactivityProbe = 15 * time.Second
	}
	if cfg.Logger.GetSink() == nil {
		cfg.Logger = logr.Discard()
	}
}

func (cfg *Config) validate() error {
	if len(cfg.Endpoints) == 0 {
		return errors.New("no endpoints")
	}
	for _, ep := range cfg.Endpoints {
		u, err := url.Parse(ep)
		if err != nil {
			return fmt.Errorf("endpoint %q: %w", ep, err)
		}
		switch u.Scheme {
		case client.TCP:
			if u.Opaque == "" {
				return fmt.Errorf("endpoint %q: want tcp:HOST:PORT", ep)
			}
		case client.SSL:
			if u.Opaque == "" {
				return fmt.Errorf("endpoint %q: want ssl:HOST:PORT", ep)
			}
			if cfg.TLS == nil {
				return fmt.Errorf("endpoint %q: ssl needs a TLS config", ep)
			}
		case client.UNIX:
			if u.Path == "" && u.Opaque == "" {
				return fmt.Errorf("endpoint %q: want unix:PATH", ep)
			}
		default:
			return fmt.Errorf("endpoint %q: scheme must be tcp, ssl or unix", ep)
		}
	}
	if cfg.MinBackoff < 0 || cfg.MaxBackoff < cfg.MinBackoff {
		return fmt.Errorf("backoff bounds %v..%v are not ordered", cfg.MinBackoff, cfg.MaxBackoff)
	}
	if cfg.ReconnectTimeout < cfg.ConnectTimeout {
		return fmt.Errorf("reconnect timeout %v is below the connect timeout %v", cfg.ReconnectTimeout, cfg.ConnectTimeout)
	}
	if cfg.InactivityProbe > 0 && cfg.InactivityProbe <= cfg.ConnectTimeout {
		return fmt.Errorf("inactivity probe %v must exceed connect timeout %v", cfg.InactivityProbe, cfg.ConnectTimeout)
	}
	return nil
}

// Client is a Northbound connection with a cache of the tables and columns
// the reconciler reads. It is safe for concurrent use.
type Client struct {
	nb client.Client

	// closed is set once by Close; Ready reports false from then on.
	closed    atomic.Bool
	closeOnce sync.Once
	stop      chan struct{}  // closed by Close: stops the prober
	probers   sync.WaitGroup // the prober goroutine
}

// Client indexes, beyond the schema's unique indexes (Logical_Switch_Port,
// Logical_Router_Port and Port_Group by name). They let the reconciler find a
// pod's rows without scanning a table. Client indexes are not unique.
var (
	podKey        = model.ColumnKey{Column: "external_ids", Key: ExternalIDPod}
	routerKey     = model.ColumnKey{Column: "external_ids", Key: ExternalIDRouter}
	clientIndexes = map[string][]model.ClientIndex{
		nbdb.LogicalSwitchPortTable:        {{Columns: []model.ColumnKey{podKey}}},
		nbdb.LogicalSwitchTable:            {{Columns: []model.ColumnKey{{Column: "name"}}}},
		nbdb.LogicalRouterTable:            {{Columns: []model.ColumnKey{{Column: "name"}}}},
		nbdb.LogicalRouterStaticRouteTable: {{Columns: []model.ColumnKey{routerKey, {Column: "ip_prefix"}}}, {Columns: []model.ColumnKey{podKey}}, {Columns: []model.ColumnKey{{Column: "ip_prefix"}}}},
		nbdb.LogicalRouterPolicyTable:      {{Columns: []model.ColumnKey{routerKey, {Column: "match"}}}, {Columns: []model.ColumnKey{podKey}}},
		nbdb.NATTable:                      {{Columns: []model.ColumnKey{routerKey, {Column: "logical_ip"}}}, {Columns: []model.ColumnKey{podKey}}, {Columns: []model.ColumnKey{{Column: "logical_ip"}}}, {Columns: []model.ColumnKey{{Column: "external_ip"}}}},
		nbdb.DHCPOptionsTable:              {{Columns: []model.ColumnKey{{Column: "external_ids", Key: ExternalIDLogicalSwitch}}}},
	}
)

// NewClient connects to the first reachable endpoint (the leader, with
// LeaderOnly), starts the monitor and returns once the cache holds the
// database. The connection then lives until Close: it reconnects with backoff
// and rebuilds the cache after a disconnect or a leader change.
func NewClient(ctx context.Context, cfg Config) (*Client, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("ovn: invalid config: %w", err)
	}
	dbModel, err := nbdb.FullDatabaseModel()
	if err != nil {
		return nil, fmt.Errorf("ovn: loading NB model: %w", err)
	}
	dbModel.SetIndexes(clientIndexes)

	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = cfg.MinBackoff
	bo.MaxInterval = cfg.MaxBackoff
	// A little jitter keeps replicas from reconnecting in step without
	// stretching the wait much past MaxBackoff.
	bo.RandomizationFactor = 0.2
	// libovsdb panics when its reconnect backoff gives up, so it must not.
	bo.MaxElapsedTime = 0

	logger := cfg.Logger
	opts := []client.Option{
		client.WithLeaderOnly(cfg.LeaderOnly),
		client.WithLogger(&logger),
	}
	for _, ep := range cfg.Endpoints {
		opts = append(opts, client.WithEndpoint(ep))
	}
	if cfg.TLS != nil {
		opts = append(opts, client.WithTLSConfig(cfg.TLS))
	}
	// libovsdb's own inactivity check (WithInactivityCheck) races its
	// traffic channel against the reconnect path (a send on a channel being
	// closed), so the client runs its own prober instead.
	opts = append(opts, client.WithReconnect(cfg.ReconnectTimeout, bo))
	nb, err := client.NewOVSDBClient(dbModel, opts...)
	if err != nil {
		return nil, fmt.Errorf("ovn: creating NB client: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	// The probe runs beside the connect, so that an endpoint that takes
	// the whole timeout to refuse costs the connect nothing, and has ended
	// before NewClient returns, so that the hook never runs after it.
	connected := func() {}
	var probe sync.WaitGroup
	pctx, stopProbe := context.WithCancel(cctx)
	if cfg.OnConnected != nil {
		connected = sync.OnceFunc(cfg.OnConnected)
	}
	if cfg.OnConnected != nil && cfg.StartOnAccept {
		probe.Go(func() {
			if reachable(pctx, cfg.Endpoints) {
				connected()
			}
		})
	}
	err = nb.Connect(cctx)
	stopProbe()
	probe.Wait()
	if err != nil {
		nb.Close()
		return nil, fmt.Errorf("ovn: connecting to %v: %w", cfg.Endpoints, err)
	}
	connected()
	if _, err := nb.Monitor(ctx, monitorRequest(nb)); err != nil {
		nb.Close()
		return nil, fmt.Errorf("ovn: starting NB monitor: %w", err)
	}
	c := &Client{nb: nb, stop: make(chan struct{})}
	if cfg.InactivityProbe > 0 {
		c.probers.Add(1)
		go c.probe(cfg.InactivityProbe)
	}
	return c, nil
}

// reachable reports whether one of the endpoints (validated: see
// Config.validate) accepts a connection, which it closes at once. An ssl
// endpoint is dialled as TCP: accepting is what is asked, not the
// handshake.
func reachable(ctx context.Context, endpoints []string) bool {
	var d net.Dialer
	for _, ep := range endpoints {
		u, err := url.Parse(ep)
		if err != nil {
			continue
		}
		// As libovsdb dials them: the host and port of tcp and ssl are
		// the URL's opaque part; a unix path is either.
		network, addr := "tcp", u.Opaque
		switch u.Scheme {
		case client.TCP, client.SSL:
		case client.UNIX:
			network = "unix"
			if addr == "" {
				addr = u.Path
			}
		default:
			continue
		}
		conn, err := d.DialContext(ctx, network, addr)
		if err == nil {
			conn.Close()
			return true
		}
	}
	return false
}

// probe sends an echo every interval while connected and drops a connection
// whose echo is not answered within the interval, so that a silent peer (a
// partition rather than a closed socket) leads to a reconnect.
func (c *Client) probe(interval time.Duration) {
	defer c.probers.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if c.Ready() != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		err := c.nb.Echo(ctx)
		cancel()
		if err != nil && c.Ready() == nil {
			c.nb.Disconnect()
		}
	}
}

// monitorRequest lists the tables and columns the reconciler reads. Large
// reference sets (a switch's ports, a router's routes and NAT) are left out
// on purpose: every port added would otherwise ship and copy the switch's
// whole set into the cache. Builders refer to those rows by UUID instead.
func monitorRequest(nb client.Client) *client.Monitor {
	var (
		g   nbdb.NBGlobal
		ls  nbdb.LogicalSwitch
		lsp nbdb.LogicalSwitchPort
		lr  nbdb.LogicalRouter
		lrp nbdb.LogicalRouterPort
		pg  nbdb.PortGroup
		sr  nbdb.LogicalRouterStaticRoute
		pol nbdb.LogicalRouterPolicy
		nat nbdb.NAT
		dh  nbdb.DHCPOptions
	)
	return nb.NewMonitor(
		client.WithTable(&g, &g.ExternalIDs),
		client.WithTable(&ls, &ls.Name, &ls.OtherConfig, &ls.ExternalIDs),
		client.WithTable(&lsp, &lsp.Name, &lsp.Addresses, &lsp.PortSecurity, &lsp.ExternalIDs,
			&lsp.Type, &lsp.Options, &lsp.Dhcpv4Options, &lsp.Dhcpv6Options),
		client.WithTable(&lr, &lr.Name, &lr.ExternalIDs),
		client.WithTable(&lrp, &lrp.Name, &lrp.MAC, &lrp.Networks, &lrp.ExternalIDs, &lrp.Options),
		client.WithTable(&pg, &pg.Name, &pg.ExternalIDs),
		client.WithTable(&sr, &sr.IPPrefix, &sr.Nexthop, &sr.Policy, &sr.RouteTable, &sr.OutputPort, &sr.ExternalIDs),
		client.WithTable(&pol, &pol.Priority, &pol.Match, &pol.Action, &pol.Nexthops, &pol.ExternalIDs),
		client.WithTable(&nat, &nat.Type, &nat.ExternalIP, &nat.LogicalIP, &nat.LogicalPort, &nat.ExternalMAC, &nat.ExternalIDs),
		client.WithTable(&dh, &dh.Cidr, &dh.Options, &dh.ExternalIDs),
	)
}

// Close disconnects for good. Batchers built on the client must be closed
// first; their later transactions fail with ErrNotReady.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.stop)
		c.probers.Wait()
		c.nb.Close()
	})
}

// Ready returns nil while the client is connected (to the leader, with
// LeaderOnly) and its cache has been rebuilt since the last reconnect, and
// ErrNotReady otherwise. It is cheap enough for a readiness probe, but it
// waits while libovsdb holds its connection lock during a connection attempt
// (at most ConnectTimeout per endpoint); give the probe a longer timeout.
func (c *Client) Ready() error {
	if c.closed.Load() {
		return fmt.Errorf("%w: closed", ErrNotReady)
	}
	// libovsdb keeps Connected() true while it reconnects after the server
	// went away; the RPC client (hence the endpoint) is gone then, and comes
	// back only once the monitors have rebuilt the cache.
	if !c.nb.Connected() || c.nb.CurrentEndpoint() == "" {
		return fmt.Errorf("%w: disconnected", ErrNotReady)
	}
	return nil
}

// WaitReady blocks until Ready returns nil or ctx ends.
func (c *Client) WaitReady(ctx context.Context) error {
	if err := c.Ready(); err == nil {
		return nil
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", c.Ready(), ctx.Err())
		case <-t.C:
			if err := c.Ready(); err == nil {
				return nil
			} else if c.closed.Load() {
				return err
			}
		}
	}
}

// Endpoint returns the remote the client is connected to, or "".
func (c *Client) Endpoint() string { return c.nb.CurrentEndpoint() }

// Transact sends ops as one unbatched, unfenced transaction and checks the
// results with ovsdb.CheckOperationResults. Writers for a shard go through a
// Batcher instead; this is for the leader's cluster-wide objects and tools.
// A lost reply gives an error matching ErrOutcomeUnknown.
func (c *Client) Transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	res, err := c.rawTransact(ctx, ops)
	if err != nil {
		return nil, err
	}
	if errs, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		if len(errs) > 0 {
			// The typed ovsdb error (ConstraintViolation, ...) stays
			// reachable with errors.As.
			err = errs[0]
		}
		return res, fmt.Errorf("ovn: transaction: %s: %w", describeOpErrors(res, ops), err)
	}
	return res, nil
}

// rawTransact sends ops and classifies transport errors; it does not look at
// the results.
func (c *Client) rawTransact(ctx context.Context, ops []ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	if c.closed.Load() {
		return nil, fmt.Errorf("%w: closed", ErrNotReady)
	}
	res, err := c.nb.Transact(ctx, ops...)
	if err != nil {
		return nil, classifyTransportError(err)
	}
	return res, nil
}

// errValidation wraps libovsdb's client-side schema check, which refuses the
// transaction before sending it.
type errValidation struct{ err error }

func (e *errValidation) Error() string {
	return "ovn: ops refused by schema validation: " + e.err.Error()
}
func (e *errValidation) Unwrap() error { return e.err }

func classifyTransportError(err error) error {
	switch {
	case err.Error() == "validation failed for the operation":
		return &errValidation{err: err}
	case errors.Is(err, client.ErrNotConnected):
		// Sent or not, the connection went away before the reply.
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// libovsdb wraps the ctx error when it gave up waiting for a
		// reconnection (never sent), but returns it bare when the call
		// itself timed out (maybe applied). Only the first is safe.
		if strings.Contains(err.Error(), "while awaiting reconnection") {
			return fmt.Errorf("%w: %w", ErrNotReady, err)
		}
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	default:
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
}

// describeOpErrors names the first failing op, which CheckOperationResults'
// summary ("1 ovsdb operations failed") does not.
func describeOpErrors(res []ovsdb.OperationResult, ops []ovsdb.Operation) string {
	for i, r := range res {
		if r.Error == "" {
			continue
		}
		if i < len(ops) {
			return fmt.Sprintf("op %d (%s %s): %s: %s", i, ops[i].Op, ops[i].Table, r.Error, r.Details)
		}
		return fmt.Sprintf("commit: %s: %s", r.Error, r.Details)
	}
	return "malformed reply"
}

// lookup returns copies of the cached rows of table matching all conds.
// The cache answers equality on a schema or client index from the index; a
// lookup that no index serves would scan the table, so every caller below
// is served by one (see clientIndexes).
func lookup[T model.Model](c *Client, table string, conds ...ovsdb.Condition) []T {
	rc := c.rowCache(table)
	if rc == nil {
		return nil
	}
	rows, err := rc.RowsByCondition(conds)
	if err != nil {
		return nil
	}
	return ofType[T](len(rows), maps.Values(rows))
}

// rowCache returns the cache of table, nil when it holds no row: an empty
// table (no NAT rules, no source routes in most clusters) answers without
// the search's conversions of the conditions.
func (c *Client) rowCache(table string) *cache.RowCache {
	tc := c.nb.Cache()
	if tc == nil {
		return nil
	}
	if rc := tc.Table(table); rc != nil && rc.Len() > 0 {
		return rc
	}
	return nil
}

// ofType returns the n rows that are of type T.
func ofType[T model.Model](n int, rows iter.Seq[model.Model]) []T {
	if n == 0 {
		return nil
	}
	out := make([]T, 0, n)
	for r := range rows {
		if t, ok := r.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

func first[T any](rows []T) (T, bool) {
	if len(rows) == 0 {
		var zero T
		return zero, false
	}
	return rows[0], true
}

// lookupBy returns the cached rows of table whose column (a string column,
// or with key set one key of a string map column) is value. An index of
// that column key alone answers it without a condition, the condition's
// map and the map of the results, which the search costs; a table without
// such an index, or an empty value, is searched with the equivalent
// condition.
func lookupBy[T model.Model](c *Client, table string, ck model.ColumnKey, value string) []T {
	rc := c.rowCache(table)
	if rc == nil {
		return nil
	}
	rows, ok := rc.RowsByIndexValue(ck, value)
	if !ok {
		cond := eq(ck.Column, value)
		if key, isString := ck.Key.(string); isString {
			cond = hasKey(ck.Column, key, value)
		}
		return lookup[T](c, table, cond)
	}
	return ofType[T](len(rows), slices.Values(rows))
}

// The column keys lookupBy is asked about besides podKey.
var (
	byName       = model.ColumnKey{Column: "name"}
	byIPPrefix   = model.ColumnKey{Column: "ip_prefix"}
	byLogicalIP  = model.ColumnKey{Column: "logical_ip"}
	byExternalIP = model.ColumnKey{Column: "external_ip"}
	bySwitch     = model.ColumnKey{Column: "external_ids", Key: ExternalIDLogicalSwitch}
)

func eq(column string, value any) ovsdb.Condition {
	return ovsdb.Condition{Column: column, Function: ovsdb.ConditionEqual, Value: value}
}

// hasKey matches rows whose map column holds key=value.
func hasKey(column, key, value string) ovsdb.Condition {
	return ovsdb.Condition{Column: column, Function: ovsdb.ConditionIncludes, Value: ovsdb.OvsMap{GoMap: map[any]any{key: value}}}
}

// Port returns the cached logical switch port with this name.
func (c *Client) Port(name string) (*nbdb.LogicalSwitchPort, bool) {
	return first(lookupBy[*nbdb.LogicalSwitchPort](c, nbdb.LogicalSwitchPortTable, byName, name))
}

// PortsByPod returns the cached ports whose external_ids:pod is pod
// ("namespace/name"), through a client index.
func (c *Client) PortsByPod(pod string) []*nbdb.LogicalSwitchPort {
	if pod == "" {
		return nil
	}
	return lookupBy[*nbdb.LogicalSwitchPort](c, nbdb.LogicalSwitchPortTable, podKey, pod)
}

// Switch returns the cached logical switch with this name. Names are not
// unique in the schema; shardnet creates one switch per subnet name.
func (c *Client) Switch(name string) (*nbdb.LogicalSwitch, bool) {
	return first(lookupBy[*nbdb.LogicalSwitch](c, nbdb.LogicalSwitchTable, byName, name))
}

// Router returns the cached logical router with this name.
func (c *Client) Router(name string) (*nbdb.LogicalRouter, bool) {
	return first(lookupBy[*nbdb.LogicalRouter](c, nbdb.LogicalRouterTable, byName, name))
}

// RouterPort returns the cached logical router port with this name.
func (c *Client) RouterPort(name string) (*nbdb.LogicalRouterPort, bool) {
	return first(lookupBy[*nbdb.LogicalRouterPort](c, nbdb.LogicalRouterPortTable, byName, name))
}

// PortGroup returns the cached port group with this name (without its
// ports, which are not monitored).
func (c *Client) PortGroup(name string) (*nbdb.PortGroup, bool) {
	return first(lookupBy[*nbdb.PortGroup](c, nbdb.PortGroupTable, byName, name))
}

// global returns the cached NB_Global row.
func (c *Client) global() (*nbdb.NBGlobal, bool) {
	tc := c.nb.Cache()
	if tc == nil {
		return nil, false
	}
	rc := tc.Table(nbdb.NBGlobalTable)
	if rc == nil {
		return nil, false
	}
	for _, r := range rc.Rows() {
		if g, ok := r.(*nbdb.NBGlobal); ok {
			return g, true
		}
	}
	return nil, false
}
