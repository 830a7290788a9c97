// Package ui owns Facet's administration dashboard: the pages under /ui/
// on the admin listener (plain JavaScript and SVG, embedded in the binary),
// their sign-in (the admin with the admin token, a tenant with one of its
// access keys) and server-side sessions, CSRF protection, the
// Content-Security-Policy, and the live plots' feed: a sampler that keeps
// the last five minutes of per-tenant throughput in a ring buffer and
// streams it to open dashboards as server-sent events.
//
// The dashboard holds no business logic of its own. Its JSON endpoints
// under /ui/api/v1/ are the control API (internal/admin), called in-process
// with the admin token on behalf of the session: whole for the admin, and
// for a tenant only through an allow-list that pins every request to the
// tenant's own name and filters what comes back (scope.go). The browser
// never holds the admin token. The same scope serves tenants that call
// the control API directly with SigV4-signed requests (signed.go).
package ui

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"fmt"
	"html"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/audit"
	"github.com/facet-sds/facet/internal/authfail"
	"github.com/facet-sds/facet/internal/buildinfo"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/metrics"
	"github.com/facet-sds/facet/internal/s3api/sigv4"
)

//go:embed assets
var assets embed.FS

// Store is what the dashboard reads from the metadata store directly:
// credentials for tenants' sign-in, and what it needs to decide which
// policies a tenant may see. *meta.Store implements it.
type Store interface {
	LookupAccessKey(ctx context.Context, accessKey string) (tenant, secret string, err error)
	ListPolicies(ctx context.Context) ([]meta.Policy, error)
	BucketOwner(ctx context.Context, bucket string) (string, time.Time, error)
	GetGroup(ctx context.Context, name string) (meta.Group, error)
}

// Snapshotter gives the latest merged periods of the workload metrics:
// one metric's (cheap, to notice a new period), and every metric's per
// target and per node. *metrics.Aggregator implements it.
type Snapshotter interface {
	Latest(metric string) (metrics.Aggregate, bool)
	Snapshot() []metrics.SnapshotValue
}

var _ Snapshotter = (*metrics.Aggregator)(nil)

// Config assembles the dashboard.
type Config struct {
	// API is the control API handler (admin.New); the dashboard calls it
	// in-process with Token.
	API   http.Handler
	Token string
	Store Store
	// Metrics feeds the live plots; nil leaves them empty.
	Metrics Snapshotter
	Logger  *slog.Logger
	// Period is how often the plots' sampler runs; 0 means one second.
	Period time.Duration
	// History is how much the ring buffer keeps; 0 means five minutes.
	History time.Duration
	// SessionIdle and SessionMax bound a session's life: idle time and
	// total; 0 means 30 minutes and 12 hours.
	SessionIdle, SessionMax time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Build is shown in every page's footer; zero: the running binary's.
	Build buildinfo.Info
	// Audit, when set, records each sign-in, accepted or refused.
	Audit Auditor
}

// Auditor is the audit log sign-ins are recorded in (audit.Log).
type Auditor interface {
	Record(audit.Record)
}

// UI is the dashboard. Handler serves it and, for every other path, the
// control API; Run feeds its live plots.
type UI struct {
	api       http.Handler
	apiToken  string
	tokenHash *[sha256.Size]byte
	store     Store
	log       *slog.Logger
	now       func() time.Time
	sessions  *sessions
	// logins counts failed sign-ins per client address; signed counts
	// failed signed calls per client address and access key (package
	// authfail).
	logins, signed *authfail.Limiter
	audit          Auditor
	live           *live
	static         http.Handler
	// index is the one document, with the build in its footer.
	index []byte
	// verifier authenticates tenants' signed API calls (signed.go).
	verifier *sigv4.Verifier
}

// New returns the dashboard; call Run to feed its plots.
func New(cfg Config) *UI {
	u := &UI{api: cfg.API, store: cfg.Store, log: cfg.Logger, now: cfg.Now}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	if u.now == nil {
		u.now = time.Now
	}
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		u.tokenHash = &sum
	}
	idle, maxAge := cfg.SessionIdle, cfg.SessionMax
	if idle <= 0 {
		idle = 30 * time.Minute
	}
	if maxAge <= 0 {
		maxAge = 12 * time.Hour
	}
	u.sessions = newSessions(idle, maxAge, u.now)
	u.logins = authfail.New(authfail.Config{Now: u.now})
	u.audit = cfg.Audit
	u.signed = authfail.New(authfail.Config{Now: u.now})
	u.live = newLive(cfg.Metrics, cfg.Store, cfg.Period, cfg.History, u.now, u.log)
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	u.static = http.FileServerFS(sub)
	build := cfg.Build
	if build == (buildinfo.Info{}) {
		build = buildinfo.Get()
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	footer := html.EscapeString(fmt.Sprintf("Facet %s · commit %s · %s · built %s", build.Version, shortCommit(build.Commit), build.GoVersion, build.Date))
	u.index = bytes.Replace(index, []byte("<!--build-->"), []byte(footer), 1)
	u.apiToken = cfg.Token
	u.verifier = newVerifier(cfg.Store)
	return u
}

// Run samples the workload metrics and policy states for the live plots
// until ctx ends; event streams end with it.
func (u *UI) Run(ctx context.Context) { u.live.run(ctx) }

// Handler serves /ui/, answers tenants' signed calls of the control API
// through the tenant scope (signed.go), and passes every other request to
// the control API.
func (u *UI) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case p == "/ui":
			http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
		case strings.HasPrefix(p, "/ui/"):
			u.serveUI(w, r)
		case signedRequest(r):
			u.serveSigned(w, r)
		default:
			u.api.ServeHTTP(w, r)
		}
	})
}

// contentSecurityPolicy allows nothing but the dashboard's own files: no
// inline script or style, no other origin, no framing.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// shortCommit is a commit as git abbreviates it, keeping "-dirty".
func shortCommit(c string) string {
	rev, dirty, _ := strings.Cut(c, "-")
	if len(rev) == 40 {
		rev = rev[:12]
	}
	if dirty != "" {
		return rev + "-" + dirty
	}
	return rev
}

func (u *UI) serveUI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	rest := strings.TrimPrefix(r.URL.Path, "/ui")
	if strings.HasPrefix(rest, "/api/") {
		u.serveAPI(w, r, strings.TrimPrefix(rest, "/api"))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		writeErr(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "the dashboard's files are read-only")
		return
	}
	// Every page is the one document; the rest are its scripts and styles.
	r2 := new(http.Request)
	*r2 = *r
	u2 := *r.URL
	u2.Path, u2.RawPath = rest, ""
	if rest == "/" || rest == "" || !strings.Contains(rest[1:], ".") || rest == "/index.html" {
		h.Set("Content-Type", "text/html; charset=utf-8")
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(u.index))
		return
	}
	r2.URL = &u2
	u.static.ServeHTTP(w, r2)
}
