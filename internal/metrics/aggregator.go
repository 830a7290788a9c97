package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/facet-sds/facet/internal/bus"
)

// Value is one metric's value for one target over one period, merged
// across nodes.
type Value struct {
	Metric, Target string
	Value          float64
	// Period is the start of the period the value measures.
	Period time.Time
	// Nodes is how many nodes' samples were merged.
	Nodes int
}

// Feed delivers aggregated metric values for one target to a subscriber;
// a subscriber for t1 never receives t2's values. Every period that nodes
// report, a subscriber receives its target's value, 0 when the target saw
// nothing (so that a transient policy can revert).
type Feed interface {
	Subscribe(metric string, target string, fn func(Value)) (cancel func(), err error)
}

// AggregatorConfig assembles an Aggregator.
type AggregatorConfig struct {
	// Registry says how known metrics merge; nil means the built-in ones.
	// Metrics it does not know merge as their samples say (sum by default).
	Registry *Registry
	// Bus brings node samples and watches, and takes aggregates; nil
	// works from Ingest and Tick alone (tests).
	Bus bus.Bus
	// Period is the nodes' period; 0 means one second. Samples announce
	// their own period; this one paces leases and health.
	Period time.Duration
	// Grace is how long after a period's end a merge waits for nodes that
	// have not reported yet; 0 means half a period.
	Grace time.Duration
	// Liveness is how many periods a node stays expected after its last
	// sample; 0 means 3.
	Liveness int
	Logger   *slog.Logger
}

// Aggregator merges nodes' samples per metric, target and period (sum,
// max or weighted mean, as the metric says) and pushes each merged value
// to the subscribers of its target: in-process through Feed, and on the
// bus for watched targets. A period is merged as soon as every live node
// has reported it, or Grace after its end.
type Aggregator struct {
	reg      *Registry
	bus      bus.Bus
	period   time.Duration
	grace    time.Duration
	liveness int
	log      *slog.Logger

	in chan NodeSample

	mu      sync.Mutex
	pending map[string]map[int64]*pendingPeriod // metric, period start (ms)
	emitted map[string]int64                    // metric: last merged period start
	nodes   map[string]int64                    // node: end of its last period (ms)
	merges  map[string]Merge                    // merges learned from samples
	subs    map[subKey]map[*subscription]struct{}
	leases  map[subKey]time.Time // watches from the bus
	latest  map[string]Aggregate
	perNode map[string]map[string]NodeSample // metric, node: the latest merged period's samples
	lastIn  time.Time                        // last sample received
	firstMs int64                            // start of the first period seen; 0 before any
	leased  time.Time                        // last time own object watches were renewed

	stats aggStats
}

type subKey struct{ metric, target string }

type subscription struct {
	key    subKey
	fn     func(Value)
	object bool
}

type pendingPeriod struct {
	periodMs int64
	samples  map[string]NodeSample // by node
}

type aggStats struct {
	samples, late, bad, dropped, published, publishedBytes, publishErrors, panics atomic.Uint64
}

// AggregatorStats are an aggregator's counters since it started.
type AggregatorStats struct {
	// Samples is how many node samples were merged; Late how many came
	// after their period was merged (ignored); Bad how many did not
	// decode; Dropped how many were lost to a full queue.
	Samples, Late, Bad, Dropped uint64
	// Published and PublishedBytes are the aggregates and target values
	// sent on the bus; PublishErrors those the bus refused.
	Published, PublishedBytes, PublishErrors uint64
	// Panics counts subscriber callbacks that panicked (and were skipped).
	Panics uint64
	Nodes  int
}

// NewAggregator returns an aggregator; call Start to follow the bus.
func NewAggregator(cfg AggregatorConfig) *Aggregator {
	a := &Aggregator{
		reg: cfg.Registry, bus: cfg.Bus, period: cfg.Period, grace: cfg.Grace, liveness: cfg.Liveness, log: cfg.Logger,
		in:      make(chan NodeSample, 4096),
		pending: map[string]map[int64]*pendingPeriod{}, emitted: map[string]int64{}, nodes: map[string]int64{},
		merges: map[string]Merge{}, subs: map[subKey]map[*subscription]struct{}{}, leases: map[subKey]time.Time{},
		latest: map[string]Aggregate{}, perNode: map[string]map[string]NodeSample{},
	}
	if a.reg == nil {
		a.reg = NewBuiltinRegistry()
	}
	if a.period <= 0 {
		a.period = time.Second
	}
	if a.grace <= 0 {
		a.grace = a.period / 2
	}
	if a.liveness <= 0 {
		a.liveness = 3
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a
}

var _ Feed = (*Aggregator)(nil)

// Subscribe implements Feed. metric must be registered (or have been seen
// on the bus); target is "tenant:T", "bucket:T/B" or "object:T/B/KEY". fn
// is called on the aggregator's goroutine, one value at a time: it must
// not block (hand the value over to its own goroutine), and a panic in it
// is recovered and counted. Subscribing to an object target asks the
// nodes to count that object.
func (a *Aggregator) Subscribe(metric, target string, fn func(Value)) (func(), error) {
	if fn == nil {
		return nil, errors.New("subscribe: nil callback")
	}
	t, err := ParseTarget(target)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.mergeOf(metric); !ok {
		return nil, fmt.Errorf("subscribe: unknown metric %q", metric)
	}
	s := &subscription{key: subKey{metric, t.String()}, fn: fn, object: t.Kind == KindObject}
	set := a.subs[s.key]
	if set == nil {
		set = map[*subscription]struct{}{}
		a.subs[s.key] = set
	}
	set[s] = struct{}{}
	if s.object {
		a.leased = time.Time{} // announce the new watch at the next tick
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			delete(a.subs[s.key], s)
			if len(a.subs[s.key]) == 0 {
				delete(a.subs, s.key)
			}
		})
	}, nil
}

// mergeOf says how metric merges, and whether it is known. The caller
// holds a.mu.
func (a *Aggregator) mergeOf(metric string) (Merge, bool) {
	if in, ok := a.reg.Lookup(metric); ok {
		return in.Merge, true
	}
	m, ok := a.merges[metric]
	return m, ok
}

// Start subscribes to node samples and watches on the bus, then merges
// periods on a goroutine of its own until ctx ends. Once it returns, the
// subscriptions are made (a NATS bus still sends them asynchronously:
// flush the connection to be sure the server has them). A server that
// owns its goroutines calls Listen and Run instead.
func (a *Aggregator) Start(ctx context.Context) error {
	if err := a.Listen(ctx); err != nil {
		return err
	}
	go a.Run(ctx)
	return nil
}

// Listen subscribes to node samples and watches on the bus until ctx
// ends; Run merges what they bring.
func (a *Aggregator) Listen(ctx context.Context) error {
	if a.bus != nil {
		s1, err := a.bus.Subscribe(SubjectNodePrefix+"*", func(_ string, data []byte) { a.receive(data) })
		if err != nil {
			return err
		}
		s2, err := a.bus.Subscribe(SubjectWatchPrefix+"*", func(_ string, data []byte) { a.onWatch(data) })
		if err != nil {
			_ = s1.Unsubscribe()
			return err
		}
		context.AfterFunc(ctx, func() {
			_ = s1.Unsubscribe()
			_ = s2.Unsubscribe()
		})
	}
	return nil
}

// Run merges periods until ctx ends.
func (a *Aggregator) Run(ctx context.Context) { a.loop(ctx) }

func (a *Aggregator) loop(ctx context.Context) {
	tick := time.NewTicker(max(a.period/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-a.in:
			a.Ingest(s)
		case now := <-tick.C:
			a.Tick(now)
		}
	}
}

// receive decodes a sample from the bus and queues it for the loop.
func (a *Aggregator) receive(data []byte) {
	var s NodeSample
	if err := decode(data, &s, func() int { return s.V }); err != nil || s.Metric == "" || s.Node == "" || s.PeriodMs <= 0 {
		if n := a.stats.bad.Add(1); n&(n-1) == 0 {
			a.log.Warn("bad metric sample on the bus", "count", n, "err", err)
		}
		return
	}
	select {
	case a.in <- s:
	default:
		a.stats.dropped.Add(1)
	}
}

func (a *Aggregator) onWatch(data []byte) {
	var w Watch
	if err := decode(data, &w, func() int { return w.V }); err != nil || w.TTLMs <= 0 || w.Metric == "" {
		a.stats.bad.Add(1)
		return
	}
	t, err := ParseTarget(w.Target)
	if err != nil {
		a.stats.bad.Add(1)
		return
	}
	until := time.Now().Add(time.Duration(w.TTLMs) * time.Millisecond)
	a.mu.Lock()
	k := subKey{w.Metric, t.String()}
	if until.After(a.leases[k]) {
		a.leases[k] = until
	}
	a.mu.Unlock()
}

// delivery is a value for a subscriber, handed over once a.mu is
// released.
type delivery struct {
	fn func(Value)
	v  Value
}

// Ingest merges one node sample. Start's loop calls it for samples from
// the bus; tests may call it directly.
func (a *Aggregator) Ingest(s NodeSample) {
	a.mu.Lock()
	var out []delivery
	var pubs []pub
	a.lastIn = time.Now()
	if a.firstMs == 0 {
		a.firstMs = s.StartMs
	}
	if s.Merge != "" {
		if _, ok := a.reg.Lookup(s.Metric); !ok {
			a.merges[s.Metric] = s.Merge
		}
	} else if _, ok := a.mergeOf(s.Metric); !ok {
		a.merges[s.Metric] = MergeSum
	}
	// A late node is a live one: it is waited for next time.
	if end := s.StartMs + s.PeriodMs; end > a.nodes[s.Node] {
		a.nodes[s.Node] = end
	}
	if last, ok := a.emitted[s.Metric]; ok && s.StartMs <= last {
		a.stats.late.Add(1)
		a.mu.Unlock()
		return
	}
	a.stats.samples.Add(1)
	per := a.pending[s.Metric]
	if per == nil {
		per = map[int64]*pendingPeriod{}
		a.pending[s.Metric] = per
	}
	p := per[s.StartMs]
	if p == nil {
		p = &pendingPeriod{periodMs: s.PeriodMs, samples: map[string]NodeSample{}}
		per[s.StartMs] = p
	}
	p.samples[s.Node] = s
	if a.complete(s.StartMs, s.PeriodMs, p) {
		out, pubs = a.emitUpTo(s.Metric, s.StartMs, out, pubs)
	}
	a.mu.Unlock()
	a.deliver(out, pubs)
}

// complete reports whether every live node has reported the period. A
// node is live when its last sample ended within Liveness periods of this
// period's start. The first period an aggregator sees is never complete
// early: it does not know the nodes yet, so it waits out the grace.
func (a *Aggregator) complete(startMs, periodMs int64, p *pendingPeriod) bool {
	if startMs <= a.firstMs {
		return false
	}
	horizon := startMs - int64(a.liveness)*periodMs
	for node, end := range a.nodes {
		if end <= horizon {
			continue
		}
		if _, ok := p.samples[node]; !ok {
			return false
		}
	}
	return true
}

// Tick merges the periods that waited long enough (Grace past their end),
// renews watches of object targets and forgets lapsed ones. Start's loop calls it;
// tests may call it directly.
func (a *Aggregator) Tick(now time.Time) {
	a.mu.Lock()
	var out []delivery
	var pubs []pub
	for metric, per := range a.pending {
		var due int64 = -1 << 62
		for start, p := range per {
			if time.UnixMilli(start + p.periodMs).Add(a.grace).After(now) {
				continue
			}
			due = max(due, start)
		}
		if due > -1<<62 {
			out, pubs = a.emitUpTo(metric, due, out, pubs)
		}
	}
	for k, until := range a.leases {
		if !now.Before(until) {
			delete(a.leases, k)
		}
	}
	horizon := now.Add(-time.Duration(a.liveness+1) * a.period).UnixMilli()
	for node, end := range a.nodes {
		if end < horizon {
			delete(a.nodes, node)
		}
	}
	if a.bus != nil && now.Sub(a.leased) >= a.watchTTL()/3 {
		a.leased = now
		for k, set := range a.subs {
			for s := range set {
				if s.object {
					pubs = append(pubs, pub{SubjectWatchPrefix + string(KindObject), Watch{V: msgVersion, Metric: k.metric, Target: k.target, TTLMs: a.watchTTL().Milliseconds()}})
					break
				}
			}
		}
	}
	a.mu.Unlock()
	a.deliver(out, pubs)
}

func (a *Aggregator) watchTTL() time.Duration { return 10 * a.period }

// pub is a message for the bus, sent once a.mu is released.
type pub struct {
	subject string
	msg     any
}

// emitUpTo merges metric's pending periods up to and including start, in
// order. The caller holds a.mu.
func (a *Aggregator) emitUpTo(metric string, start int64, out []delivery, pubs []pub) ([]delivery, []pub) {
	per := a.pending[metric]
	starts := slices.Sorted(maps.Keys(per))
	merge, _ := a.mergeOf(metric)
	for _, st := range starts {
		if st > start {
			break
		}
		p := per[st]
		delete(per, st)
		agg := mergeSamples(metric, st, p, merge)
		a.emitted[metric] = st
		a.latest[metric] = agg
		a.perNode[metric] = p.samples
		period := time.UnixMilli(st)
		pubs = append(pubs, pub{SubjectAggPrefix + metric, agg})
		for k, set := range a.subs {
			if k.metric != metric {
				continue
			}
			v := Value{Metric: metric, Target: k.target, Value: agg.Values[k.target], Period: period, Nodes: agg.Nodes}
			for s := range set {
				out = append(out, delivery{s.fn, v})
			}
		}
		for k := range a.leases {
			if k.metric != metric {
				continue
			}
			t, err := ParseTarget(k.target)
			if err != nil {
				continue
			}
			pubs = append(pubs, pub{SubjectAggPrefix + metric + "." + t.subjectTokens(), TargetValue{
				V: msgVersion, Metric: metric, Target: k.target, Value: agg.Values[k.target],
				StartMs: st, PeriodMs: p.periodMs, Nodes: agg.Nodes,
			}})
		}
	}
	if len(per) == 0 {
		delete(a.pending, metric)
	}
	return out, pubs
}

// mergeSamples merges one period's node samples.
func mergeSamples(metric string, start int64, p *pendingPeriod, merge Merge) Aggregate {
	agg := Aggregate{V: msgVersion, Metric: metric, StartMs: start, PeriodMs: p.periodMs, Nodes: len(p.samples), Values: map[string]float64{}}
	switch merge {
	case MergeMax:
		for _, s := range p.samples {
			for t, v := range s.Values {
				if cur, ok := agg.Values[t]; !ok || v > cur {
					agg.Values[t] = v
				}
			}
		}
	case MergeMean:
		weights := map[string]float64{}
		for _, s := range p.samples {
			for t, v := range s.Values {
				w := s.Weights[t]
				if w <= 0 {
					continue
				}
				agg.Values[t] += v * w
				weights[t] += w
			}
		}
		for t, w := range weights {
			agg.Values[t] /= w
		}
	default:
		for _, s := range p.samples {
			for t, v := range s.Values {
				agg.Values[t] += v
			}
		}
	}
	return agg
}

// deliver calls subscribers and publishes, outside a.mu.
func (a *Aggregator) deliver(out []delivery, pubs []pub) {
	for _, d := range out {
		a.call(d)
	}
	if a.bus == nil {
		return
	}
	for _, p := range pubs {
		data, err := json.Marshal(p.msg)
		if err == nil {
			err = a.bus.Publish(p.subject, data)
		}
		if err != nil {
			if n := a.stats.publishErrors.Add(1); n&(n-1) == 0 {
				a.log.Warn("metric aggregate not published", "subject", p.subject, "errors", n, "err", err)
			}
			continue
		}
		a.stats.published.Add(1)
		a.stats.publishedBytes.Add(uint64(len(data)))
	}
}

func (a *Aggregator) call(d delivery) {
	defer func() {
		if r := recover(); r != nil {
			a.stats.panics.Add(1)
			a.log.Error("metric subscriber panicked", "metric", d.v.Metric, "target", d.v.Target, "panic", fmt.Sprint(r))
		}
	}()
	d.fn(d.v)
}

// Latest returns a metric's last merged period, and whether there is one.
func (a *Aggregator) Latest(metric string) (Aggregate, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	agg, ok := a.latest[metric]
	if ok {
		agg.Values = maps.Clone(agg.Values)
	}
	return agg, ok
}

// SnapshotValue is one value of a snapshot: merged across nodes (Node is
// empty) or measured on one node.
type SnapshotValue struct {
	Metric, Target, Node string
	Value                float64
	Period               time.Time
}

// Snapshot returns the latest merged period of every metric: the merged
// value of each target, and each node's own values of that period. It is
// what a global controller computes assignments from.
func (a *Aggregator) Snapshot() []SnapshotValue {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []SnapshotValue
	for _, metric := range slices.Sorted(maps.Keys(a.latest)) {
		agg := a.latest[metric]
		period := time.UnixMilli(agg.StartMs)
		for _, t := range slices.Sorted(maps.Keys(agg.Values)) {
			out = append(out, SnapshotValue{Metric: metric, Target: t, Value: agg.Values[t], Period: period})
		}
		nodes := a.perNode[metric]
		for _, node := range slices.Sorted(maps.Keys(nodes)) {
			vals := nodes[node].Values
			for _, t := range slices.Sorted(maps.Keys(vals)) {
				out = append(out, SnapshotValue{Metric: metric, Target: t, Node: node, Value: vals[t], Period: period})
			}
		}
	}
	return out
}

// Known reports whether metric is registered or has been seen on the bus.
func (a *Aggregator) Known(metric string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.mergeOf(metric)
	return ok
}

// Healthy reports whether values are flowing: a node sample arrived
// within Liveness periods and, when the bus can tell, it is connected.
// While it is not, controllers should hold their decisions rather than
// read the silence as an idle workload.
func (a *Aggregator) Healthy() bool {
	if c, ok := a.bus.(interface{ Connected() bool }); ok && !c.Connected() {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.lastIn.IsZero() && time.Since(a.lastIn) <= time.Duration(a.liveness)*a.period
}

// Stats reports the aggregator's counters.
func (a *Aggregator) Stats() AggregatorStats {
	a.mu.Lock()
	n := len(a.nodes)
	a.mu.Unlock()
	return AggregatorStats{
		Samples: a.stats.samples.Load(), Late: a.stats.late.Load(), Bad: a.stats.bad.Load(), Dropped: a.stats.dropped.Load(),
		Published: a.stats.published.Load(), PublishedBytes: a.stats.publishedBytes.Load(),
		PublishErrors: a.stats.publishErrors.Load(), Panics: a.stats.panics.Load(), Nodes: n,
	}
}
