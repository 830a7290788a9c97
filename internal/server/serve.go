package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/admit"
	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/controller"
	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/builtin"
	"github.com/facet-sds/facet/internal/fleet"
	"github.com/facet-sds/facet/internal/keys"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/promexp"
	"github.com/facet-sds/facet/internal/qos"
	"github.com/facet-sds/facet/internal/quota"
	"github.com/facet-sds/facet/internal/s3api"
	"github.com/facet-sds/facet/internal/storage/integrity"
	"github.com/facet-sds/facet/internal/ui"
)

// buildGateway builds `facet serve` and `facet gateway`, each component
// from those before it:
//
//	metadata store -> bus and workload metrics -> store health, fleet
//	announcer, credential cache -> Prometheus exporter -> WASM runtime
//	-> data-key ids, data keys -> policy service -> fleet sync -> QoS
//	(SLO cache, limiter, fleet view) -> request classes -> object store
//	-> controllers -> object cache, recycle bin -> S3 front end -> block
//	stage -> admin API, dashboard -> listeners (Start).
//
// Two pairs need each other; each cycle is broken by a third piece built
// first: the credential cache and the fleet sync share fleet.Health and
// the fleet.Announcer; the policy service and the data keys share
// control.KeyIDs.
func (s *Server) buildGateway(ctx context.Context) error {
	opts, logger := &s.opts, s.log
	if opts.Role == RoleGateway {
		if err := CheckGateway(*opts, os.Getenv); err != nil {
			return err
		}
		opts.NoControllers = true
	}
	token, generated, masterKey, err := localState(*opts)
	if err != nil {
		return err
	}
	s.setToken(token, generated)
	store, err := s.openStore(ctx, masterKey)
	if err != nil {
		return err
	}
	if opts.Node == "" {
		opts.Node = defaultNode()
	}
	work, err := s.openWorkload(*opts)
	if err != nil {
		return fmt.Errorf("bus and workload metrics: %w", err)
	}
	// Requests read credentials and bucket owners from memory; the fleet
	// sync keeps that memory and the policy table in step with the store.
	health := fleet.NewHealth(logger)
	announcer := fleet.NewAnnouncer(opts.Node, store, work.bus, health, logger)
	cache := meta.NewCache(meta.CacheConfig{Store: store, Health: health, Notify: announcer.PublishInvalidation})
	prom := promexp.New(promexp.Config{BucketLabels: opts.MetricsBucketLabels, Logger: logger})
	wasmDir := opts.DataDir
	if opts.stateless() {
		wasmDir = ""
	}
	sandbox, err := startWasm(s.ctx, wasmDir, opts.WasmCacheDir, opts.WasmBudget, store, prom, logger)
	if err != nil {
		return fmt.Errorf("wasm filters: %w", err)
	}
	s.closeLater("wasm filters", func() error { sandbox.close(); return nil })
	keyIDs := control.NewKeyIDs()
	dataKeys, err := keys.New(masterKey, keyIDs, 0)
	if err != nil {
		return fmt.Errorf("data keys: %w", err)
	}
	policies, syncer, err := s.followFleet(ctx, store, announcer, cache,
		control.Config{Registry: builtin.NewRegistry(), Dynamic: sandbox.catalog, Keys: dataKeys, KeyIDs: keyIDs, Metrics: work.reg.PolicyMetrics})
	if err != nil {
		return err
	}
	prom.Registry().MustRegister(promexp.PolicyTableVersion(policies))
	if err := syncer.Register(prom.Registry()); err != nil {
		return fmt.Errorf("fleet metrics: %w", err)
	}
	prom.Registry().MustRegister(sandbox.rt.Collectors()...)
	// metricFeed is where the workload-metric aggregator plugs in: with a
	// feed, automation controllers run the dynamic policies.
	metricFeed := work.feed()
	if opts.NoControllers {
		metricFeed = nil
	}
	qr, err := s.newQoS(ctx, opts.QoS, control.MetaSLOs{S: store}, policies, work.bus, prom.Throttled)
	if err != nil {
		return fmt.Errorf("qos: %w", err)
	}
	cr, err := s.newContext(ctx, opts.Context, store, qr.slos.ClassLimits, qr.s3())
	if err != nil {
		return fmt.Errorf("request classes: %w", err)
	}
	// The storage stage reads the classes' reservations from the enforcer.
	backend, err := openBackend(ctx, *opts, logger, cr.enforcer.Needed)
	if err != nil {
		return fmt.Errorf("open object store: %w", err)
	}
	s.closeLater("object store", backend.Close)
	// Requests and the multipart cleanup change what tenants store
	// through the quotas; the usage report and the recycle bin see the
	// backend itself.
	quotas := quota.New(quota.Config{Backend: backend, Ledger: store, Owners: cache, Policy: policyQuotas(policies),
		MaxUploads: opts.TenantMaxUploads, Refused: prom.QuotaRefused, Log: logger})
	s.cleanup(qr, quotas, store)
	var front admit.QoS = cr.enforcer
	if opts.QoS.Off {
		// QoS off is no shaping stage at all: GETs keep sendfile.
		front = nil
	}
	if opts.TenantMaxConnections > 0 {
		front = qos.NewTenantCap(front, opts.TenantMaxConnections, func(t string) { prom.QuotaRefused(t, "connections") })
	}
	var globals []func(*controller.Supervisor) error
	globals = append(globals, qr.globals(opts.NoControllers, work.bus, logger)...)
	globals = append(globals, cr.supervised())
	sup, controllers, err := newControllers(policies, metricFeed, prom, logger, opts.DisabledControllers, work.bus, globals...)
	if err != nil {
		return fmt.Errorf("controllers: %w", err)
	}
	s.later("controller supervisor", func(ctx context.Context) {
		if err := sup.Serve(ctx); err != nil {
			logger.Error("controller supervisor stopped", "err", err)
		}
	})
	reqStores, err := s.openRequestFilterStores(backend, store, work.bus, opts.Node+"-"+defaultNode(), qr.limiter)
	if err != nil {
		return err
	}
	var objCache dataplane.ObjectCache
	var cacheStatus admin.CacheReporter
	if reqStores.cache != nil {
		objCache, cacheStatus = reqStores.cache, nodeCache{reqStores.cache}
		prom.Registry().MustRegister(reqStores.cache.Collectors()...)
	}
	self := admin.LocalNode(opts.Node, backend, cacheStatus)
	s.runAgent(qr, work.bus, self, backend)
	integ := promexp.NewIntegrity()
	prom.Registry().MustRegister(integ.Collectors()...)
	failures := integrityFailures{owners: cache, backend: backendKind(*opts), m: integ, log: logger}
	// Object writes pass the checksums, then the quotas.
	checked := integrity.Wrap(quotas.WithVersions(), integrity.Options{NoVerify: opts.NoVerifyReads, Failures: failures})
	scrubCfg := integrity.ScrubConfig{Backend: backend, Failures: failures, Observer: integ, Logger: logger}
	if qr.limiter != nil {
		scrubCfg.Background = scrubQoS{qr.limiter}
	}
	scrubber := integrity.NewScrubber(scrubCfg)
	// A scrub runs for the server's life; the stores close after it ends.
	scrubLife, endScrubs := context.WithCancel(s.ctx)
	s.stops = append(s.stops, func() error { endScrubs(); scrubber.Wait(); return nil })
	data := dataplane.New(dataplane.Config{
		// User metadata of encrypted objects is sealed with their
		// owner's data key (dataplane/usermeta.go).
		Backend: dataplane.SealUserMeta(integrity.WithVersions(checked), dataKeys, cache), Logger: logger,
		Pipelines: dataplane.Timed(policies, prom), Decoders: dataplane.Decoders{Registry: policies, Env: filter.Env{Keys: dataKeys}, Observer: prom},
		RequestFilters: policies, Cache: objCache, Trash: reqStores.trash, Changes: reqStores.changes,
	})
	// Cache fills a request left committing finish before the object
	// cache closes: stops run once the listeners have drained.
	s.stops = append(s.stops, func() error { data.Wait(); return nil })
	auditLog, err := s.openAudit(prom.Registry())
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	// Interfaces hold nil, not a nil *audit.Log, when there is none.
	var (
		auditObs obs.Observer
		auditUI  ui.Auditor
	)
	if auditLog != nil {
		auditObs, auditUI = auditLog.S3Observer(), auditLog
	}
	s3 := s3api.New(s3api.Config{
		Backend: quotas.WithVersions(), Buckets: cache, Auth: newAuthenticator(cache), Logger: logger,
		Domains: opts.Domains, Region: opts.Region, QoS: front, Data: data,
		Observer: promexp.Multi(prom, work.observer(), auditObs),
	})
	blk, err := s.newBlock(ctx, store, policies, dataKeys, prom.Registry(), work.bus)
	if err != nil {
		return err
	}
	adminHandler := admin.New(admin.Config{Store: fleet.AdminStore{Store: store, Reload: policies.Reload, Sync: syncer, Log: logger}, Token: token, Logger: logger,
		Policies: policies, Usage: usage{buckets: store, backend: backend}, Controllers: controllers, Workload: work.source(),
		Metrics: prom.Handler(), MetricsToken: opts.MetricsToken, Volumes: blk.volumes(), QoS: qr.admin(), Trash: trashAdmin{reqStores.trash},
		Scrub:    scrubService{s: scrubber, store: store, life: scrubLife},
		Quotas:   quotaAdmin{store: store, backend: quotas, policy: policyQuotas(policies)},
		Filters:  control.NewFilterAdmin(policies, fleet.FilterStore{Store: store, Announcer: announcer}, sandbox.catalog),
		Locality: locator(backend), Node: opts.Node, Nodes: fleetNodes{self: self, fleet: qr.fleet}, Context: cr.api(),
		Audit: adminAudit(auditLog), Backups: backupSource{meta: store, backend: backend}, Fsck: fsckSource{backend: backend}, Storage: storageProbe(backend)})

	errLog := slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	s.listen("s3", opts.S3Addr, &http.Server{Handler: s3, ReadHeaderTimeout: 30 * time.Second, ErrorLog: errLog})
	adminSrv := &http.Server{ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog}
	s.mountDashboard(adminSrv, adminHandler, token, store, work.agg, auditUI)
	s.listen("admin", opts.AdminAddr, adminSrv)
	s.ready = opts.Ready
	s.readyMsg = []any{"facet ready", "data", opts.DataDir}
	return nil
}

// setToken keeps the admin token; a generated one is announced once by
// Start.
func (s *Server) setToken(token string, generated bool) {
	s.token = token
	if generated {
		s.tokenFile = filepath.Join(s.opts.DataDir, "admin.token")
	}
}

// openStore opens the metadata store (Options.MetaURL); Shutdown closes it
// last.
func (s *Server) openStore(ctx context.Context, masterKey []byte) (*meta.Store, error) {
	store, err := meta.OpenURL(ctx, s.opts.MetaURL, s.opts.DataDir, masterKey, s.log)
	if err != nil {
		return nil, fmt.Errorf("open metadata store: %w", err)
	}
	s.closeLater("metadata store", store.Close)
	return store, nil
}

// followFleet builds the policy service of a fleet member (serve, gateway,
// controller) over store, loads its table, and keeps it and cache (nil on
// a process that serves no S3) in step with the fleet from Start: changes
// this node stores are announced by ann. cfg's Store and Logger are set
// here.
func (s *Server) followFleet(ctx context.Context, store *meta.Store, ann *fleet.Announcer, cache fleet.Cache, cfg control.Config) (*control.Service, *fleet.Sync, error) {
	cfg.Store, cfg.Logger = fleet.PolicyStore{Store: store, Announcer: ann}, s.log
	policies := control.New(cfg)
	if err := policies.Reload(ctx); err != nil {
		return nil, nil, fmt.Errorf("load policies: %w", err)
	}
	syncer := fleet.NewSync(fleet.SyncConfig{Announcer: ann, Policies: policies, Cache: cache, Logger: s.log})
	if err := syncer.Subscribe(); err != nil {
		return nil, nil, fmt.Errorf("policy sync: %w", err)
	}
	s.later("fleet sync", syncer.Run)
	return policies, syncer, nil
}
