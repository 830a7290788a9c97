// Package server owns the wiring of Facet's roles (`facet serve`,
// `gateway`, `controller`, `block`): a Server built by New from one
// Options, in dependency order, started by Start and stopped by Shutdown.
// A role is a set of components over that Options, not a wiring of its
// own. The Server owns what it starts: every goroutine is started through
// one helper that counts it, and Shutdown stops the listeners, lets the
// requests in flight finish, stops and waits for every goroutine, and only
// then closes the stores, so that no in-flight write is left half-done and
// no goroutine outlives the store it uses.
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
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/filter/wasm"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
	s3store "github.com/facet-sds/facet/internal/storage/s3"
	"github.com/facet-sds/facet/internal/tlsconf"
)

// Role names a set of components.
type Role string

const (
	// RoleServe is `facet serve`: everything in one process over a data
	// directory (the default).
	RoleServe Role = "serve"
	// RoleGateway is `facet gateway`: serve with no state of its own and
	// no controllers (gateway.go).
	RoleGateway Role = "gateway"
	// RoleController is `facet controller`: the fleet's automation
	// controllers behind a lease, and optionally the admin API
	// (controller_role.go).
	RoleController Role = "controller"
	// RoleBlock is `facet block`: the block stage and an admin API for
	// pools and volumes, without the S3 gateway (block.go).
	RoleBlock Role = "block"
)

// Options configure a Server; Role selects which fields apply.
type Options struct {
	// Role selects the components; "" is RoleServe.
	Role Role
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger

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
	// IdleTimeout closes a keep-alive connection of any HTTP listener
	// idle this long; 0 means two minutes, negative none.
	IdleTimeout time.Duration
	// BodyReadTimeout is the longest a request body may stop arriving
	// on any HTTP listener, and the grace before BodyMinRate applies; the
	// request then ends in RequestTimeout (timeouts.go). 0 means 30 s,
	// negative no body deadline.
	BodyReadTimeout time.Duration
	// BodyMinRate is the slowest a request body may arrive on average
	// (bytes per second) after BodyReadTimeout; 0 means 1024, negative
	// none.
	BodyMinRate int64
	// NoSync disables fsync; only for benchmarks.
	NoSync bool
	// NoVerifyReads serves GETs without checking stored bytes against
	// their checksums (which are still recorded): benchmarks only.
	NoVerifyReads bool
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
	// Audit configures the audit log; no Path, none.
	Audit AuditOptions
	// MetricsBucketLabels adds bucket labels to the Prometheus counters.
	MetricsBucketLabels bool
	// TenantMaxUploads caps a tenant's open multipart uploads where no
	// quota sets their number (0: no cap).
	TenantMaxUploads int64
	// TenantMaxConnections caps a tenant's S3 requests in flight on this
	// gateway; more are refused with 503 SlowDown (0: no cap).
	TenantMaxConnections int
	// BusURL joins an external NATS bus ("nats://host:4222", or several
	// comma-separated); empty embeds one in the process.
	BusURL string
	// BusCA is a PEM file of the CAs that verify the bus's TLS servers
	// (and makes the connection TLS); empty: the system's roots, for
	// tls:// URLs.
	BusCA string
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
	// DisabledControllers names built-in controllers not to run here
	// (BuiltinControllers), for instance "bandwidth" when an
	// out-of-process controller assigns the bandwidth shares.
	DisabledControllers []string
	// QoS configures bandwidth and IOPS QoS (qos.go).
	QoS QoSOptions
	// Context configures request classes (context.go).
	Context ContextOptions
	// Block configures the block stage (NBD volumes).
	Block BlockOptions
	// Out receives the one-time announcement of a generated admin token.
	Out io.Writer
	// Ready, when set, is called with the bound addresses once the
	// listeners accept connections (tests and benchmarks bind port 0); an
	// address the role does not listen on is "".
	Ready func(s3Addr, adminAddr string)
	// LeaseTTL is how long the controller role's lease lasts without
	// renewal; 0 means three seconds. It is renewed every third of it.
	// The role names itself in the lease by Node.
	LeaseTTL time.Duration
	// OnStoresClosing, when set, is called by Shutdown after every
	// goroutine the server started has exited and before the stores
	// close, with the goroutine counts (tests).
	OnStoresClosing func(GoroutineCounts)
	// CacheDir is the caching filter's local fast disk; empty means
	// DATA/cache (serve) or no object cache (gateway).
	CacheDir string
	// WasmCacheDir holds the compiled code of WASM filters, so that a
	// restart loads rather than recompiles; empty means DATA/wasm/cache
	// (serve) or a directory under the user's cache directory (gateway:
	// a cache, not state), "off" none.
	WasmCacheDir string
	// WasmBudget bounds the WASM filter instances running at once, and
	// their memory, fairly between tenants; zero Instances admits all.
	WasmBudget wasm.BudgetConfig
	// TrashPurgeEvery is how often the recycle bin purges expired
	// objects; 0 means every 10 minutes.
	TrashPurgeEvery time.Duration
	// TLS names the certificates every HTTP listener (S3, admin) and the
	// embedded bus's BusListen port serve; empty: plain, on loopback
	// addresses only unless InsecureListen.
	TLS tlsconf.Source
	// TLSReloadEvery is how often the certificate files are checked for a
	// change (sizes and mtimes); 0 never: only ReloadTLS (SIGHUP)
	// reloads them.
	TLSReloadEvery time.Duration
	// InsecureListen allows plain listeners (HTTP, the embedded bus) on
	// non-loopback addresses.
	InsecureListen bool
	// MasterKeyFile is where the gateway role reads the fleet's master key
	// when FACET_MASTER_KEY is unset (see CheckGateway).
	MasterKeyFile string
}

// stateless is the gateway role: nothing is written to DataDir.
func (o Options) stateless() bool { return o.Role == RoleGateway }

// Server is one Facet process of some role.
type Server struct {
	opts Options
	log  *slog.Logger

	// ctx is the lifetime of every goroutine the server starts; Shutdown
	// cancels it once the listeners have drained.
	ctx    context.Context
	cancel context.CancelFunc

	goroutines goroutines
	// runs are the goroutines Start launches, in the order New built
	// their components.
	runs []run
	// listeners are the HTTP listeners Start binds and Shutdown drains.
	listeners []*httpListener
	// stops end the other request servers (NBD) before the goroutines
	// are cancelled: requests in flight finish first.
	stops []func() error
	// closers close what New opened (stores, the bus, caches), in
	// reverse order, after every goroutine has exited.
	closers []closer
	// certs are the listeners' TLS certificates, nil for plain HTTP.
	certs *tlsconf.Certs
	// failed carries a listener's fatal error to Run.
	failed chan error

	token, tokenFile string // tokenFile: where a generated token was stored
	ready            func(s3Addr, adminAddr string)
	readyMsg         []any
	// readyHooks run once the listeners are bound, before ready.
	readyHooks []func()
	started    atomic.Bool

	startOnce, shutdownOnce sync.Once
	shutdownErr             error
}

type run struct {
	name string
	f    func(ctx context.Context)
}

type closer struct {
	name string
	f    func() error
}

// httpListener is an HTTP server and the address it binds.
type httpListener struct {
	name string
	addr string
	srv  *http.Server
	ln   net.Listener
	// handling counts the requests whose handler has not returned: a
	// drain that times out closes their connections, and Shutdown waits
	// for the handlers to return before it closes the stores.
	handling atomic.Int64
}

// track counts h's requests in l.handling.
func (l *httpListener) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.handling.Add(1)
		defer l.handling.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// New builds the components of opts.Role in dependency order; nothing
// runs until Start. ctx bounds the building only (opening stores, loading
// policies). On error, whatever was opened is closed.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Role == "" {
		opts.Role = RoleServe
	}
	if err := checkTokens(opts); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger, failed: make(chan error, 4)}
	s.goroutines.running = map[string]int{}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	// The certificates first: the embedded bus serves them too.
	err := s.loadTLS()
	switch {
	case err != nil:
	case opts.Role == RoleServe, opts.Role == RoleGateway:
		err = s.buildGateway(ctx)
	case opts.Role == RoleController:
		err = s.buildController(ctx)
	case opts.Role == RoleBlock:
		err = s.buildBlock(ctx)
	default:
		err = fmt.Errorf("unknown role %q", opts.Role)
	}
	if err == nil {
		err = s.checkPlainListeners()
	}
	if err != nil {
		for _, stop := range s.stops { // nothing was started: they close listeners
			_ = stop()
		}
		s.cancel()
		s.closeAll()
		return nil, err
	}
	return s, nil
}

// later registers a goroutine for Start.
func (s *Server) later(name string, f func(ctx context.Context)) {
	s.runs = append(s.runs, run{name, f})
}

// closeLater registers what Shutdown closes after the goroutines exit.
func (s *Server) closeLater(name string, f func() error) {
	s.closers = append(s.closers, closer{name, f})
}

// listen registers an HTTP listener for Start.
func (s *Server) listen(name, addr string, srv *http.Server) *httpListener {
	l := &httpListener{name: name, addr: addr, srv: srv}
	s.listeners = append(s.listeners, l)
	return l
}

// fail reports a fatal error of a listener to Run.
func (s *Server) fail(err error) {
	select {
	case s.failed <- err:
	default:
	}
}

// Failed delivers the first fatal error of a listener (Run then shuts
// the server down).
func (s *Server) Failed() <-chan error { return s.failed }

// Start runs the background goroutines, then binds the listeners and
// serves. If a listener cannot be bound, Start returns the error; call
// Shutdown to stop what did start.
func (s *Server) Start() error {
	err := errors.New("server: started twice")
	s.startOnce.Do(func() { err = s.start() })
	return err
}

func (s *Server) start() error {
	s.started.Store(true)
	for _, r := range s.runs {
		s.startGoroutine(r.name, func() { r.f(s.ctx) })
	}
	for _, l := range s.listeners {
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			for _, b := range s.listeners {
				if b.ln != nil {
					b.ln.Close()
					b.ln = nil
				}
			}
			return fmt.Errorf("listen %s: %w", l.name, err)
		}
		l.ln = ln
	}
	for _, l := range s.listeners {
		s.opts.timeouts().apply(l.srv)
		if l.srv.ErrorLog == nil {
			// net/http's own complaints (a failed TLS handshake, a
			// broken connection) go to the server's log, not stderr.
			l.srv.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
		}
		l.srv.Handler = l.track(l.srv.Handler)
		serve := l.srv.Serve
		if s.certs != nil {
			s.serveTLS(l)
			serve = func(ln net.Listener) error { return l.srv.ServeTLS(ln, "", "") }
		}
		s.startGoroutine(l.name+" listener", func() {
			if err := serve(l.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.fail(fmt.Errorf("%s: %w", l.name, err))
			}
		})
	}
	if s.tokenFile != "" && s.opts.Out != nil {
		fmt.Fprintf(s.opts.Out, "admin token (stored in %s, shown once): %s\n", s.tokenFile, s.token)
	}
	for _, h := range s.readyHooks {
		h()
	}
	if s.ready != nil {
		s.ready(s.addr("s3"), s.addr("admin"))
	}
	s.log.Info(s.readyMsg[0].(string), s.readyArgs()...)
	return nil
}

// addr is the bound address of the named listener, "" when none.
func (s *Server) addr(name string) string {
	for _, l := range s.listeners {
		if l.name == name && l.ln != nil {
			return l.ln.Addr().String()
		}
	}
	return ""
}

// readyArgs are the ready message's attributes: the bound addresses of
// the listeners, then the role's own.
func (s *Server) readyArgs() []any {
	var out []any
	for _, l := range s.listeners {
		if l.ln != nil {
			out = append(out, l.name, l.ln.Addr().String())
		}
	}
	return append(out, s.readyMsg[1:]...)
}

// Shutdown stops the server: it stops accepting, lets the requests in
// flight finish (until ctx ends), cancels every goroutine and waits for
// them all, then closes the stores. A goroutine still running when ctx
// has ended and a grace period has passed is named in the error, and the
// stores are then left open rather than closed under it.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

// goroutineGrace is how long Shutdown waits for cancelled goroutines past
// its ctx: they were cancelled and should return promptly (the controller
// supervisor gives a controller 10 s).
const goroutineGrace = 15 * time.Second

func (s *Server) shutdown(ctx context.Context) error {
	var errs []error
	for _, l := range s.listeners {
		if l.ln == nil {
			continue
		}
		if err := l.srv.Shutdown(ctx); err != nil {
			// The drain ran out of time: the requests still running are
			// cut (their connections closed) rather than left running
			// over closed stores.
			n := l.handling.Load()
			s.log.Warn("requests cut at the shutdown timeout", "listener", l.name, "requests", n)
			_ = l.srv.Close()
			errs = append(errs, fmt.Errorf("%s shutdown: %w (%d requests cut)", l.name, err, n))
		}
	}
	for _, stop := range s.stops {
		if err := stop(); err != nil {
			errs = append(errs, err)
		}
	}
	s.cancel()
	if running := s.goroutines.wait(ctx, goroutineGrace); len(running) > 0 || !s.handlersReturned(goroutineGrace) {
		running = append(running, s.handlersRunning()...)
		err := fmt.Errorf("goroutines still running, stores left open: %s", strings.Join(running, ", "))
		s.log.Error("shutdown", "err", err)
		return errors.Join(append(errs, err)...)
	}
	counts := s.Goroutines()
	s.log.Info("goroutines", "started", counts.Started, "exited", counts.Exited)
	if s.opts.OnStoresClosing != nil {
		s.opts.OnStoresClosing(counts)
	}
	errs = append(errs, s.closeAll()...)
	s.log.Info("stores closed")
	s.log.Info("stopped")
	return errors.Join(errs...)
}

// handlersReturned waits until no request handler runs (their connections
// are closed by now), for at most grace.
func (s *Server) handlersReturned(grace time.Duration) bool {
	deadline := time.Now().Add(grace)
	for len(s.handlersRunning()) > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// handlersRunning names the listeners with request handlers still running.
func (s *Server) handlersRunning() []string {
	var out []string
	for _, l := range s.listeners {
		if n := l.handling.Load(); n > 0 {
			out = append(out, fmt.Sprintf("%s requests (%d)", l.name, n))
		}
	}
	return out
}

// closeAll closes what New opened, last opened first.
func (s *Server) closeAll() []error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		c := s.closers[i]
		if err := c.f(); err != nil {
			s.log.Warn("close", "what", c.name, "err", err)
			errs = append(errs, fmt.Errorf("close %s: %w", c.name, err))
		}
	}
	s.closers = nil
	return errs
}

// Run builds the server, serves until ctx ends or a listener fails, then
// shuts down within opts.ShutdownTimeout.
func Run(ctx context.Context, opts Options, logger *slog.Logger) error {
	opts.Logger = logger
	s, err := New(ctx, opts)
	if err != nil {
		return err
	}
	// SIGHUP reloads the TLS certificates (and no longer ends the
	// process).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	runErr := s.Start()
	for wait := runErr == nil; wait; {
		select {
		case <-ctx.Done():
			wait = false
		case runErr = <-s.Failed():
			wait = false
		case <-hup:
			if s.certs == nil {
				s.log.Info("SIGHUP: no TLS certificates to reload")
			} else {
				_ = s.ReloadTLS() // logged
			}
		}
	}
	s.log.Info("shutting down", "timeout", s.opts.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	return errors.Join(runErr, s.Shutdown(sctx))
}

// GoroutineCounts counts the goroutines a server started.
type GoroutineCounts struct {
	Started, Exited int64
	// Running names those still running (with a count when several run
	// under one name).
	Running []string
}

// Goroutines counts the goroutines started so far and those exited.
func (s *Server) Goroutines() GoroutineCounts { return s.goroutines.counts() }

// goroutines counts and waits for the goroutines a server starts, in the
// manner of nats-server's startGoroutine.
type goroutines struct {
	wg              sync.WaitGroup
	started, exited atomic.Int64
	mu              sync.Mutex
	running         map[string]int
}

// startGoroutine runs f on a goroutine of its own, counted under name
// until it returns. Every goroutine of the server starts here.
func (s *Server) startGoroutine(name string, f func()) {
	g := &s.goroutines
	g.wg.Add(1)
	g.started.Add(1)
	g.mu.Lock()
	g.running[name]++
	g.mu.Unlock()
	go func() {
		defer func() {
			g.mu.Lock()
			if g.running[name]--; g.running[name] == 0 {
				delete(g.running, name)
			}
			g.mu.Unlock()
			g.exited.Add(1)
			g.wg.Done()
		}()
		f()
	}()
}

func (g *goroutines) counts() GoroutineCounts {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := GoroutineCounts{Started: g.started.Load(), Exited: g.exited.Load()}
	for name, n := range g.running {
		if n > 1 {
			name = fmt.Sprintf("%s (%d)", name, n)
		}
		c.Running = append(c.Running, name)
	}
	slices.Sort(c.Running)
	return c
}

// wait waits for every goroutine to exit, until ctx ends and grace has
// passed; it returns the names of those still running.
func (g *goroutines) wait(ctx context.Context, grace time.Duration) []string {
	done := make(chan struct{})
	go func() { g.wg.Wait(); close(done) }() // not counted: it watches the others
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return g.counts().Running
	}
}

// defaultNode names this process: the host name and a random suffix, so
// that two gateways on one host (tests, benchmarks) stay apart.
func defaultNode() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "facet"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// localState returns the admin token (generated reports that it must be
// shown) and the master key; only `facet serve` creates them in its data
// directory, the gateway role is given both.
func localState(opts Options) (token string, generated bool, key []byte, err error) {
	if opts.stateless() {
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

// MinTokenLen is the shortest admin or metrics bearer token a server
// accepts: 32 bytes keep a token out of reach of guessing even at the
// failed-auth rate limit's pace.
const MinTokenLen = 32

// checkTokens refuses a configured admin or metrics token shorter than
// MinTokenLen (a generated one is 48 characters).
func checkTokens(opts Options) error {
	for _, tok := range []struct{ flag, val string }{{"--admin-token", opts.AdminToken}, {"--metrics-token", opts.MetricsToken}} {
		if tok.val != "" && len(tok.val) < MinTokenLen {
			return fmt.Errorf("%s is %d bytes; it must be at least %d (generate one with `openssl rand -hex 32`)", tok.flag, len(tok.val), MinTokenLen)
		}
	}
	return nil
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
			if len(t) < MinTokenLen {
				return "", false, fmt.Errorf("%s holds a token of %d bytes; it must be at least %d (delete the file to generate a new one)", path, len(t), MinTokenLen)
			}
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
