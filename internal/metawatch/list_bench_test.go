package metawatch_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"github.com/shardnet/shardnet/api/shardnet/v1alpha1"
	"github.com/shardnet/shardnet/internal/metawatch"
	"github.com/shardnet/shardnet/test/harness"
)

// cpuTime is the CPU the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkListClaimsMetadata lists 3,000 claims (their spec in their
// metadata, as shardnet writes them) from a real API server in pages of
// 1,000 with client-go's metadata client and with Client, alternating,
// and reports Client's CPU and bytes allocated over client-go's
// (ours/upstream-cpu, ours/upstream-bytes): the list a restarted replica
// waits for, the API server's part left out.
func BenchmarkListClaimsMetadata(b *testing.B) {
	kube := harness.StartKube(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	claims := kube.Shardnet.ShardnetV1alpha1().AddressClaims()
	const n = 3000
	for i := range n {
		addr := fmt.Sprintf("10.%d.%d.%d", 40+i/65536, i/256%256, i%256)
		c := testClaim("list", addr, i, true)
		if _, err := claims.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	upstream, err := metadata.NewForConfig(kube.Config)
	if err != nil {
		b.Fatal(err)
	}
	ours, err := metawatch.NewClient(kube.Config, nil)
	if err != nil {
		b.Fatal(err)
	}
	gvr := v1alpha1.SchemeGroupVersion.WithResource("addressclaims")
	list := func(c metadata.Interface) {
		opts := metav1.ListOptions{Limit: 1000}
		got := 0
		for {
			l, err := c.Resource(gvr).List(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			got += len(l.Items)
			if opts.Continue = l.Continue; opts.Continue == "" {
				break
			}
		}
		if got != n {
			b.Fatalf("listed %d claims, want %d", got, n)
		}
	}
	metawatch.CompareAlternating(b, "cpu", "list", cpuTime, func() { list(upstream) }, func() { list(ours) })
}
