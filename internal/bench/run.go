package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/facet-sds/facet/internal/bench/datagen"
)

// RunOptions are the knobs of a run that are not part of the workload.
type RunOptions struct {
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// outcome of one operation.
type outcome uint8

const (
	outOK      outcome = iota
	outError           // the server failed the request, or the connection did
	outMiss            // 404 on an object the client believed present (a race with a DELETE)
	outDropped         // open loop: the op was due but every worker was busy
)

// sample is one operation as measured. Workers append to their own slice;
// nothing is shared while the run is measured.
type sample struct {
	end   int64 // ns since the measured start, when the op completed
	lat   int64 // ns
	bytes int64
	op    Op
	out   outcome
}

// recorder is one goroutine's samples plus the first error it saw.
type recorder struct {
	samples  []sample
	firstErr string
	errs     int64
}

func (r *recorder) add(start time.Time, t0 time.Time, op Op, n int64, err error) {
	now := time.Now()
	s := sample{end: int64(now.Sub(start)), lat: int64(now.Sub(t0)), bytes: n, op: op}
	switch {
	case err == nil:
	case errors.Is(err, errNotFound):
		s.out = outMiss
	default:
		s.out = outError
		if r.firstErr == "" {
			r.firstErr = err.Error()
		}
	}
	r.samples = append(r.samples, s)
}

// tenantRun is one tenant's state during a run.
type tenantRun struct {
	t      *Tenant
	client *s3Client
	src    *datagen.Source
	sizes  *sampler
	keys   *keyState
	sched  []phaseAt
	seed   uint64

	mu   sync.Mutex
	recs []*recorder

	left      atomic.Int64 // ops still allowed when t.Ops > 0
	generated atomic.Int64 // PUT payload bytes produced
}

func (tr *tenantRun) newRecorder() *recorder {
	r := &recorder{}
	tr.mu.Lock()
	tr.recs = append(tr.recs, r)
	tr.mu.Unlock()
	return r
}

// phaseAt is a phase resolved to absolute offsets from the run's start.
type phaseAt struct {
	from, to    time.Duration // to == 0: holds until the end
	rate        float64
	concurrency int
	weights     [numOps]float64
}

func (t *Tenant) schedule() ([]phaseAt, error) {
	base, err := t.Mix.weights()
	if err != nil {
		return nil, err
	}
	cur := phaseAt{from: 0, rate: t.Rate, concurrency: t.Concurrency, weights: base}
	if len(t.Phases) == 0 {
		cur.from = t.Start.D()
		return []phaseAt{cur}, nil
	}
	var out []phaseAt
	at := t.Start.D()
	for i, p := range t.Phases {
		ph := cur
		ph.from = at
		if p.Rate != nil {
			ph.rate = *p.Rate
		}
		if p.Concurrency != nil {
			ph.concurrency = *p.Concurrency
		}
		if len(p.Mix) > 0 {
			if ph.weights, err = p.Mix.weights(); err != nil {
				return nil, err
			}
		}
		at += p.Duration.D()
		if i < len(t.Phases)-1 || p.Duration > 0 {
			ph.to = at
		}
		out = append(out, ph)
		cur = ph
	}
	// After the last timed phase, its settings hold.
	if last := out[len(out)-1]; last.to != 0 {
		tail := last
		tail.from, tail.to = last.to, 0
		out = append(out, tail)
	}
	return out, nil
}

// phase returns the phase in force at d, and when it ends (0: never).
// Before the tenant starts it returns ok=false.
func (tr *tenantRun) phase(d time.Duration) (phaseAt, bool) {
	if d < tr.sched[0].from {
		return phaseAt{to: tr.sched[0].from}, false
	}
	for _, p := range tr.sched {
		if d >= p.from && (p.to == 0 || d < p.to) {
			return p, true
		}
	}
	return tr.sched[len(tr.sched)-1], true
}

// Run executes a scenario and returns its report. The scenario is
// validated first; buckets are created and keys prepopulated before the
// measured part starts.
func Run(ctx context.Context, sc *Scenario, opts RunOptions) (*Report, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", args...)
		}
	}
	var trace []TraceRecord
	if sc.Trace != nil {
		var err error
		if trace, err = LoadTrace(sc.Trace.File); err != nil {
			return nil, err
		}
		trace = sc.Trace.apply(trace)
	}
	runs := make([]*tenantRun, len(sc.Tenants))
	for i := range sc.Tenants {
		t := &sc.Tenants[i]
		tr, err := newTenantRun(t, sc.Seed+uint64(i)*0x9e3779b97f4a7c15, sc.Trace)
		if err != nil {
			return nil, fmt.Errorf("tenant %s: %w", t.Name, err)
		}
		defer tr.client.close()
		runs[i] = tr
	}
	var replay *replayPlan
	if sc.Trace != nil {
		var err error
		if replay, err = planReplay(trace, runs, sc.Trace); err != nil {
			return nil, err
		}
	}

	logf("preparing: buckets and prepopulation")
	if err := prepare(ctx, runs, replay); err != nil {
		return nil, err
	}

	clock := measureClock()
	length := sc.runLength()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if length > 0 {
		runCtx, cancel = context.WithTimeout(runCtx, length)
		defer cancel()
	}
	if replay != nil {
		logf("replaying %d trace records over %s (speed %gx)", len(replay.records), replay.span.Round(time.Millisecond), sc.Trace.Speed)
	} else {
		logf("running %q for %s", sc.Name, describeLength(sc, length))
	}
	cpu0 := processCPU()
	start := time.Now()
	var wg sync.WaitGroup
	if replay != nil {
		replay.run(runCtx, start, &wg)
	} else {
		for _, tr := range runs {
			tr.start(runCtx, start, &wg)
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1 := processCPU()
	// Ops cut off by the end of a timed run are not measured, so neither
	// is the time spent waiting for them.
	measured := elapsed
	if length > 0 && measured > length {
		measured = length
	}

	rep := buildReport(sc, runs, start, measured, time.Duration(sc.Interval))
	rep.Client = clientStats(cpu0, cpu1, elapsed, clock, rep)
	for _, tr := range runs {
		rep.Client.GeneratedBytes += tr.generated.Load()
	}
	if replay != nil {
		rep.Client.ReplayLateOps = replay.late.Load()
		rep.Client.ReplayMaxLagMs = float64(replay.maxLag.Load()) / 1e6
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	return rep, nil
}

func describeLength(sc *Scenario, length time.Duration) string {
	if length > 0 {
		return length.String()
	}
	return "the tenants' op counts"
}

func newTenantRun(t *Tenant, seed uint64, trace *TraceSpec) (*tenantRun, error) {
	access, secret, err := t.credentials()
	if err != nil {
		return nil, err
	}
	src, err := datagen.New(t.Data)
	if err != nil {
		return nil, err
	}
	sizes, err := t.Size.sampler()
	if err != nil {
		return nil, err
	}
	sched, err := t.schedule()
	if err != nil {
		return nil, err
	}
	conns := t.maxConcurrency()
	if trace != nil && trace.Concurrency > conns {
		conns = trace.Concurrency
	}
	tr := &tenantRun{
		t:      t,
		client: newS3Client(t.Endpoint, t.Region, access, secret, conns),
		src:    src,
		sizes:  sizes,
		keys:   newKeyState(t.Keys.Count),
		sched:  sched,
		seed:   seed,
	}
	if t.Ops > 0 {
		tr.left.Store(t.Ops)
	}
	return tr, nil
}

// prepare creates buckets and writes the prepopulated keys (or, for a
// replay, the objects the trace reads before writing them).
func prepare(ctx context.Context, runs []*tenantRun, replay *replayPlan) error {
	if replay != nil {
		return replay.prepare(ctx)
	}
	for _, tr := range runs {
		if tr.t.CreateBucket == nil || *tr.t.CreateBucket {
			if err := tr.client.createBucket(ctx, tr.t.Bucket); err != nil {
				return fmt.Errorf("tenant %s: creating bucket %s: %w", tr.t.Name, tr.t.Bucket, err)
			}
		}
	}
	g := newErrGroup()
	for _, tr := range runs {
		n := tr.t.Keys.Prepopulate
		if n == 0 {
			continue
		}
		workers := min(max(tr.t.maxConcurrency(), 4), 32, n)
		var next atomic.Int64
		for w := range workers {
			rng := rand.New(rand.NewPCG(tr.seed, uint64(w)+1<<40))
			buf := make([]byte, 64<<10)
			g.Go(func() error {
				for ctx.Err() == nil {
					k := int(next.Add(1)) - 1
					if k >= n {
						return nil
					}
					size := tr.sizes.sample(rng)
					body := tr.src.NewReader(rng.Uint64(), size)
					if err := tr.client.put(ctx, tr.t.Bucket, tr.keyName(k), body, size, buf); err != nil {
						return fmt.Errorf("tenant %s: prepopulating: %w", tr.t.Name, err)
					}
					tr.keys.add(k)
				}
				return ctx.Err()
			})
		}
	}
	return g.Wait()
}

func (tr *tenantRun) keyName(k int) string {
	return fmt.Sprintf("%s%08d", tr.t.Keys.Prefix, k)
}

// start launches the tenant's workers (and, for open-loop phases, its
// dispatcher).
func (tr *tenantRun) start(ctx context.Context, start time.Time, wg *sync.WaitGroup) {
	var tenantWG sync.WaitGroup
	needTickets := false
	for _, p := range tr.sched {
		needTickets = needTickets || p.rate > 0
	}
	n := tr.t.maxConcurrency()
	var tickets chan time.Time
	if needTickets {
		// A small backlog absorbs timer jitter; beyond it, an op that
		// finds every worker busy is dropped and counted, so an
		// overloaded server shows as drops rather than as a silently
		// lower offered rate.
		tickets = make(chan time.Time, n)
		rec := tr.newRecorder()
		tenantWG.Add(1)
		go func() {
			defer tenantWG.Done()
			tr.dispatch(ctx, start, tickets, rec)
		}()
	}
	for i := range n {
		rec := tr.newRecorder()
		w := &worker{
			id:  i,
			rng: rand.New(rand.NewPCG(tr.seed, uint64(i)+1)),
			buf: make([]byte, 256<<10),
			rec: rec,
		}
		tenantWG.Add(1)
		go func() {
			defer tenantWG.Done()
			tr.work(ctx, start, w, tickets)
		}()
	}
	wg.Add(1)
	go func() {
		tenantWG.Wait()
		wg.Done()
	}()
}

type worker struct {
	id  int
	rng *rand.Rand
	buf []byte
	rec *recorder
}

// sleepUntil waits for d after start, for at most max, or ctx.
func sleepUntil(ctx context.Context, start time.Time, d, maxWait time.Duration) {
	wait := time.Until(start.Add(d))
	if maxWait > 0 && (wait <= 0 || wait > maxWait) {
		wait = maxWait
	}
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// take claims one op from the tenant's budget; false when it is spent.
// Ops in flight when it runs out complete and are measured.
func (tr *tenantRun) take() bool {
	return tr.t.Ops == 0 || tr.left.Add(-1) >= 0
}

func (tr *tenantRun) spent() bool { return tr.t.Ops > 0 && tr.left.Load() <= 0 }

func (tr *tenantRun) work(ctx context.Context, start time.Time, w *worker, tickets chan time.Time) {
	for ctx.Err() == nil {
		ph, ok := tr.phase(time.Since(start))
		switch {
		case !ok || w.id >= ph.concurrency:
			sleepUntil(ctx, start, ph.to, 50*time.Millisecond)
		case ph.rate > 0:
			if tr.spent() && len(tickets) == 0 {
				return
			}
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-ctx.Done():
			case <-tickets:
				tr.op(ctx, start, w, ph)
			case <-t.C:
			}
			t.Stop()
		default:
			if !tr.take() {
				return
			}
			tr.op(ctx, start, w, ph)
		}
	}
}

// dispatch issues open-loop tickets: in each phase with a rate, the
// number due is rate × time since the phase began, so timer lateness is
// caught up rather than lost — also across a phase boundary the
// dispatcher woke up late for. Every due op is accounted for: started,
// or counted as dropped (every worker busy, or the run ended before a
// worker could start it), so a slow client or server shows as drops
// rather than as a silently lower offered rate.
func (tr *tenantRun) dispatch(ctx context.Context, start time.Time, tickets chan time.Time, rec *recorder) {
	drop := func(n int64) {
		for range n {
			rec.samples = append(rec.samples, sample{end: int64(time.Since(start)), out: outDropped})
		}
	}
	var cur phaseAt
	var issued int64
	// issue sends the tickets of cur due at elapsed time at; false when
	// the tenant's op budget is spent.
	issue := func(at time.Duration, send bool) bool {
		due := dueTickets(cur, at)
		for ; issued < due; issued++ {
			if !tr.take() {
				return false
			}
			if !send {
				drop(1)
				continue
			}
			select {
			case tickets <- time.Now():
			default:
				drop(1)
			}
		}
		return true
	}
	defer func() {
		// The run is over: what is due but never started was dropped.
		if cur.rate > 0 {
			issue(time.Since(start), false)
		}
		for {
			select {
			case <-tickets:
				drop(1)
			default:
				return
			}
		}
	}()
	for ctx.Err() == nil {
		now := time.Since(start)
		ph, ok := tr.phase(now)
		if ph.from != cur.from || ph.rate != cur.rate || !ok {
			if cur.rate > 0 && !issue(now, true) {
				return
			}
			cur, issued = phaseAt{}, 0
		}
		if !ok || ph.rate == 0 {
			// Tickets left from an open-loop phase would start the next
			// one with a burst.
			for len(tickets) > 0 {
				select {
				case <-tickets:
					drop(1)
				default:
				}
			}
			sleepUntil(ctx, start, ph.to, 50*time.Millisecond)
			continue
		}
		cur = ph
		if !issue(now, true) {
			return
		}
		next := ph.from + time.Duration(float64(issued)/ph.rate*float64(time.Second))
		if ph.to != 0 && next > ph.to {
			next = ph.to
		}
		sleepUntil(ctx, start, next, 0)
	}
}

// dueTickets is how many ops phase p has offered by elapsed time at: one
// at the phase's start, then one every 1/rate, none past the phase's end.
func dueTickets(p phaseAt, at time.Duration) int64 {
	if p.rate <= 0 || at < p.from {
		return 0
	}
	if p.to != 0 && at >= p.to {
		at = p.to - 1
	}
	return int64(math.Floor((at-p.from).Seconds()*p.rate)) + 1
}

// pickOp draws an operation from the weights; operations that need an
// existing object are left out while none exists.
func pickOp(rng *rand.Rand, w [numOps]float64, haveObjects bool) (Op, bool) {
	var total float64
	for o, v := range w {
		if !haveObjects && needsObject(Op(o)) {
			continue
		}
		total += v
	}
	if total == 0 {
		return 0, false
	}
	x := rng.Float64() * total
	for o, v := range w {
		if !haveObjects && needsObject(Op(o)) || v == 0 {
			continue
		}
		if x < v {
			return Op(o), true
		}
		x -= v
	}
	return OpPut, w[OpPut] > 0
}

func needsObject(o Op) bool { return o == OpGet || o == OpHead || o == OpDelete }

// op runs one synthetic operation and records it.
func (tr *tenantRun) op(ctx context.Context, start time.Time, w *worker, ph phaseAt) {
	op, ok := pickOp(w.rng, ph.weights, tr.keys.len() > 0)
	if !ok {
		sleepUntil(ctx, start, 0, 10*time.Millisecond)
		return
	}
	bucket := tr.t.Bucket
	var (
		n   int64
		err error
		t0  time.Time
	)
	switch op {
	case OpPut:
		k := w.rng.IntN(tr.t.Keys.Count)
		size := tr.sizes.sample(w.rng)
		body := tr.src.NewReader(w.rng.Uint64(), size)
		t0 = time.Now()
		err = tr.client.put(ctx, bucket, tr.keyName(k), body, size, w.buf)
		if err == nil {
			n = size
			tr.generated.Add(size)
			tr.keys.add(k)
		}
	case OpGet, OpHead:
		k, ok := tr.keys.random(w.rng)
		if !ok {
			return
		}
		t0 = time.Now()
		if op == OpGet {
			n, err = tr.client.get(ctx, bucket, tr.keyName(k), w.buf)
		} else {
			err = tr.client.head(ctx, bucket, tr.keyName(k), w.buf)
		}
	case OpDelete:
		k, ok := tr.keys.take(w.rng)
		if !ok {
			return
		}
		t0 = time.Now()
		err = tr.client.delete(ctx, bucket, tr.keyName(k), w.buf)
		if err != nil && !errors.Is(err, errNotFound) {
			tr.keys.add(k)
		}
	case OpList:
		t0 = time.Now()
		n, err = tr.client.list(ctx, bucket, tr.t.Keys.Prefix, tr.t.List.MaxKeys, w.buf)
	}
	if ctx.Err() != nil {
		return // cut off by the end of the run: not a measurement
	}
	w.rec.add(start, t0, op, n, err)
}

// keyState tracks which keys of a tenant's key space exist, so that reads
// go to objects that are there.
type keyState struct {
	mu      sync.Mutex
	present []int32
	index   []int32 // position in present, or -1
}

func newKeyState(n int) *keyState {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = -1
	}
	return &keyState{index: idx}
}

func (k *keyState) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.present)
}

func (k *keyState) add(key int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.index[key] < 0 {
		k.index[key] = int32(len(k.present))
		k.present = append(k.present, int32(key))
	}
}

func (k *keyState) random(rng *rand.Rand) (int, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.present) == 0 {
		return 0, false
	}
	return int(k.present[rng.IntN(len(k.present))]), true
}

// take removes and returns a random present key.
func (k *keyState) take(rng *rand.Rand) (int, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.present) == 0 {
		return 0, false
	}
	i := rng.IntN(len(k.present))
	key := k.present[i]
	last := k.present[len(k.present)-1]
	k.present[i] = last
	k.index[last] = int32(i)
	k.present = k.present[:len(k.present)-1]
	k.index[key] = -1
	return int(key), true
}

// errGroup runs goroutines and keeps the first error.
type errGroup struct {
	wg   sync.WaitGroup
	once sync.Once
	err  error
}

func newErrGroup() *errGroup { return &errGroup{} }

func (g *errGroup) Go(f func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := f(); err != nil {
			g.once.Do(func() { g.err = err })
		}
	}()
}

func (g *errGroup) Wait() error {
	g.wg.Wait()
	return g.err
}

// clockStats is what the client's clock costs and how late its timers are.
type clockStats struct {
	nowNs            float64
	sleepOvershootUs float64
}

func measureClock() clockStats {
	const n = 100000
	t0 := time.Now()
	for range n {
		_ = time.Now()
	}
	now := float64(time.Since(t0).Nanoseconds()) / n
	var over time.Duration
	const sleeps = 20
	for range sleeps {
		s := time.Now()
		time.Sleep(time.Millisecond)
		over += time.Since(s) - time.Millisecond
	}
	return clockStats{nowNs: now, sleepOvershootUs: float64(over.Microseconds()) / sleeps}
}

func numCPU() int { return runtime.NumCPU() }
