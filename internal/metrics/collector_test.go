package metrics

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/obs"
)

// Each period publishes exactly one message per metric, whatever the
// number of requests (none included), with the period's aligned start.
func TestCollectorPublishesOneMessagePerMetricPerPeriod(t *testing.T) {
	b := newMemBus()
	c := NewCollector(CollectorConfig{Node: "n1", Bus: b})
	for i := range 500 {
		serve(t, c, req("PutObject", fmt.Sprintf("t%d", i%7), "b", "k"), []byte("abc"))
	}
	c.Flush(at(1).Add(3 * time.Millisecond)) // the timer fires a little late
	c.Flush(at(2))                           // an idle period
	msgs := b.published(SubjectNodePrefix + ">")
	nMetrics := len(NewCollector(CollectorConfig{}).modules) // the volume metrics are the block stage's
	if len(msgs) != 2*nMetrics {
		t.Fatalf("%d messages for 2 periods of %d metrics", len(msgs), nMetrics)
	}
	seen := map[string]int{}
	for i, m := range msgs {
		var s NodeSample
		if err := decode(m.data, &s, func() int { return s.V }); err != nil {
			t.Fatal(err)
		}
		if m.subject != SubjectNodePrefix+s.Metric || s.Node != "n1" || s.PeriodMs != 1000 {
			t.Fatalf("message on %s: %+v", m.subject, s)
		}
		wantStart := at(0)
		if i >= nMetrics {
			wantStart = at(1)
			if len(s.Values) != 0 {
				t.Fatalf("idle period carries values: %s", m.data)
			}
		}
		if s.StartMs != wantStart.UnixMilli() {
			t.Fatalf("period start %d, want %d", s.StartMs, wantStart.UnixMilli())
		}
		seen[s.Metric]++
	}
	for _, m := range Builtin() {
		want := 2
		if _, ok := m.(Elsewhere); ok {
			want = 0 // the block stage publishes them under the same node
		}
		if seen[m.Info().Name] != want {
			t.Fatalf("metric %s published %d times", m.Info().Name, seen[m.Info().Name])
		}
	}
	var s NodeSample
	_ = json.Unmarshal(msgs[2].data, &s) // put_ops
	if s.Metric != "put_ops" || s.Values["tenant:t3"] < 71 || s.Values["bucket:t3/b"] != s.Values["tenant:t3"] {
		t.Fatalf("put_ops sample %s", msgs[2].data)
	}
	st := c.Stats()
	if st.Messages != uint64(2*nMetrics) || st.Periods != 2 || st.PublishErrors != 0 {
		t.Fatalf("stats %+v", st)
	}
	var bytes uint64
	for _, m := range msgs {
		bytes += uint64(len(m.data))
	}
	if st.Bytes != bytes {
		t.Fatalf("stats count %d bytes, bus saw %d", st.Bytes, bytes)
	}
}

// A failing bus is counted, never fatal, and counting goes on.
func TestCollectorBusErrorsAreCounted(t *testing.T) {
	c := NewCollector(CollectorConfig{Node: "n1", Bus: &failingBus{}, Registry: NewRegistry(PutOps())})
	serve(t, c, req("PutObject", "t1", "b", "k"), nil)
	s := c.Flush(at(1))
	if s[0].Values["tenant:t1"] != 1 || c.Stats().PublishErrors != 1 || c.Stats().Messages != 0 {
		t.Fatalf("samples %+v stats %+v", s, c.Stats())
	}
}

type failingBus struct{ memBus }

func (*failingBus) Publish(string, []byte) error { return fmt.Errorf("bus down") }

// Objects are counted only while watched; tenants and buckets always.
func TestCollectorObjectWatch(t *testing.T) {
	b := newMemBus()
	c := NewCollector(CollectorConfig{Node: "n1", Bus: b, Registry: NewRegistry(PutOps(), ActiveRequests())})
	ctx, cancel := contextWithCancel(t)
	defer cancel()
	if err := c.Listen(ctx); err != nil {
		t.Fatal(err)
	}

	serve(t, c, req("PutObject", "t1", "b1", "hot"), nil)
	if v := flush(c, at(1))["put_ops"].Values; len(v) != 2 {
		t.Fatalf("unwatched object counted: %v", v)
	}
	// A request in flight when the watch begins ends in the targets it
	// started in: the gauge of the object never goes negative.
	inflight := req("PutObject", "t1", "b1", "hot")
	inflight.Routed = true
	c.Started(inflight)
	w, _ := json.Marshal(Watch{V: 1, Metric: "put_ops", Target: "object:t1/b1/hot", TTLMs: 60_000})
	if err := b.Publish(SubjectWatchPrefix+"object", w); err != nil {
		t.Fatal(err)
	}
	serve(t, c, req("PutObject", "t1", "b1", "hot"), nil)
	serve(t, c, req("PutObject", "t1", "b1", "cold"), nil)
	s := flush(c, at(2))
	wantValues(t, s["put_ops"], map[string]float64{"tenant:t1": 3, "bucket:t1/b1": 3, "object:t1/b1/hot": 1})
	wantValues(t, s["active_requests"], map[string]float64{"tenant:t1": 1, "bucket:t1/b1": 1})
	c.Done(inflight)
	wantValues(t, flush(c, at(3))["active_requests"], map[string]float64{})

	// A watch that lapses stops the counting.
	c.Watch(ObjectTarget("t1", "b1", "brief"), time.Now().Add(-time.Second))
	serve(t, c, req("PutObject", "t1", "b1", "brief"), nil)
	if v := flush(c, at(4))["put_ops"].Values; v["object:t1/b1/brief"] != 0 {
		t.Fatalf("lapsed watch counted: %v", v)
	}
	bad := []string{`{"v":2,"metric":"put_ops","target":"object:t1/b1/x","ttl_ms":1000}`, `{"v":1,"target":"nope","ttl_ms":1}`, `not json`}
	for _, m := range bad {
		_ = b.Publish(SubjectWatchPrefix+"object", []byte(m))
	}
	if n := c.stats.badWatches.Load(); n != 3 {
		t.Fatalf("bad watches counted %d", n)
	}
}

// Idle targets are evicted after EvictAfter periods; one with a request
// in flight is not; a target that comes back starts afresh.
func TestCollectorEviction(t *testing.T) {
	c := NewCollector(CollectorConfig{Node: "n1", EvictAfter: 2, Registry: NewRegistry(PutOps(), ActiveRequests())})
	serve(t, c, req("PutObject", "t1", "b1", "k"), nil)
	long := req("PutObject", "t2", "b2", "k")
	long.Routed = true
	c.Started(long)
	var s map[string]NodeSample
	for i := 1; i <= 4; i++ {
		s = flush(c, at(i))
	}
	if n := c.Stats().Targets; n != 2 {
		t.Fatalf("%d targets left, want t2's two (in flight)", n)
	}
	wantValues(t, s["active_requests"], map[string]float64{"tenant:t2": 1, "bucket:t2/b2": 1})
	c.Done(long)
	serve(t, c, req("PutObject", "t1", "b1", "k"), nil)
	s = flush(c, at(5))
	wantValues(t, s["put_ops"], map[string]float64{"tenant:t1": 1, "bucket:t1/b1": 1})
	wantValues(t, s["active_requests"], map[string]float64{})
	for i := 6; i <= 9; i++ {
		flush(c, at(i))
	}
	if n := c.Stats().Targets; n != 0 {
		t.Fatalf("%d idle targets kept", n)
	}
}

// Many requests racing flushes that evict as eagerly as possible: every
// request is counted exactly once, and no gauge is left over.
func TestCollectorConcurrentNoLoss(t *testing.T) {
	c := NewCollector(CollectorConfig{Node: "n1", EvictAfter: 1, Registry: NewRegistry(PutOps(), ActiveRequests())})
	const workers, perWorker = 8, 3000
	var wg sync.WaitGroup
	var stop atomic.Bool
	var counted float64
	var i int // flushes so far, one second of t0-time apart
	flushes := make(chan struct{})
	go func() {
		defer close(flushes)
		for i = 1; !stop.Load(); i++ {
			counted += c.Flush(at(i))[0].Values["tenant:t1"]
		}
	}()
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				// A few buckets, each idle now and then, so that they are
				// evicted and come back while requests race.
				serve(t, c, req("PutObject", "t1", fmt.Sprintf("b%d", (w+i)%5), "k"), nil)
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	<-flushes
	racing := c.Stats().Evictions
	t.Logf("%d flushes, %d evictions while requests ran", i, racing)
	s := c.Flush(at(i))
	counted += s[0].Values["tenant:t1"]
	if len(s[1].Values) != 0 {
		t.Fatalf("gauges left over: %v", s[1].Values)
	}
	// Every flush lasted one second of t0-time: values are counts.
	if counted != workers*perWorker {
		t.Fatalf("counted %v of %d requests", counted, workers*perWorker)
	}
}

// A request refused before routing (no tenant) counts nowhere.
func TestCollectorIgnoresUnrouted(t *testing.T) {
	c := newTestCollector(Ops())
	o := &obs.Observation{Op: "GetObject", Status: 403}
	c.Started(o)
	c.Done(o)
	if v := flush(c, at(1))["ops"].Values; len(v) != 0 || c.Stats().Targets != 0 {
		t.Fatalf("unrouted request counted: %v", v)
	}
}

func TestRound6(t *testing.T) {
	for in, want := range map[float64]float64{0: 0, 3 / 1.0003: 2.9991, 123456789: 123457000, 0.000123456789: 0.000123457, -2.5: -2.5} {
		if got := round6(in); got != want {
			t.Errorf("round6(%v) = %v, want %v", in, got, want)
		}
	}
}

// A rate is per aligned period: a timer that fires a little late, then on
// time, does not turn 3 requests into 3.0003/s (over a "> 3" threshold).
func TestCollectorRatePerAlignedPeriod(t *testing.T) {
	c := NewCollector(CollectorConfig{Node: "n1", Registry: NewRegistry(PutOps())})
	c.Flush(at(1).Add(300 * time.Microsecond))
	for range 3 {
		serve(t, c, req("PutObject", "t1", "b", "k"), nil)
	}
	if v := c.Flush(at(2).Add(100 * time.Microsecond))[0].Values["tenant:t1"]; v != 3 {
		t.Fatalf("3 PUTs in a period read %v/s", v)
	}
	// A missed boundary: the sample spans two periods.
	for range 4 {
		serve(t, c, req("PutObject", "t1", "b", "k"), nil)
	}
	if v := c.Flush(at(4).Add(time.Millisecond))[0].Values["tenant:t1"]; v != 2 {
		t.Fatalf("4 PUTs over two periods read %v/s", v)
	}
}
