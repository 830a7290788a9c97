package block

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFairShareUnderOverload saturates a one-slot gate with three flows
// of weights 1, 2 and 5 and checks that each is served in proportion to
// its weight: its reservation when the weights are reservations.
func TestFairShareUnderOverload(t *testing.T) {
	g := newGate(1)
	weights := []float64{1000, 2000, 5000}
	var served [3]atomic.Int64
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	var total atomic.Int64
	const want = 4000
	for i, w := range weights {
		f := &flow{weight: w}
		for range 4 { // several requests in flight per flow
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if err := g.enter(ctx, f, 1); err != nil {
						return
					}
					served[i].Add(1)
					if total.Add(1) >= want {
						cancel()
					}
					time.Sleep(10 * time.Microsecond) // the device works
					g.leave()
				}
			}()
		}
	}
	wg.Wait()
	sum := float64(served[0].Load() + served[1].Load() + served[2].Load())
	for i, w := range weights {
		share := float64(served[i].Load()) / sum
		ideal := w / 8000
		if share < ideal*0.8 || share > ideal*1.2 {
			t.Errorf("flow %d (weight %.0f) got %.3f of the pool, want about %.3f", i, w, share, ideal)
		}
	}
}

func TestGateNoWaitWhenIdle(t *testing.T) {
	g := newGate(4)
	f := &flow{weight: 1}
	for range 4 {
		if err := g.enter(t.Context(), f, 1); err != nil {
			t.Fatal(err)
		}
	}
	if g.queued() != 0 {
		t.Fatal("requests queued below the slot count")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := g.enter(ctx, f, 1); err == nil {
		t.Fatal("a cancelled waiter got in past a full gate")
	}
	for range 4 {
		g.leave()
	}
	if err := g.enter(t.Context(), f, 1); err != nil {
		t.Fatal(err)
	}
}

func TestBucketRate(t *testing.T) {
	b := newBucket(0, 0)
	if err := b.wait(t.Context(), 1e12); err != nil {
		t.Fatal("an unlimited bucket waits")
	}
	b.set(2000, 1) // 2000 tokens/s, burst 200
	start := time.Now()
	for range 420 {
		if err := b.wait(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
	}
	// 200 burst + 220 at 2000/s: at least 110 ms.
	if d := time.Since(start); d < 105*time.Millisecond {
		t.Fatalf("420 takes at 2000/s took %v", d)
	}
}
