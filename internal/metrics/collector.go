package metrics

import (
	"context"
	"encoding/json"
	"hash/maphash"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/obs"
)

// CollectorConfig assembles a Collector.
type CollectorConfig struct {
	// Node names this process in its samples (unique per node).
	Node string
	// Registry holds the modules to run; nil means the built-in ones. The
	// modules registered when the collector is made are the ones it runs.
	Registry *Registry
	// Bus receives one message per metric per period, and brings watches
	// of object targets; nil publishes nothing.
	Bus bus.Bus
	// Period is the sampling period; 0 means one second.
	Period time.Duration
	// EvictAfter is how many idle periods a target's cells are kept (a
	// target that comes back starts afresh); 0 means 10.
	EvictAfter int
	Logger     *slog.Logger
}

// Collector runs metric modules on every S3 request (it is an
// obs.Observer), keeps per-target cells in memory and, every period,
// publishes one NodeSample per metric. The request path costs a few map
// lookups and atomic adds; nothing blocks on the bus.
type Collector struct {
	node       string
	bus        bus.Bus
	period     time.Duration
	evictAfter int
	log        *slog.Logger

	modules  []Module
	infos    []Info
	starters []hook[Starter]
	finisher []hook[Finisher]
	payloads []hook[PayloadWatcher]

	seed   maphash.Seed
	shards [nShards]shard

	// watches are object targets someone asked for, with their expiry.
	watchMu sync.RWMutex
	watches map[tkey]time.Time
	nWatch  atomic.Int32

	flushMu sync.Mutex // one flush at a time
	last    time.Time
	scratch []*target

	stats collectorStats
}

// hook is a module's hook and the module's index among the collector's.
type hook[H any] struct {
	i int
	h H
}

const nShards = 32

type shard struct {
	mu sync.RWMutex
	m  map[tkey]*target
}

// tkey identifies a target: bucket and key are empty for a tenant, key for
// a bucket.
type tkey struct{ tenant, bucket, key string }

func (k tkey) target() Target {
	switch {
	case k.key != "":
		return ObjectTarget(k.tenant, k.bucket, k.key)
	case k.bucket != "":
		return BucketTarget(k.tenant, k.bucket)
	}
	return TenantTarget(k.tenant)
}

// target is one target's cells. A request pins the targets it counts in
// from its start to its end; only an unpinned target that stayed idle is
// evicted, and a pin that races an eviction retries (see pin).
type target struct {
	name  string
	cells []Cell
	refs  atomic.Int64
	dead  atomic.Bool
	idle  int // periods without a sample (flush only)
}

type collectorStats struct {
	periods, messages, bytes, publishErrors, badWatches, evictions atomic.Uint64
}

// CollectorStats are a collector's counters since it started.
type CollectorStats struct {
	Periods uint64
	// Messages and Bytes are what it published (payload bytes).
	Messages, Bytes uint64
	// PublishErrors counts samples the bus refused (they are lost).
	PublishErrors uint64
	// Targets is how many targets have cells now; Evictions how many
	// were dropped for being idle.
	Targets   int
	Evictions uint64
}

// NewCollector returns a collector; call Start to publish every period.
func NewCollector(cfg CollectorConfig) *Collector {
	reg := cfg.Registry
	if reg == nil {
		reg = NewBuiltinRegistry()
	}
	c := &Collector{
		node: cfg.Node, bus: cfg.Bus, period: cfg.Period, evictAfter: cfg.EvictAfter, log: cfg.Logger,
		seed: maphash.MakeSeed(), watches: map[tkey]time.Time{},
	}
	for _, m := range reg.Modules() {
		if _, ok := m.(Elsewhere); !ok {
			c.modules = append(c.modules, m)
		}
	}
	if c.period <= 0 {
		c.period = time.Second
	}
	if c.evictAfter <= 0 {
		c.evictAfter = 10
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	for i := range c.shards {
		c.shards[i].m = map[tkey]*target{}
	}
	for i, m := range c.modules {
		c.infos = append(c.infos, m.Info())
		if h, ok := m.(Starter); ok {
			c.starters = append(c.starters, hook[Starter]{i, h})
		}
		if h, ok := m.(Finisher); ok {
			c.finisher = append(c.finisher, hook[Finisher]{i, h})
		}
		if h, ok := m.(PayloadWatcher); ok {
			c.payloads = append(c.payloads, hook[PayloadWatcher]{i, h})
		}
	}
	return c
}

var _ obs.Observer = (*Collector)(nil)

// reqTargets are the targets one request counts in.
type reqTargets struct {
	n int
	t [3]*target
}

func (rt *reqTargets) cells(i int) Cells {
	cs := Cells{n: rt.n}
	for j := range rt.n {
		cs.c[j] = rt.t[j].cells[i]
	}
	return cs
}

// keys fills ks with the targets o counts in and returns how many: none
// for a request of no tenant.
func (c *Collector) keys(o *obs.Observation, ks *[3]tkey) (n int) {
	if o.Tenant == "" {
		return 0
	}
	ks[0] = tkey{tenant: o.Tenant}
	n = 1
	if o.Bucket != "" {
		ks[1] = tkey{tenant: o.Tenant, bucket: o.Bucket}
		n = 2
		if o.Key != "" && c.nWatch.Load() > 0 && c.watched(tkey{o.Tenant, o.Bucket, o.Key}) {
			ks[2] = tkey{o.Tenant, o.Bucket, o.Key}
			n = 3
		}
	}
	return n
}

// Started implements obs.Observer. The targets it pins travel with the
// request in o.Carry, so that its end counts in the same ones even if a
// watch began or lapsed meanwhile.
func (c *Collector) Started(o *obs.Observation) {
	var ks [3]tkey
	n := c.keys(o, &ks)
	if n == 0 {
		return
	}
	rt := &reqTargets{n: n}
	for i := range n {
		rt.t[i] = c.pin(ks[i])
	}
	o.Carry = rt
	for _, h := range c.starters {
		h.h.Start(o, rt.cells(h.i))
	}
}

// Body implements obs.Observer.
func (c *Collector) Body(o *obs.Observation, r io.Reader) io.Reader {
	rt, _ := o.Carry.(*reqTargets)
	if len(c.payloads) == 0 || rt == nil {
		return r
	}
	var ws []ChunkWatcher
	for _, h := range c.payloads {
		if w := h.h.Payload(o, rt.cells(h.i)); w != nil {
			ws = append(ws, w)
		}
	}
	if ws == nil {
		return r
	}
	return &watchingReader{r: r, w: ws}
}

// Done implements obs.Observer.
func (c *Collector) Done(o *obs.Observation) {
	rt, _ := o.Carry.(*reqTargets)
	if rt == nil {
		return // Started was not called, or counted nothing
	}
	o.Carry = nil
	for _, h := range c.finisher {
		h.h.Finish(o, rt.cells(h.i))
	}
	for i := range rt.n {
		rt.t[i].refs.Add(-1)
	}
}

func (c *Collector) shard(k tkey) *shard {
	// Two string hashes: maphash.Comparable on a struct costs several
	// times more. An object shares its bucket's shard.
	return &c.shards[(maphash.String(c.seed, k.tenant)^maphash.String(c.seed, k.bucket))%nShards]
}

// pin finds or makes k's target and takes a reference on it. The evictor
// marks a target dead and then checks its references; pin takes a
// reference and then checks dead. One of them sees the other: either the
// eviction is called off, or pin retries and finds (or makes) a live one.
func (c *Collector) pin(k tkey) *target {
	sh := c.shard(k)
	for {
		sh.mu.RLock()
		t := sh.m[k]
		sh.mu.RUnlock()
		if t == nil {
			sh.mu.Lock()
			if t = sh.m[k]; t == nil {
				t = &target{name: k.target().String(), cells: make([]Cell, len(c.modules))}
				for i, m := range c.modules {
					t.cells[i] = m.NewCell()
				}
				sh.m[k] = t
			}
			sh.mu.Unlock()
		}
		t.refs.Add(1)
		if !t.dead.Load() {
			return t
		}
		t.refs.Add(-1)
	}
}

// Start follows watches on the bus (Listen), then publishes a sample of
// every metric at the end of each period, aligned to the wall clock
// (periods start at multiples of the period, so that all nodes' periods
// coincide), on a goroutine of its own until ctx ends. A server that owns
// its goroutines calls Listen and Run instead.
func (c *Collector) Start(ctx context.Context) error {
	if err := c.Listen(ctx); err != nil {
		return err
	}
	go c.Run(ctx)
	return nil
}

// Run publishes a sample of every metric at the end of each period until
// ctx ends.
func (c *Collector) Run(ctx context.Context) {
	c.flushMu.Lock()
	if c.last.IsZero() {
		c.last = time.Now()
	}
	c.flushMu.Unlock()
	c.loop(ctx)
}

// Listen follows watches of object targets on the bus until ctx ends,
// without publishing by itself (tests and benchmarks call Flush).
func (c *Collector) Listen(ctx context.Context) error {
	if c.bus == nil {
		return nil
	}
	sub, err := c.bus.Subscribe(SubjectWatchPrefix+string(KindObject), func(_ string, data []byte) { c.onWatch(data) })
	if err != nil {
		return err
	}
	context.AfterFunc(ctx, func() { _ = sub.Unsubscribe() })
	return nil
}

func (c *Collector) loop(ctx context.Context) {
	t := time.NewTimer(time.Until(nextBoundary(time.Now(), c.period)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			c.Flush(now)
			t.Reset(time.Until(nextBoundary(time.Now(), c.period)))
		}
	}
}

// round6 keeps six significant digits: more than any policy threshold
// needs, and it keeps messages short (3/1.0003 s would print 17 digits).
func round6(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	if err != nil {
		return v
	}
	return r
}

func nextBoundary(now time.Time, period time.Duration) time.Time {
	return now.Truncate(period).Add(period)
}

// Flush ends the period that ends at now (rounded down to the period):
// each cell's value goes into one NodeSample per metric, published on the
// bus, and idle targets are evicted. It returns the samples. Start's loop
// calls it; tests and benchmarks may call it directly instead.
func (c *Collector) Flush(now time.Time) []NodeSample {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	elapsed := c.period
	if !c.last.IsZero() {
		elapsed = now.Sub(c.last)
		// A sample is labeled with its aligned period, so a rate is per the
		// boundaries it spans, not per the timer's jitter: 3 requests in
		// 999.9 ms would read 3.0003/s and trip a "> 3" threshold.
		if whole := now.Truncate(c.period).Sub(c.last.Truncate(c.period)); whole > 0 {
			elapsed = whole
		}
	}
	c.last = now
	start := now.Truncate(c.period).Add(-c.period)
	c.expireWatches(time.Now()) // leases run on the wall clock, not the period's

	// Evict before flushing, so that what an evicted target counted since
	// its last flush is still reported.
	ts := c.scratch[:0]
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.RLock()
		evict := false
		for _, t := range sh.m {
			ts = append(ts, t)
			evict = evict || t.idle >= c.evictAfter
		}
		sh.mu.RUnlock()
		if evict {
			c.evict(sh)
		}
	}
	samples := make([]NodeSample, len(c.modules))
	for i, in := range c.infos {
		samples[i] = NodeSample{V: msgVersion, Node: c.node, Metric: in.Name, StartMs: ms(start),
			PeriodMs: c.period.Milliseconds(), Values: map[string]float64{}}
		if in.Merge == MergeMean {
			samples[i].Weights = map[string]float64{}
		}
	}
	for _, t := range ts {
		active := false
		for i, cell := range t.cells {
			s := cell.Flush(elapsed)
			if s.Value == 0 && s.Weight == 0 {
				continue
			}
			active = true
			if samples[i].Weights != nil {
				if s.Weight <= 0 {
					continue
				}
				samples[i].Weights[t.name] = round6(s.Weight)
			}
			samples[i].Values[t.name] = round6(s.Value)
		}
		if active || t.refs.Load() > 0 {
			t.idle = 0
		} else {
			t.idle++
		}
	}
	clear(ts)
	c.scratch = ts[:0]
	c.stats.periods.Add(1)
	if c.bus != nil {
		for _, s := range samples {
			c.publish(SubjectNodePrefix+s.Metric, s)
		}
	}
	return samples
}

// evict drops sh's targets that stayed idle and are not pinned.
func (c *Collector) evict(sh *shard) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for k, t := range sh.m {
		if t.idle < c.evictAfter || t.refs.Load() != 0 {
			continue
		}
		t.dead.Store(true)
		if t.refs.Load() != 0 {
			t.dead.Store(false) // a request pinned it meanwhile
			continue
		}
		delete(sh.m, k)
		c.stats.evictions.Add(1)
	}
}

func (c *Collector) publish(subject string, v any) {
	data, err := json.Marshal(v)
	if err == nil {
		err = c.bus.Publish(subject, data)
	}
	if err != nil {
		// Counted, and logged once in a while: the data path goes on.
		if n := c.stats.publishErrors.Add(1); n&(n-1) == 0 {
			c.log.Warn("metric sample not published", "subject", subject, "errors", n, "err", err)
		}
		return
	}
	c.stats.messages.Add(1)
	c.stats.bytes.Add(uint64(len(data)))
}

// Stats reports the collector's counters.
func (c *Collector) Stats() CollectorStats {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return CollectorStats{
		Periods: c.stats.periods.Load(), Messages: c.stats.messages.Load(), Bytes: c.stats.bytes.Load(),
		PublishErrors: c.stats.publishErrors.Load(), Targets: n, Evictions: c.stats.evictions.Load(),
	}
}

// Period is the collector's sampling period.
func (c *Collector) Period() time.Duration { return c.period }

// Watch makes the collector count an object target until the given time
// (tenants and buckets are always counted).
func (c *Collector) Watch(t Target, until time.Time) {
	if t.Kind != KindObject {
		return
	}
	k := tkey{t.Tenant, t.Bucket, t.Key}
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if _, ok := c.watches[k]; !ok {
		c.nWatch.Add(1)
	}
	if until.After(c.watches[k]) {
		c.watches[k] = until
	}
}

func (c *Collector) onWatch(data []byte) {
	var w Watch
	if err := decode(data, &w, func() int { return w.V }); err != nil {
		c.stats.badWatches.Add(1)
		return
	}
	t, err := ParseTarget(w.Target)
	if err != nil || w.TTLMs <= 0 {
		c.stats.badWatches.Add(1)
		return
	}
	c.Watch(t, time.Now().Add(time.Duration(w.TTLMs)*time.Millisecond))
}

func (c *Collector) watched(k tkey) bool {
	c.watchMu.RLock()
	until, ok := c.watches[k]
	c.watchMu.RUnlock()
	return ok && time.Now().Before(until)
}

func (c *Collector) expireWatches(now time.Time) {
	if c.nWatch.Load() == 0 {
		return
	}
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	for k, until := range c.watches {
		if !now.Before(until) {
			delete(c.watches, k)
			c.nWatch.Add(-1)
		}
	}
}
