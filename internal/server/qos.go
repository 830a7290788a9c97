package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/controller"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/flowctx"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/policy"
	"github.com/facet-sds/facet/internal/qos"
	"github.com/facet-sds/facet/internal/s3api"
	"github.com/facet-sds/facet/internal/storage"
)

// QoSOptions configure bandwidth and IOPS QoS on a gateway and the global
// bandwidth controller.
type QoSOptions struct {
	// Off passes every request through unshaped (benchmarks compare).
	Off bool
	// Capacity is this node's capacity in bytes/s (a gateway), or the
	// capacity of nodes that report none (the controller); 0 lets the
	// controller estimate it from saturation.
	Capacity float64
	// Algorithm is the controller's: crystal (default), maxmin or psfa.
	Algorithm string
	// Period is the report and controller period; 0 means 500 ms.
	Period time.Duration
	// OpsQueue is how long an operation over its ops rate may queue
	// before SlowDown; 0 means 250 ms.
	OpsQueue time.Duration
	// MultipartExpiry is the age past which unfinished multipart uploads
	// are aborted by the background cleanup (in the tenants' background
	// flows); 0 turns the cleanup off. MultipartSweep is how often it
	// looks (0: hourly).
	MultipartExpiry, MultipartSweep time.Duration
}

func (o QoSOptions) period() time.Duration {
	if o.Period <= 0 {
		return 500 * time.Millisecond
	}
	return o.Period
}

// sloStore is what QoS needs of the metadata store.
type sloStore interface {
	PutSLO(ctx context.Context, tenant string, spec []byte) (meta.SLO, error)
	GetSLO(ctx context.Context, tenant string) (meta.SLO, error)
	ListSLOs(ctx context.Context) ([]meta.SLO, error)
	DeleteSLO(ctx context.Context, tenant string) error
	PutClassSLO(ctx context.Context, tenant, class string, spec []byte) (meta.SLO, error)
	GetClassSLO(ctx context.Context, tenant, class string) (meta.SLO, error)
	DeleteClassSLO(ctx context.Context, tenant, class string) error
}

// metaSLOs adapts *meta.Store (json.RawMessage specs) to sloStore.
type metaSLOs struct{ s *meta.Store }

func (m metaSLOs) PutSLO(ctx context.Context, tenant string, spec []byte) (meta.SLO, error) {
	return m.s.PutSLO(ctx, tenant, spec)
}
func (m metaSLOs) GetSLO(ctx context.Context, t string) (meta.SLO, error) { return m.s.GetSLO(ctx, t) }
func (m metaSLOs) ListSLOs(ctx context.Context) ([]meta.SLO, error)       { return m.s.ListSLOs(ctx) }
func (m metaSLOs) DeleteSLO(ctx context.Context, t string) error          { return m.s.DeleteSLO(ctx, t) }
func (m metaSLOs) PutClassSLO(ctx context.Context, tenant, class string, spec []byte) (meta.SLO, error) {
	return m.s.PutClassSLO(ctx, tenant, class, spec)
}
func (m metaSLOs) GetClassSLO(ctx context.Context, t, class string) (meta.SLO, error) {
	return m.s.GetClassSLO(ctx, t, class)
}
func (m metaSLOs) DeleteClassSLO(ctx context.Context, t, class string) error {
	return m.s.DeleteClassSLO(ctx, t, class)
}

// policySLOs is what QoS reads of the policy table.
type policySLOs interface {
	BandwidthSLO(tenant string) (filter.Params, bool)
	BandwidthSLOs() []policy.SLO
	// ContextBandwidth is the SET bandwidth of a policy naming a CONTEXT
	// (a class's SLO); ContextBandwidthSLOs all such records.
	ContextBandwidth(tenant, class string) (filter.Params, bool)
	ContextBandwidthSLOs() []policy.SLO
}

// sloCache is the effective SLO of every tenant and request class, read
// from memory on the data path: the store's API records (reloaded every
// period; the last good copy is kept while the store is away) over the
// policy table's SET bandwidth records. The rule is one at both levels:
// an API record replaces the policies' SLO of its tenant (PUT
// /slos/{tenant}), or of its tenant's class (PUT /slos/{tenant}?class=),
// whole, not field by field; the two levels stay apart (a tenant's record
// does not touch its classes' SLOs, nor a class's its tenant's).
type sloCache struct {
	store    sloStore
	policies policySLOs
	log      *slog.Logger

	api    atomic.Pointer[sloRecords]
	warned atomic.Bool
}

// sloRecords are the API records: the tenants' and their classes'.
type sloRecords struct {
	tenants map[string]qos.SLO
	classes map[[2]string]qos.SLO // by tenant, class
}

func newSLOCache(store sloStore, policies policySLOs, logger *slog.Logger) *sloCache {
	c := &sloCache{store: store, policies: policies, log: logger}
	c.api.Store(&sloRecords{tenants: map[string]qos.SLO{}, classes: map[[2]string]qos.SLO{}})
	return c
}

// refresh reloads the API records; on failure the last ones stay.
func (c *sloCache) refresh(ctx context.Context) {
	list, err := c.store.ListSLOs(ctx)
	if err != nil {
		if ctx.Err() == nil && c.warned.CompareAndSwap(false, true) {
			c.log.Warn("SLO records unavailable; keeping the last ones", "err", err)
		}
		return
	}
	c.warned.Store(false)
	r := &sloRecords{tenants: make(map[string]qos.SLO, len(list)), classes: map[[2]string]qos.SLO{}}
	for _, s := range list {
		slo, err := qos.DecodeSLO(s.Spec)
		if err != nil {
			c.log.Warn("stored SLO ignored", "tenant", s.Tenant, "class", s.Class, "err", err)
			continue
		}
		if s.Class != "" {
			r.classes[[2]string{s.Tenant, s.Class}] = slo
			continue
		}
		r.tenants[s.Tenant] = slo
	}
	c.api.Store(r)
}

// SLO implements qos.SLOSource.
func (c *sloCache) SLO(tenant string) (qos.SLO, bool) {
	if s, ok := c.api.Load().tenants[tenant]; ok {
		return s, true
	}
	if c.policies == nil {
		return qos.SLO{}, false
	}
	p, ok := c.policies.BandwidthSLO(tenant)
	if !ok {
		return qos.SLO{}, false
	}
	s, err := qos.SLOFromParams(p)
	return s, err == nil
}

// ClassSLO implements qos.ClassSLOSource: the SLO of tenant's class, an
// API record's or else the one a policy naming a CONTEXT sets.
func (c *sloCache) ClassSLO(tenant, class string) (qos.SLO, bool) {
	if s, ok := c.api.Load().classes[[2]string{tenant, class}]; ok {
		return s, true
	}
	if c.policies == nil {
		return qos.SLO{}, false
	}
	p, ok := c.policies.ContextBandwidth(tenant, class)
	if !ok {
		return qos.SLO{}, false
	}
	s, err := qos.SLOFromParams(p)
	return s, err == nil
}

// hasClass reports whether an SLO governs tenant's class, without
// parsing it (on every request that names a class).
func (c *sloCache) hasClass(tenant, class string) bool {
	if _, ok := c.api.Load().classes[[2]string{tenant, class}]; ok {
		return true
	}
	if c.policies == nil {
		return false
	}
	_, ok := c.policies.ContextBandwidth(tenant, class)
	return ok
}

// classLimits is the class stage's view (flowctx.LimitSource): the limit
// and reservation of the class's SLO, bytes/s.
func (c *sloCache) classLimits(tenant, class string) (float64, float64, bool) {
	s, ok := c.ClassSLO(tenant, class)
	if !ok {
		return 0, 0, false
	}
	return s.Limit, s.Reservation, true
}

var _ qos.ClassSLOSource = (*sloCache)(nil)

// qosRuntime is a gateway's QoS: the limiter on its request path, the
// agent that reports and applies assignments, and the fleet view.
type qosRuntime struct {
	opts    QoSOptions
	limiter *qos.Limiter
	fleet   *qos.Fleet
	slos    *sloCache
	store   sloStore
	algo    string
	agent   *qos.Agent
}

// startQoS starts a gateway's QoS until ctx ends.
func startQoS(ctx context.Context, opts QoSOptions, node string, store sloStore, policies policySLOs, b bus.Bus,
	throttled func(string, time.Duration), logger *slog.Logger) (*qosRuntime, error) {
	if _, err := qos.AlgorithmByName(cmp.Or(opts.Algorithm, "crystal")); err != nil {
		return nil, err
	}
	slos := newSLOCache(store, policies, logger)
	slos.refresh(ctx)
	l := qos.NewLimiter(qos.LimiterConfig{Node: node, SLOs: slos, Capacity: opts.Capacity, OpsQueue: opts.OpsQueue,
		Stale: 20 * opts.period(), Throttled: throttled, Disabled: opts.Off, Logger: logger})
	q := &qosRuntime{opts: opts, limiter: l, fleet: qos.NewFleet(10 * opts.period()), slos: slos, store: store, algo: opts.Algorithm}
	stop, err := q.fleet.Subscribe(b, logger)
	if err != nil {
		return nil, err
	}
	agent := qos.NewAgent(l, b, opts.period(), slos.refresh, logger)
	q.agent = agent
	go func() {
		defer stop()
		if err := agent.Run(ctx); err != nil {
			logger.Error("qos agent stopped", "err", err)
		}
	}()
	logger.Info("qos", "node", node, "enforce", !opts.Off, "capacity", opts.Capacity, "period", opts.period().String())
	return q, nil
}

// cleanup runs the multipart cleanup until ctx ends, when it is on.
func (q *qosRuntime) cleanup(ctx context.Context, backend storage.Backend, owners bucketLister, logger *slog.Logger) {
	if q.opts.MultipartExpiry <= 0 {
		return
	}
	every := q.opts.MultipartSweep
	if every <= 0 {
		every = time.Hour
	}
	c := &multipartCleanup{backend: backend, owners: owners, limiter: q.limiter, expiry: q.opts.MultipartExpiry, now: time.Now, log: logger}
	c.run(ctx, every)
}

// s3 is the S3 front end's view of the limiter.
func (q *qosRuntime) s3() s3api.QoS { return s3QoS{q.limiter, q.slos} }

type s3QoS struct {
	l    *qos.Limiter
	slos *sloCache
}

// Admit admits the request in its operation's flow, or in its context
// class's flow when an SLO (an API class record or a CONTEXT policy)
// governs that class: the class's bytes are then one flow fleet-wide,
// which the bandwidth controller splits across gateways like a tenant's.
func (a s3QoS) Admit(ctx context.Context, tenant, method string) (s3api.Shaper, error) {
	c := qos.ClassOf(method)
	// On every request: whether an SLO names the class, not its parsed
	// SLO (the limiter reads that when the flow is made).
	if r := flowctx.From(ctx); r != nil && r.Class != "" && a.slos.hasClass(tenant, r.Class) {
		c = qos.ContextClass(r.Class)
	}
	return a.l.Admit(ctx, tenant, c)
}

var _ s3api.Shaper = (*qos.Stream)(nil)

// bandwidthController returns a function that adds the global bandwidth
// controller, fed by fleet, to a supervisor.
func bandwidthController(opts QoSOptions, fleet *qos.Fleet, slos *sloCache, b bus.Bus, logger *slog.Logger) (func(*controller.Supervisor) error, error) {
	alg, err := qos.AlgorithmByName(cmp.Or(opts.Algorithm, "crystal"))
	if err != nil {
		return nil, err
	}
	return func(sup *controller.Supervisor) error {
		c := qos.NewBandwidth(qos.BandwidthConfig{Algorithm: alg, Capacity: opts.Capacity,
			SLOs: func(ctx context.Context) (qos.SLOSource, error) { slos.refresh(ctx); return slos, nil }})
		r, err := controller.NewGlobalRunner(c, controller.GlobalConfig{Source: fleet, Publisher: b, Period: opts.period(),
			Refresh: 4 * opts.period(), Logger: logger})
		if err != nil {
			return err
		}
		return sup.Add(qos.ControllerName, controller.KindGlobal, "", r)
	}, nil
}

// startFleetView subscribes a fleet view for a process that serves no
// requests (the controller role).
func startFleetView(ctx context.Context, opts QoSOptions, b bus.Bus, logger *slog.Logger) (*qos.Fleet, error) {
	f := qos.NewFleet(10 * opts.period())
	stop, err := f.Subscribe(b, logger)
	if err != nil {
		return nil, err
	}
	go func() { <-ctx.Done(); stop() }()
	return f, nil
}

// admin is the control API's QoS service.
func (q *qosRuntime) admin() admin.QoSService { return qosAPI{q} }

type qosAPI struct{ q *qosRuntime }

func (a qosAPI) ListSLOs(ctx context.Context) ([]admin.SLO, error) {
	list, err := a.q.store.ListSLOs(ctx)
	if err != nil {
		return nil, err
	}
	out := []admin.SLO{}
	seen := map[string]bool{}
	done := map[[2]string]bool{} // classes with an API record
	for _, s := range list {
		slo, err := qos.DecodeSLO(s.Spec)
		if err != nil {
			continue
		}
		o := sloOut(s.Tenant, "api", "", slo, s.Updated)
		if o.Class = s.Class; s.Class != "" {
			done[[2]string{s.Tenant, s.Class}] = true
		} else {
			seen[s.Tenant] = true
		}
		out = append(out, o)
	}
	if a.q.slos.policies != nil {
		for _, p := range a.q.slos.policies.BandwidthSLOs() {
			name := p.Target
			if name == "" {
				name = "*"
			}
			if seen[name] || p.Delete {
				continue
			}
			seen[name] = true
			if slo, err := qos.SLOFromParams(p.Params); err == nil {
				out = append(out, sloOut(name, "policy", p.PolicyID, slo, time.Time{}))
			}
		}
	}
	if a.q.slos.policies != nil {
		// The classes' SLOs, each as in force (the latest, most
		// specific), unless an API record replaces it.
		for _, p := range a.q.slos.policies.ContextBandwidthSLOs() {
			name := cmp.Or(p.Target, "*")
			k := [2]string{name, p.Context}
			if done[k] {
				continue
			}
			done[k] = true
			params, ok := a.q.slos.policies.ContextBandwidth(p.Target, p.Context)
			if slo, err := qos.SLOFromParams(params); ok && err == nil {
				o := sloOut(name, "policy", p.PolicyID, slo, time.Time{})
				o.Class = p.Context
				out = append(out, o)
			}
		}
	}
	slices.SortFunc(out, func(x, y admin.SLO) int {
		return cmp.Or(strings.Compare(x.Tenant, y.Tenant), strings.Compare(x.Class, y.Class))
	})
	return out, nil
}

func sloOut(tenant, source, policyID string, s qos.SLO, updated time.Time) admin.SLO {
	out := admin.SLO{Tenant: tenant, Source: source, Policy: policyID, Get: s.Get, Put: s.Put, Reservation: s.Reservation,
		Limit: s.Limit, Weight: s.Weight, Ops: s.Ops, Background: s.Background}
	if !updated.IsZero() {
		t := updated.UTC()
		out.Updated = &t
	}
	return out
}

func (a qosAPI) GetSLO(ctx context.Context, tenant, class string) (admin.SLO, error) {
	if class != "" {
		return a.getClassSLO(ctx, tenant, class)
	}
	s, err := a.q.store.GetSLO(ctx, tenant)
	if err == nil {
		slo, derr := qos.DecodeSLO(s.Spec)
		if derr != nil {
			return admin.SLO{}, derr
		}
		return sloOut(tenant, "api", "", slo, s.Updated), nil
	}
	if !errors.Is(err, meta.ErrSLONotFound) {
		return admin.SLO{}, err
	}
	if a.q.slos.policies != nil {
		if p, ok := a.q.slos.policies.BandwidthSLO(tenant); ok {
			if slo, err := qos.SLOFromParams(p); err == nil {
				return sloOut(tenant, "policy", "", slo, time.Time{}), nil
			}
		}
	}
	return admin.SLO{}, admin.ErrNoSuchSLO
}

// getClassSLO is the SLO in force for tenant's class: its API record, or
// the CONTEXT policies'.
func (a qosAPI) getClassSLO(ctx context.Context, tenant, class string) (admin.SLO, error) {
	s, err := a.q.store.GetClassSLO(ctx, tenant, class)
	if err == nil {
		slo, derr := qos.DecodeSLO(s.Spec)
		if derr != nil {
			return admin.SLO{}, derr
		}
		o := sloOut(tenant, "api", "", slo, s.Updated)
		o.Class = class
		return o, nil
	}
	if !errors.Is(err, meta.ErrSLONotFound) {
		return admin.SLO{}, err
	}
	if a.q.slos.policies != nil {
		if p, ok := a.q.slos.policies.ContextBandwidth(tenant, class); ok {
			if slo, err := qos.SLOFromParams(p); err == nil {
				o := sloOut(tenant, "policy", "", slo, time.Time{})
				o.Class = class
				return o, nil
			}
		}
	}
	return admin.SLO{}, admin.ErrNoSuchSLO
}

func (a qosAPI) PutSLO(ctx context.Context, tenant, class string, spec admin.SLOSpec) (admin.SLO, error) {
	slo, err := ParseSLOSpec(spec)
	if err != nil {
		return admin.SLO{}, err
	}
	if class != "" {
		if err := classSpecCheck(spec); err != nil {
			return admin.SLO{}, err
		}
	}
	data, err := jsonSLO(slo)
	if err != nil {
		return admin.SLO{}, err
	}
	var s meta.SLO
	if class != "" {
		s, err = a.q.store.PutClassSLO(ctx, tenant, class, data)
	} else {
		s, err = a.q.store.PutSLO(ctx, tenant, data)
	}
	if err != nil {
		return admin.SLO{}, err
	}
	a.q.slos.refresh(ctx)
	a.q.limiter.Refresh() // here at once; other gateways at their next period
	o := sloOut(tenant, "api", "", slo, s.Updated)
	o.Class = class
	return o, nil
}

// classSpecCheck refuses the SLO parameters a request class has no use
// for, rather than keeping them unread (a policy naming a CONTEXT
// ignores them; the API says so).
func classSpecCheck(spec admin.SLOSpec) error {
	for _, k := range []string{"get", "put"} {
		if _, ok := spec[k]; ok {
			return fmt.Errorf("%w: %s: a request class's bytes are one flow in both directions; give its guaranteed rate as reservation", admin.ErrInvalidSLO, k)
		}
	}
	if _, ok := spec["background"]; ok {
		// The tenant's background class is Facet's own work.
		return fmt.Errorf("%w: background: a request class has no background work (set it on the tenant's SLO)", admin.ErrInvalidSLO)
	}
	return nil
}

func (a qosAPI) DeleteSLO(ctx context.Context, tenant, class string) error {
	var err error
	if class != "" {
		err = a.q.store.DeleteClassSLO(ctx, tenant, class)
	} else {
		err = a.q.store.DeleteSLO(ctx, tenant)
	}
	if errors.Is(err, meta.ErrSLONotFound) {
		return admin.ErrNoSuchSLO
	}
	if err == nil {
		a.q.slos.refresh(ctx)
		a.q.limiter.Refresh()
	}
	return err
}

func (a qosAPI) Bandwidth(context.Context) (admin.BWView, error) {
	return bandwidthView(a.q.fleet, a.q.algo), nil
}

// bandwidthView renders the fleet's reports for the /bw views.
func bandwidthView(f *qos.Fleet, algo string) admin.BWView {
	v := admin.BWView{Algorithm: algo, Nodes: []admin.BWNode{}}
	if v.Algorithm == "" {
		v.Algorithm = "crystal"
	}
	if m := f.Assignments(); m != nil {
		v.Seq = m.Seq
	}
	for _, rep := range f.Nodes() {
		n := admin.BWNode{Node: rep.Node, Stage: rep.Stage, Device: rep.Stage, Capacity: rep.Capacity, Assigner: rep.Assigner, Updated: rep.Time, Flows: []admin.BWFlow{}}
		unlimited := false
		for _, fl := range rep.Flows {
			n.Asked += fl.Rate
			unlimited = unlimited || fl.Rate == 0
			n.Served += fl.Served
			n.Streams += fl.Active
			n.Flows = append(n.Flows, admin.BWFlow{Tenant: fl.Tenant, Class: string(fl.Class), Asked: fl.Rate, Source: fl.Source,
				Served: fl.Served, Streams: fl.Streams, Active: fl.Active, Waited: fl.Waited, Ops: fl.Ops, Rejected: fl.Rejected})
		}
		for _, d := range rep.Devices {
			bd := admin.BWDevice{Device: d.Device, Served: d.Served, Asked: d.Asked, Streams: []admin.BWThread{}}
			for _, t := range d.Streams {
				bd.Streams = append(bd.Streams, admin.BWThread{TID: t.TID, Flow: t.Flow, Need: t.Need, Served: t.Served})
			}
			n.Devices = append(n.Devices, bd)
		}
		if unlimited {
			// A sum leaving an unlimited flow out would understate what
			// the node lets through.
			n.Asked = 0
		}
		v.Nodes = append(v.Nodes, n)
	}
	return v
}

// sloValueRE is what a rate may look like before the DSL reads it: a
// number and a unit, nothing that could end the WITH list.
var sloValueRE = regexp.MustCompile(`^[0-9][0-9.]*(e[0-9]+)?[A-Za-z/]{0,8}$`)

// ParseSLOSpec validates an API SLO spec with the DSL's own checker (the
// same units, ranges and messages as SET bandwidth WITH ...).
func ParseSLOSpec(spec admin.SLOSpec) (qos.SLO, error) {
	if len(spec) == 0 {
		return qos.SLO{}, fmt.Errorf("%w: empty: set at least one of %s", admin.ErrInvalidSLO, strings.Join(qos.SLOParams, ", "))
	}
	names := make([]string, 0, len(spec))
	for k := range spec {
		names = append(names, k)
	}
	slices.Sort(names)
	var with []string
	for _, k := range names {
		if !slices.Contains(qos.SLOParams, k) {
			return qos.SLO{}, fmt.Errorf("%w: unknown field %q (known: %s)", admin.ErrInvalidSLO, k, strings.Join(qos.SLOParams, ", "))
		}
		var v string
		switch x := spec[k].(type) {
		case string:
			v = strings.TrimSpace(x)
		case float64:
			if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
				return qos.SLO{}, fmt.Errorf("%w: %s=%v: want a finite, non-negative number", admin.ErrInvalidSLO, k, x)
			}
			v = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			return qos.SLO{}, fmt.Errorf("%w: %s: want a number or a string such as \"30MB/s\"", admin.ErrInvalidSLO, k)
		}
		if strings.HasPrefix(v, "-") {
			return qos.SLO{}, fmt.Errorf("%w: %s=%q: must not be negative", admin.ErrInvalidSLO, k, v)
		}
		if !sloValueRE.MatchString(v) {
			return qos.SLO{}, fmt.Errorf("%w: %s=%q: want a number with an optional unit, such as 30MB/s", admin.ErrInvalidSLO, k, v)
		}
		with = append(with, k+"="+v)
	}
	text := "FOR TENANT t DO SET bandwidth WITH " + strings.Join(with, ", ")
	ps, err := policy.ParseAndCheck("slo", text, &policy.StaticVocabulary{AnyTarget: true})
	if err != nil {
		var pe *policy.Error
		if errors.As(err, &pe) {
			return qos.SLO{}, fmt.Errorf("%w: %s", admin.ErrInvalidSLO, pe.Msg)
		}
		return qos.SLO{}, fmt.Errorf("%w: %v", admin.ErrInvalidSLO, err)
	}
	if len(ps) != 1 || len(ps[0].Actions) != 1 {
		return qos.SLO{}, fmt.Errorf("%w: not one SET bandwidth", admin.ErrInvalidSLO)
	}
	slo, err := qos.SLOFromParams(ps[0].Actions[0].Values)
	if err != nil {
		return qos.SLO{}, fmt.Errorf("%w: %v", admin.ErrInvalidSLO, err)
	}
	return slo, nil
}

func jsonSLO(s qos.SLO) ([]byte, error) { return json.Marshal(s) }

// globals are the global controllers QoS adds where controllers run: the
// bandwidth controller, unless this process runs none.
func (q *qosRuntime) globals(noControllers bool, b bus.Bus, logger *slog.Logger) []func(*controller.Supervisor) error {
	if noControllers {
		return nil
	}
	add, err := bandwidthController(q.opts, q.fleet, q.slos, b, logger)
	if err != nil {
		// The algorithm was checked by startQoS: not reached.
		logger.Error("bandwidth controller not started", "err", err)
		return nil
	}
	return []func(*controller.Supervisor) error{add}
}

// controllerRoleQoS is the controller role's bandwidth controller: the
// fleet's reports from the bus, SLOs from the shared store and policies.
// The fleet view also answers the role's GET /v1/nodes.
func controllerRoleQoS(ctx context.Context, opts QoSOptions, store sloStore, policies policySLOs, b bus.Bus, logger *slog.Logger) (func(*controller.Supervisor) error, *qos.Fleet, error) {
	fleet, err := startFleetView(ctx, opts, b, logger)
	if err != nil {
		return nil, nil, err
	}
	add, err := bandwidthController(opts, fleet, newSLOCache(store, policies, logger), b, logger)
	return add, fleet, err
}
