package metrics

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// sample is node's sample of metric for the period starting at sec.
func sample(node, metric string, sec int, values map[string]float64, weights map[string]float64) NodeSample {
	return NodeSample{V: 1, Node: node, Metric: metric, StartMs: at(sec).UnixMilli(), PeriodMs: 1000, Values: values, Weights: weights}
}

// recorder collects the values a subscription receives.
type recorder struct {
	mu sync.Mutex
	vs []Value
}

func (r *recorder) add(v Value) {
	r.mu.Lock()
	r.vs = append(r.vs, v)
	r.mu.Unlock()
}

func (r *recorder) values() []Value {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Value(nil), r.vs...)
}

func subscribe(t *testing.T, a *Aggregator, metric, target string) *recorder {
	t.Helper()
	r := &recorder{}
	cancel, err := a.Subscribe(metric, target, r.add)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	return r
}

// warm feeds both nodes' first period, which an aggregator never merges
// early, and lets it lapse.
func warm(a *Aggregator, metric string, nodes ...string) {
	for _, n := range nodes {
		a.Ingest(sample(n, metric, 0, nil, nil))
	}
	a.Tick(at(2))
}

// Two nodes' samples add up; the merge waits for every live node, and
// each subscriber gets its own target's value only.
func TestAggregatorSumsNodesPerTarget(t *testing.T) {
	a := NewAggregator(AggregatorConfig{})
	t1 := subscribe(t, a, "put_ops", "tenant:t1")
	t2 := subscribe(t, a, "put_ops", "tenant:t2")
	b1 := subscribe(t, a, "put_ops", "bucket:t1/b1")
	warm(a, "put_ops", "A", "B")
	t1.vs, t2.vs, b1.vs = nil, nil, nil

	a.Ingest(sample("A", "put_ops", 1, map[string]float64{"tenant:t1": 3, "bucket:t1/b1": 3, "tenant:t2": 10}, nil))
	if len(t1.values()) != 0 {
		t.Fatalf("merged before node B reported: %v", t1.values())
	}
	a.Ingest(sample("B", "put_ops", 1, map[string]float64{"tenant:t1": 2, "bucket:t1/b2": 2}, nil))
	want := func(r *recorder, target string, v float64) {
		t.Helper()
		got := r.values()
		if len(got) != 1 || got[0] != (Value{Metric: "put_ops", Target: target, Value: v, Period: at(1), Nodes: 2}) {
			t.Fatalf("%s received %+v, want %v", target, got, v)
		}
	}
	want(t1, "tenant:t1", 5)
	want(t2, "tenant:t2", 10)
	want(b1, "bucket:t1/b1", 3)
	if agg, ok := a.Latest("put_ops"); !ok || agg.Values["bucket:t1/b2"] != 2 || agg.Nodes != 2 {
		t.Fatalf("latest %+v", agg)
	}
}

// A subscriber for t1 never sees another target's value, whatever the
// traffic; and a target without traffic gets 0 every period.
func TestAggregatorIsolationAndZeros(t *testing.T) {
	a := NewAggregator(AggregatorConfig{})
	t1 := subscribe(t, a, "put_ops", "tenant:t1")
	idle := subscribe(t, a, "put_ops", "tenant:idle")
	for sec := range 5 {
		vals := map[string]float64{"tenant:t2": float64(100 + sec), "bucket:t2/b": 7}
		if sec%2 == 0 {
			vals["tenant:t1"] = float64(sec + 1)
		}
		a.Ingest(sample("A", "put_ops", sec, vals, nil))
		a.Tick(at(sec + 2))
	}
	got := t1.values()
	if len(got) != 5 {
		t.Fatalf("t1 got %d values for 5 periods: %+v", len(got), got)
	}
	for i, v := range got {
		want := 0.0
		if i%2 == 0 {
			want = float64(i + 1)
		}
		if v.Target != "tenant:t1" || v.Value != want || !v.Period.Equal(at(i)) {
			t.Fatalf("t1 period %d: %+v, want %v", i, v, want)
		}
	}
	for i, v := range idle.values() {
		if v.Target != "tenant:idle" || v.Value != 0 || !v.Period.Equal(at(i)) {
			t.Fatalf("idle target: %+v", v)
		}
	}
	if len(idle.values()) != 5 {
		t.Fatalf("idle target got %d values", len(idle.values()))
	}
}

func TestAggregatorMerges(t *testing.T) {
	a := NewAggregator(AggregatorConfig{})
	p99 := subscribe(t, a, "latency_p99", "tenant:t1")
	comp := subscribe(t, a, "compressibility", "bucket:t1/b")
	warm(a, "latency_p99", "A", "B")
	warm(a, "compressibility", "A", "B")
	p99.vs, comp.vs = nil, nil
	a.Ingest(sample("A", "latency_p99", 1, map[string]float64{"tenant:t1": 0.2}, nil))
	a.Ingest(sample("B", "latency_p99", 1, map[string]float64{"tenant:t1": 0.05}, nil))
	// A compressed 3000 bytes to 1000 (3x), B 1000 to 1000 (1x): the
	// cluster compressed 4000 to 2000, 2x.
	a.Ingest(sample("A", "compressibility", 1, map[string]float64{"bucket:t1/b": 3}, map[string]float64{"bucket:t1/b": 1000}))
	a.Ingest(sample("B", "compressibility", 1, map[string]float64{"bucket:t1/b": 1}, map[string]float64{"bucket:t1/b": 1000}))
	if v := p99.values(); len(v) != 1 || v[0].Value != 0.2 {
		t.Fatalf("p99 merge: %+v", v)
	}
	if v := comp.values(); len(v) != 1 || v[0].Value != 2 {
		t.Fatalf("compressibility merge: %+v", v)
	}
}

// A node that does not report is waited for Grace after the period's
// end, no longer; what it sends afterwards is late and ignored. A node
// silent for Liveness periods is no longer waited for.
func TestAggregatorGraceLateAndLiveness(t *testing.T) {
	a := NewAggregator(AggregatorConfig{Grace: 300 * time.Millisecond})
	r := subscribe(t, a, "ops", "tenant:t1")
	warm(a, "ops", "A", "B")
	r.vs = nil
	a.Ingest(sample("A", "ops", 2, map[string]float64{"tenant:t1": 1}, nil))
	a.Tick(at(3).Add(299 * time.Millisecond))
	if len(r.values()) != 0 {
		t.Fatal("merged before the grace ran out")
	}
	a.Tick(at(3).Add(300 * time.Millisecond))
	if v := r.values(); len(v) != 1 || v[0].Value != 1 || v[0].Nodes != 1 {
		t.Fatalf("after the grace: %+v", v)
	}
	a.Ingest(sample("B", "ops", 2, map[string]float64{"tenant:t1": 1}, nil))
	if st := a.Stats(); st.Late != 1 || len(r.values()) != 1 {
		t.Fatalf("late sample: stats %+v, values %+v", st, r.values())
	}
	// B is still live (late, but there) for period 3: waited for.
	a.Ingest(sample("A", "ops", 3, map[string]float64{"tenant:t1": 2}, nil))
	if len(r.values()) != 1 {
		t.Fatal("period 3 merged without waiting for B")
	}
	a.Tick(at(5))
	// B's last period ended at 3 s: by period 6 it is not live any more,
	// and A's sample is merged at once.
	a.Ingest(sample("A", "ops", 6, map[string]float64{"tenant:t1": 4}, nil))
	if v := r.values(); len(v) != 3 || v[2].Value != 4 {
		t.Fatalf("with B gone: %+v", v)
	}
}

func TestAggregatorSubscribeErrorsAndCancel(t *testing.T) {
	a := NewAggregator(AggregatorConfig{})
	if _, err := a.Subscribe("put_opz", "tenant:t1", func(Value) {}); err == nil || !strings.Contains(err.Error(), "unknown metric") {
		t.Fatalf("unknown metric: %v", err)
	}
	if _, err := a.Subscribe("put_ops", "t1", func(Value) {}); err == nil {
		t.Fatal("bad target accepted")
	}
	r := &recorder{}
	cancel, err := a.Subscribe("put_ops", "tenant:t1", r.add)
	if err != nil {
		t.Fatal(err)
	}
	a.Ingest(sample("A", "put_ops", 0, map[string]float64{"tenant:t1": 1}, nil))
	a.Tick(at(2))
	cancel()
	cancel() // idempotent
	a.Ingest(sample("A", "put_ops", 2, map[string]float64{"tenant:t1": 1}, nil))
	a.Tick(at(4))
	if len(r.values()) != 1 {
		t.Fatalf("values after cancel: %+v", r.values())
	}
	// A custom metric seen on the bus can be subscribed to; it sums by
	// default and merges as its samples say.
	a.Ingest(NodeSample{V: 1, Node: "A", Metric: "queue_depth", StartMs: at(3).UnixMilli(), PeriodMs: 1000, Merge: MergeMax})
	if !a.Known("queue_depth") {
		t.Fatal("custom metric not learned")
	}
	if _, err := a.Subscribe("queue_depth", "tenant:t1", func(Value) {}); err != nil {
		t.Fatal(err)
	}
}

// A subscriber that panics is skipped and counted; others still get
// their values, and may cancel from their callback.
func TestAggregatorSubscriberPanic(t *testing.T) {
	a := NewAggregator(AggregatorConfig{})
	_, err := a.Subscribe("ops", "tenant:t1", func(Value) { panic("controller bug") })
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	var cancel func()
	cancel, err = a.Subscribe("ops", "tenant:t1", func(v Value) { r.add(v); cancel() })
	if err != nil {
		t.Fatal(err)
	}
	a.Ingest(sample("A", "ops", 0, map[string]float64{"tenant:t1": 1}, nil))
	a.Tick(at(2))
	a.Ingest(sample("A", "ops", 1, map[string]float64{"tenant:t1": 1}, nil))
	a.Tick(at(3))
	if len(r.values()) != 1 || a.Stats().Panics != 2 {
		t.Fatalf("values %+v, stats %+v", r.values(), a.Stats())
	}
}

// On the bus: aggregates every period, target values for watched targets
// only (0 included) until the watch lapses, and watches of object targets
// for in-process subscribers.
func TestAggregatorBusOutputs(t *testing.T) {
	b := newMemBus()
	a := NewAggregator(AggregatorConfig{Bus: b})
	ctx, cancel := contextWithCancel(t)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	w, _ := json.Marshal(Watch{V: 1, Metric: "put_ops", Target: "bucket:t1/my.b", TTLMs: 60_000})
	_ = b.Publish(SubjectWatchPrefix+"bucket", w)
	if _, err := a.Subscribe("put_ops", "object:t1/b/hot.txt", func(Value) {}); err != nil {
		t.Fatal(err)
	}
	// Run's goroutine handles the watch; Ingest and Tick here stand in for
	// its loop (the bus is synchronous, the watch is in once Publish
	// returns).
	a.Ingest(sample("A", "put_ops", 0, map[string]float64{"tenant:t1": 1}, nil))
	a.Tick(at(2))
	aggs := b.published(SubjectAggPrefix + "put_ops")
	if len(aggs) != 1 {
		t.Fatalf("%d aggregates", len(aggs))
	}
	var agg Aggregate
	if err := decode(aggs[0].data, &agg, func() int { return agg.V }); err != nil || agg.Values["tenant:t1"] != 1 || agg.StartMs != at(0).UnixMilli() {
		t.Fatalf("aggregate %s: %v", aggs[0].data, err)
	}
	tv := b.published(SubjectAggPrefix + "put_ops.bucket.t1/my%2Eb")
	if len(tv) != 1 {
		t.Fatalf("%d target values for the watched bucket; all: %d", len(tv), len(b.published(">")))
	}
	var v TargetValue
	if err := decode(tv[0].data, &v, func() int { return v.V }); err != nil || v.Target != "bucket:t1/my.b" || v.Value != 0 || v.Nodes != 1 {
		t.Fatalf("target value %s: %v", tv[0].data, err)
	}
	if n := len(b.published(SubjectAggPrefix + "put_ops.tenant.>")); n != 0 {
		t.Fatalf("%d values for unwatched tenants", n)
	}
	watches := b.published(SubjectWatchPrefix + "object")
	found := false
	for _, m := range watches {
		var w Watch
		_ = json.Unmarshal(m.data, &w)
		found = found || w.Target == "object:t1/b/hot.txt"
	}
	if !found {
		t.Fatalf("no watch published for the object subscription: %d watches", len(watches))
	}
	// The lease lapses: no more target values.
	a.Tick(time.Now().Add(time.Hour))
	a.Ingest(sample("A", "put_ops", 1, nil, nil))
	if n := len(b.published(SubjectAggPrefix + "put_ops.bucket.>")); n != 1 {
		t.Fatalf("%d target values after the lease lapsed", n)
	}
}

// A snapshot holds the latest merged period of every metric: merged
// values and each node's own.
func TestAggregatorSnapshot(t *testing.T) {
	a := NewAggregator(AggregatorConfig{})
	warm(a, "put_bw", "A", "B")
	a.Ingest(sample("A", "put_bw", 1, map[string]float64{"tenant:t1": 100}, nil))
	a.Ingest(sample("B", "put_bw", 1, map[string]float64{"tenant:t1": 50, "tenant:t2": 7}, nil))
	got := a.Snapshot()
	want := []SnapshotValue{
		{Metric: "put_bw", Target: "tenant:t1", Value: 150, Period: at(1)},
		{Metric: "put_bw", Target: "tenant:t2", Value: 7, Period: at(1)},
		{Metric: "put_bw", Target: "tenant:t1", Node: "A", Value: 100, Period: at(1)},
		{Metric: "put_bw", Target: "tenant:t1", Node: "B", Value: 50, Period: at(1)},
		{Metric: "put_bw", Target: "tenant:t2", Node: "B", Value: 7, Period: at(1)},
	}
	if len(got) != len(want) {
		t.Fatalf("snapshot %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("snapshot[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}
