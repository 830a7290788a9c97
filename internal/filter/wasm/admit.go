package wasm

import (
	"context"
	"time"

	"github.com/facet-sds/facet/internal/filter"
)

// ticket is a request's slot in the budget, shared by the instances of
// its pipeline (filter.Scope): the slot returns when the last of them
// ends.
type ticket struct {
	refs   int
	tenant string
	mem    int64
}

// admit takes room for one instance of tenant reserving mem bytes and
// returns what gives it back. The first instance of a request waits for
// a slot; the request's later ones join its slot and only reserve their
// memory, without waiting (a request never waits while it holds).
func (r *Runtime) admit(ctx context.Context, tenant string, mem int64) (func(), error) {
	b := r.budget
	if b == nil {
		return func() {}, nil
	}
	if tenant == "" {
		tenant = "-"
	}
	sc := filter.ScopeOf(ctx)
	if sc != nil {
		var (
			joined *ticket
			err    error
		)
		sc.Lock(r, func(v any) any {
			if v == nil {
				return nil
			}
			joined = v.(*ticket)
			if err = b.reserve(mem); err == nil {
				joined.refs++
			}
			return joined
		})
		if joined != nil {
			if err != nil {
				b.onAdmit(tenant, AdmitFull)
				return nil, err
			}
			b.onAdmit(tenant, AdmitJoined)
			return func() { b.unreserve(mem); r.leave(sc, joined) }, nil
		}
	}
	if err := b.acquire(ctx, r.life.Done(), tenant, mem); err != nil {
		return nil, err
	}
	own := func() { b.release(tenant, mem) }
	if sc == nil {
		return own, nil
	}
	t := &ticket{refs: 1, tenant: tenant, mem: mem}
	stored := false
	sc.Lock(r, func(v any) any {
		if v != nil {
			return v // another filter of the request took a slot meanwhile
		}
		stored = true
		return t
	})
	if !stored {
		return own, nil
	}
	return func() { r.leave(sc, t) }, nil
}

// leave ends one instance holding t; the last one returns the slot.
func (r *Runtime) leave(sc *filter.Scope, t *ticket) {
	last := false
	sc.Lock(r, func(v any) any {
		if t.refs--; t.refs > 0 {
			return v
		}
		last = true
		if v == any(t) {
			return nil
		}
		return v
	})
	if last {
		r.budget.release(t.tenant, t.mem)
	}
}

// instClock measures an instance's CPU time: its thread's when the
// platform tells (threadCPU), else its wall time.
type instClock struct {
	on     bool
	thread bool
	cpu0   time.Duration
	wall0  time.Time
}

// startClock starts measuring the instance about to run on the calling
// goroutine; a runtime nobody asked CPU times of measures nothing.
func (r *Runtime) startClock() instClock {
	if r.onCPU == nil {
		return instClock{}
	}
	c := instClock{on: true, wall0: time.Now()}
	c.cpu0, c.thread = lockThreadCPU()
	return c
}

// charge reports the instance's time to its tenant.
func (r *Runtime) charge(c instClock, tenant, name string) {
	if !c.on {
		return
	}
	d := time.Since(c.wall0)
	if c.thread {
		d = unlockThreadCPU() - c.cpu0
	}
	if tenant == "" {
		tenant = "-"
	}
	r.onCPU(tenant, name, d)
}
