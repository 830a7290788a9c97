package qos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/facet-sds/facet/internal/admit"
)

// LimiterConfig configures a Limiter.
type LimiterConfig struct {
	// Node names this node in reports and assignments.
	Node string
	// Stage is where the limiter enforces (StageGateway by default).
	Stage string
	// Chunk is the largest piece of a stream paid for at once (default
	// 64 KiB); it is the least burst of the byte buckets.
	Chunk int64
	// OpsQueue is how long an operation over its tenant's ops rate may
	// wait for a token before it is refused with SlowDown (default 250 ms).
	OpsQueue time.Duration
	// OpsLine is how far ahead an operation refused with SlowDown may keep
	// its place in line for its retry, when the client names its retries
	// (admit.RetryKey); default 10 s. Beyond it, a refusal keeps nothing.
	OpsLine time.Duration
	// Rand returns a number in [0, 1): the jitter that spreads the
	// Retry-After of refusals. Default math/rand/v2's Float64.
	Rand func() float64
	// SLOs gives tenants' SLOs for static local rates (limits) and ops
	// rates; nil means none.
	SLOs SLOSource
	// Stale is how long the last assignment is kept once assignments stop
	// arriving; after it, flows fall back to static local rates (their
	// SLO limits). Default 10 s.
	Stale time.Duration
	// Capacity is this node's configured capacity in bytes/s, reported to
	// the controller; 0 lets the controller estimate it.
	Capacity float64
	// Throttled, when set, is told how long each tenant's streams waited
	// for tokens (facet_throttled_seconds_total), once per report.
	Throttled func(tenant string, d time.Duration)
	// Disabled passes everything through unmeasured: QoS off.
	Disabled bool
	Now      func() time.Time
	Logger   *slog.Logger
}

// Limiter enforces the flows of one node: it admits operations through
// each flow's ops bucket and shapes bytes through its byte bucket, at the
// rates the global controller assigns (or static local rates without one).
// It counts what each flow asked for and got, for the controller and the
// /bw views. Safe for concurrent use.
type Limiter struct {
	cfg LimiterConfig
	log *slog.Logger

	mu         sync.RWMutex
	flows      map[flowKey]*flow
	assigned   map[flowKey]float64 // this node's rates from the controller
	assignedOp map[flowKey]float64 // this node's operations rates from it
	assignedAt time.Time           // when the last assignment message arrived
	assigner   string              // the controller instance that sent it
	seq        uint64
	lastReport time.Time
	// started is when the limiter was made: until the first assignment,
	// provisional shares wait for one as long as a live controller's
	// assignment would be kept (Stale).
	started    time.Time
	background atomic.Uint64 // numbers background operations' retry keys
}

type flowKey struct {
	tenant string
	class  Class
}

type flow struct {
	key   flowKey
	bytes *Meter // bytes moved and time waited for byte tokens
	ops   *Bucket

	streams  atomic.Int64 // open now
	peak     atomic.Int64 // most open at once this period
	opsDone  atomic.Int64 // admitted operations, cumulative
	queued   atomic.Int64 // of them, those that waited for their token
	rejected atomic.Int64 // operations refused with SlowDown, cumulative

	// tickets are the places in line of operations refused with
	// SlowDown, by retry key: when each one's token is paid.
	tmu     sync.Mutex
	tickets map[string]time.Time

	// Guarded by Limiter.mu (write): the rate in force and why, and the
	// counters at the last report.
	rate, opsRate float64
	source        string
	opsSource     string
	last          counters
}

type counters struct{ served, waitNs, ops, queued, rejected int64 }

// Rate sources, as reported.
const (
	SourceAssigned = "assigned" // the global controller's assignment
	SourceStatic   = "static"   // the SLO's limit (no live controller)
	SourceNone     = "none"     // unlimited
	// SourceProvisional is a flow the controller has not named yet on a
	// node with a configured capacity: it runs at its reservation or an
	// equal share of what the assignment leaves unassigned, never
	// unshaped, until the controller's next period names it.
	SourceProvisional = "provisional"
)

// NewLimiter returns a limiter with no flows.
func NewLimiter(cfg LimiterConfig) *Limiter {
	if cfg.Stage == "" {
		cfg.Stage = StageGateway
	}
	if cfg.Chunk <= 0 {
		cfg.Chunk = 64 << 10
	}
	if cfg.OpsQueue <= 0 {
		cfg.OpsQueue = 250 * time.Millisecond
	}
	if cfg.OpsLine <= 0 {
		cfg.OpsLine = 10 * time.Second
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Stale <= 0 {
		cfg.Stale = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Limiter{cfg: cfg, log: cfg.Logger, flows: map[flowKey]*flow{}, assigned: map[flowKey]float64{}, assignedOp: map[flowKey]float64{}, lastReport: cfg.Now(), started: cfg.Now()}
}

// Node is the node the limiter enforces on.
func (l *Limiter) Node() string { return l.cfg.Node }

// SlowDownError refuses an operation over its flow's ops rate.
type SlowDownError struct {
	Flow FlowID
	// After is when a token will be there: the Retry-After.
	After time.Duration
}

func (e *SlowDownError) Error() string {
	return fmt.Sprintf("qos: %s over its operations rate; retry after %v", e.Flow, e.After)
}

// RetryAfter is how long the client should wait.
func (e *SlowDownError) RetryAfter() time.Duration { return e.After }

// AdmitBackground admits one operation of Facet's own work in tenant's
// background class, waiting out SlowDown rather than failing: background
// work is paced by its flow, never refused.
func (l *Limiter) AdmitBackground(ctx context.Context, tenant string) (*Stream, error) {
	// A retry key of its own keeps the operation's place in line between
	// its tries, as an SDK's calls do.
	ctx = admit.WithRetryKey(ctx, fmt.Sprintf("facet-background-%d", l.background.Add(1)))
	for {
		st, err := l.Admit(ctx, tenant, ClassBackground)
		var sd *SlowDownError
		if !errors.As(err, &sd) {
			return st, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(sd.After):
		}
	}
}

// Admit admits one operation of tenant's class: at once, after a brief
// queue, or not at all (a *SlowDownError whose RetryAfter says when to
// come back). The returned Stream shapes the operation's bytes; call Done
// when the operation ends.
func (l *Limiter) Admit(ctx context.Context, tenant string, class Class) (*Stream, error) {
	if l.cfg.Disabled {
		return &Stream{ctx: ctx}, nil
	}
	f := l.flow(tenant, class)
	if err := l.takeOp(ctx, f); err != nil {
		return nil, err
	}
	f.opsDone.Add(1)
	n := f.streams.Add(1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return &Stream{f: f, ctx: ctx, chunk: int(l.cfg.Chunk)}, nil
}

// MaxTickets bounds the places in line one flow keeps for refused
// operations (a client names its retries freely).
const MaxTickets = 4096

// takeOp takes one token of f's operations bucket, in line:
//
//   - a token due within the queue bound (OpsQueue) is waited for, in
//     arrival order;
//   - an operation whose token is further away and whose client names its
//     retries (admit.RetryKey, an SDK's invocation id) takes its place in
//     line all the same, up to OpsLine ahead, and is refused at once with
//     a Retry-After that brings its retry back when its token is due: the
//     retry, under the same key, is admitted then (waiting for its turn
//     if it comes back early). Without the place, a
//     retry would meet the line full again of operations that never left
//     it (each admitted client's next request takes the place it left),
//     and fail;
//   - any other is held for the queue bound (a client that ignores
//     Retry-After cannot spin), then refused with the line's length,
//     spread by up to a half again so that refused clients come back
//     apart.
func (l *Limiter) takeOp(ctx context.Context, f *flow) error {
	q := l.cfg.OpsQueue
	key := admit.RetryKey(ctx)
	if key != "" {
		if due, ok := f.takeTicket(key); ok {
			// Its place: at once when it is back late, else it waits for
			// its turn (an SDK that does not read x-amz-retry-after comes
			// back at a random time; refused again, its last attempt
			// would fail).
			return l.queue(ctx, f, due.Sub(l.cfg.Now()))
		}
	}
	wait, ok := f.ops.Reserve(1, q)
	if ok {
		return l.queue(ctx, f, wait)
	}
	f.rejected.Add(1)
	if key != "" {
		if wait, ok := f.hold(key, l.cfg.OpsLine, l.cfg.Now); ok {
			return &SlowDownError{Flow: l.id(f.key), After: wait}
		}
	}
	t := time.NewTimer(q)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	after := max(wait-q, time.Millisecond)
	after += time.Duration(l.cfg.Rand() * float64(wait) / 2)
	return &SlowDownError{Flow: l.id(f.key), After: after}
}

// queue waits for an operation's token, due in wait.
func (l *Limiter) queue(ctx context.Context, f *flow, wait time.Duration) error {
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	f.bytes.waitNs.Add(int64(wait))
	f.queued.Add(1)
	return nil
}

// takeTicket returns and forgets the place in line key holds.
func (f *flow) takeTicket(key string) (time.Time, bool) {
	f.tmu.Lock()
	defer f.tmu.Unlock()
	due, ok := f.tickets[key]
	delete(f.tickets, key)
	return due, ok
}

// hold takes a token for key up to line ahead and remembers when it is
// due; false when the line is longer or the flow keeps MaxTickets.
func (f *flow) hold(key string, line time.Duration, now func() time.Time) (time.Duration, bool) {
	f.tmu.Lock()
	defer f.tmu.Unlock()
	if len(f.tickets) >= MaxTickets {
		return 0, false
	}
	wait, ok := f.ops.Reserve(1, line)
	if !ok {
		return 0, false
	}
	if f.tickets == nil {
		f.tickets = map[string]time.Time{}
	}
	f.tickets[key] = now().Add(wait)
	return wait, true
}

// TicketGrace is how long after its token was due a place in line waits
// for its retry: longer than an SDK's longest backoff (20 s for boto3).
const TicketGrace = 30 * time.Second

// sweepTickets forgets the places whose retries did not come; it reports
// how many are left.
func (f *flow) sweepTickets(now time.Time) int {
	f.tmu.Lock()
	defer f.tmu.Unlock()
	for k, due := range f.tickets {
		if now.Sub(due) > TicketGrace {
			delete(f.tickets, k)
		}
	}
	return len(f.tickets)
}

func (l *Limiter) id(k flowKey) FlowID {
	return FlowID{Tenant: k.tenant, Class: k.class, Node: l.cfg.Node, Stage: l.cfg.Stage}
}

func (l *Limiter) flow(tenant string, class Class) *flow {
	k := flowKey{tenant, class}
	l.mu.RLock()
	f := l.flows[k]
	l.mu.RUnlock()
	if f != nil {
		return f
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if f = l.flows[k]; f != nil {
		return f
	}
	f = &flow{key: k, bytes: NewMeter(Unlimited, l.cfg.Chunk, l.cfg.Now), ops: NewBucketClock(Unlimited, 1, l.cfg.Now), rate: math.Inf(1), opsRate: math.Inf(1)}
	l.flows[k] = f
	now := l.cfg.Now()
	pv := l.provisionalLocked(now, f)
	l.applyLocked(f, now, pv)
	if !math.IsInf(pv.room, 1) {
		// The other provisional flows share with the new one from now.
		pv.flows++
		pv.reserved += SLOOf(l.cfg.SLOs, tenant, class).ReservationOf(class)
		for _, o := range l.flows {
			if o != f && o.source == SourceProvisional {
				l.applyLocked(o, now, pv)
			}
		}
	}
	return f
}

// provisional is what the live assignment leaves unassigned on a node
// with a configured capacity, and the flows it does not name that share
// it: the model's allocation done locally, reservations first, then
// equal shares of the rest.
type provisional struct {
	room     float64 // +Inf: no provisional shares (no capacity, or stale)
	flows    int     // active flows the assignment does not name
	reserved float64 // their reservations
}

// share is flow f's provisional rate given its reservation res: an idle
// flow (one being created) was not counted among those that share the
// room.
func (p provisional) share(f *flow, res float64) float64 {
	n, reserved := p.flows, p.reserved
	if f.streams.Load() == 0 {
		n++
		reserved += res
	}
	if reserved > 0 && reserved >= p.room {
		return res * p.room / reserved
	}
	return res + max(p.room-reserved, 0)/float64(max(n, 1))
}

// provisionalLocked computes the node's provisional room; extra is a flow
// being created (not yet active).
func (l *Limiter) provisionalLocked(now time.Time, extra *flow) provisional {
	last := l.assignedAt
	if last.IsZero() {
		last = l.started
	}
	// Stale, or no controller for as long: static local rates.
	if l.cfg.Capacity <= 0 || now.Sub(last) > l.cfg.Stale {
		return provisional{room: math.Inf(1)}
	}
	room := l.cfg.Capacity
	for _, r := range l.assigned {
		room -= r
	}
	pv := provisional{room: max(room, 0)}
	for k, f := range l.flows {
		if _, ok := l.assigned[k]; !ok && f != extra && f.streams.Load() > 0 {
			pv.flows++
			pv.reserved += SLOOf(l.cfg.SLOs, k.tenant, k.class).ReservationOf(k.class)
		}
	}
	return pv
}

// applyLocked sets f's rates from the assignment in force, a provisional
// share (pv) or the static local rates.
func (l *Limiter) applyLocked(f *flow, now time.Time, pv provisional) {
	slo := SLOOf(l.cfg.SLOs, f.key.tenant, f.key.class)
	rate, source := slo.LimitOf(f.key.class), SourceStatic
	live := !l.assignedAt.IsZero() && now.Sub(l.assignedAt) <= l.cfg.Stale
	if a, ok := l.assigned[f.key]; ok && live {
		rate, source = a, SourceAssigned
	} else if !math.IsInf(pv.room, 1) {
		// Not named yet (a new flow, or no assignment yet): its
		// reservation or an equal share of what is unassigned, never
		// unshaped (issue 25: the first second of a run moved up to 24×
		// the capacity); the controller names it next period.
		p := pv.share(f, slo.ReservationOf(f.key.class))
		rate, source = math.Max(math.Min(rate, p), MinRate), SourceProvisional
	}
	if math.IsInf(rate, 1) {
		source = SourceNone
	}
	if changed(f.rate, rate) {
		f.bytes.Bucket.SetRate(rate)
		f.rate = rate
	}
	f.source = source
	ops, opsSource := math.Inf(1), SourceNone
	if _, ok := f.key.class.Context(); ok && slo.Ops == 0 && l.cfg.SLOs != nil {
		// A context class without an ops rate of its own keeps its
		// tenant's: naming a class is no way around the tenant's cap.
		slo, _ = l.cfg.SLOs.SLO(f.key.tenant)
	}
	if slo.Ops > 0 {
		ops, opsSource = slo.Ops, SourceStatic
	}
	if a, ok := l.assignedOp[f.key]; ok && live && slo.Ops > 0 {
		// The controller's share of the fleet-wide operations cap, never
		// above the cap itself: a cap lowered or removed here applies at
		// once, not at the controller's next period.
		ops, opsSource = min(a, slo.Ops), SourceAssigned
	}
	f.opsSource = opsSource
	if changed(f.opsRate, ops) {
		f.ops.SetRate(ops)
		f.opsRate = ops
	}
}

// changed reports a rate change worth waking waiters for (0.5%).
func changed(old, new float64) bool {
	if math.IsNaN(old) || math.IsNaN(new) {
		return !math.IsNaN(new)
	}
	if math.IsInf(old, 1) || math.IsInf(new, 1) {
		return math.IsInf(old, 1) != math.IsInf(new, 1)
	}
	return math.Abs(new-old) > 0.005*math.Max(old, 1)
}

// Refresh re-applies rates to every flow: SLOs may have changed, or the
// assignment may have gone stale. Report calls it every period.
func (l *Limiter) Refresh() {
	if l.cfg.Disabled {
		return
	}
	now := l.cfg.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	pv := l.provisionalLocked(now, nil)
	for _, f := range l.flows {
		l.applyLocked(f, now, pv)
	}
}

// MinRate is the least rate an assignment gives a flow (bytes/s): a flow
// the controller gives nothing still moves, slowly.
const MinRate = 16 << 10

// Rates is one node's share of a controller's assignments: bytes/s per
// tenant and class.
type Rates map[string]map[Class]float64

// Apply installs a new assignment for this node from controller instance
// inst (message seq). A flow the assignment does not name runs at its
// static local rate.
func (l *Limiter) Apply(inst string, seq uint64, rates Rates) { l.ApplyOps(inst, seq, rates, nil) }

// MinOpsRate is the least operations rate an assignment gives a flow
// (ops/s): a flow the controller gives nothing still gets through, slowly.
const MinOpsRate = 1

// ApplyOps is Apply with the operations rates (ops/s per tenant and class)
// of the same assignment.
func (l *Limiter) ApplyOps(inst string, seq uint64, rates, ops Rates) {
	if l.cfg.Disabled {
		return
	}
	now := l.cfg.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if inst == l.assigner && seq < l.seq {
		return // a late message of the same run
	}
	l.assigner, l.seq, l.assignedAt = inst, seq, now
	clear(l.assigned)
	for tenant, cs := range rates {
		for c, r := range cs {
			// A rate of 0 holds the flow to a trickle: a bucket's 0 would
			// mean unlimited.
			l.assigned[flowKey{tenant, c}] = max(r, MinRate)
		}
	}
	clear(l.assignedOp)
	for tenant, cs := range ops {
		for c, r := range cs {
			l.assignedOp[flowKey{tenant, c}] = max(r, MinOpsRate)
		}
	}
	pv := l.provisionalLocked(now, nil)
	for _, f := range l.flows {
		l.applyLocked(f, now, pv)
	}
}

// Stream is one admitted operation. Its Reader and Writer shape the bytes
// it moves through its flow's byte bucket; bytes over the rate are
// delayed, never failed.
type Stream struct {
	f     *flow // nil when QoS is off
	ctx   context.Context
	chunk int
	done  atomic.Bool
	w     MeterWriter // the one Writer, held here: one allocation less per request
}

// Done ends the operation. It may be called more than once.
func (s *Stream) Done() {
	if s.f != nil && s.done.CompareAndSwap(false, true) {
		s.f.streams.Add(-1)
	}
}

// WaitBytes pays for n bytes moved outside Reader/Writer (background
// work, block I/O), waiting as the flow's rate requires. It pays a chunk
// at a time, as Reader and Writer do, so that the flow's reports show the
// bytes served and the time waited as they accrue: one large payment
// would show nothing until it ended, and the controller would see no
// demand from a flow that is waiting.
func (s *Stream) WaitBytes(ctx context.Context, n int64) error {
	if s.f == nil {
		return nil
	}
	for n > 0 {
		k := min(n, int64(max(s.chunk, 1)))
		if err := s.f.bytes.Pay(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// Reader shapes r: each read is paid for before it is returned.
func (s *Stream) Reader(r io.Reader) io.Reader {
	if s.f == nil {
		return r
	}
	return s.f.bytes.Reader(s.ctx, r, s.chunk)
}

// Writer shapes w: each write is paid for, a chunk at a time, before it
// is passed on; w's ReadFrom (sendfile) is kept while the flow is
// unlimited. Call it once per stream (the writer lives in the stream).
func (s *Stream) Writer(w io.Writer) io.Writer {
	if s.f == nil {
		return w
	}
	return s.w.Init(s.f.bytes, s.ctx, w, s.chunk)
}

// ErrDisabled is returned by calls that need enforcement when QoS is off.
var ErrDisabled = errors.New("qos: disabled")

// FlowStatus is one flow's state over the last report period.
type FlowStatus struct {
	Tenant string `json:"tenant"`
	Class  Class  `json:"class"`
	// Rate is the byte rate in force (0: unlimited) and Source why.
	Rate    float64 `json:"rate"`
	Source  string  `json:"source"`
	OpsRate float64 `json:"ops_rate"` // 0: unlimited
	// OpsSource is where OpsRate comes from: assigned (the controller's
	// share of the fleet-wide cap), static (the whole cap: no live
	// controller) or none.
	OpsSource string `json:"ops_source,omitempty"`
	// Streams is the most streams open at once in the period; Active
	// those open now.
	Streams int `json:"streams"`
	Active  int `json:"active"`
	// Served is bytes/s moved; Waited the seconds streams spent waiting
	// for tokens (summed over streams); Ops, Queued (of Ops, those that
	// waited for their token) and Rejected (SlowDown) per second.
	Served   float64 `json:"served"`
	Waited   float64 `json:"waited"`
	Ops      float64 `json:"ops"`
	Queued   float64 `json:"queued,omitempty"`
	Rejected float64 `json:"rejected"`
	// InLine counts the refused operations holding a place in line for
	// their retries, at the end of the period.
	InLine int `json:"in_line,omitempty"`
}

// NodeReport is a node's flows over one period: what the controller reads
// demand and usage from, and what the /bw views show. Published as JSON on
// ReportSubject(node).
type NodeReport struct {
	V     int    `json:"v"`
	Node  string `json:"node"`
	Stage string `json:"stage"`
	// Capacity is the configured capacity in bytes/s; 0 when the
	// controller should estimate it.
	Capacity float64      `json:"capacity,omitempty"`
	Time     time.Time    `json:"time"`
	PeriodMS int64        `json:"period_ms"`
	Flows    []FlowStatus `json:"flows"`
	// Assigner and Seq identify the assignment in force ("" when none is
	// live: static local rates).
	Assigner string `json:"assigner,omitempty"`
	Seq      uint64 `json:"seq,omitempty"`
	// Host is what the node says about itself (its devices, as its
	// GET /v1/nodes shows them), opaque to QoS; sent every HostEvery
	// reports, so that a controller can list the whole fleet's nodes.
	Host json.RawMessage `json:"host,omitempty"`
	// Devices are the node's storage devices over the period (the
	// sources' osinfo per device), when its backend has local ones.
	Devices []DeviceStatus `json:"devices,omitempty"`
}

// DeviceStatus is one storage device of a node over a period: what the
// device moved (asked or not: the page cache, other processes) and the
// streams read from it by threads of their own, with the bandwidth their
// flows need and what each read.
type DeviceStatus struct {
	Device string `json:"device"`
	// Served is bytes/s read and written by the device (all of it, not
	// only Facet's); -1 when the kernel does not say.
	Served float64 `json:"served"`
	// Asked is the sum of the streams' needs (bytes/s).
	Asked   float64        `json:"asked"`
	Streams []ThreadStatus `json:"streams"`
}

// ThreadStatus is one stream on a device: its thread, its flow
// (tenant/class) and need when it has one, and bytes/s read over the
// period (or since it started, when that is later).
type ThreadStatus struct {
	TID    int     `json:"tid"`
	Flow   string  `json:"flow,omitempty"`
	Need   float64 `json:"need,omitempty"`
	Served float64 `json:"served"`
}

// ReportVersion is NodeReport's version.
const ReportVersion = 1

// Report closes the current period: it refreshes rates, and returns every
// flow's rates over the period since the previous Report. Flows idle for
// the whole period and without streams are dropped from the limiter.
func (l *Limiter) Report() NodeReport {
	now := l.cfg.Now()
	rep := NodeReport{V: ReportVersion, Node: l.cfg.Node, Stage: l.cfg.Stage, Capacity: l.cfg.Capacity, Time: now.UTC(), Flows: []FlowStatus{}}
	if l.cfg.Disabled {
		return rep
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	dt := now.Sub(l.lastReport).Seconds()
	rep.PeriodMS = now.Sub(l.lastReport).Milliseconds()
	l.lastReport = now
	if dt <= 0 {
		dt = 1e-9
	}
	if !l.assignedAt.IsZero() && now.Sub(l.assignedAt) <= l.cfg.Stale {
		rep.Assigner, rep.Seq = l.assigner, l.seq
	}
	pv := l.provisionalLocked(now, nil)
	for k, f := range l.flows {
		l.applyLocked(f, now, pv)
		c := counters{served: f.bytes.served.Load(), waitNs: f.bytes.waitNs.Load(), ops: f.opsDone.Load(), queued: f.queued.Load(), rejected: f.rejected.Load()}
		d := counters{c.served - f.last.served, c.waitNs - f.last.waitNs, c.ops - f.last.ops, c.queued - f.last.queued, c.rejected - f.last.rejected}
		f.last = c
		active := f.streams.Load()
		peak := f.peak.Swap(active)
		tickets := f.sweepTickets(now)
		if d == (counters{}) && active == 0 && peak == 0 && tickets == 0 {
			delete(l.flows, k)
			continue
		}
		if d.waitNs > 0 && l.cfg.Throttled != nil {
			l.cfg.Throttled(k.tenant, time.Duration(d.waitNs))
		}
		rep.Flows = append(rep.Flows, FlowStatus{
			Tenant: k.tenant, Class: k.class, Rate: finite(f.rate), Source: f.source, OpsRate: finite(f.opsRate), OpsSource: f.opsSource,
			Streams: int(peak), Active: int(active),
			Served: float64(d.served) / dt, Waited: float64(d.waitNs) / 1e9, Ops: float64(d.ops) / dt, Queued: float64(d.queued) / dt, Rejected: float64(d.rejected) / dt,
			InLine: tickets,
		})
	}
	slices.SortFunc(rep.Flows, func(a, b FlowStatus) int {
		return strings.Compare(a.Tenant+"/"+string(a.Class), b.Tenant+"/"+string(b.Class))
	})
	return rep
}

// finite maps +Inf (unlimited) to 0 for JSON.
func finite(f float64) float64 {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0
	}
	return f
}
