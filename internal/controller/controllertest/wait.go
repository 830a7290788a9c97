package controllertest

import (
	"testing"
	"time"
)

// WaitFor polls cond every millisecond until it holds. The deadline only
// keeps a broken test from hanging; it is not an assertion about time.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
