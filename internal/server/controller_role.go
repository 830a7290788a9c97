package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/admin"
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

// ControllerOptions configure `facet controller`.
type ControllerOptions struct {
	// DataDir holds master.key unless FACET_MASTER_KEY is set; nothing
	// else is written there.
	DataDir string
	// MetaURL is the shared metadata store (redis://HOST:PORT/DB).
	MetaURL string
	// BusURL is the fleet's NATS bus; required.
	BusURL string
	// MetricsPeriod must match the gateways'; 0 means one second.
	MetricsPeriod time.Duration
	// ID names this instance in the lease; empty means host name and a
	// random suffix.
	ID string
	// LeaseTTL is how long a lease lasts without renewal; 0 means three
	// seconds. It is renewed every third of it.
	LeaseTTL time.Duration
	// AdminAddr, when set, serves /healthz (the lease's state), GET
	// /v1/controllers (with it) and the admin API.
	AdminAddr  string
	AdminToken string
	// QoS configures the bandwidth controller (qos.go).
	QoS QoSOptions
	// Ready, when set, is called with the admin address once it listens.
	Ready func(adminAddr string)
}

// RunController runs the controller role until ctx ends.
func RunController(ctx context.Context, opts ControllerOptions, logger *slog.Logger) error {
	if opts.BusURL == "" {
		return errors.New("the controller role needs the fleet's bus (--bus nats://...)")
	}
	if opts.ID == "" {
		opts.ID = defaultNode()
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 3 * time.Second
	}
	mk, err := masterKey(opts.DataDir)
	if err != nil {
		return err
	}
	store, err := meta.OpenURL(ctx, opts.MetaURL, opts.DataDir, mk, logger)
	if err != nil {
		return fmt.Errorf("open metadata store: %w", err)
	}
	defer store.Close()
	// The aggregator only: this process serves no requests to measure.
	work, err := startWorkload(ctx, Options{BusURL: opts.BusURL, Node: opts.ID, MetricsPeriod: opts.MetricsPeriod, NoWorkloadMetrics: true}, logger)
	if err != nil {
		return fmt.Errorf("bus and workload metrics: %w", err)
	}
	defer work.close()
	// Decisions are announced on the bus so that gateways apply them at
	// once; changes made through the gateways' admin API reach this
	// process the same way.
	announcer := fleet.NewAnnouncer(opts.ID, store, work.bus, fleet.NewHealth(logger), logger)
	policies := control.New(control.Config{Store: fleet.PolicyStore{Store: store, Announcer: announcer}, Registry: builtin.NewRegistry(), Dynamic: wasm.Descriptions{}, Logger: logger, Metrics: work.reg.PolicyMetrics})
	syncer := fleet.NewSync(fleet.SyncConfig{Announcer: announcer, Policies: policies, Logger: logger})
	if err := policies.Reload(ctx); err != nil {
		return fmt.Errorf("load policies: %w", err)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := syncer.Subscribe(); err != nil {
		return fmt.Errorf("policy sync: %w", err)
	}
	go syncer.Run(ctx)

	bandwidth, qosFleet, err := controllerRoleQoS(ctx, opts.QoS, control.MetaSLOs{S: store}, policies, work.bus, logger)
	if err != nil {
		return fmt.Errorf("qos: %w", err)
	}
	role := &controllerRole{id: opts.ID, ttl: opts.LeaseTTL, store: store, policies: policies, feed: work.feed(), log: logger, bandwidth: bandwidth,
		nodes: fleetNodes{fleet: qosFleet}}
	var adminSrv *http.Server
	errc := make(chan error, 1)
	if opts.AdminAddr != "" {
		ln, err := net.Listen("tcp", opts.AdminAddr)
		if err != nil {
			return fmt.Errorf("listen admin: %w", err)
		}
		// Changes made here reach the gateways as changes made through
		// a gateway do: announced on the bus, the version poll behind.
		api := admin.New(admin.Config{Store: fleet.AdminStore{Store: store, Reload: policies.Reload, Sync: syncer, Log: logger},
			Token: opts.AdminToken, Logger: logger, Policies: policies, Controllers: role, Workload: work.source(),
			Node: opts.ID, Nodes: role.nodes})
		adminSrv = &http.Server{Handler: role.handler(opts.AdminToken, api), ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
		go func() { errc <- serve(adminSrv, ln) }()
		if opts.Ready != nil {
			opts.Ready(ln.Addr().String())
		}
		logger.Info("controller admin listening", "addr", ln.Addr().String())
	}
	logger.Info("facet controller ready", "id", opts.ID, "lease_ttl", opts.LeaseTTL.String())
	leaseDone := make(chan struct{})
	go func() { role.run(ctx); close(leaseDone) }()
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
		stop()
	}
	<-leaseDone
	if adminSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := adminSrv.Shutdown(sctx); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("admin shutdown: %w", err))
		}
	}
	logger.Info("stopped")
	return runErr
}

// controllerRole holds the lease and, while it does, the controllers.
type controllerRole struct {
	id       string
	ttl      time.Duration
	store    *meta.Store
	policies *control.Service
	feed     control.Feed
	log      *slog.Logger
	// bandwidth adds the global bandwidth controller while the lease is held.
	bandwidth func(*controller.Supervisor) error
	// nodes lists the fleet's nodes (GET /v1/nodes).
	nodes admin.NodeSource

	mu          sync.Mutex
	controllers admin.ControllerSource // nil while standby
}

// run takes or renews the lease every third of its ttl until ctx ends.
// The controllers run while it is held; a holder that cannot renew stops
// them before the lease can expire, so two instances never act at once
// (as far as the clocks agree).
func (r *controllerRole) run(ctx context.Context) {
	every := r.ttl / 3
	var (
		stopControllers context.CancelFunc
		renewed         time.Time
		standbyLogged   bool
	)
	release := func(why string) {
		if stopControllers == nil {
			return
		}
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
		held, err := r.store.AcquireLease(ctx, ControllerLease, r.id, r.ttl)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			r.log.Warn("controller lease renewal failed", "id", r.id, "err", err)
			if stopControllers != nil && time.Since(renewed) > r.ttl-every {
				release("the lease could not be renewed in time")
			}
		case held:
			renewed = time.Now()
			if stopControllers == nil {
				cctx, cancel := context.WithCancel(ctx)
				src, err := startControllers(cctx, r.policies, r.feed, nil, r.log, r.bandwidth)
				if err != nil {
					cancel()
					r.log.Error("controllers failed to start", "err", err)
					break
				}
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
	mux.HandleFunc("GET /v1/controllers", func(w http.ResponseWriter, req *http.Request) {
		if !admin.BearerMatches(req, want) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reply(w, req, true)
	})
	mux.HandleFunc("GET /v1/nodes", func(w http.ResponseWriter, req *http.Request) {
		if !admin.BearerMatches(req, want) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
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
