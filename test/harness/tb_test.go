package harness

import "testing"

var _ TB = (testing.TB)(nil)
