package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// A Northbound that cannot be reached is tried again; any other error, or
// an end of the context, returns.
func TestRetryNBConnect(t *testing.T) {
	unreachable := fmt.Errorf("%w: ovn: connecting to [tcp:127.0.0.1:6641]: context deadline exceeded", errNBConnect)
	ctx := context.Background()
	retry := func(ctx context.Context, every time.Duration, try func() error) error {
		return retryEvery(ctx, every, klog.Background(), "Northbound not reached", isNBConnect, try)
	}

	calls, v := 0, 0
	err := retry(ctx, time.Millisecond, func() error {
		calls++
		if calls < 3 {
			return unreachable
		}
		v = 42
		return nil
	})
	if err != nil || v != 42 || calls != 3 {
		t.Errorf("got %d, %v after %d attempts; want 42 after the third", v, err, calls)
	}

	calls = 0
	bad := errors.New("--nb-cert: no such file")
	if err := retry(ctx, time.Millisecond, func() error { calls++; return bad }); !errors.Is(err, bad) || calls != 1 {
		t.Errorf("another error: %v after %d attempts; want it at once", err, calls)
	}

	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	err = retry(cctx, time.Hour, func() error {
		calls++
		cancel()
		return unreachable
	})
	if !errors.Is(err, errNBConnect) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped trying") || calls != 1 {
		t.Errorf("ended context: %v after %d attempts; want the connection error and the cancellation", err, calls)
	}
}

// TestNBStartMemory: after a connect that started the caches on accept and
// failed, the next incarnations wait for the Northbound's answer until one
// connects; a failure that started nothing changes nothing.
func TestNBStartMemory(t *testing.T) {
	var m nbStartMemory
	steps := []struct {
		do   func()
		want bool
	}{
		{func() {}, true},
		{func() { m.failed(false) }, true},
		{func() { m.failed(true) }, false},
		{func() { m.failed(false) }, false},
		{func() { m.connected() }, true},
	}
	for i, s := range steps {
		s.do()
		if got := m.startOnAccept(); got != s.want {
			t.Fatalf("step %d: startOnAccept() = %v, want %v", i, got, s.want)
		}
	}
	var none *nbStartMemory
	none.failed(true)
	none.connected()
	if !none.startOnAccept() {
		t.Error("a nil memory: startOnAccept() = false, want true")
	}
}
