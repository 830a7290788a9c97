package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/authfail"
	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/controller"
	"github.com/facet-sds/facet/internal/filter/builtin"
	"github.com/facet-sds/facet/internal/filter/wasm"
	"github.com/facet-sds/facet/internal/fleet"
	"github.com/facet-sds/facet/internal/meta"
)

// The controller role (`facet controller`): the automation controllers of
// a fleet in their own process. It merges the gateways' samples from the
// bus, runs the dynamic policies' controllers and records their decisions
// as policy states in the shared store; the gateways pick those up through
// their change-version poll. A lease in the store keeps one instance
// active; the others wait as standbys. With --admin-addr every instance,
// standby included, also serves the admin API over the shared store:
// tenants, keys, groups, data keys, policies (validate, apply, explain),
// workload metrics, controllers and nodes. What needs an object store or
// a gateway's own runtime (usage, trash, WASM module registration, SLOs,
// request classes) answers 501 there: ask a gateway.

// ControllerLease is the name of the automation controllers' lease.
const ControllerLease = "automation-controllers"

// buildController builds the controller role: the shared store, the
// bus's metric aggregator, the policy service, the fleet sync, the QoS
// fleet view with the bandwidth controller, the lease loop (which runs the
// controllers while it holds the lease) and, with AdminAddr, the admin
// API.
func (s *Server) buildController(ctx context.Context) error {
	opts, logger := &s.opts, s.log
	if opts.BusURL == "" {
		return errors.New("the controller role needs the fleet's bus (--bus nats://...)")
	}
	if opts.Node == "" {
		opts.Node = defaultNode()
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 3 * time.Second
	}
	mk, err := masterKey(opts.DataDir)
	if err != nil {
		return err
	}
	store, err := s.openStore(ctx, mk)
	if err != nil {
		return err
	}
	// The aggregator only: this process serves no requests to measure.
	work, err := s.openWorkload(Options{BusURL: opts.BusURL, BusCA: opts.BusCA, Node: opts.Node, MetricsPeriod: opts.MetricsPeriod, NoWorkloadMetrics: true})
	if err != nil {
		return fmt.Errorf("bus and workload metrics: %w", err)
	}
	// Decisions are announced on the bus so that gateways apply them at
	// once; changes made through the gateways' admin API reach this
	// process the same way.
	announcer := fleet.NewAnnouncer(opts.Node, store, work.bus, fleet.NewHealth(logger), logger)
	policies, syncer, err := s.followFleet(ctx, store, announcer, nil,
		control.Config{Registry: builtin.NewRegistry(), Dynamic: wasm.Descriptions{}, Metrics: work.reg.PolicyMetrics})
	if err != nil {
		return err
	}

	// The guard fences the bandwidth controller's publications: set by
	// the lease loop, cleared before it stops the controllers.
	guard := controller.NewLeaseGuard(nil)
	bandwidth, qosFleet, err := s.controllerRoleQoS(opts.QoS, control.MetaSLOs{S: store}, policies, work.bus, guard)
	if err != nil {
		return fmt.Errorf("qos: %w", err)
	}
	role := &controllerRole{id: opts.Node, ttl: opts.LeaseTTL, store: store, guard: guard, policies: policies, feed: work.feed(), log: logger, bandwidth: bandwidth,
		nodes: fleetNodes{fleet: qosFleet}, start: s.startGoroutine, disabled: opts.DisabledControllers, heartbeats: work.bus}
	s.later("controller lease", role.run)
	if opts.AdminAddr != "" {
		// The controller's admin listener exposes no /metrics: its audit
		// log has no metrics either.
		auditLog, err := s.openAudit(nil)
		if err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		// Changes made here reach the gateways as changes made through
		// a gateway do: announced on the bus, the version poll behind.
		api := admin.New(admin.Config{Store: fleet.AdminStore{Store: store, Reload: policies.Reload, Sync: syncer, Log: logger},
			Token: opts.AdminToken, Logger: logger, Policies: policies, Controllers: role, Workload: work.source(),
			Node: opts.Node, Nodes: role.nodes, Audit: adminAudit(auditLog)})
		s.listen("admin", opts.AdminAddr, &http.Server{Handler: role.handler(opts.AdminToken, api), ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)})
		s.readyHooks = append(s.readyHooks, func() { logger.Info("controller admin listening", "addr", s.addr("admin")) })
		s.ready = opts.Ready
	}
	s.readyMsg = []any{"facet controller ready", "id", opts.Node, "lease_ttl", opts.LeaseTTL.String()}
	return nil
}

// controllerRole holds the lease and, while it does, the controllers.
type controllerRole struct {
	id       string
	ttl      time.Duration
	store    *meta.Store
	policies *control.Service
	feed     control.Feed
	log      *slog.Logger
	// guard is granted the lease's term while it is held (controller.Lease).
	guard *controller.LeaseGuard
	// bandwidth adds the global bandwidth controller while the lease is held.
	bandwidth func(*controller.Supervisor) error
	// disabled and heartbeats are newControllers'.
	disabled   []string
	heartbeats controller.Subscriber
	// nodes lists the fleet's nodes (GET /v1/nodes).
	nodes admin.NodeSource
	// start runs the controllers' supervisor on a goroutine counted by
	// the server (Server.startGoroutine).
	start func(name string, f func())

	mu          sync.Mutex
	controllers admin.ControllerSource // nil while standby
}

// run takes or renews the lease every third of its ttl until ctx ends.
// The controllers run while it is held; a holder that cannot renew stops
// them before the lease can expire, so two instances never act at once
// (as far as the clocks agree).
func (r *controllerRole) run(ctx context.Context) {
	every := r.ttl / 3
	if r.guard == nil {
		r.guard = controller.NewLeaseGuard(nil)
	}
	var (
		stopControllers context.CancelFunc
		renewed         time.Time
		standbyLogged   bool
	)
	release := func(why string) {
		if stopControllers == nil {
			return
		}
		// Fence first: a period finishing while the controllers stop must
		// not publish.
		r.guard.Revoke()
		stopControllers()
		stopControllers = nil
		r.mu.Lock()
		r.controllers = nil
		r.mu.Unlock()
		r.log.Warn("controllers stopped", "id", r.id, "reason", why)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		term, err := r.store.AcquireLeaseTerm(ctx, ControllerLease, r.id, r.ttl)
		held := term != 0
		switch {
		case ctx.Err() != nil:
		case err != nil:
			r.log.Warn("controller lease renewal failed", "id", r.id, "err", err)
			if stopControllers != nil && time.Since(renewed) > r.ttl-every {
				release("the lease could not be renewed in time")
			}
		case held:
			renewed = time.Now()
			// The guard lapses when release would: a loop stuck renewing
			// against a stalled store stops publishing by itself.
			r.guard.Grant(term, renewed.Add(r.ttl-every))
			if stopControllers == nil {
				sup, src, err := newControllers(r.policies, r.feed, nil, r.log, r.disabled, r.heartbeats, r.bandwidth)
				if err != nil {
					r.log.Error("controllers failed to start", "err", err)
					break
				}
				cctx, cancel := context.WithCancel(ctx)
				r.start("controller supervisor", func() {
					if err := sup.Serve(cctx); err != nil {
						r.log.Error("controller supervisor stopped", "err", err)
					}
				})
				stopControllers = cancel
				r.mu.Lock()
				r.controllers = src
				r.mu.Unlock()
				standbyLogged = false
				r.log.Info("controller lease acquired; controllers running", "id", r.id, "lease", ControllerLease)
			}
		default:
			release("another instance holds the lease")
			if !standbyLogged {
				holder, _ := r.store.LeaseHolder(ctx, ControllerLease)
				r.log.Info("standby: another controller holds the lease", "id", r.id, "holder", holder)
				standbyLogged = true
			}
		}
		select {
		case <-ctx.Done():
			if stopControllers != nil {
				release("shutting down")
				// Give the lease up so that a standby takes over at once.
				rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				if err := r.store.ReleaseLease(rctx, ControllerLease, r.id); err != nil {
					r.log.Warn("controller lease release failed", "err", err)
				}
				cancel()
			}
			return
		case <-t.C:
		}
	}
}

// controllerRoleStatus is the body of the role's /healthz and GET
// /v1/controllers.
type controllerRoleStatus struct {
	ID          string                   `json:"id"`
	Role        string                   `json:"role"`
	Lease       string                   `json:"lease"` // held or standby
	Controllers []admin.ControllerStatus `json:"controllers"`
}

func (r *controllerRole) status(ctx context.Context, list bool) (controllerRoleStatus, error) {
	r.mu.Lock()
	src := r.controllers
	r.mu.Unlock()
	st := controllerRoleStatus{ID: r.id, Role: "controller", Lease: "standby", Controllers: []admin.ControllerStatus{}}
	if src == nil {
		return st, nil
	}
	st.Lease = "held"
	if list {
		cs, err := src.Controllers(ctx)
		if err != nil {
			return st, err
		}
		st.Controllers = append(st.Controllers, cs...)
	}
	return st, nil
}

// Controllers lists the controllers this instance runs: none on a standby.
func (r *controllerRole) Controllers(ctx context.Context) ([]admin.ControllerStatus, error) {
	r.mu.Lock()
	src := r.controllers
	r.mu.Unlock()
	if src == nil {
		return []admin.ControllerStatus{}, nil
	}
	return src.Controllers(ctx)
}

// handler serves /healthz (open) and GET /v1/controllers (admin token)
// with the lease's state, and everything else through api.
func (r *controllerRole) handler(token string, api http.Handler) http.Handler {
	var want *[sha256.Size]byte
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		want = &sum
	}
	reply := func(w http.ResponseWriter, req *http.Request, list bool) {
		st, err := r.status(req.Context(), list)
		if err != nil {
			http.Error(w, "controller list failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, req *http.Request) { reply(w, req, false) })
	// Wrong tokens count per client address, as on the admin API.
	fails := authfail.New(authfail.Config{})
	bearer := func(req *http.Request) bool { return admin.BearerMatches(req, want) }
	mux.HandleFunc("GET /v1/controllers", func(w http.ResponseWriter, req *http.Request) {
		if !admin.RateLimitBearer(w, req, fails, bearer) {
			return
		}
		reply(w, req, true)
	})
	mux.HandleFunc("GET /v1/nodes", func(w http.ResponseWriter, req *http.Request) {
		if !admin.RateLimitBearer(w, req, fails, bearer) {
			return
		}
		ns, err := r.nodes.Nodes(req.Context())
		if err != nil {
			http.Error(w, "node list failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(admin.NodeList{Nodes: ns})
	})
	mux.Handle("/", api)
	return mux
}
