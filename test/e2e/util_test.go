package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

type corev1Pod = corev1.Pod

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// waitFor polls check every 250ms until it passes or ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, check func() error) {
	t.Helper()
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
