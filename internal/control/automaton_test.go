package control

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/filter/builtin"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/ownership"
	"github.com/facet-sds/facet/internal/policy"
)

// compileOne compiles one policy text as the service does for stored ones.
func compileOne(t *testing.T, text string) *policy.CompiledPolicy {
	t.Helper()
	v := &policy.StaticVocabulary{Filters: builtin.NewRegistry(), Metrics: policy.DefaultMetrics(),
		ObjectTypes: policy.DefaultObjectTypes(), AnyTarget: true}
	ps, err := policy.ParseAndCheck("test", text, v)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	ps[0].ID = "p1"
	c, err := policy.Compile(ps, nil)
	if err != nil {
		t.Fatal(err)
	}
	cp, _ := c.Policy("p1")
	if !cp.Dynamic {
		t.Fatalf("%s: not dynamic", text)
	}
	return cp
}

var t0 = time.Date(2026, 1, 2, 2, 31, 5, 0, time.UTC)

const period = time.Second

// machine builds an automaton for text on the given targets, out of its
// start-up grace.
func machine(t *testing.T, text string, holdDown int, targets ...string) *automaton {
	t.Helper()
	if len(targets) == 0 {
		targets = []string{"tenant:t1"}
	}
	a := newAutomaton(newSpec(compileOne(t, text), targets, holdDown), false, "", t0.Add(-time.Hour), 3*period)
	return a
}

func feed(a *automaton, target string, now time.Time, kv ...any) {
	for i := 0; i+1 < len(kv); i += 2 {
		a.observe(Value{Metric: kv[i].(string), Target: target, Value: toFloat(kv[i+1]), Period: now}, now)
	}
}

func toFloat(v any) float64 {
	switch v := v.(type) {
	case int:
		return float64(v)
	case float64:
		return v
	}
	panic("bad value")
}

// Every form of the condition grammar, evaluated on the values of one
// target (Crystal crashed on compound conditions).
func TestTriggerForms(t *testing.T) {
	for _, tc := range []struct {
		when   string
		values []any
		holds  bool
	}{
		{"put_ops > 3", []any{"put_ops", 4.2}, true},
		{"put_ops > 3", []any{"put_ops", 3}, false},
		{"put_ops >= 3", []any{"put_ops", 3}, true},
		{"put_ops < 3", []any{"put_ops", 2}, true},
		{"put_ops <= 3", []any{"put_ops", 3.5}, false},
		{"put_ops = 3", []any{"put_ops", 3}, true},
		{"put_ops == 3", []any{"put_ops", 3}, true},
		{"put_ops != 3", []any{"put_ops", 3}, false},
		{"put_bw > 10MB/s", []any{"put_bw", 10_000_001}, true},
		{"put_bw > 10MBps", []any{"put_bw", 9_999_999}, false},
		{"lat > 300ms", []any{"lat", 0.301}, true},
		{"error_ratio > 5%", []any{"error_ratio", 0.04}, false},
		{"put_ops > 3 AND get_ops > 3", []any{"put_ops", 4, "get_ops", 4}, true},
		{"put_ops > 3 AND get_ops > 3", []any{"put_ops", 4, "get_ops", 2}, false},
		{"put_ops > 3 OR get_ops > 3", []any{"put_ops", 1, "get_ops", 4}, true},
		{"put_ops > 3 OR get_ops > 3", []any{"put_ops", 1, "get_ops", 2}, false},
		// AND binds tighter than OR.
		{"put_ops > 3 OR get_ops > 3 AND lat > 1s", []any{"put_ops", 4, "get_ops", 0, "lat", 0.0}, true},
		{"put_ops > 3 OR get_ops > 3 AND lat > 1s", []any{"put_ops", 0, "get_ops", 4, "lat", 0.5}, false},
		{"(put_ops > 3 OR get_ops > 3) AND lat > 1s", []any{"put_ops", 4, "get_ops", 0, "lat", 0.5}, false},
		{"(put_ops > 3 OR get_ops > 3) AND lat > 1s", []any{"put_ops", 0, "get_ops", 4, "lat", 2.0}, true},
		{"put_ops > 3 AND (get_ops > 3 OR (lat > 1s AND errors > 0))", []any{"put_ops", 4, "get_ops", 0, "lat", 2.0, "errors", 1}, true},
		{"put_ops > 3 AND (get_ops > 3 OR (lat > 1s AND errors > 0))", []any{"put_ops", 4, "get_ops", 0, "lat", 2.0, "errors", 0}, false},
		{"((put_ops > 3))", []any{"put_ops", 5}, true},
		// Object terms are the data plane's: the controller evaluates the
		// metric part.
		{"put_ops > 3 AND OBJECT_TYPE=DOCS", []any{"put_ops", 5}, true},
		{"OBJECT_SIZE > 1MB AND (put_ops > 3 OR get_ops > 3)", []any{"put_ops", 1, "get_ops", 1}, false},
	} {
		a := machine(t, "FOR TENANT t1 WHEN "+tc.when+" DO SET compression", 3)
		feed(a, "tenant:t1", t0, tc.values...)
		if got := a.evaluate(t0, true, true); got != tc.holds || a.active != tc.holds {
			t.Errorf("WHEN %s with %v: switched %t, active %t; want %t (%s)", tc.when, tc.values, got, a.active, tc.holds, a.note)
		}
	}
}

func TestActivationReasonShowsTheValues(t *testing.T) {
	a := machine(t, "FOR TENANT t1 WHEN put_ops > 3 AND (put_bw > 1MB/s OR lat > 300ms) DO SET compression", 3)
	feed(a, "tenant:t1", t0, "put_ops", 4.2, "put_bw", 2_500_000)
	if !a.evaluate(t0, false, true) {
		t.Fatal("did not activate")
	}
	want := "put_ops=4.2 > 3 AND (put_bw=2.5MB/s > 1MB/s OR lat=? > 300ms) on tenant:t1 at 2026-01-02T02:31:05Z"
	if a.reason != want {
		t.Fatalf("reason %q\nwant   %q", a.reason, want)
	}
}

func TestTransientHoldDown(t *testing.T) {
	a := machine(t, "FOR TENANT t1 WHEN put_ops > 3 DO SET compression TRANSIENT", 3)
	now := t0
	next := func(v float64, tick bool) bool {
		now = now.Add(period)
		feed(a, "tenant:t1", now, "put_ops", v)
		return a.evaluate(now, tick, true)
	}
	if !next(6, false) || !a.active {
		t.Fatal("not activated")
	}
	// Values that do not hold, evaluated as they arrive, are not periods.
	for range 10 {
		if next(1, false) {
			t.Fatal("deactivated by values, not periods")
		}
	}
	next(1, true)
	next(1, true)
	if !a.active || a.quiet != 2 {
		t.Fatalf("after 2 quiet periods: active %t quiet %d", a.active, a.quiet)
	}
	// The trigger holds again: the count starts over.
	next(5, true)
	if !a.active || a.quiet != 0 {
		t.Fatalf("a holding period did not reset the hold-down: quiet %d", a.quiet)
	}
	next(1, true)
	next(1, true)
	if !a.active {
		t.Fatal("deactivated before the hold-down")
	}
	if !next(1, true) || a.active {
		t.Fatal("not deactivated after 3 quiet periods")
	}
	if !strings.Contains(a.reason, "did not hold for 3 periods") || !strings.Contains(a.reason, "put_ops=1 > 3") {
		t.Fatalf("reason %q", a.reason)
	}
	// And it can come back.
	if !next(7, false) || !a.active {
		t.Fatal("not reactivated")
	}
}

func TestPersistentNeverReverts(t *testing.T) {
	for _, text := range []string{
		"FOR TENANT t1 WHEN put_ops > 3 DO SET compression",
		"FOR TENANT t1 WHEN put_ops > 3 DO SET compression PERSISTENT",
		// Mixed: a PERSISTENT action must not be undone with the other.
		"FOR TENANT t1 WHEN put_ops > 3 DO SET compression PERSISTENT, SET noop TRANSIENT",
	} {
		a := machine(t, text, 1)
		feed(a, "tenant:t1", t0, "put_ops", 9)
		a.evaluate(t0, true, true)
		for i := range 20 {
			now := t0.Add(time.Duration(i+1) * period)
			feed(a, "tenant:t1", now, "put_ops", 0)
			if a.evaluate(now, true, true) || !a.active {
				t.Fatalf("%s: reverted", text)
			}
		}
	}
}

func TestMissingAndStaleValues(t *testing.T) {
	spec := newSpec(compileOne(t, "FOR TENANT t1 WHEN put_ops < 1 DO SET compression"), []string{"tenant:t1"}, 3)
	a := newAutomaton(spec, false, "", t0, 3*period)
	// Just started, no value yet: silence is not evidence.
	if a.evaluate(t0.Add(period), true, true) || a.active {
		t.Fatal("activated on no data during the start-up grace")
	}
	// Past the grace, no traffic reads as 0 ops/s.
	if !a.evaluate(t0.Add(4*period), true, true) {
		t.Fatal("an idle tenant does not read 0 put_ops")
	}

	// A value that stops coming goes stale: rates read 0...
	b := newAutomaton(newSpec(compileOne(t, "FOR TENANT t1 WHEN put_ops > 3 DO SET compression TRANSIENT"), []string{"tenant:t1"}, 2), false, "", t0, 3*period)
	feed(b, "tenant:t1", t0, "put_ops", 10)
	b.evaluate(t0, false, true)
	for i := 1; i <= 3; i++ { // still fresh: the last value holds
		b.evaluate(t0.Add(time.Duration(i)*period), true, true)
	}
	if !b.active {
		t.Fatal("deactivated while the last value was fresh")
	}
	b.evaluate(t0.Add(4*period), true, true)
	b.evaluate(t0.Add(5*period), true, true)
	if b.active {
		t.Fatal("a stale rate did not read 0")
	}
	// ...unless the feed says it is down: then nothing changes.
	c := newAutomaton(b.spec, true, "", t0, 3*period)
	for i := 1; i <= 10; i++ {
		if c.evaluate(t0.Add(time.Duration(i)*period), true, false) {
			t.Fatal("decided on the silence of a feed that is down")
		}
	}

	// A non-rate metric with no value makes its comparisons false.
	d := newAutomaton(newSpec(compileOne(t, "FOR TENANT t1 WHEN lat < 1s DO SET compression"), []string{"tenant:t1"}, 3), false, "", t0, 3*period)
	if d.evaluate(t0.Add(10*period), true, true) {
		t.Fatal("a missing latency compared as a number")
	}
}

func TestTriggerHoldsOnAnyTarget(t *testing.T) {
	a := machine(t, "FOR TENANT t1, TENANT t2 WHEN put_ops > 3 AND get_ops > 3 DO SET compression", 3, "tenant:t1", "tenant:t2")
	// The condition holds on neither target's values, though it would on
	// their mix: targets are evaluated one by one.
	feed(a, "tenant:t1", t0, "put_ops", 5, "get_ops", 0)
	feed(a, "tenant:t2", t0, "put_ops", 0, "get_ops", 5)
	if a.evaluate(t0, true, true) {
		t.Fatal("activated on values of different targets")
	}
	feed(a, "tenant:t2", t0, "put_ops", 5)
	if !a.evaluate(t0, true, true) || !strings.Contains(a.reason, "on tenant:t2") {
		t.Fatalf("not activated by t2: %q", a.reason)
	}
}

func TestExpandTargets(t *testing.T) {
	ctx := context.Background()
	st := &listStore{tenants: []string{"t1", "t2", "t3"}, buckets: map[string][]string{"t1": {"logs", "docs"}, "t2": {"logs"}}}
	groups := map[string][]string{"gold": {"t3", "t1/docs"}}
	for _, tc := range []struct {
		targets string
		want    []string
	}{
		{"TENANT t1", []string{"tenant:t1"}},
		{"TENANT:t1, CONTAINER:t2/logs", []string{"bucket:t2/logs", "tenant:t1"}},
		{"BUCKET logs", []string{"bucket:t1/logs", "bucket:t2/logs"}},
		{"OBJECT t1/docs/a.pdf", []string{"object:t1/docs/a.pdf"}},
		{"G:gold", []string{"bucket:t1/docs", "tenant:t3"}},
		{"GROUP gold, TENANT t3", []string{"bucket:t1/docs", "tenant:t3"}},
		{"ALL", []string{"tenant:t1", "tenant:t2", "tenant:t3"}},
		{"ALL TENANTS", []string{"tenant:t1", "tenant:t2", "tenant:t3"}},
		{"ALL BUCKETS", []string{"bucket:t1/docs", "bucket:t1/logs", "bucket:t2/logs"}},
	} {
		cp := compileOne(t, "FOR "+tc.targets+" WHEN put_ops > 1 DO SET compression")
		got, err := expandTargets(ctx, cp.Policy, groups, &world{store: st, buckets: map[string][]string{}})
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("FOR %s: %v %v, want %v", tc.targets, got, err, tc.want)
		}
	}
}

// listStore answers the listings target expansion needs.
type listStore struct {
	Store
	tenants []string
	buckets map[string][]string
}

func (s *listStore) ListTenants(context.Context) ([]meta.Tenant, error) {
	var out []meta.Tenant
	for _, t := range s.tenants {
		out = append(out, meta.Tenant{Name: t})
	}
	return out, nil
}

func (s *listStore) ListBuckets(_ context.Context, tenant string) ([]ownership.Bucket, error) {
	var out []ownership.Bucket
	for _, b := range s.buckets[tenant] {
		out = append(out, ownership.Bucket{Name: b})
	}
	return out, nil
}
