package server

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/admit"
	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/controller"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/qos"
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

// qosRuntime is a gateway's QoS: the limiter on its request path, the
// agent that reports and applies assignments, and the fleet view.
type qosRuntime struct {
	opts    QoSOptions
	limiter *qos.Limiter
	fleet   *qos.Fleet
	slos    *control.SLOCache
	store   control.SLOStore
	algo    string
}

// newQoS builds a gateway's QoS: the SLO cache, the limiter and the
// fleet view. The agent that reports and applies assignments is built by
// runAgent once the node can describe itself.
func (s *Server) newQoS(ctx context.Context, opts QoSOptions, store control.SLOStore, policies control.SLOPolicies, b bus.Bus,
	throttled func(string, time.Duration)) (*qosRuntime, error) {
	if _, err := qos.AlgorithmByName(cmp.Or(opts.Algorithm, "crystal")); err != nil {
		return nil, err
	}
	slos := control.NewSLOCache(store, policies, s.log)
	slos.Refresh(ctx)
	l := qos.NewLimiter(qos.LimiterConfig{Node: s.opts.Node, SLOs: slos, Capacity: opts.Capacity, OpsQueue: opts.OpsQueue,
		Stale: 20 * opts.period(), Throttled: throttled, Disabled: opts.Off, Logger: s.log})
	fleetView, err := s.fleetView(opts, b)
	if err != nil {
		return nil, err
	}
	q := &qosRuntime{opts: opts, limiter: l, fleet: fleetView, slos: slos, store: store, algo: opts.Algorithm}
	s.log.Info("qos", "node", s.opts.Node, "enforce", !opts.Off, "capacity", opts.Capacity, "period", opts.period().String())
	return q, nil
}

// runAgent builds the QoS agent, whose reports carry this node's
// description (self) and its backend's devices, and runs it from Start.
func (s *Server) runAgent(q *qosRuntime, b bus.Bus, self admin.NodeSource, backend any) {
	agent := qos.NewAgent(q.limiter, b, q.opts.period(), q.slos.Refresh, s.log)
	describe(agent, self)
	if src, ok := backend.(qos.DeviceSource); ok { // a backend with local devices
		agent.ReportDevices(qos.DeviceSampler(src))
	}
	s.later("qos agent", func(ctx context.Context) {
		if err := agent.Run(ctx); err != nil {
			s.log.Error("qos agent stopped", "err", err)
		}
	})
}

// cleanup runs the multipart cleanup from Start, when it is on.
func (s *Server) cleanup(q *qosRuntime, backend storage.Backend, store *meta.Store) {
	if q.opts.MultipartExpiry <= 0 {
		return
	}
	every := q.opts.MultipartSweep
	if every <= 0 {
		every = time.Hour
	}
	c := &storage.MultipartCleanup{Backend: backend, Owners: metaOwners{store}, Background: backgroundQoS{q.limiter},
		Expiry: q.opts.MultipartExpiry, Log: s.log}
	s.later("multipart cleanup", func(ctx context.Context) { c.Run(ctx, every) })
}

// metaOwners lists tenants and buckets from the metadata store.
type metaOwners struct{ s *meta.Store }

func (m metaOwners) Tenants(ctx context.Context) ([]string, error) {
	ts, err := m.s.ListTenants(ctx)
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out, err
}

func (m metaOwners) Buckets(ctx context.Context, tenant string) ([]string, error) {
	bs, err := m.s.ListBuckets(ctx, tenant)
	out := make([]string, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.Name)
	}
	return out, err
}

// backgroundQoS admits the cleanup's work in the background class.
type backgroundQoS struct{ l *qos.Limiter }

func (b backgroundQoS) AdmitBackground(ctx context.Context, tenant string) (storage.BackgroundWork, error) {
	st, err := b.l.AdmitBackground(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// s3 is the S3 front end's view of the limiter.
func (q *qosRuntime) s3() admit.QoS { return control.Admission{Limiter: q.limiter, SLOs: q.slos} }

// bandwidthController returns a function that adds the global bandwidth
// controller, fed by fleet, to a supervisor.
// lease, when not nil, fences its publications (the controller role).
func bandwidthController(opts QoSOptions, fleet *qos.Fleet, slos *control.SLOCache, b bus.Bus, lease controller.Lease, logger *slog.Logger) (func(*controller.Supervisor) error, error) {
	alg, err := qos.AlgorithmByName(cmp.Or(opts.Algorithm, "crystal"))
	if err != nil {
		return nil, err
	}
	return func(sup *controller.Supervisor) error {
		c := qos.NewBandwidth(qos.BandwidthConfig{Algorithm: alg, Capacity: opts.Capacity,
			SLOs: func(ctx context.Context) (qos.SLOSource, error) { slos.Refresh(ctx); return slos, nil }})
		r, err := controller.NewGlobalRunner(c, controller.GlobalConfig{Source: fleet, Publisher: b, Period: opts.period(),
			Refresh: 4 * opts.period(), Lease: lease, Logger: logger})
		if err != nil {
			return err
		}
		return sup.Add(qos.ControllerName, controller.KindGlobal, "", r)
	}, nil
}

// fleetView subscribes to the fleet's QoS reports until Shutdown.
func (s *Server) fleetView(opts QoSOptions, b bus.Bus) (*qos.Fleet, error) {
	f := qos.NewFleet(10 * opts.period())
	stop, err := f.Subscribe(b, s.log)
	if err != nil {
		return nil, err
	}
	s.closeLater("qos fleet view", func() error { stop(); return nil })
	return f, nil
}

// admin is the control API's QoS service.
func (q *qosRuntime) admin() admin.QoSService {
	return control.NewSLOAPI(control.SLOAPIConfig{Store: q.store, SLOs: q.slos, Limiter: q.limiter, Fleet: q.fleet, Algorithm: q.algo})
}

// globals are the global controllers QoS adds where controllers run: the
// bandwidth controller, unless this process runs none.
func (q *qosRuntime) globals(noControllers bool, b bus.Bus, logger *slog.Logger) []func(*controller.Supervisor) error {
	if noControllers {
		return nil
	}
	add, err := bandwidthController(q.opts, q.fleet, q.slos, b, nil, logger)
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
func (s *Server) controllerRoleQoS(opts QoSOptions, store control.SLOStore, policies control.SLOPolicies, b bus.Bus, lease controller.Lease) (func(*controller.Supervisor) error, *qos.Fleet, error) {
	fleet, err := s.fleetView(opts, b)
	if err != nil {
		return nil, nil, err
	}
	add, err := bandwidthController(opts, fleet, control.NewSLOCache(store, policies, s.log), b, lease, s.log)
	return add, fleet, err
}
