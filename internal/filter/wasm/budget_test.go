package wasm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/filter"
)

// outcomes records a budget's admissions.
type outcomes struct {
	mu  sync.Mutex
	got []string
}

func (o *outcomes) add(tenant, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, tenant+":"+outcome)
}

func (o *outcomes) count(s string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, g := range o.got {
		if g == s {
			n++
		}
	}
	return n
}

// waitQueued waits until the budget holds n waiters: what the test does
// next depends on who waits, not on time.
func waitQueued(t *testing.T, b *budget, n int) {
	t.Helper()
	for b.stats().Waiting != n {
		time.Sleep(time.Millisecond)
	}
}

// TestBudgetFairShare: tenant a holds both slots (alone, it may) and
// queues a third request; b then queues one. The first slot freed goes to
// b, which holds none, though a asked first; the next one to a.
func TestBudgetFairShare(t *testing.T) {
	var o outcomes
	b := newBudget(BudgetConfig{Instances: 2, Memory: 100, Wait: time.Minute}, o.add)
	ctx := context.Background()
	for range 2 {
		if err := b.acquire(ctx, nil, "a", 10); err != nil {
			t.Fatal(err)
		}
	}
	granted := make(chan string, 2)
	go func() {
		if err := b.acquire(ctx, nil, "a", 10); err == nil {
			granted <- "a"
		}
	}()
	waitQueued(t, b, 1)
	go func() {
		if err := b.acquire(ctx, nil, "b", 10); err == nil {
			granted <- "b"
		}
	}()
	waitQueued(t, b, 2)
	b.release("a", 10)
	if g := <-granted; g != "b" {
		t.Fatalf("the freed slot went to %s; want b, which held none", g)
	}
	b.release("a", 10)
	if g := <-granted; g != "a" {
		t.Fatalf("the second freed slot went to %s; want a", g)
	}
	if s := b.stats(); s.Running != 2 || s.Reserved != 20 || s.Waiting != 0 {
		t.Fatalf("stats %+v; want 2 running, 20 reserved, none waiting", s)
	}
	if o.count("a:immediate") != 2 || o.count("a:queued") != 1 || o.count("b:queued") != 1 {
		t.Fatalf("outcomes %v", o.got)
	}
}

// TestBudgetNextInLine: one slot, held by tenant a, which queues another
// request before b queues one. When a's instance ends, both hold none:
// the slot goes to b, served longest ago, not back to a, first in line
// (a spinning tenant would otherwise keep the node's only slot).
func TestBudgetNextInLine(t *testing.T) {
	b := newBudget(BudgetConfig{Instances: 1, Memory: 100, Wait: time.Minute}, nil)
	ctx := context.Background()
	if err := b.acquire(ctx, nil, "a", 1); err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 2)
	for i, tenant := range []string{"a", "b"} {
		go func() {
			if err := b.acquire(ctx, nil, tenant, 1); err == nil {
				granted <- tenant
			}
		}()
		waitQueued(t, b, i+1)
	}
	b.release("a", 1)
	if g := <-granted; g != "b" {
		t.Fatalf("the slot went to %s; want b", g)
	}
	b.release("b", 1)
	if g := <-granted; g != "a" {
		t.Fatalf("the next slot went to %s; want a", g)
	}
	b.release("a", 1)
	if len(b.last) != 0 || len(b.held) != 0 || len(b.queues) != 0 {
		t.Fatalf("an idle budget keeps tenants: last %v, held %v, queues %v", b.last, b.held, b.queues)
	}
}

// TestBudgetRoundRobin: three tenants queue behind a full budget; freed
// slots go to each in turn before any gets a second.
func TestBudgetRoundRobin(t *testing.T) {
	b := newBudget(BudgetConfig{Instances: 1, Memory: 100, Wait: time.Minute}, nil)
	ctx := context.Background()
	if err := b.acquire(ctx, nil, "x", 1); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 6)
	n := 0
	for _, tenant := range []string{"a", "a", "b", "b", "c", "c"} {
		go func() {
			if err := b.acquire(ctx, nil, tenant, 1); err == nil {
				order <- tenant
			}
		}()
		n++
		waitQueued(t, b, n)
	}
	b.release("x", 1)
	var got []string
	for range 6 {
		g := <-order
		got = append(got, g)
		b.release(g, 1)
	}
	want := []string{"a", "b", "c", "a", "b", "c"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("grant order %v; want %v", got, want)
		}
	}
}

// TestBudgetRefusals: a request that waits cfg.Wait, one over its tenant's
// queue and one larger than the whole budget are refused with ErrBusy (so
// filter.ErrBusy: 503 SlowDown); a canceled one with its context's error;
// none is left holding anything.
func TestBudgetRefusals(t *testing.T) {
	var o outcomes
	b := newBudget(BudgetConfig{Instances: 1, Memory: 100, Wait: 20 * time.Millisecond, Queue: 1}, o.add)
	ctx := context.Background()
	if err := b.acquire(ctx, nil, "a", 60); err != nil {
		t.Fatal(err)
	}
	if err := b.acquire(ctx, nil, "b", 10); !errors.Is(err, filter.ErrBusy) {
		t.Fatalf("after the wait: %v; want ErrBusy", err)
	}
	// b's queue holds one: a second waiter is refused at once.
	hold := make(chan error)
	go func() { hold <- b.acquire(ctx, nil, "b", 10) }()
	waitQueued(t, b, 1)
	if err := b.acquire(ctx, nil, "b", 10); !errors.Is(err, filter.ErrBusy) {
		t.Fatalf("over the queue: %v; want ErrBusy", err)
	}
	if err := <-hold; !errors.Is(err, filter.ErrBusy) {
		t.Fatal(err)
	}
	if err := b.acquire(ctx, nil, "c", 101); !errors.Is(err, filter.ErrBusy) {
		t.Fatalf("over the whole budget: %v; want ErrBusy", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { waitQueued(t, b, 1); cancel() }()
	if err := b.acquire(cctx, nil, "d", 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
	if s := b.stats(); s.Running != 1 || s.Reserved != 60 || s.Waiting != 0 {
		t.Fatalf("stats %+v; want only a's instance", s)
	}
	if o.count("b:timeout") != 2 || o.count("b:full") != 1 || o.count("c:full") != 1 || o.count("d:canceled") != 1 {
		t.Fatalf("outcomes %v", o.got)
	}
}

// TestBudgetMemory: slots are free but memory is not: the instance that
// would take the reserved sum over the budget waits for memory to return.
func TestBudgetMemory(t *testing.T) {
	b := newBudget(BudgetConfig{Instances: 4, Memory: 100, Wait: time.Minute}, nil)
	ctx := context.Background()
	for range 2 {
		if err := b.acquire(ctx, nil, "a", 40); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error)
	go func() { done <- b.acquire(ctx, nil, "b", 40) }()
	waitQueued(t, b, 1)
	if s := b.stats(); s.Reserved != 80 {
		t.Fatalf("reserved %d with a waiter; want 80", s.Reserved)
	}
	if err := b.reserve(30); !errors.Is(err, filter.ErrBusy) {
		t.Fatalf("reserving over the budget without waiting: %v", err)
	}
	b.release("a", 40)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := b.stats(); s.Reserved != 80 || s.Running != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// budgetRuntime is a runtime of its own with a one-instance budget.
func budgetRuntime(t *testing.T, onAdmit func(string, string), onCPU func(string, string, time.Duration)) *Runtime {
	t.Helper()
	rt, err := NewRuntime(context.Background(), Config{
		CacheDir: filepath.Join(cacheRoot, "cache"), MemoryPages: 1024,
		Budget:  BudgetConfig{Instances: 1, Memory: 128 << 20, Wait: 200 * time.Millisecond},
		OnAdmit: onAdmit, OnCPU: onCPU,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

// TestBudgetInstances: with one slot, a looping instance of tenant a makes
// b's filter wait and then refuses it with an *Error wrapping ErrBusy; a
// request's second filter joins its first one's slot rather than waiting
// for itself; an instance's CPU time is charged to its tenant.
func TestBudgetInstances(t *testing.T) {
	var o outcomes
	var mu sync.Mutex
	cpu := map[string]time.Duration{}
	rt := budgetRuntime(t, o.add, func(tenant, name string, d time.Duration) {
		mu.Lock()
		cpu[tenant+"/"+name] += d
		mu.Unlock()
	})
	ctx := context.Background()
	mk := func(name, mode string) filter.Transformer {
		in := hostileInfo()
		in.Name = name
		info, err := New(ctx, rt, in, moduleBytes(t, "hostile"), Limits{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		f, err := info.New(filter.Params{"mode": mode}, filter.Env{})
		if err != nil {
			t.Fatal(err)
		}
		return f.(filter.Transformer)
	}
	loop, cp1, cp2 := mk("spin", "loop"), mk("copy1", "copy"), mk("copy2", "copy")

	lctx, stop := context.WithCancel(ctx)
	spin, err := loop.Transform(lctx, &filter.Request{Tenant: "a", Method: filter.MethodPut, Size: -1}, bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	_, err = cp1.Transform(filter.WithScope(ctx), &filter.Request{Tenant: "b", Method: filter.MethodPut, Size: -1}, bytes.NewReader([]byte("x")))
	var fe *Error
	if !errors.As(err, &fe) || !errors.Is(err, filter.ErrBusy) || fe.FailureReason() != "busy" {
		t.Fatalf("b's filter behind a's looping one: %v; want an *Error wrapping ErrBusy", err)
	}
	stop()
	_, _ = io.Copy(io.Discard, spin)
	_ = spin.(io.Closer).Close()
	for rt.BudgetStats().Running != 0 {
		time.Sleep(time.Millisecond)
	}

	// Two filters of one request (one Scope) chained, as a pipeline runs
	// them: the second joins the first's slot.
	sctx := filter.WithScope(ctx)
	req := &filter.Request{Tenant: "b", Method: filter.MethodPut, Size: -1}
	mid, err := cp1.Transform(sctx, req, bytes.NewReader([]byte("through two filters")))
	if err != nil {
		t.Fatal(err)
	}
	out, err := cp2.Transform(sctx, req, mid)
	if err != nil {
		t.Fatalf("the request's second filter: %v", err)
	}
	if got, err := io.ReadAll(out); err != nil || string(got) != "through two filters" {
		t.Fatalf("got %q, %v", got, err)
	}
	if o.count("b:joined") != 1 {
		t.Fatalf("outcomes %v; want b's second filter joined", o.got)
	}
	for rt.BudgetStats() != (BudgetStats{}) {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if cpu["a/spin"] <= 0 || cpu["b/copy1"] <= 0 {
		t.Fatalf("CPU charged %v; want a/spin and b/copy1", cpu)
	}
}

// TestBudgetDecodeChain: two reversible filters undone in a chain outside
// any S3 request (no Scope in the context, as a background task reads an
// object) share one slot: with a budget of one instance, the outer
// decoder does not wait for the slot its inner one holds.
func TestBudgetDecodeChain(t *testing.T) {
	var o outcomes
	rt := budgetRuntime(t, o.add, nil)
	ctx := context.Background()
	mk := func(name, key string) filter.Reversible {
		in := xorInfo()
		in.Name = name
		info, err := New(ctx, rt, in, moduleBytes(t, "xor"), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		f, err := info.New(filter.Params{"key": key}, filter.Env{})
		if err != nil {
			t.Fatal(err)
		}
		return f.(filter.Reversible)
	}
	inner, outer := mk("inner", "k1"), mk("outer", "k22")
	plain := []byte("undone by two decoders in one slot")
	req := &filter.Request{Tenant: "bg", Method: filter.MethodPut, Size: int64(len(plain))}
	stored, recs := plain, make([]filter.Record, 2)
	for i, f := range []filter.Reversible{inner, outer} {
		enc, record, err := f.Encode(ctx, req, bytes.NewReader(stored))
		if err != nil {
			t.Fatal(err)
		}
		if stored, err = io.ReadAll(enc); err != nil {
			t.Fatal(err)
		}
		if recs[i], err = record(); err != nil {
			t.Fatal(err)
		}
	}
	var src filter.Source = &memSource{b: stored}
	var err error
	if src, err = outer.Decode(ctx, req, recs[1], src); err != nil {
		t.Fatal(err)
	}
	if src, err = inner.Decode(ctx, req, recs[0], src); err != nil {
		t.Fatal(err)
	}
	rc, err := src.Open(ctx, 0, src.Size())
	if err != nil {
		t.Fatalf("the chain's outer decoder: %v", err)
	}
	got, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("decoded %q, %v", got, err)
	}
	if o.count("bg:joined") != 1 {
		t.Fatalf("outcomes %v; want the second decoder joined the first's slot", o.got)
	}
}
