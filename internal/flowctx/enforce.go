package flowctx

import (
	"context"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/facet-sds/facet/internal/admit"
	"github.com/facet-sds/facet/internal/qos"
)

// LimitSource gives what policies naming a CONTEXT set for a tenant's
// class: the bandwidth cap and the reservation (bytes/s, 0 for none); ok
// false when no policy names the class.
type LimitSource func(tenant, class string) (limit, reservation float64, ok bool)

// The controllers that set class rates, selected by name.
const (
	// ControllerLimits applies each class's policy limit as it is.
	ControllerLimits = "limits"
	// ControllerPriority is SILK's scheduler as PAIO rebuilt it:
	// background classes get bandwidth only while the foreground runs
	// below a threshold, lower-level work first.
	ControllerPriority = "priority"
)

// Controllers lists the controller names.
var Controllers = []string{ControllerLimits, ControllerPriority}

// PriorityConfig configures the priority controller.
type PriorityConfig struct {
	// Background lists the background classes, most preferred first
	// (SILK: flushes, then low-level compactions, then the rest). Other
	// classes are foreground.
	Background []string
	// Threshold is the foreground bandwidth (bytes/s, per tenant) under
	// which background classes may use the spare.
	Threshold float64
	// Capacity is the bandwidth (bytes/s) foreground and background
	// share; the spare is Capacity minus the foreground's use.
	Capacity float64
	// Floor is what background classes keep while the foreground is over
	// the threshold (0: nothing), so that flushes never stall outright.
	Floor float64
}

// EnforcerConfig configures an Enforcer.
type EnforcerConfig struct {
	// Rules returns a tenant's classifier; nil, or a nil result, leaves
	// the header and DefaultClass.
	Rules func(tenant string) *Classifier
	// Limits are the per-class policies; nil means none.
	Limits LimitSource
	// Controller is ControllerLimits (default) or ControllerPriority.
	Controller string
	Priority   PriorityConfig
	// Period is the control period (default 1 s); Run steps once per
	// period. Tests call Step instead.
	Period time.Duration
	// Next is the QoS stage behind this one (the tenant × operation
	// Limiter); nil when there is none.
	Next   admit.QoS
	Now    func() time.Time
	Logger *slog.Logger
}

// Enforcer classifies admitted requests into their tenant's classes and
// paces each class's bytes through its own token bucket (tenant × class
// flows), at rates its controller sets every period. It implements the
// S3 front end's QoS, composed over the next stage.
type Enforcer struct {
	cfg       EnforcerConfig
	mu        sync.RWMutex
	fl        map[flowKey]*Flow
	perTenant map[string]int // flows per tenant
	// lastStep is when Step last ran.
	lastStep time.Time
}

type flowKey struct{ tenant, class string }

// Flow is one tenant × class flow.
type Flow struct {
	Tenant, Class string
	meter         *qos.Meter   // the class's bucket, bytes moved and time waited
	streams       atomic.Int64 // open now
	admitted      atomic.Int64 // requests, cumulative
	lastServed    int64        // at the last Step (Step only)
	lastWaited    int64
	idle          int           // periods without streams or bytes (Step only)
	rate          atomic.Uint64 // float64 bits, bytes/s in force
	measured      atomic.Uint64 // float64 bits, bytes/s over the last period
}

// FlowStats is a flow's state for reports and tests.
type FlowStats struct {
	Tenant string `json:"tenant"`
	Class  string `json:"class"`
	// Rate is the rate in force, bytes/s; 0 with Unlimited.
	Rate      float64 `json:"rate"`
	Unlimited bool    `json:"unlimited,omitempty"`
	Measured  float64 `json:"measured"`
	Served    int64   `json:"served"`
	Requests  int64   `json:"requests"`
	Streams   int64   `json:"streams"`
}

// NewEnforcer returns an enforcer with no flows.
func NewEnforcer(cfg EnforcerConfig) *Enforcer {
	if cfg.Controller == "" {
		cfg.Controller = ControllerLimits
	}
	if cfg.Period <= 0 {
		cfg.Period = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Enforcer{cfg: cfg, fl: map[flowKey]*Flow{}, perTenant: map[string]int{}, lastStep: cfg.Now()}
}

// chunk is the largest piece a stream pays for at once.
const chunk = 64 << 10

// flow returns the flow of tenant's class, creating it at the rate its
// policies say (the controller refines it at the next step).
// A client names classes freely in its header, so flows are bounded: a
// tenant has at most MaxClasses flows at once (a request naming one more
// joins fallback, its tenant's default class), and a flow idle for
// idlePeriods control periods is forgotten.
const (
	MaxClasses  = 64
	idlePeriods = 60
)

func (e *Enforcer) flow(tenant, class, fallback string) *Flow {
	k := flowKey{tenant, class}
	e.mu.RLock()
	f := e.fl[k]
	e.mu.RUnlock()
	if f != nil {
		return f
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if f = e.fl[k]; f != nil {
		return f
	}
	// One place is kept for the default class.
	if e.perTenant[tenant] >= MaxClasses-1 && class != fallback {
		if f = e.fl[flowKey{tenant, fallback}]; f != nil {
			return f
		}
		class, k = fallback, flowKey{tenant, fallback}
	}
	rate := e.initialRate(tenant, class)
	f = &Flow{Tenant: tenant, Class: class, meter: qos.NewMeter(rate, chunk, e.cfg.Now)}
	f.rate.Store(math.Float64bits(rate))
	e.fl[k] = f
	e.perTenant[tenant]++
	return f
}

func (e *Enforcer) initialRate(tenant, class string) float64 {
	limit := e.limit(tenant, class)
	if e.cfg.Controller == ControllerPriority && e.background(class) >= 0 {
		// A background class starts at the floor and earns spare
		// bandwidth from the controller.
		return math.Min(limit, floorRate(e.cfg.Priority.Floor))
	}
	return limit
}

func floorRate(f float64) float64 {
	if f <= 0 {
		// A bucket at rate 0 is unlimited; a trickle is "nothing".
		return 1
	}
	return f
}

func (e *Enforcer) limit(tenant, class string) float64 {
	if e.cfg.Limits == nil {
		return qos.Unlimited
	}
	if l, _, ok := e.cfg.Limits(tenant, class); ok && l > 0 {
		return l
	}
	return qos.Unlimited
}

// background is class's rank among the background classes, -1 for a
// foreground class.
func (e *Enforcer) background(class string) int {
	for i, c := range e.cfg.Priority.Background {
		if c == class {
			return i
		}
	}
	return -1
}

// Admit classifies the request (the front end put its Request in ctx) and
// shapes its bytes through its class's flow, then through the next stage.
func (e *Enforcer) Admit(ctx context.Context, tenant, method string) (admit.Shaper, error) {
	r := From(ctx)
	if r == nil {
		r = &Request{}
	}
	var c *Classifier
	if e.cfg.Rules != nil {
		c = e.cfg.Rules(tenant)
	}
	class, _ := c.Classify(r)
	f := e.flow(tenant, class, c.DefaultOr())
	r.Tenant, r.Class = tenant, f.Class
	var next admit.Shaper
	if e.cfg.Next != nil {
		var err error
		if next, err = e.cfg.Next.Admit(ctx, tenant, method); err != nil {
			return nil, err
		}
	}
	f.admitted.Add(1)
	f.streams.Add(1)
	return &shaper{f: f, ctx: ctx, next: next}, nil
}

// Needed names a request's flow and the bandwidth its class's policy
// reserves, for the storage stage's I/O priorities (seeds/003 §V).
func (e *Enforcer) Needed(ctx context.Context) (string, float64, bool) {
	r := From(ctx)
	if r == nil || r.Class == "" || e.cfg.Limits == nil {
		return "", 0, false
	}
	_, res, ok := e.cfg.Limits(r.Tenant, r.Class)
	if !ok || res <= 0 {
		return "", 0, false
	}
	return r.Tenant + "/" + r.Class, res, true
}

type shaper struct {
	f    *Flow
	ctx  context.Context
	next admit.Shaper
	done atomic.Bool // Done ran (a CAS: sync.Once's slow path locks)
	// w is the one Writer (S3 responses take one), held here: one
	// allocation less per request.
	w qos.MeterWriter
}

func (s *shaper) Reader(r io.Reader) io.Reader {
	if s.next != nil {
		r = s.next.Reader(r)
	}
	return s.f.meter.Reader(s.ctx, r, chunk)
}

func (s *shaper) Writer(w io.Writer) io.Writer {
	if s.next != nil {
		w = s.next.Writer(w)
	}
	return s.w.Init(s.f.meter, s.ctx, w, chunk)
}

func (s *shaper) Done() {
	if !s.done.CompareAndSwap(false, true) {
		return
	}
	s.f.streams.Add(-1)
	if s.next != nil {
		s.next.Done()
	}
}

// LastStep is when the controller last stepped.
func (e *Enforcer) LastStep() time.Time {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.lastStep
}

// Controller is the name of the controller in force.
func (e *Enforcer) Controller() string { return e.cfg.Controller }

// Run steps the controller once per period until ctx ends.
func (e *Enforcer) Run(ctx context.Context) {
	t := time.NewTicker(e.cfg.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.Step()
		}
	}
}

// Step measures every flow over the time since the last step and sets
// the rates for the next period.
func (e *Enforcer) Step() {
	now := e.cfg.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	secs := now.Sub(e.lastStep).Seconds()
	e.lastStep = now
	if secs <= 0 {
		return
	}
	byTenant := map[string][]*Flow{}
	for k, f := range e.fl {
		served, waited := f.meter.Served(), int64(f.meter.Waited())
		if served == f.lastServed && f.streams.Load() == 0 {
			if f.idle++; f.idle >= idlePeriods {
				delete(e.fl, k)
				e.perTenant[f.Tenant]--
				if e.perTenant[f.Tenant] <= 0 {
					delete(e.perTenant, f.Tenant)
				}
				continue
			}
		} else {
			f.idle = 0
		}
		f.measured.Store(math.Float64bits(float64(served-f.lastServed) / secs))
		f.lastServed = served
		f.lastWaited = waited
		byTenant[f.Tenant] = append(byTenant[f.Tenant], f)
	}
	for tenant, flows := range byTenant {
		if e.cfg.Controller == ControllerPriority {
			e.stepPriority(tenant, flows)
			continue
		}
		for _, f := range flows {
			f.setRate(e.limit(tenant, f.Class))
		}
	}
}

// stepPriority is the SILK-like allocation for one tenant: foreground
// classes run at their limits; the spare (Capacity minus what the
// foreground used) goes to background classes only while the foreground
// is under the threshold, in order of preference: each active class may
// take all that is left, and leaves the next what it did not use last
// period. Without spare, background classes keep the floor.
func (e *Enforcer) stepPriority(tenant string, flows []*Flow) {
	pc := e.cfg.Priority
	var fg float64
	bg := make([]*Flow, len(pc.Background))
	for _, f := range flows {
		if i := e.background(f.Class); i >= 0 {
			bg[i] = f
			continue
		}
		fg += f.Measured()
		f.setRate(e.limit(tenant, f.Class))
	}
	spare := 0.0
	if fg < pc.Threshold {
		spare = math.Max(pc.Capacity-fg, 0)
	}
	floor := floorRate(pc.Floor)
	for _, f := range bg {
		if f == nil {
			continue
		}
		rate := floor
		if spare > floor && (f.streams.Load() > 0 || f.Measured() > 0) {
			rate = spare
			spare = math.Max(spare-f.Measured(), 0)
		}
		f.setRate(math.Min(rate, e.limit(tenant, f.Class)))
	}
}

func (f *Flow) setRate(r float64) {
	if old := math.Float64frombits(f.rate.Load()); old == r || math.IsInf(old, 1) && math.IsInf(r, 1) {
		return
	}
	f.rate.Store(math.Float64bits(r))
	f.meter.Bucket.SetRate(r)
}

// Measured is the flow's bandwidth over the last period.
func (f *Flow) Measured() float64 { return math.Float64frombits(f.measured.Load()) }

// Rate is the flow's rate in force.
func (f *Flow) Rate() float64 { return math.Float64frombits(f.rate.Load()) }

// Flows reports every flow, for the control API and tests.
func (e *Enforcer) Flows() []FlowStats {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]FlowStats, 0, len(e.fl))
	for _, f := range e.fl {
		st := FlowStats{Tenant: f.Tenant, Class: f.Class, Rate: f.Rate(), Measured: f.Measured(),
			Served: f.meter.Served(), Requests: f.admitted.Load(), Streams: f.streams.Load()}
		if math.IsInf(st.Rate, 1) {
			// JSON has no infinity.
			st.Rate, st.Unlimited = 0, true
		}
		out = append(out, st)
	}
	return out
}
