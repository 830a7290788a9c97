package controller

import (
	"sync"
	"time"
)

// LeaseGuard is the Lease a lease loop keeps: granted with a term and a
// deadline on each renewal, revoked before the loop stops the
// controllers. The deadline makes the guard lapse by itself while the
// loop is stuck renewing against a store that does not answer, so a
// deposed holder stops publishing even before it notices. Safe for
// concurrent use.
type LeaseGuard struct {
	now func() time.Time

	mu    sync.Mutex
	term  uint64
	until time.Time
}

// NewLeaseGuard returns a revoked guard; now is time.Now when nil.
func NewLeaseGuard(now func() time.Time) *LeaseGuard {
	if now == nil {
		now = time.Now
	}
	return &LeaseGuard{now: now}
}

// Grant records that the lease is held under term until until.
func (g *LeaseGuard) Grant(term uint64, until time.Time) {
	g.mu.Lock()
	g.term, g.until = term, until
	g.mu.Unlock()
}

// Revoke records that the lease is not held.
func (g *LeaseGuard) Revoke() {
	g.mu.Lock()
	g.term, g.until = 0, time.Time{}
	g.mu.Unlock()
}

// Held implements Lease.
func (g *LeaseGuard) Held() (uint64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.term == 0 || !g.now().Before(g.until) {
		return 0, false
	}
	return g.term, true
}
