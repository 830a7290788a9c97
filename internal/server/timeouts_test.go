package server

import (
	"testing"
	"time"
)

// The body deadline's budget: a read may wait the whole timeout while the
// body keeps above the minimum rate, less as it falls behind, nothing once
// it is behind by the grace.
func TestBodyDeadlineBudget(t *testing.T) {
	lt := listenerTimeouts{body: 10 * time.Second, minRate: 100}
	for _, tc := range []struct {
		n      int64
		waited time.Duration
		want   time.Duration
	}{
		{0, 0, 10 * time.Second},                  // the grace
		{1000, 5 * time.Second, 10 * time.Second}, // 1000 B in 5 s: ahead of 100 B/s
		{100, 9 * time.Second, 2 * time.Second},   // 10 s + 1 s earned, 9 s spent
		{100, 11 * time.Second, 0},                // behind by the grace
		{1 << 20, time.Hour, 10 * time.Second},    // large and slow but above the rate
	} {
		b := &deadlineBody{t: lt, n: tc.n, waited: tc.waited}
		if got := b.budget(); got != tc.want {
			t.Errorf("n=%d waited=%v: budget %v, want %v", tc.n, tc.waited, got, tc.want)
		}
	}
	// No minimum rate: every read may wait the timeout.
	b := &deadlineBody{t: listenerTimeouts{body: 10 * time.Second}, waited: time.Hour}
	if got := b.budget(); got != 10*time.Second {
		t.Errorf("without a minimum rate: %v", got)
	}
}

// Defaults apply to zero options; negative ones switch a limit off.
func TestListenerTimeoutDefaults(t *testing.T) {
	if got := (Options{}).timeouts(); got != (listenerTimeouts{idle: defaultIdleTimeout, body: defaultBodyReadTimeout, minRate: defaultBodyMinRate}) {
		t.Errorf("defaults: %+v", got)
	}
	if got := (Options{IdleTimeout: -1, BodyReadTimeout: -1, BodyMinRate: -1}).timeouts(); got != (listenerTimeouts{}) {
		t.Errorf("switched off: %+v", got)
	}
}
