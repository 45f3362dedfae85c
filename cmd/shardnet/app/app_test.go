package app

import (
	"bytes"
	"flag"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestMainExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string // in stdout or stderr
	}{
		{nil, 2, "usage: shardnet"},
		{[]string{"version"}, 0, "shardnet " + Version},
		{[]string{"help"}, 0, "controller"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		// The demo is a binary of its own (cmd/shardnet-demo).
		{[]string{"demo"}, 2, `unknown command "demo"`},
		{[]string{"controller", "-no-such-flag"}, 2, "no-such-flag"},
		// Every problem is reported at once, before anything connects.
		{[]string{"controller", "-identity", "r0", "-shards", "0", "-nb-endpoints", "http://x"}, 2, "--shards 0"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.out) {
			t.Errorf("Main(%q) = %d, output %q; want %d and %q", tc.args, code, stdout.String()+stderr.String(), tc.code, tc.out)
		}
	}
}

// TestVersionUnstamped: a binary built without the Makefile's -X flags
// says so.
func TestVersionUnstamped(t *testing.T) {
	if Version != "dev" || Commit != "unknown" || BuildDate != "unknown" {
		t.Skipf("the test binary is stamped: %s %s %s", Version, Commit, BuildDate)
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("version = %d, %s", code, stderr.String())
	}
	for _, want := range []string{"shardnet dev\n", "commit:     unknown\n", "build date: unknown\n", "go:         " + runtime.Version(), "not stamped"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("version printed\n%s\nwithout %q", stdout.String(), want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	base := func() Options {
		var o Options
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o.bind(fs)
		if err := fs.Parse([]string{"-identity", "shardnet-0", "-nb-endpoints", "tcp:127.0.0.1:6641, unix:/run/nb.sock"}); err != nil {
			t.Fatal(err)
		}
		return o
	}
	ok := base()
	if err := ok.validate(); err != nil {
		t.Fatalf("the defaults with an identity and endpoints do not validate: %v", err)
	}
	if got := ok.endpoints(); len(got) != 2 || got[1] != "unix:/run/nb.sock" {
		t.Fatalf("endpoints = %q", got)
	}
	if ok.usesSSL() {
		t.Error("usesSSL is true without an ssl: endpoint")
	}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want []string
	}{
		{"no identity", func(o *Options) { o.Identity = "" }, []string{"--identity is required"}},
		{"no endpoints", func(o *Options) { o.NBEndpoints = " , " }, []string{"--nb-endpoints is required"}},
		{"bad scheme", func(o *Options) { o.NBEndpoints = "http://nb:6641" }, []string{`"http://nb:6641" is not tcp:`}},
		{"ssl without certificates", func(o *Options) { o.NBEndpoints = "ssl:nb:6641" }, []string{"needs --nb-cert"}},
		{"shards", func(o *Options) { o.Shards = 5000 }, []string{"--shards 5000"}},
		{"workers", func(o *Options) { o.WorkersPerShard = 0 }, []string{"--workers-per-shard 0"}},
		{"lease order", func(o *Options) { o.RenewDeadline = o.LeaseDuration }, []string{"--lease-duration"}},
		{"batch", func(o *Options) { o.BatchMaxOps = 0 }, []string{"--batch-max-ops 0"}},
		{"intervals", func(o *Options) { o.StatusInterval = 0 }, []string{"--status-interval must be positive"}},
		{"memory limit", func(o *Options) { o.MemoryLimit = "lots" }, []string{`--memory-limit "lots"`}},
		{"negative memory limit", func(o *Options) { o.MemoryLimit = "-1Gi" }, []string{"want a positive quantity"}},
		{"negative collector target", func(o *Options) { o.GCPercent = -1 }, []string{"--gc-percent -1: want a positive percentage"}},
		{"negative burst collector target", func(o *Options) { o.BurstGCPercent = -5 }, []string{"--burst-gc-percent -5: want a positive percentage"}},
		{"several at once", func(o *Options) { o.Identity, o.Shards, o.GCInterval = "", 0, -time.Second },
			[]string{"--identity", "--shards 0", "--gc-interval"}},
	} {
		o := base()
		tc.edit(&o)
		err := o.validate()
		if err == nil {
			t.Errorf("%s: validate passed", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
	ssl := base()
	ssl.NBEndpoints = "tcp:a:1,ssl:b:2"
	if !ssl.usesSSL() {
		t.Error("usesSSL is false with an ssl: endpoint")
	}
}

// TestEnableEIPSNATFlag: --enable-eip-snat defaults to true, as kube-ovn's,
// and an Options literal's zero value means the same.
func TestEnableEIPSNATFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		disable bool
	}{
		{nil, false},
		{[]string{"-enable-eip-snat=false"}, true},
		{[]string{"-enable-eip-snat"}, false},
	} {
		var o Options
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o.bind(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if o.DisableEIPSNAT != tc.disable {
			t.Errorf("%v: DisableEIPSNAT = %v, want %v", tc.args, o.DisableEIPSNAT, tc.disable)
		}
		if def := fs.Lookup("enable-eip-snat").DefValue; def != "true" {
			t.Errorf("default shown as %q, want true", def)
		}
	}
}
