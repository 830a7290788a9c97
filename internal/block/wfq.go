package block

import (
	"container/heap"
	"context"
	"sync"
)

// gate is a pool's weighted fair-share queue (seeds/002 §4.2). At most
// slots I/Os run on the pool at once; beyond that, requests wait and are
// let in by smallest virtual finish time, where a volume's finish time
// advances by cost/weight per request (start-time fair queuing). Under
// overload each volume therefore gets the pool in proportion to its
// weight (its reservation), so at least its reservation when the pool
// can give the sum of them; with room to spare nobody waits.
type gate struct {
	mu      sync.Mutex
	slots   int
	busy    int
	vclock  float64
	last    map[*flow]float64
	waiting waitHeap
	seq     uint64
}

// flow is one volume's place in a gate.
type flow struct {
	weight float64
}

// costFn turns a piece's bytes into the pool's unit of work: bytes on a
// sequential pool, 4 KiB operations on a random one.
type costFn func(n int64) float64

type waiter struct {
	finish float64
	seq    uint64
	ready  chan struct{}
	index  int
}

type waitHeap []*waiter

func (h waitHeap) Len() int { return len(h) }
func (h waitHeap) Less(i, j int) bool {
	if h[i].finish != h[j].finish {
		return h[i].finish < h[j].finish
	}
	return h[i].seq < h[j].seq
}
func (h waitHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].index, h[j].index = i, j }
func (h *waitHeap) Push(x any)   { w := x.(*waiter); w.index = len(*h); *h = append(*h, w) }
func (h *waitHeap) Pop() any     { old := *h; w := old[len(old)-1]; *h = old[:len(old)-1]; return w }
func newGate(slots int) *gate    { return &gate{slots: max(slots, 1), last: map[*flow]float64{}} }
func (g *gate) forget(f *flow)   { g.mu.Lock(); delete(g.last, f); g.mu.Unlock() }
func (g *gate) leaveLocked()     { g.busy-- }
func (g *gate) queued() int      { g.mu.Lock(); defer g.mu.Unlock(); return len(g.waiting) }
func (g *gate) setSlots(n int)   { g.mu.Lock(); g.slots = max(n, 1); g.mu.Unlock() }
func (g *gate) tag(f *flow, c float64) float64 {
	start := max(g.vclock, g.last[f])
	fin := start + c/max(f.weight, 1e-9)
	g.last[f] = fin
	return fin
}

// flowGate binds a flow to a gate for one volume member, with the
// gate's pool's unit of work.
type flowGate struct {
	g    *gate
	f    *flow
	cost costFn
}

func (fg flowGate) enter(ctx context.Context, cost float64) error { return fg.g.enter(ctx, fg.f, cost) }
func (fg flowGate) leave()                                        { fg.g.leave() }

func (g *gate) enter(ctx context.Context, f *flow, cost float64) error {
	g.mu.Lock()
	fin := g.tag(f, cost)
	if g.busy < g.slots && len(g.waiting) == 0 {
		g.busy++
		g.vclock = max(g.vclock, fin-cost/max(f.weight, 1e-9))
		g.mu.Unlock()
		return nil
	}
	g.seq++
	w := &waiter{finish: fin, seq: g.seq, ready: make(chan struct{})}
	heap.Push(&g.waiting, w)
	g.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		if w.index >= 0 && w.index < len(g.waiting) && g.waiting[w.index] == w {
			heap.Remove(&g.waiting, w.index)
			g.mu.Unlock()
			return ctx.Err()
		}
		g.mu.Unlock()
		<-w.ready // it was let in as we gave up: hand the slot back
		g.leave()
		return ctx.Err()
	}
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy--
	for g.busy < g.slots && len(g.waiting) > 0 {
		w := heap.Pop(&g.waiting).(*waiter)
		w.index = -1
		g.vclock = max(g.vclock, w.finish)
		g.busy++
		close(w.ready)
	}
}
