package startgc

import (
	"runtime/debug"
	"testing"
)

func TestRestore(t *testing.T) {
	// The package's initialization turned the collector off.
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("target while the packages initialize: %d, want -1 (off)", got)
	}
	want := percent
	if want == -1 {
		t.Fatalf("the target the program started with was recorded as off")
	}
	if got := Restore(); got != want {
		t.Fatalf("Restore returned %d, want %d", got, want)
	}
	if got := debug.SetGCPercent(want); got != want {
		t.Fatalf("target after Restore: %d, want %d", got, want)
	}
}
