package ipam

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shardnet/shardnet/internal/golden"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden scenario files under testdata/")

// TestScenarios replays testdata/*.txt: allocation sequences on one subnet
// and its claims. Each block is a command line, a "----" line and the
// expected output; -rewrite regenerates the outputs. The first line is the
// subnet: "cidr=10.0.0.0/28 shards=2 gateway=... exclude=a,b..c
// pool=name:a..b,c window=N".
//
// Commands on the bare bitmap: alloc SHARD, pool NAME, static ADDRS,
// release ADDRS, mark ADDR, free ADDR, usage. Commands through the claims
// (an in-memory store with the API server's semantics): claim OWNER SHARD,
// cstatic OWNER ADDRS [MAC], clist OWNER ORDINAL LIST, cpool OWNER NAME,
// crelease OWNER ADDRS, foreign OWNER ADDR (a claim made by another
// replica, unseen here), claims (the store's content), restart (a fresh
// bitmap restored from the store).
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScenario(t, file)
		})
	}
}

type scenario struct {
	t      *testing.T
	cfg    SubnetConfig
	s      *Subnet
	store  *memStore
	claims *Claims
}

func parseScenarioHeader(line string) (SubnetConfig, error) {
	cfg := SubnetConfig{Name: "net"}
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "cidr":
			cfg.CIDRBlock = v
		case "gateway":
			cfg.Gateway = v
		case "exclude":
			cfg.ExcludeIPs = strings.Split(v, ",")
		case "pool":
			name, ips, _ := strings.Cut(v, ":")
			cfg.Pools = append(cfg.Pools, PoolConfig{Name: name, IPs: strings.Split(ips, ",")})
		case "shards":
			n, err := strconv.Atoi(v)
			if err != nil {
				return cfg, err
			}
			cfg.Shards = n
		case "window":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return cfg, err
			}
			cfg.IPv6Window = n
		default:
			return cfg, fmt.Errorf("unknown header key %q", k)
		}
	}
	return cfg, nil
}

func owner(name string) v1alpha1.ClaimOwner {
	return v1alpha1.ClaimOwner{Kind: v1alpha1.OwnerPod, Namespace: "ns", Name: name, UID: name}
}

func errText(err error) string { return "error: " + err.Error() }

func (sc *scenario) run(cmd string, args []string) string {
	ctx := context.Background()
	arg := func(i int) string {
		if i >= len(args) {
			sc.t.Fatalf("%s: missing argument %d", cmd, i+1)
		}
		return args[i]
	}
	addrs := func(i int) Addresses {
		a, err := ParseAddresses(arg(i))
		if err != nil {
			sc.t.Fatalf("%s: %v", cmd, err)
		}
		return a
	}
	num := func(i int) int {
		n, err := strconv.Atoi(arg(i))
		if err != nil {
			sc.t.Fatalf("%s: %v", cmd, err)
		}
		return n
	}
	allocation := func(al Allocation, err error) string {
		if err != nil {
			return errText(err)
		}
		return al.Addresses.String() + " mac " + al.MAC.String()
	}
	switch cmd {
	case "alloc":
		a, err := sc.s.Allocate(num(0))
		if err != nil {
			return errText(err)
		}
		return a.String()
	case "pool":
		a, err := sc.s.AllocateFromPool(arg(0))
		if err != nil {
			return errText(err)
		}
		return a.String()
	case "static":
		if err := sc.s.AllocateStatic(addrs(0)); err != nil {
			return errText(err)
		}
		return "ok"
	case "release":
		return fmt.Sprintf("released %d", sc.s.Release(addrs(0)))
	case "mark":
		return fmt.Sprint(sc.s.Mark(addrs(0).List()[0]))
	case "free":
		return fmt.Sprint(sc.s.IsFree(addrs(0).List()[0]))
	case "usage":
		var out []string
		for _, u := range sc.s.Usage() {
			out = append(out, fmt.Sprintf("%s %s gateway=%s window=%d reserved=%d used=%d available=%d",
				u.Family, u.Prefix, u.Gateway, u.Window, u.Reserved, u.Used, u.Available))
		}
		return strings.Join(out, "\n")
	case "claim":
		return allocation(sc.claims.Allocate(ctx, sc.s, num(1), Request{Owner: owner(arg(0))}))
	case "cstatic":
		req := Request{Owner: owner(arg(0))}
		if len(args) > 2 {
			m, err := ParseMAC(args[2])
			if err != nil {
				return errText(err)
			}
			req.MAC = m
		}
		return allocation(sc.claims.AllocateStatic(ctx, sc.s, addrs(1), 0, req))
	case "clist":
		list, err := ParseAddressList(arg(2))
		if err != nil {
			return errText(err)
		}
		return allocation(sc.claims.AllocateFromList(ctx, sc.s, list, num(1), 0, Request{Owner: owner(arg(0))}))
	case "cpool":
		return allocation(sc.claims.AllocateFromPool(ctx, sc.s, arg(1), 0, Request{Owner: owner(arg(0))}))
	case "crelease":
		if err := sc.claims.Release(ctx, sc.s, addrs(1), owner(arg(0))); err != nil {
			return errText(err)
		}
		return "ok"
	case "foreign":
		sc.store.put(sc.cfg.Name, arg(1), owner(arg(0)), "")
		return "ok"
	case "claims":
		var lines []string
		for _, c := range sc.store.list() {
			lines = append(lines, fmt.Sprintf("%s %s %s mac=%s", c.Name, c.Spec.Address, c.Spec.Owner.Name, c.Spec.MAC))
		}
		if len(lines) == 0 {
			return "none"
		}
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	case "restart":
		sc.s = mustSubnet(sc.t, sc.cfg)
		sc.claims = newClaims(sc.t, sc.store)
		n, err := sc.claims.Track(sc.s, listerOf(sc.t, sc.store.list()))
		if err != nil {
			return errText(err)
		}
		return fmt.Sprintf("restored %d", n)
	}
	sc.t.Fatalf("unknown command %q", cmd)
	return ""
}

func runScenario(t *testing.T, file string) {
	golden.Run(t, file, *rewrite, func(header string) golden.Runner {
		cfg, err := parseScenarioHeader(header)
		if err != nil {
			t.Fatalf("%s: header %q: %v", file, header, err)
		}
		store := newMemStore()
		sc := &scenario{t: t, cfg: cfg, s: mustSubnet(t, cfg), store: store, claims: newClaims(t, store)}
		return sc.run
	})
}
