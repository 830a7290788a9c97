package cli

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// printfer is go-redis's logger.
type printfer interface {
	Printf(ctx context.Context, format string, v ...any)
}

// throttledLog passes at most one message per period to next and counts
// the others in the next one it passes: go-redis reports every failed dial
// of its pool, many a second while Redis is down, and an outage is to be
// logged once (the gateway's own "metadata store unreachable"), not per
// request.
type throttledLog struct {
	next   printfer
	period time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (t *throttledLog) Printf(ctx context.Context, format string, v ...any) {
	t.mu.Lock()
	now := time.Now()
	if !t.last.IsZero() && now.Sub(t.last) < t.period {
		t.suppressed++
		t.mu.Unlock()
		return
	}
	n := t.suppressed
	t.last, t.suppressed = now, 0
	t.mu.Unlock()
	if n > 0 {
		format += fmt.Sprintf(" (and %d similar messages in the last %v)", n, t.period)
	}
	t.next.Printf(ctx, format, v...)
}
