package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/controller"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/policy"
)

// AutomationConfig configures the automation controllers.
type AutomationConfig struct {
	// Feed delivers the workload metrics; Supervisor runs the controllers.
	Feed       Feed
	Supervisor *controller.Supervisor
	// Clock drives the periods (default the system clock).
	Clock controller.Clock
	// Period is the metric period: controllers evaluate at least once a
	// period, and on every value (default 1 s).
	Period time.Duration
	// HoldDown is how many consecutive periods a TRANSIENT policy's
	// trigger must be false before it is deactivated (default 3).
	HoldDown int
	// Stale is the age after which a metric value no longer counts
	// (default 3 periods).
	Stale time.Duration
	// Refresh is how often targets are expanded again even when no policy
	// changed: ALL and bare-bucket targets follow new tenants and
	// buckets (default 10 s).
	Refresh time.Duration
	Logger  *slog.Logger
}

// Automation runs one automation controller per dynamic policy of the
// service's table, under the supervisor, and keeps that set in step with
// the table: a new dynamic policy starts a controller, a deleted one stops
// its controller, a policy whose targets changed gets a new one.
type Automation struct {
	svc *Service
	cfg AutomationConfig
	log *slog.Logger

	mu      sync.Mutex // one Sync at a time
	running map[string]automatonSpec
}

// NewAutomation returns the automation controllers of svc. From then on,
// new dynamic policies are stored as waiting for their trigger.
func NewAutomation(svc *Service, cfg AutomationConfig) (*Automation, error) {
	if cfg.Feed == nil || cfg.Supervisor == nil {
		return nil, errors.New("control: automation controllers need a metric feed and a supervisor")
	}
	if cfg.Clock == nil {
		cfg.Clock = controller.SystemClock{}
	}
	if cfg.Period <= 0 {
		cfg.Period = time.Second
	}
	if cfg.HoldDown <= 0 {
		cfg.HoldDown = 3
	}
	if cfg.Stale <= 0 {
		cfg.Stale = 3 * cfg.Period
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	svc.controllers.Store(true)
	return &Automation{svc: svc, cfg: cfg, log: cfg.Logger, running: map[string]automatonSpec{}}, nil
}

// automationID is the controller id of a policy's controller.
func automationID(policyID string) string { return "automation/" + policyID }

// Serve keeps the controllers in step with the policy table until ctx
// ends: after every change of the table and every Refresh.
func (a *Automation) Serve(ctx context.Context) error {
	refresh := a.cfg.Clock.NewTicker(a.cfg.Refresh)
	defer refresh.Stop()
	for {
		st := a.svc.state.Load()
		if err := a.Sync(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("automation controllers not fully in step with the policies; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-st.changed:
		case <-refresh.C():
		}
	}
}

// Sync starts and stops controllers so that each dynamic policy of the
// table in force has one, built from its current targets.
func (a *Automation) Sync(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.svc.state.Load()
	w := &world{store: a.svc.store, buckets: map[string][]string{}}
	want := map[string]automatonSpec{}
	var errs []error
	for _, cp := range st.compiled.Dynamic() {
		id := automationID(cp.ID)
		targets, err := expandTargets(ctx, cp.Policy, st.groups, w)
		if err != nil {
			errs = append(errs, fmt.Errorf("targets of policy %s: %w", cp.ID, err))
			if cur, ok := a.running[id]; ok {
				want[id] = cur // keep following what it follows
			}
			continue
		}
		want[id] = newSpec(cp, targets, a.cfg.HoldDown)
	}
	for id, cur := range a.running {
		if w, ok := want[id]; ok && w.same(cur) {
			continue
		}
		if err := a.cfg.Supervisor.Remove(id); err != nil && !errors.Is(err, controller.ErrUnknown) {
			errs = append(errs, err)
		}
		delete(a.running, id)
	}
	for id, spec := range want {
		if _, ok := a.running[id]; ok {
			continue
		}
		c := &automationController{spec: spec, svc: a.svc, feed: a.cfg.Feed, clock: a.cfg.Clock, period: a.cfg.Period,
			stale: a.cfg.Stale, log: a.log.With("controller", id), wake: make(chan struct{}, 1)}
		if err := a.cfg.Supervisor.Add(id, controller.KindAutomation, spec.policyID, c); err != nil {
			errs = append(errs, err)
			continue
		}
		a.running[id] = spec
	}
	return errors.Join(errs...)
}

// world lists tenants and buckets for target expansion, once per Sync.
type world struct {
	store   Store
	volumes []string // nil until listed
	tenants []string
	listed  bool
	buckets map[string][]string
}

func (w *world) allTenants(ctx context.Context) ([]string, error) {
	if w.listed {
		return w.tenants, nil
	}
	ts, err := w.store.ListTenants(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		w.tenants = append(w.tenants, t.Name)
	}
	w.listed = true
	return w.tenants, nil
}

func (w *world) bucketsOf(ctx context.Context, tenant string) ([]string, error) {
	if bs, ok := w.buckets[tenant]; ok {
		return bs, nil
	}
	entries, err := w.store.ListBuckets(ctx, tenant)
	if err != nil {
		return nil, err
	}
	bs := []string{}
	for _, b := range entries {
		bs = append(bs, b.Name)
	}
	w.buckets[tenant] = bs
	return bs, nil
}

// expandTargets turns a policy's targets into Feed targets: groups into
// their members, ALL into every tenant (ALL BUCKETS every bucket), a bare
// bucket name into that bucket of every tenant that has one, a volume into
// its feed target, ALL VOLUMES into every volume.
func expandTargets(ctx context.Context, p *policy.Policy, groups map[string][]string, w *world) ([]string, error) {
	set := map[string]bool{}
	eachBucket := func(match func(tenant, bucket string) bool) error {
		tenants, err := w.allTenants(ctx)
		if err != nil {
			return err
		}
		for _, t := range tenants {
			bs, err := w.bucketsOf(ctx, t)
			if err != nil {
				return err
			}
			for _, b := range bs {
				if match(t, b) {
					set[TargetBucket(t, b)] = true
				}
			}
		}
		return nil
	}
	for _, t := range p.Targets {
		var err error
		switch t.Kind {
		case policy.TargetTenant:
			set[TargetTenant(t.Name)] = true
		case policy.TargetBucket:
			if t.Tenant != "" {
				set[TargetBucket(t.Tenant, t.Bucket)] = true
			} else {
				err = eachBucket(func(_, b string) bool { return b == t.Bucket })
			}
		case policy.TargetObject:
			set[TargetObject(t.Tenant, t.Bucket, t.Key)] = true
		case policy.TargetVolume:
			set[TargetVolume(t.Name)] = true
		case policy.TargetGroup:
			for _, m := range groups[t.Name] {
				tenant, bucket, serr := meta.SplitGroupMember(m)
				switch {
				case serr != nil:
				case bucket == "":
					set[TargetTenant(tenant)] = true
				default:
					set[TargetBucket(tenant, bucket)] = true
				}
			}
		case policy.TargetAll:
			switch t.Scope {
			case policy.TargetVolume:
				var vols []string
				vols, err = w.allVolumes(ctx)
				for _, v := range vols {
					set[TargetVolume(v)] = true
				}
			case policy.TargetBucket:
				err = eachBucket(func(string, string) bool { return true })
			default:
				var tenants []string
				tenants, err = w.allTenants(ctx)
				for _, name := range tenants {
					set[TargetTenant(name)] = true
				}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil
}

// automationController is the supervised loop of one dynamic policy. The
// automaton is rebuilt on every (re)start from the service's state, so a
// restarted controller picks up where the table and the store say, and
// re-evaluates on the values that arrive from then on.
type automationController struct {
	spec   automatonSpec
	svc    *Service
	feed   Feed
	clock  controller.Clock
	period time.Duration
	stale  time.Duration
	log    *slog.Logger
	wake   chan struct{} // a value arrived

	mu      sync.Mutex
	a       *automaton
	synced  bool // the table and the store agree with a.active
	lastErr string
}

func (c *automationController) Serve(ctx context.Context) error {
	active, recorded := c.svc.activation(c.spec.policyID)
	reason := c.svc.state.Load().stored[c.spec.policyID].reason
	c.mu.Lock()
	c.a = newAutomaton(c.spec, active, reason, c.clock.Now(), c.stale)
	c.synced = recorded
	c.mu.Unlock()

	var cancels []func()
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	for _, t := range c.spec.targets {
		for _, m := range c.spec.metrics {
			cancel, err := c.feed.Subscribe(m, t, c.observe)
			if err != nil {
				return fmt.Errorf("subscribe to %s of %s: %w", m, t, err)
			}
			cancels = append(cancels, cancel)
		}
	}
	ticker := c.clock.NewTicker(c.period)
	defer ticker.Stop()
	c.step(ctx, false)
	for {
		tick := false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C():
			tick = true
		case <-c.wake:
		}
		c.step(ctx, tick)
	}
}

// observe is the Feed callback: it records the value and wakes the loop
// without blocking the feed.
func (c *automationController) observe(v Value) {
	c.mu.Lock()
	if c.a != nil {
		c.a.observe(v, c.clock.Now())
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *automationController) healthy() bool {
	h, ok := c.feed.(FeedHealth)
	return !ok || h.Healthy()
}

// step evaluates and, when the decision changed or was not recorded yet,
// applies it to the table and the store.
func (c *automationController) step(ctx context.Context, tick bool) {
	healthy := c.healthy()
	c.mu.Lock()
	changed := c.a.evaluate(c.clock.Now(), tick, healthy)
	if changed {
		c.synced = false
	}
	active, reason, synced := c.a.active, c.a.reason, c.synced
	c.mu.Unlock()
	if synced {
		return
	}
	if changed {
		c.log.Info("trigger decided", "policy", c.spec.policyID, "active", active, "reason", reason)
	}
	err := c.svc.SetActivation(ctx, c.spec.policyID, active, reason)
	c.mu.Lock()
	c.synced = err == nil
	c.lastErr = ""
	if err != nil {
		c.lastErr = err.Error()
	}
	c.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		c.log.Warn("activation not recorded; retrying next period", "policy", c.spec.policyID, "err", err)
	}
}

// Report implements controller.Reporter.
func (c *automationController) Report() controller.Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	rep := controller.Report{Targets: c.spec.targets, LastError: c.lastErr}
	if c.a == nil {
		return rep
	}
	rep.Active, rep.LastEval, rep.Reason = c.a.active, c.a.lastEval, c.a.reason
	if c.a.note != "" {
		if rep.Reason != "" {
			rep.Reason += "; "
		}
		rep.Reason += c.a.note
	}
	for _, t := range c.spec.targets {
		for _, m := range c.spec.metrics {
			if r, ok := c.a.latest[t][m]; ok {
				rep.Values = append(rep.Values, controller.Value{Target: t, Metric: m, Value: r.v.Value, Period: r.v.Period})
			}
		}
	}
	return rep
}
