package wasm

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// BudgetConfig bounds the instances a Runtime runs at once, node-wide.
// The zero value (Instances 0) admits every instance at once, as a
// runtime without a budget.
type BudgetConfig struct {
	// Instances is how many instances run at once. A spinning instance
	// holds a core until its deadline: DefaultInstances leaves the other
	// requests at least one core.
	Instances int
	// Memory is the sum of the linear memory instances may reserve: each
	// reserves its cap (Config.MemoryPages x 64 KiB, or the module's
	// declared maximum when smaller) for its whole life. 0 means
	// DefaultBudgetMemory.
	Memory int64
	// Wait is how long a request waits for a slot before it is refused
	// (filter.ErrBusy: 503 SlowDown); 0 means DefaultBudgetWait. Slots
	// are not taken back from running instances, so a wait shorter than
	// an instance's deadline may end before the next slot frees.
	Wait time.Duration
	// Queue is how many requests of one tenant may wait at once; more are
	// refused at once. 0 means DefaultBudgetQueue.
	Queue int
}

// Defaults of a server's budget (the --wasm-* flags).
const (
	DefaultBudgetMemory = 512 << 20
	// DefaultBudgetWait outlasts DefaultLimits' 5 s deadline: a request
	// that is next in line gets the slot of an instance that runs to it.
	DefaultBudgetWait = 6 * time.Second
	// DefaultBudgetQueue lets a tenant's burst of concurrent requests
	// (64 at once through one filter, in the e2e tests) wait their turn
	// rather than be refused; a waiter costs a goroutine.
	DefaultBudgetQueue = 256
)

// DefaultInstances is GOMAXPROCS-1, at least 1: on a 2-core node one
// instance at a time, so that spinning filters leave the other core to
// every other request.
func DefaultInstances() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// The outcomes of a request for a slot (facet_wasm_queue_waits_total).
const (
	AdmitImmediate = "immediate" // a slot was free and nobody waited
	AdmitQueued    = "queued"    // granted after waiting its turn
	AdmitTimeout   = "timeout"   // waited Wait: refused
	AdmitFull      = "full"      // its tenant's queue was full: refused
	AdmitCanceled  = "canceled"  // the request ended while it waited
	AdmitJoined    = "joined"    // a later filter of a request that holds a slot
)

// budget admits instances fairly between tenants. While nobody waits, an
// instance that fits starts at once. Otherwise requests queue per tenant
// (FIFO), and each freed slot goes to the waiting tenant holding the
// fewest slots, among equals the one served longest ago, then the first
// queued: a tenant over its share (slots over tenants wanting them) waits
// while others wait, a tenant whose instance just ended does not take its
// slot back from a tenant waiting behind it, and a tenant alone may use
// every slot.
type budget struct {
	cfg     BudgetConfig
	onAdmit func(tenant, outcome string)

	mu      sync.Mutex
	running int
	mem     int64
	held    map[string]int
	// last is when each tenant holding or waiting was last granted a
	// slot, in grants (seq).
	last    map[string]uint64
	seq     uint64
	queues  map[string][]*waiter
	order   []string // tenants with waiters, next turn first
	waiting int
}

type waiter struct {
	tenant  string
	mem     int64
	ready   chan struct{}
	granted bool
}

func newBudget(cfg BudgetConfig, onAdmit func(tenant, outcome string)) *budget {
	if cfg.Memory <= 0 {
		cfg.Memory = DefaultBudgetMemory
	}
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultBudgetWait
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultBudgetQueue
	}
	if onAdmit == nil {
		onAdmit = func(string, string) {}
	}
	return &budget{cfg: cfg, onAdmit: onAdmit, held: map[string]int{}, last: map[string]uint64{}, queues: map[string][]*waiter{}}
}

// busyError is a refusal: it wraps ErrBusy, hence filter.ErrBusy.
func (b *budget) busyError(why string) error {
	return fmt.Errorf("%w: %s", ErrBusy, why)
}

// acquire takes a slot and mem bytes for tenant, waiting its turn for at
// most cfg.Wait, until ctx ends or done is closed (the runtime closing).
// It returns ErrBusy (wrapped) when refused, else why it stopped waiting.
func (b *budget) acquire(ctx context.Context, done <-chan struct{}, tenant string, mem int64) error {
	if mem > b.cfg.Memory {
		b.onAdmit(tenant, AdmitFull)
		return b.busyError(fmt.Sprintf("an instance reserves %d MiB, over the node's %d MiB", mem>>20, b.cfg.Memory>>20))
	}
	b.mu.Lock()
	if b.waiting == 0 && b.fits(mem) {
		b.grant(tenant, mem)
		b.mu.Unlock()
		b.onAdmit(tenant, AdmitImmediate)
		return nil
	}
	q := b.queues[tenant]
	if len(q) >= b.cfg.Queue {
		b.mu.Unlock()
		b.onAdmit(tenant, AdmitFull)
		return b.busyError(fmt.Sprintf("%d requests of this tenant already wait for one of the node's %d instances", len(q), b.cfg.Instances))
	}
	w := &waiter{tenant: tenant, mem: mem, ready: make(chan struct{})}
	if len(q) == 0 {
		b.order = append(b.order, tenant)
	}
	b.queues[tenant] = append(q, w)
	b.waiting++
	b.dispatch()
	b.mu.Unlock()

	t := time.NewTimer(b.cfg.Wait)
	defer t.Stop()
	var err error
	outcome := AdmitTimeout
	select {
	case <-w.ready:
		b.onAdmit(tenant, AdmitQueued)
		return nil
	case <-t.C:
		err = b.busyError(fmt.Sprintf("waited %v for one of the node's %d instances (%d MiB of memory)", b.cfg.Wait, b.cfg.Instances, b.cfg.Memory>>20))
	case <-ctx.Done():
		err, outcome = context.Cause(ctx), AdmitCanceled
	case <-done:
		err, outcome = errRuntimeClosed, AdmitCanceled
	}
	b.mu.Lock()
	if w.granted {
		// Granted as the wait ended: the slot is the request's.
		b.mu.Unlock()
		b.onAdmit(tenant, AdmitQueued)
		return nil
	}
	b.remove(w)
	// The head of a queue leaving may let a smaller instance behind it in.
	b.dispatch()
	b.mu.Unlock()
	b.onAdmit(tenant, outcome)
	return err
}

// reserve takes mem bytes without a slot and without waiting: a later
// filter of a request that holds a slot. It never waits, so a request
// never waits while holding.
func (b *budget) reserve(mem int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem+mem > b.cfg.Memory {
		return b.busyError(fmt.Sprintf("the node's %d MiB of instance memory are reserved", b.cfg.Memory>>20))
	}
	b.mem += mem
	return nil
}

// unreserve returns what reserve took.
func (b *budget) unreserve(mem int64) {
	b.mu.Lock()
	b.mem -= mem
	b.dispatch()
	b.mu.Unlock()
}

// release returns a slot and its memory.
func (b *budget) release(tenant string, mem int64) {
	b.mu.Lock()
	b.running--
	b.mem -= mem
	if b.held[tenant]--; b.held[tenant] <= 0 {
		delete(b.held, tenant)
	}
	b.dispatch()
	b.forget(tenant)
	b.mu.Unlock()
}

func (b *budget) fits(mem int64) bool {
	return b.running < b.cfg.Instances && b.mem+mem <= b.cfg.Memory
}

func (b *budget) grant(tenant string, mem int64) {
	b.running++
	b.mem += mem
	b.held[tenant]++
	b.seq++
	b.last[tenant] = b.seq
}

// forget drops what the budget keeps of a tenant that neither holds nor
// waits, so that its maps hold only active tenants.
func (b *budget) forget(tenant string) {
	if b.held[tenant] == 0 && len(b.queues[tenant]) == 0 {
		delete(b.last, tenant)
	}
}

// dispatch grants slots to waiters while they fit: the head of the queue
// of the waiting tenant holding the fewest slots, among equals the one
// served longest ago, then the earliest in turn. It stops at a head that does not fit rather than letting
// smaller instances overtake it forever.
func (b *budget) dispatch() {
	for b.waiting > 0 {
		best := 0
		for i, t := range b.order {
			bt := b.order[best]
			if b.held[t] < b.held[bt] || b.held[t] == b.held[bt] && b.last[t] < b.last[bt] {
				best = i
			}
		}
		t := b.order[best]
		q := b.queues[t]
		w := q[0]
		if !b.fits(w.mem) {
			return
		}
		b.grant(t, w.mem)
		w.granted = true
		close(w.ready)
		b.waiting--
		b.order = append(b.order[:best], b.order[best+1:]...)
		if len(q) == 1 {
			delete(b.queues, t)
		} else {
			b.queues[t] = q[1:]
			b.order = append(b.order, t) // its next turn comes after the others'
		}
	}
}

// remove takes a waiter that gave up out of its queue.
func (b *budget) remove(w *waiter) {
	q := b.queues[w.tenant]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	b.waiting--
	if len(q) > 0 {
		b.queues[w.tenant] = q
		return
	}
	delete(b.queues, w.tenant)
	for i, t := range b.order {
		if t == w.tenant {
			b.order = append(b.order[:i], b.order[i+1:]...)
			break
		}
	}
	b.forget(w.tenant)
}

// BudgetStats is what a budget holds now.
type BudgetStats struct {
	Running  int
	Reserved int64
	Waiting  int
}

func (b *budget) stats() BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BudgetStats{Running: b.running, Reserved: b.mem, Waiting: b.waiting}
}
