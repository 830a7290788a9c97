package qos

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestBurst(t *testing.T) {
	if got := Burst(100e6, 64<<10); got != 1e6 {
		t.Fatalf("Burst(100MB/s, 64KiB) = %v, want rate×10ms = 1e6", got)
	}
	if got := Burst(1e6, 64<<10); got != 64<<10 {
		t.Fatalf("Burst(1MB/s, 64KiB) = %v, want the chunk", got)
	}
}

func TestReserveComputesWaitAndRetryAfter(t *testing.T) {
	c := newFakeClock()
	b := NewBucketClock(10, 1, c.Now) // 10 ops/s, burst max(0.1, 1) = 1
	if w, ok := b.Reserve(1, 0); !ok || w != 0 {
		t.Fatalf("first op: wait %v ok %v, want 0 true (full bucket)", w, ok)
	}
	// Empty now: the next op needs 100 ms.
	if w, ok := b.Reserve(1, 50*time.Millisecond); ok || w != 100*time.Millisecond {
		t.Fatalf("over limit with a 50ms queue: wait %v ok %v, want 100ms false", w, ok)
	}
	if w, ok := b.Reserve(1, 200*time.Millisecond); !ok || w != 100*time.Millisecond {
		t.Fatalf("queued: wait %v ok %v, want 100ms true", w, ok)
	}
	// The queued op took its token on credit: the next one waits 200 ms.
	if w, ok := b.Reserve(1, 0); ok || w != 200*time.Millisecond {
		t.Fatalf("behind a queued op: wait %v ok %v, want 200ms false", w, ok)
	}
	c.Advance(300 * time.Millisecond)
	if w, ok := b.Reserve(1, 0); !ok || w != 0 {
		t.Fatalf("after refill: wait %v ok %v", w, ok)
	}
	if _, ok := b.Reserve(5, time.Hour); ok {
		t.Fatal("a take larger than the burst was accepted")
	}
}

func TestTryTakeAndRefillCap(t *testing.T) {
	c := newFakeClock()
	b := NewBucketClock(1000, 100, c.Now) // burst max(10, 100) = 100
	if !b.TryTake(100) || b.TryTake(1) {
		t.Fatal("full bucket of 100 should give exactly 100")
	}
	c.Advance(time.Hour)
	if got := b.Tokens(); got != 100 {
		t.Fatalf("tokens after an idle hour = %v, want the burst 100", got)
	}
}

func TestSetRateKeepsRefilledTokens(t *testing.T) {
	c := newFakeClock()
	b := NewBucketClock(100, 1, c.Now) // burst 1
	b.TryTake(1)
	c.Advance(5 * time.Millisecond) // 0.5 token at the old rate
	b.SetRate(1000)                 // burst 10
	if got := b.Tokens(); math.Abs(got-0.5) > 1e-9 {
		t.Fatalf("tokens after SetRate = %v, want 0.5 refilled at the old rate", got)
	}
	if w, _ := b.Reserve(1, time.Hour); w != 500*time.Microsecond {
		t.Fatalf("wait at the new rate = %v, want 0.5ms", w)
	}
}

func TestUnlimited(t *testing.T) {
	for _, r := range []float64{0, -1, math.Inf(1), math.NaN()} {
		b := NewBucket(r, 1)
		if !b.TryTake(1e18) {
			t.Fatalf("rate %v: unlimited bucket refused", r)
		}
		if err := b.WaitN(context.Background(), 1<<40); err != nil {
			t.Fatal(err)
		}
	}
}

// A rate change wakes a waiter and re-times it: a waiter facing an hour at
// 1 token/s finishes once the rate is raised, without being failed.
func TestSetRateReleasesWaiter(t *testing.T) {
	b := NewBucket(1, 1)
	b.TryTake(1)
	done := make(chan error, 1)
	go func() { done <- b.WaitN(context.Background(), 1) }()
	for b.Tokens() > -0.5 { // wait until the waiter has taken on credit
		time.Sleep(time.Millisecond)
	}
	b.SetRate(1e9)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestWaitCancelGivesTokensBack(t *testing.T) {
	c := newFakeClock()
	b := NewBucketClock(1, 1, c.Now)
	b.TryTake(1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Wait(ctx, 1) }()
	for b.Tokens() > -0.5 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := b.Tokens(); got != 0 {
		t.Fatalf("tokens after cancel = %v, want the debt returned (0)", got)
	}
}

// Several streams through one bucket never go faster than its rate (a lower
// bound on elapsed time: a slow machine only makes it longer).
func TestWaitNNeverExceedsRate(t *testing.T) {
	const rate = 2e6 // 2 MB/s, burst 64 KiB
	b := NewBucket(rate, 64<<10)
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 8 {
				if err := b.WaitN(context.Background(), 32<<10); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	total := 4 * 8 * float64(32<<10)
	minElapsed := time.Duration((total - float64(64<<10)) / rate * float64(time.Second))
	if el := time.Since(start); el < minElapsed {
		t.Fatalf("%v bytes in %v, faster than %v B/s allows (%v)", total, el, rate, minElapsed)
	}
}

func BenchmarkWaitNUnlimited(b *testing.B) {
	bk := NewBucket(Unlimited, 1)
	ctx := context.Background()
	for b.Loop() {
		_ = bk.WaitN(ctx, 32<<10)
	}
}

func BenchmarkWaitNHighRate(b *testing.B) {
	bk := NewBucket(1e15, 32<<10)
	ctx := context.Background()
	for b.Loop() {
		_ = bk.WaitN(ctx, 32<<10)
	}
}
