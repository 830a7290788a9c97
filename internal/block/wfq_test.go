package block

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/block/nbd"
	"github.com/facet-sds/facet/internal/meta"
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
	b := newBucket(0, 0, DefaultBurstWindow)
	if err := b.wait(t.Context(), 1e12); err != nil {
		t.Fatal("an unlimited bucket waits")
	}
	b.set(2000, 1) // 2000 tokens/s; set from unlimited, it starts empty
	start := time.Now()
	for range 420 {
		if err := b.wait(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
	}
	// No burst at the start: 420 at 2000/s take at least 210 ms.
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("420 takes at 2000/s took %v", d)
	}
}

// A stall of the process (not scheduled for half a second) while takers
// were in debt must not cost the volume its rate: the tokens of the stall,
// up to one window, are there when it runs again.
func TestBucketStallKeepsTokens(t *testing.T) {
	for _, tc := range []struct {
		window time.Duration
		want   float64
	}{{DefaultBurstWindow, 490}, {100 * time.Millisecond, 100}} {
		b := newBucket(0, 0, tc.window)
		b.set(1000, 1)
		b.mu.Lock()
		b.tokens = -10 // ten takers asleep in debt
		b.last = time.Now().Add(-500 * time.Millisecond)
		b.refill(time.Now())
		got := b.tokens
		b.mu.Unlock()
		if got < tc.want-5 || got > tc.want+5 {
			t.Errorf("window %v: %.0f tokens after a 500 ms stall at 1000/s, want %.0f", tc.window, got, tc.want)
		}
		if lost := b.unused(); tc.want < 490 && (lost < 385 || lost > 395) {
			t.Errorf("window %v: %.0f tokens reported unused, want 390", tc.window, lost)
		}
	}
}

// A cold volume may be striped over pools of different usage types; each
// member's I/O is charged to its pool's queue in that pool's unit (bytes
// on a sequential pool, 4 KiB operations on a random one), the unit its
// weights are in.
func TestStripeCostPerPool(t *testing.T) {
	m, _ := testManager(t, Config{})
	ctx := t.Context()
	for _, p := range []meta.Pool{
		{Name: "seq", Dir: t.TempDir(), Capacity: 1 << 30, SeqBW: 100e6, Usage: ClassSequential},
		{Name: "rnd", Dir: t.TempDir(), Capacity: 1 << 30, RandIOPS: 1000, Usage: ClassRandom},
	} {
		if _, err := m.CreatePool(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	v, err := m.CreateVolume(ctx, meta.Volume{Name: "cv", Tenant: "acme", Size: 2 << 30, Class: ClassCold})
	if err != nil || len(v.Extents) != 2 {
		t.Fatalf("cold volume: %+v %v, want a stripe over seq and rnd", v.Extents, err)
	}
	d, _, err := m.Open(ctx, "cv", nbd.Peer{Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i, e := range v.Extents {
		want := map[string]float64{"seq": 1 << 20, "rnd": 256}[e.Pool]
		if got := d.(*device).v.back.gates[i].cost(1 << 20); got != want {
			t.Errorf("member on %s: 1 MiB costs %v, want %v", e.Pool, got, want)
		}
	}
}
