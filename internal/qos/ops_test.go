package qos

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/admit"
	"github.com/facet-sds/facet/internal/controller"
)

// A tenant's operations cap is fleet-wide: the controller splits it over
// the gateways where the tenant has demand, like bytes. Hand-computed
// (Crystal, ops/s): t1 ops=30 per class; t1 get on a is refused
// operations (wants more), on b runs 4 ops/s (wants 5); unit weights 1/2
// each: λ=10 gives a 5 and b 5 (b satisfied), a takes the 20 left: a 25,
// b 5. t1 delete on a alone (2 ops/s) gets its whole cap, 30: deletes
// count in operations. t2 has no cap: nothing is assigned.
func TestOpsSplitAcrossGateways(t *testing.T) {
	f := NewFleet(time.Minute)
	f.Add(report("a", 0,
		FlowStatus{Tenant: "t1", Class: ClassGet, Streams: 1, Ops: 15, Rejected: 3, OpsRate: 15},
		FlowStatus{Tenant: "t1", Class: ClassDelete, Streams: 1, Ops: 2, OpsRate: 30},
		FlowStatus{Tenant: "t2", Class: ClassGet, Streams: 1, Ops: 50}))
	f.Add(report("b", 0,
		FlowStatus{Tenant: "t1", Class: ClassGet, Streams: 1, Ops: 4, OpsRate: 15}))
	slos := SLOMap{"t1": {Ops: 30}}
	b := NewBandwidth(BandwidthConfig{SLOs: func(context.Context) (SLOSource, error) { return slos, nil }})
	snap, _ := f.Snapshot(context.Background())
	as, mem, err := b.Reconcile(context.Background(), snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, a := range as {
		if a.Key == "get_ops" || a.Key == "delete_ops" {
			got[a.Node+"/"+a.Target+"/"+a.Key] = a.Value
		}
	}
	want := map[string]float64{"a/tenant:t1/get_ops": 25, "b/tenant:t1/get_ops": 5, "a/tenant:t1/delete_ops": 30}
	if len(got) != len(want) {
		t.Fatalf("ops assignments %v, want %v", got, want)
	}
	for k, w := range want {
		if math.Abs(got[k]-w) > 0.5 {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
	// Gateway b applies its share: t1's GETs there are admitted at 5/s
	// (the static rate before was the whole cap, 30/s, on every gateway).
	l := NewLimiter(LimiterConfig{Node: "b", SLOs: slos})
	st, err := l.Admit(context.Background(), "t1", ClassGet)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Done()
	if r := st.f.ops.Rate(); r != 30 {
		t.Fatalf("static ops rate %v, want the cap 30", r)
	}
	data, _ := json.Marshal(controller.AssignmentMessage{V: controller.AssignmentVersion, Instance: "i", Seq: 1, Assignments: as})
	_, _, rates, ops, err := DecodeAllAssignments(data, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rates["t1"][ClassGet]; ok {
		t.Fatalf("an operations rate decoded as bytes: %v", rates)
	}
	l.ApplyOps("i", 1, rates, ops)
	if r := st.f.ops.Rate(); math.Abs(r-5) > 0.5 {
		t.Fatalf("assigned ops rate on b %v, want 5", r)
	}
	// A repeat within the threshold publishes the same rates.
	as2, _, _ := b.Reconcile(context.Background(), snap, mem)
	for _, a := range as2 {
		if k := a.Node + "/" + a.Target + "/" + a.Key; want[k] != 0 && a.Value != got[k] {
			t.Errorf("%s moved to %v", k, a.Value)
		}
	}
}

// A cap lowered or removed on a gateway applies there at once, whatever
// the controller assigned before.
func TestOpsCapChangeAppliesAtOnce(t *testing.T) {
	slos := SLOMap{"t1": {Ops: 30}}
	l := NewLimiter(LimiterConfig{Node: "b", SLOs: slos})
	st, err := l.Admit(context.Background(), "t1", ClassGet)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Done()
	l.ApplyOps("i", 1, nil, Rates{"t1": {ClassGet: 20}})
	if r := st.f.ops.Rate(); r != 20 {
		t.Fatalf("assigned %v, want 20", r)
	}
	slos["t1"] = SLO{Ops: 5}
	l.Refresh()
	if r := st.f.ops.Rate(); r != 5 {
		t.Fatalf("after the cap was lowered to 5: %v", r)
	}
	delete(slos, "t1")
	l.Refresh()
	if r := st.f.ops.Rate(); !math.IsInf(r, 1) {
		t.Fatalf("after the cap was removed: %v, want unlimited", r)
	}
}

// Operations over the rate wait in line up to the queue bound, in arrival
// order, before any is refused; one further away is refused only after
// it has waited the queue bound out (issue 25: refusals came back in
// 2 ms, and a throttled client spun at 1,300 requests/s).
func TestOpsQueueBeforeSlowDown(t *testing.T) {
	l := NewLimiter(LimiterConfig{Node: "n1", SLOs: SLOMap{"t1": {Ops: 40}}, OpsQueue: 250 * time.Millisecond})
	// 40/s, burst 1, 16 at once: the first is admitted at once, the next
	// 10 are due within 250 ms (25 ms apart), the rest further away.
	type result struct {
		err error
		in  time.Duration // from the call to its answer
	}
	res := make([]result, 16)
	var wg sync.WaitGroup
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			st, err := l.Admit(context.Background(), "t1", ClassGet)
			if err == nil {
				st.Done()
			}
			res[i] = result{err, time.Since(start)}
		}()
	}
	wg.Wait()
	admitted := 0
	for _, r := range res {
		var sd *SlowDownError
		switch {
		case r.err == nil:
			admitted++
		case !errors.As(r.err, &sd):
			t.Fatalf("refused with %v, want SlowDown", r.err)
		case r.in < 250*time.Millisecond:
			t.Fatalf("refused %v after arriving, before the 250ms queue", r.in)
		}
	}
	// 11 fit in the queue (a slow start refills a token or two more).
	if admitted < 11 || admitted > 14 {
		t.Fatalf("%d of 16 admitted, want the 11 the queue holds", admitted)
	}
	rep := l.Report()
	if len(rep.Flows) != 1 || rep.Flows[0].Queued <= 0 || rep.Flows[0].Rejected <= 0 {
		t.Fatalf("report %+v: want queued and rejected operations", rep.Flows)
	}
	// A refusal ends as soon as its request's context does.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	for i := 0; i < 20; i++ {
		if _, err := l.Admit(ctx, "t1", ClassGet); errors.Is(err, context.DeadlineExceeded) {
			return
		}
	}
	t.Fatal("no admission ended with its context")
}

// A refusal's Retry-After is the line's length from the answer, spread by
// up to half again, so that refused clients do not come back together.
func TestRetryAfterSpread(t *testing.T) {
	c := newFakeClock()
	var r float64
	l := NewLimiter(LimiterConfig{Node: "n1", SLOs: SLOMap{"t1": {Ops: 2}}, OpsQueue: time.Millisecond, Now: c.Now,
		Rand: func() float64 { return r }})
	if _, err := l.Admit(context.Background(), "t1", ClassPut); err != nil {
		t.Fatal(err)
	}
	seen := map[time.Duration]bool{}
	for _, r = range []float64{0, 0.5, 0.999} {
		_, err := l.Admit(context.Background(), "t1", ClassPut)
		var sd *SlowDownError
		if !errors.As(err, &sd) {
			t.Fatalf("err %v, want SlowDown", err)
		}
		// The token is 500 ms away, the answer 1 ms later.
		lo, hi := 499*time.Millisecond, 749*time.Millisecond
		if sd.After < lo || sd.After > hi {
			t.Fatalf("rand %v: Retry-After %v outside [%v, %v]", r, sd.After, lo, hi)
		}
		seen[sd.After] = true
	}
	if len(seen) != 3 {
		t.Fatalf("Retry-After not spread: %v", seen)
	}
}

// An operation that names its retries (an SDK's invocation id) keeps its
// place in line when refused: its Retry-After is when its token is due,
// and its retry then is admitted, ahead of operations that came after it.
// A retry that comes back early waits for its turn; a stranger without a
// place goes to the end of the line.
func TestRetryKeepsItsPlace(t *testing.T) {
	c := newFakeClock()
	l := NewLimiter(LimiterConfig{Node: "n1", SLOs: SLOMap{"t1": {Ops: 2}}, OpsQueue: 50 * time.Millisecond, Now: c.Now,
		Rand: func() float64 { return 0 }})
	key := func(k string) context.Context { return admit.WithRetryKey(context.Background(), k) }
	if _, err := l.Admit(key("a"), "t1", ClassGet); err != nil {
		t.Fatal(err)
	}
	after := func(ctx context.Context) time.Duration {
		t.Helper()
		_, err := l.Admit(ctx, "t1", ClassGet)
		var sd *SlowDownError
		if !errors.As(err, &sd) {
			t.Fatalf("err %v, want SlowDown", err)
		}
		return sd.After
	}
	if d := after(key("b")); d != 500*time.Millisecond {
		t.Fatalf("b told %v, want 500ms: its token's time", d)
	}
	if d := after(key("c")); d != time.Second {
		t.Fatalf("c told %v, want 1s: behind b", d)
	}
	// A stranger without a key is behind both (1.5 s, less the 50 ms
	// it was held).
	if d := after(context.Background()); d != 1450*time.Millisecond {
		t.Fatalf("stranger told %v, want 1.45s", d)
	}
	if rep := l.Report(); rep.Flows[0].InLine != 2 {
		t.Fatalf("in line %d, want 2", rep.Flows[0].InLine)
	}
	c.Advance(500 * time.Millisecond)
	// b is back on time: admitted on its place. A stranger still finds
	// the line full (c's token is due in 500 ms).
	if _, err := l.Admit(key("b"), "t1", ClassGet); err != nil {
		t.Fatalf("b's retry refused: %v", err)
	}
	if d := after(context.Background()); d != 950*time.Millisecond {
		t.Fatalf("stranger told %v, want 950ms", d)
	}
	// c is back 300 ms early (an SDK that does not read
	// x-amz-retry-after): it waits for its turn (real time here).
	c.Advance(200 * time.Millisecond)
	start := time.Now()
	if _, err := l.Admit(key("c"), "t1", ClassGet); err != nil {
		t.Fatalf("c's early retry refused: %v", err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("c's early retry admitted after %v, before its turn (300ms)", el)
	}
	// A place whose retry never comes is forgotten after TicketGrace.
	after(key("d"))
	c.Advance(TicketGrace + 2*time.Second)
	if rep := l.Report(); rep.Flows[0].InLine != 0 {
		t.Fatalf("in line %d after the grace, want 0", rep.Flows[0].InLine)
	}
}

// Background work over its operations cap is paced, never refused: its
// operations keep their place in line between tries like an SDK's calls,
// and take their turns at the cap's rate.
func TestBackgroundKeepsItsPlace(t *testing.T) {
	l := NewLimiter(LimiterConfig{Node: "n1", SLOs: SLOMap{"t1": {Ops: 20}}, OpsQueue: 10 * time.Millisecond})
	start := time.Now()
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := l.AdmitBackground(context.Background(), "t1")
			if err != nil {
				t.Error(err)
				return
			}
			st.Done()
		}()
	}
	wg.Wait()
	// One at once, five 50 ms apart: a lower bound only.
	if el := time.Since(start); el < 240*time.Millisecond {
		t.Fatalf("6 operations at 20/s in %v", el)
	}
	rep := l.Report()
	if len(rep.Flows) != 1 || rep.Flows[0].Rejected == 0 || rep.Flows[0].InLine != 0 {
		t.Fatalf("report %+v: want refusals that kept and took their places", rep.Flows)
	}
}
