// Package qos owns Facet's quality-of-service enforcement: token buckets
// for bytes and operations, flows (tenant × class × node × stage), the
// Limiter the S3 front end consumes to shape streams and admit operations,
// SLO records, and the global bandwidth allocation algorithms (Crystal's
// Algorithm 1, max-min fair share, PSFA) with the controller that runs them.
//
// The Bucket type is deliberately free of anything S3-specific: the block
// stage (NBD throttles) and other data paths reuse it as it is.
package qos

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// BurstWindow is the least time a bucket's burst covers at its rate. Timers
// fire with about 1 ms resolution, and a burst of less than ~10 ms of
// traffic loses throughput at high rates (measured: -60% at 5 GB/s with a
// 1 MiB burst), so the burst is never smaller than rate × BurstWindow.
const BurstWindow = 10 * time.Millisecond

// Unlimited is the rate of a bucket that never delays anything.
var Unlimited = math.Inf(1)

// ErrTooLarge is returned by Reserve when n exceeds what the bucket can
// ever hold at once (its burst); split the request instead.
var ErrTooLarge = errors.New("qos: request larger than the bucket's burst")

// Burst is the burst a bucket of rate tokens/s uses when the largest single
// take is chunk: max(rate × BurstWindow, chunk).
func Burst(rate float64, chunk int64) float64 {
	return math.Max(rate*BurstWindow.Seconds(), float64(chunk))
}

// Bucket is a token bucket whose rate can change while callers wait.
//
// Tokens may go negative: a taker that cannot be served at once takes its
// tokens on credit and waits until the bucket's cumulative refill has paid
// the debt back. Waiters are therefore served in the order they arrived,
// and a rate change (SetRate) re-times every waiter from the new rate
// without losing its place or the tokens it already paid for.
//
// The zero value is not usable; use NewBucket. All methods are safe for
// concurrent use.
type Bucket struct {
	now func() time.Time

	unlimited atomic.Bool // fast path: no lock for unthrottled flows

	mu       sync.Mutex
	rate     float64 // tokens per second; +Inf when unlimited
	minBurst float64 // the largest single take the owner announced
	burst    float64
	tokens   float64   // may be negative (debt)
	filled   float64   // cumulative refill since creation: waiters' clock
	last     time.Time // time of the last refill
	changed  chan struct{}
}

// NewBucket returns a full bucket of rate tokens per second whose burst is
// Burst(rate, chunk). A rate that is not positive or is +Inf is unlimited.
func NewBucket(rate float64, chunk int64) *Bucket {
	return newBucketClock(rate, chunk, time.Now)
}

// NewBucketClock is NewBucket with a time source, for tests and simulations
// that compute waits without sleeping.
func NewBucketClock(rate float64, chunk int64, now func() time.Time) *Bucket {
	return newBucketClock(rate, chunk, now)
}

func newBucketClock(rate float64, chunk int64, now func() time.Time) *Bucket {
	b := &Bucket{now: now, minBurst: float64(max(chunk, 1)), changed: make(chan struct{}), last: now()}
	b.setRateLocked(rate)
	b.tokens = b.burst
	return b
}

// SetRate changes the rate (tokens/s) from now on. Tokens refilled so far
// are kept at the old rate; every waiter is woken to recompute its wait at
// the new rate, keeping its place in the queue.
func (b *Bucket) SetRate(rate float64) {
	b.mu.Lock()
	b.refillLocked(b.now())
	b.setRateLocked(rate)
	if b.tokens > b.burst {
		b.tokens = b.burst
	}
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

func (b *Bucket) setRateLocked(rate float64) {
	if rate <= 0 || math.IsInf(rate, 1) || math.IsNaN(rate) {
		b.rate = Unlimited
		b.burst = b.minBurst
		b.unlimited.Store(true)
		return
	}
	b.rate = rate
	b.burst = Burst(rate, int64(b.minBurst))
	b.unlimited.Store(false)
}

// Rate returns the current rate in tokens per second (+Inf when unlimited).
func (b *Bucket) Rate() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rate
}

// BurstSize returns the current burst in tokens.
func (b *Bucket) BurstSize() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.burst
}

// Tokens returns the tokens available now (negative while waiters owe).
func (b *Bucket) Tokens() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked(b.now())
	return b.tokens
}

func (b *Bucket) refillLocked(now time.Time) {
	dt := now.Sub(b.last).Seconds()
	if dt <= 0 {
		return
	}
	b.last = now
	if math.IsInf(b.rate, 1) {
		b.tokens = b.burst
		return
	}
	add := b.rate * dt
	b.filled += add
	b.tokens = math.Min(b.tokens+add, b.burst)
}

// TryTake takes n tokens if they are available now, without waiting and
// without going into debt.
func (b *Bucket) TryTake(n float64) bool {
	if b.unlimited.Load() {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refillLocked(b.now())
	if b.tokens >= n {
		b.tokens -= n
		return true
	}
	return false
}

// Reserve takes n tokens if they will be available within maxWait, and
// returns how long the caller must wait before acting (0 when available
// now). When the wait would exceed maxWait nothing is taken, ok is false
// and wait is the time after which n tokens would be available had nobody
// else taken any: an honest Retry-After.
func (b *Bucket) Reserve(n float64, maxWait time.Duration) (wait time.Duration, ok bool) {
	if b.unlimited.Load() {
		return 0, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.burst {
		return b.durationLocked(n - b.tokens), false
	}
	b.refillLocked(b.now())
	wait = b.durationLocked(n - b.tokens)
	if wait > maxWait {
		return wait, false
	}
	b.tokens -= n
	return wait, true
}

func (b *Bucket) durationLocked(deficit float64) time.Duration {
	if deficit <= 0 || math.IsInf(b.rate, 1) {
		return 0
	}
	s := deficit / b.rate
	if s > float64(math.MaxInt64/int64(time.Second)) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Ceil(s * float64(time.Second)))
}

// Wait blocks until n tokens (at most the burst) are paid, or ctx ends. On
// cancellation the tokens not yet paid for are given back.
func (b *Bucket) Wait(ctx context.Context, n float64) error {
	if b.unlimited.Load() {
		return ctx.Err()
	}
	b.mu.Lock()
	b.refillLocked(b.now())
	if n > b.burst {
		n = b.burst
	}
	b.tokens -= n
	if b.tokens >= 0 {
		b.mu.Unlock()
		return nil
	}
	// The debt is paid when the cumulative refill reaches target.
	target := b.filled - b.tokens
	for {
		if b.filled >= target || math.IsInf(b.rate, 1) {
			b.mu.Unlock()
			return nil
		}
		d := b.durationLocked(target - b.filled)
		changed := b.changed
		b.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			b.mu.Lock()
			b.refillLocked(b.now())
			if owed := target - b.filled; owed > 0 && !math.IsInf(b.rate, 1) {
				b.tokens = math.Min(b.tokens+math.Min(owed, n), b.burst)
			}
			b.mu.Unlock()
			return ctx.Err()
		case <-changed:
			t.Stop()
		case <-t.C:
		}
		b.mu.Lock()
		b.refillLocked(b.now())
	}
}

// WaitN blocks until n tokens have been paid, taking them in pieces no
// larger than the burst so a large transfer interleaves fairly with others.
// It is the call for bytes: a stream calls it before (or after) moving n
// bytes.
func (b *Bucket) WaitN(ctx context.Context, n int64) error {
	for n > 0 {
		if b.unlimited.Load() {
			return ctx.Err()
		}
		piece := n
		if burst := int64(b.BurstSize()); piece > burst {
			piece = max(burst, 1)
		}
		if err := b.Wait(ctx, float64(piece)); err != nil {
			return err
		}
		n -= piece
	}
	return nil
}
