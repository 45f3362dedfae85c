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

	calls := 0
	v, err := retryNBConnect(ctx, time.Millisecond, klog.Background(), func() (int, error) {
		calls++
		if calls < 3 {
			return 0, unreachable
		}
		return 42, nil
	})
	if err != nil || v != 42 || calls != 3 {
		t.Errorf("got %d, %v after %d attempts; want 42 after the third", v, err, calls)
	}

	calls = 0
	bad := errors.New("--nb-cert: no such file")
	if _, err := retryNBConnect(ctx, time.Millisecond, klog.Background(), func() (int, error) { calls++; return 0, bad }); !errors.Is(err, bad) || calls != 1 {
		t.Errorf("another error: %v after %d attempts; want it at once", err, calls)
	}

	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	_, err = retryNBConnect(cctx, time.Hour, klog.Background(), func() (int, error) {
		calls++
		cancel()
		return 0, unreachable
	})
	if !errors.Is(err, errNBConnect) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped trying") || calls != 1 {
		t.Errorf("ended context: %v after %d attempts; want the connection error and the cancellation", err, calls)
	}
}
