// Package server owns the wiring of `facet serve`: it opens the embedded
// metadata store and filesystem backend under one data directory, starts
// the S3 and admin listeners, and shuts them down gracefully so that no
// in-flight write is left half-done.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/admit"
	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/builtin"
	"github.com/facet-sds/facet/internal/fleet"
	"github.com/facet-sds/facet/internal/keys"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/promexp"
	"github.com/facet-sds/facet/internal/s3api"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
	s3store "github.com/facet-sds/facet/internal/storage/s3"
)

// Options configure a single-node Facet.
type Options struct {
	DataDir string
	// MetaURL selects the metadata store: "" (bbolt in DataDir),
	// bolt://PATH or redis://HOST:PORT/DB.
	MetaURL         string
	S3Addr          string
	AdminAddr       string
	AdminToken      string
	Region          string
	Domains         []string
	ShutdownTimeout time.Duration
	// NoSync disables fsync; only for benchmarks.
	NoSync bool
	// IOModel is how the embedded backend reads for GETs: "per-stream"
	// (default: one OS thread per large stream) or "pool" (round-robin).
	IOModel string
	// BackendURL selects a remote S3-compatible object store
	// (s3://ACCESS:SECRET@host:port/bucket[/prefix]?region=..&tls=false);
	// empty keeps objects in the embedded filesystem backend.
	BackendURL string
	// MetricsToken opens the admin listener's /metrics, and nothing else,
	// besides the admin token.
	MetricsToken string
	// MetricsBucketLabels adds bucket labels to the Prometheus counters.
	MetricsBucketLabels bool
	// BusURL joins an external NATS bus ("nats://host:4222", or several
	// comma-separated); empty embeds one in the process.
	BusURL string
	// BusListen makes the embedded bus accept connections (other
	// gateways, out-of-process controllers); empty opens no port.
	BusListen string
	// Node names this gateway in metric samples; empty means the host
	// name with a random suffix.
	Node string
	// MetricsPeriod is the workload-metric period; 0 means one second.
	MetricsPeriod time.Duration
	// NoWorkloadMetrics stops measuring requests (benchmarks compare);
	// the bus and the aggregator still run.
	NoWorkloadMetrics bool
	// NoControllers runs no automation controllers here: a gateway in a
	// fleet whose controllers run as `facet controller`. It still
	// publishes its samples and follows the stored activations.
	NoControllers bool
	// QoS configures bandwidth and IOPS QoS (qos.go).
	QoS QoSOptions
	// Context configures request classes (context.go).
	Context ContextOptions
	// Block configures the block stage (NBD volumes).
	Block BlockOptions
	// Out receives the one-time announcement of a generated admin token.
	Out io.Writer
	// Ready, when set, is called with the bound addresses once both
	// listeners accept connections (tests and benchmarks bind port 0).
	Ready func(s3Addr, adminAddr string)
	// CacheDir is the caching filter's local fast disk; empty means
	// DATA/cache (serve) or no object cache (gateway).
	CacheDir string
	// WasmCacheDir holds the compiled code of WASM filters, so that a
	// restart loads rather than recompiles; empty means DATA/wasm/cache
	// (serve) or a directory under the user's cache directory (gateway:
	// a cache, not state), "off" none.
	WasmCacheDir string
	// TrashPurgeEvery is how often the recycle bin purges expired
	// objects; 0 means every 10 minutes.
	TrashPurgeEvery time.Duration
	// MasterKeyFile is where the gateway role reads the fleet's master key
	// when FACET_MASTER_KEY is unset (see RunGateway).
	MasterKeyFile string

	// stateless is the gateway role: nothing is written to DataDir.
	stateless bool
}

// Run serves until ctx is cancelled, then drains in-flight requests.
func Run(ctx context.Context, opts Options, logger *slog.Logger) error {
	token, generated, masterKey, err := localState(opts)
	if err != nil {
		return err
	}
	store, err := meta.OpenURL(ctx, opts.MetaURL, opts.DataDir, masterKey, logger)
	if err != nil {
		return fmt.Errorf("open metadata store: %w", err)
	}
	defer store.Close()
	needs := &neededLater{}
	backend, err := openBackend(ctx, opts, logger, needs.Needed)
	if err != nil {
		return fmt.Errorf("open object store: %w", err)
	}
	defer backend.Close()

	if opts.Node == "" {
		opts.Node = defaultNode()
	}
	work, err := startWorkload(ctx, opts, logger)
	if err != nil {
		return fmt.Errorf("bus and workload metrics: %w", err)
	}
	defer work.close()
	registry := builtin.NewRegistry()
	// Requests read credentials and bucket owners from memory; fleet keeps
	// that memory and the policy table in step with the store.
	health := fleet.NewHealth(logger)
	announcer := fleet.NewAnnouncer(opts.Node, store, work.bus, health, logger)
	cache := meta.NewCache(meta.CacheConfig{Store: store, Health: health, Notify: announcer.PublishInvalidation})
	// prom is set before the listeners start, hence before any filter runs.
	var prom *promexp.Exporter
	wasmDir := opts.DataDir
	if opts.stateless {
		wasmDir = ""
	}
	sandbox, err := startWasm(ctx, wasmDir, opts.WasmCacheDir, store, func(f, reason string) { prom.FilterFailed(f, reason) }, logger)
	if err != nil {
		return fmt.Errorf("wasm filters: %w", err)
	}
	defer sandbox.close()
	policies := control.New(control.Config{Store: fleet.PolicyStore{Store: store, Announcer: announcer}, Registry: registry, Dynamic: sandbox.catalog, Logger: logger, Metrics: work.reg.PolicyMetrics})
	syncer := fleet.NewSync(fleet.SyncConfig{Announcer: announcer, Policies: policies, Cache: cache, Logger: logger})
	dataKeys, err := keys.New(masterKey, policies, 0)
	if err != nil {
		return fmt.Errorf("data keys: %w", err)
	}
	policies.SetKeys(dataKeys)
	if err := policies.Reload(ctx); err != nil {
		return fmt.Errorf("load policies: %w", err)
	}
	ctx, stopPolicies := context.WithCancel(ctx)
	defer stopPolicies()
	if err := syncer.Subscribe(); err != nil {
		return fmt.Errorf("policy sync: %w", err)
	}
	go syncer.Run(ctx)

	prom = promexp.New(promexp.Config{BucketLabels: opts.MetricsBucketLabels, Policies: policies, Logger: logger})
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
	qr, err := startQoS(ctx, opts.QoS, opts.Node, control.MetaSLOs{S: store}, policies, work.bus, prom.Throttled, logger)
	if err != nil {
		return fmt.Errorf("qos: %w", err)
	}
	go qr.cleanup(ctx, backend, store, logger)
	cr, err := startContext(ctx, opts.Context, store, qr.slos.ClassLimits, qr.s3(), logger)
	if err != nil {
		return fmt.Errorf("request classes: %w", err)
	}
	needs.e.Store(cr.enforcer)
	var front admit.QoS = cr.enforcer
	if opts.QoS.Off {
		// QoS off is no shaping stage at all: GETs keep sendfile.
		front = nil
	}
	controllers, err := startControllers(ctx, policies, metricFeed, prom, logger, append(qr.globals(opts.NoControllers, work.bus, logger), cr.supervised())...)
	if err != nil {
		return fmt.Errorf("controllers: %w", err)
	}
	reqStores, err := startRequestFilterStores(ctx, opts, backend, store, work.bus, opts.Node+"-"+defaultNode(), qr.limiter, logger)
	if err != nil {
		return err
	}
	defer reqStores.close(logger)
	var objCache dataplane.ObjectCache
	var cacheStatus admin.CacheReporter
	if reqStores.cache != nil {
		objCache, cacheStatus = reqStores.cache, nodeCache{reqStores.cache}
		prom.Registry().MustRegister(reqStores.cache.Collectors()...)
	}
	self := admin.LocalNode(opts.Node, backend, cacheStatus)
	qr.describe(self)
	qr.reportDevices(backend)
	data := dataplane.New(dataplane.Config{
		Backend: backend, Logger: logger,
		Pipelines: dataplane.Timed(policies, prom), Decoders: dataplane.Decoders{Registry: policies, Env: filter.Env{Keys: dataKeys}, Observer: prom},
		RequestFilters: policies, Cache: objCache, Trash: reqStores.trash, Changes: reqStores.changes,
	})
	s3 := s3api.New(s3api.Config{
		Backend: backend, Buckets: cache, Auth: newAuthenticator(cache), Logger: logger,
		Domains: opts.Domains, Region: opts.Region, QoS: front, Data: data,
		Observer: promexp.Multi(prom, work.observer()),
	})
	blk, err := startBlock(ctx, opts, store, policies, dataKeys, prom.Registry(), work.bus, logger)
	if err != nil {
		return err
	}
	defer blk.close()
	adminHandler := admin.New(admin.Config{Store: fleet.AdminStore{Store: store, Reload: policies.Reload, Sync: syncer, Log: logger}, Token: token, Logger: logger,
		Policies: policies, Usage: usage{buckets: store, backend: backend}, Controllers: controllers, Workload: work.source(),
		Metrics: prom.Handler(), MetricsToken: opts.MetricsToken, Volumes: blk.volumes(), QoS: qr.admin(), Trash: trashAdmin{reqStores.trash},
		Filters:  control.NewFilterAdmin(policies, fleet.FilterStore{Store: store, Announcer: announcer}, sandbox.catalog),
		Locality: locator(backend), Node: opts.Node, Nodes: fleetNodes{self: self, fleet: qr.fleet}, Context: cr})

	s3ln, err := net.Listen("tcp", opts.S3Addr)
	if err != nil {
		return fmt.Errorf("listen s3: %w", err)
	}
	adminLn, err := net.Listen("tcp", opts.AdminAddr)
	if err != nil {
		s3ln.Close()
		return fmt.Errorf("listen admin: %w", err)
	}
	errLog := slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	s3srv := &http.Server{Handler: s3, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: errLog}
	adminSrv := &http.Server{ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog}
	mountDashboard(ctx, adminSrv, adminHandler, token, store, work.agg, logger)

	errc := make(chan error, 2)
	go func() { errc <- serve(s3srv, s3ln) }()
	go func() { errc <- serve(adminSrv, adminLn) }()
	if generated && opts.Out != nil {
		fmt.Fprintf(opts.Out, "admin token (stored in %s, shown once): %s\n", filepath.Join(opts.DataDir, "admin.token"), token)
	}
	if opts.Ready != nil {
		opts.Ready(s3ln.Addr().String(), adminLn.Addr().String())
	}
	logger.Info("facet ready", "s3", s3ln.Addr().String(), "admin", adminLn.Addr().String(), "data", opts.DataDir)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	logger.Info("shutting down", "timeout", opts.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), opts.ShutdownTimeout)
	defer cancel()
	if err := s3srv.Shutdown(sctx); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("s3 shutdown: %w", err))
	}
	if err := adminSrv.Shutdown(sctx); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("admin shutdown: %w", err))
	}
	logger.Info("stopped")
	return runErr
}

func serve(srv *http.Server, ln net.Listener) error {
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// localState returns the admin token (generated reports that it must be
// shown) and the master key; only `facet serve` creates them in its data
// directory, the gateway role is given both.
func localState(opts Options) (token string, generated bool, key []byte, err error) {
	if opts.stateless {
		key, err = fleetMasterKey(opts)
		return opts.AdminToken, false, key, err
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return "", false, nil, fmt.Errorf("create data dir: %w", err)
	}
	if token, generated, err = adminToken(opts); err != nil {
		return "", false, nil, err
	}
	key, err = masterKey(opts.DataDir)
	return token, generated, key, err
}

// adminToken returns the configured token, or the one generated on an
// earlier start, or a new one (generated reports that it must be shown).
func adminToken(opts Options) (token string, generated bool, err error) {
	if opts.AdminToken != "" {
		return opts.AdminToken, false, nil
	}
	path := filepath.Join(opts.DataDir, "admin.token")
	if data, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(data)); t != "" {
			return t, false, nil
		}
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false, err
	}
	token = hex.EncodeToString(b[:])
	if err := writeFileSync(path, []byte(token+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("store admin token: %w", err)
	}
	return token, true, nil
}

// masterKey reads FACET_MASTER_KEY or the data dir's key file.
func masterKey(dataDir string) ([]byte, error) {
	if v := os.Getenv("FACET_MASTER_KEY"); v != "" {
		k, err := meta.DecodeMasterKey(v)
		if err != nil {
			return nil, fmt.Errorf("FACET_MASTER_KEY: %w", err)
		}
		return k, nil
	}
	return meta.LoadOrCreateMasterKey(filepath.Join(dataDir, "master.key"))
}

func writeFileSync(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// openBackend opens where object bytes live: the remote store named by
// opts.BackendURL, or the embedded filesystem under the data directory.
func openBackend(ctx context.Context, opts Options, logger *slog.Logger, needed func(context.Context) (string, float64, bool)) (storage.Backend, error) {
	if opts.BackendURL != "" {
		return s3store.Open(ctx, opts.BackendURL, s3store.Options{})
	}
	return fs.Open(ctx, filepath.Join(opts.DataDir, "objects"), fs.Options{Logger: logger, NoSync: opts.NoSync,
		Streams: fs.StreamOptions{Model: fs.IOModel(opts.IOModel), Priorities: fs.Priorities{Needed: needed}}})
}

// locator is the backend's data locality service, nil when it has none.
func locator(b storage.Backend) admin.Locator {
	l, _ := b.(admin.Locator)
	return l
}
