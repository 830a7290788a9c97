// Package controllertest provides a manual clock for testing controllers
// without sleeping.
package controllertest

import (
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/controller"
)

// Clock is a controller.Clock that moves only when told to.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []*ticker
}

var _ controller.Clock = (*Clock)(nil)

// NewClock returns a clock set to start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTicker returns a ticker that fires when Advance passes its period.
func (c *Clock) NewTicker(d time.Duration) controller.Ticker {
	if d <= 0 {
		panic("controllertest: non-positive ticker period")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &ticker{c: c, period: d, next: c.now.Add(d), ch: make(chan time.Time, 1)}
	c.tickers = append(c.tickers, t)
	return t
}

// Tickers counts the running tickers: a test waits for a controller to
// have made its ticker before advancing the clock.
func (c *Clock) Tickers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tickers)
}

// Advance moves the clock by d and fires the tickers whose time came; like
// time.Ticker, a tick a receiver has not taken yet is not doubled.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.tickers {
		fired := false
		for !t.next.After(c.now) {
			t.next = t.next.Add(t.period)
			fired = true
		}
		if fired {
			select {
			case t.ch <- c.now:
			default:
			}
		}
	}
}

type ticker struct {
	c      *Clock
	period time.Duration
	next   time.Time
	ch     chan time.Time
}

func (t *ticker) C() <-chan time.Time { return t.ch }

func (t *ticker) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.tickers {
		if x == t {
			t.c.tickers = append(t.c.tickers[:i], t.c.tickers[i+1:]...)
			return
		}
	}
}
