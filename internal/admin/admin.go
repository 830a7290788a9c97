// Package admin owns Facet's control API: REST/JSON over HTTP, guarded by the
// admin bearer token, for tenants (their access keys, buckets, data keys and
// usage), groups, policies, the filter registry, controllers and workload
// metrics (/v1/metrics: the registry and current values per target, from a
// MetricsSource). It also serves the API's
// OpenAPI 3 description. The API is served under /v1 and, as before, under
// /api/v1. The listener also serves /healthz (open) and, when configured,
// the Prometheus exposition on /metrics, which takes the admin token or a
// separate metrics token, so that a scraper need not hold the admin token. The policy language itself is a PolicyService the API consumes
// (internal/policy implements it). The CLI client is internal/ctl.
package admin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/authfail"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/ownership"
)

// Store is what the control API needs from the metadata store;
// *meta.Store implements it.
type Store interface {
	CreateTenantWithKey(ctx context.Context, name string) (meta.Tenant, meta.NewKey, error)
	GetTenant(ctx context.Context, name string) (meta.Tenant, error)
	ListTenants(ctx context.Context) ([]meta.Tenant, error)
	DeleteTenant(ctx context.Context, name string) error
	SetTenantPlainNBD(ctx context.Context, name string, allow bool) (meta.Tenant, error)
	CreateKey(ctx context.Context, tenant string) (meta.NewKey, error)
	ListKeys(ctx context.Context, tenant string) ([]meta.KeyInfo, error)
	RevokeKey(ctx context.Context, tenant, accessKey string) error
	ListBuckets(ctx context.Context, tenant string) ([]ownership.Bucket, error)

	DataKeys(ctx context.Context, tenant string) (meta.DataKeys, error)
	RotateDataKey(ctx context.Context, tenant string) (meta.DataKeys, error)

	CreateGroup(ctx context.Context, name string, members []string) (meta.Group, error)
	GetGroup(ctx context.Context, name string) (meta.Group, error)
	ListGroups(ctx context.Context) ([]meta.Group, error)
	DeleteGroup(ctx context.Context, name string) error
	AddGroupMembers(ctx context.Context, name string, members ...string) (meta.Group, error)
	RemoveGroupMembers(ctx context.Context, name string, members ...string) (meta.Group, error)

	GetPolicy(ctx context.Context, id string) (meta.Policy, error)
	ListPolicies(ctx context.Context) ([]meta.Policy, error)
	DeletePolicy(ctx context.Context, id string) error
}

var _ Store = (*meta.Store)(nil)

// Config configures the control API handler.
type Config struct {
	Store Store
	// Token is the admin bearer token. An empty token locks the API: every
	// request but the health check is refused.
	Token  string
	Logger *slog.Logger
	// Policies serves the policy language; nil answers its routes 501.
	Policies PolicyService
	// Usage reports tenants' storage use; nil answers its route 501.
	Usage UsageSource
	// Controllers lists the running controllers; nil answers its route 501.
	Controllers ControllerSource
	// Workload reports workload metrics (GET /v1/metrics); nil answers
	// its routes 501.
	Workload MetricsSource
	// Filters registers filters at run time (WASM modules) and their
	// dependencies; nil answers those routes 501.
	Filters FilterAdmin
	// Volumes manages pools and block volumes; nil answers their
	// routes 501.
	Volumes Volumes
	// Metrics serves GET /metrics (Prometheus); nil answers 404.
	Metrics http.Handler
	// MetricsToken is a bearer token good for /metrics only; the admin
	// token is accepted there too. Empty: the admin token only.
	MetricsToken string
	// Locality answers GET /locality (the backend, when it can tell);
	// nil answers 501. Node names this gateway in its answers.
	Locality Locator
	Node     string
	// Nodes reports GET /nodes; nil answers 501.
	Nodes NodeSource
	// Context stores tenants' context rules and reports class flows;
	// nil answers its routes 501.
	Context ContextService
	// QoS serves /slos and the /bw views (slo.go); nil answers 501.
	QoS QoSService
	// Trash lists, restores and purges tenants' recycle bins; nil
	// answers its routes 501.
	Trash TrashService
	// Audit, when set, gets a record of every action and refusal
	// (audit.go) and serves GET /audit; nil answers that route 501.
	Audit AuditLog
	// Backups writes backup archives (GET /backup); nil answers 501.
	Backups BackupSource
	// Scrub runs and reports integrity scrubs; nil answers its routes
	// 501.
	Scrub ScrubService
	// Quotas stores quotas and reports usage; nil answers its routes 501.
	Quotas QuotaService
	// Fsck checks the running store (GET /fsck); nil answers 501.
	Fsck FsckSource
	// Storage probes whether local storage takes writes, for /healthz
	// (503 when it is read-only or failing) and /nodes; nil: not
	// reported (a remote backend).
	Storage StorageProbe
}

// maxBody bounds request bodies; the API's bodies are a few bytes of JSON.
// Policy texts may be longer: a file of policies.
const (
	maxBody       = 64 << 10
	maxPolicyBody = 1 << 20
)

//go:embed openapi.json
var openAPIDoc []byte

type handler struct {
	store       Store
	policies    PolicyService
	usage       UsageSource
	controllers ControllerSource
	workload    MetricsSource
	volumes     Volumes
	filters     FilterAdmin
	locator     Locator
	node        string
	nodes       NodeSource
	context     ContextService
	qos         QoSService
	trash       TrashService
	audit       AuditLog
	opIDs       map[string]string
	backups     BackupSource
	scrub       ScrubService
	quotas      QuotaService
	fsckSource  FsckSource
	storage     *storageHealth
	log         *slog.Logger
	tokenHash   *[sha256.Size]byte // nil: no token configured, refuse all
	// metricsHash is MetricsToken's; nil when there is none.
	metricsHash *[sha256.Size]byte
	// fails counts wrong bearer tokens per client address.
	fails *authfail.Limiter
	mux   *http.ServeMux
}

// route is one API operation. The table is the single list of operations;
// the OpenAPI document is tested against it.
type route struct {
	method, path string
	serve        func(*handler, http.ResponseWriter, *http.Request) error
}

// prefixes are where the API is served: /v1, and /api/v1 where the first
// release served it. Route paths are relative to them.
var prefixes = []string{"/v1", "/api/v1"}

var routes = []route{
	{http.MethodGet, "/openapi.json", (*handler).openAPI},
	{http.MethodPost, "/tenants", (*handler).createTenant},
	{http.MethodGet, "/tenants", (*handler).listTenants},
	{http.MethodGet, "/tenants/{name}", (*handler).getTenant},
	{http.MethodPatch, "/tenants/{name}", (*handler).setTenant},
	{http.MethodDelete, "/tenants/{name}", (*handler).deleteTenant},
	{http.MethodPost, "/tenants/{name}/keys", (*handler).createKey},
	{http.MethodGet, "/tenants/{name}/keys", (*handler).listKeys},
	{http.MethodDelete, "/tenants/{name}/keys/{access_key}", (*handler).revokeKey},
	{http.MethodGet, "/tenants/{name}/buckets", (*handler).listBuckets},
	{http.MethodGet, "/tenants/{name}/data-keys", (*handler).dataKeys},
	{http.MethodPost, "/tenants/{name}/keys:rotate-data-key", (*handler).rotateDataKey},
	{http.MethodGet, "/tenants/{name}/usage", (*handler).tenantUsage},
	{http.MethodGet, "/tenants/{name}/quota", (*handler).getQuota},
	{http.MethodPut, "/tenants/{name}/quota", (*handler).putQuota},
	{http.MethodDelete, "/tenants/{name}/quota", (*handler).deleteQuota},
	{http.MethodPost, "/tenants/{name}/quota:recount", (*handler).recountQuota},
	{http.MethodPost, "/groups", (*handler).createGroup},
	{http.MethodGet, "/groups", (*handler).listGroups},
	{http.MethodGet, "/groups/{group}", (*handler).getGroup},
	{http.MethodDelete, "/groups/{group}", (*handler).deleteGroup},
	{http.MethodPost, "/groups/{group}/members", (*handler).addGroupMembers},
	{http.MethodPost, "/groups/{group}/members:remove", (*handler).removeGroupMembers},
	{http.MethodPost, "/policies", (*handler).applyPolicies},
	{http.MethodGet, "/policies", (*handler).listPolicies},
	{http.MethodPost, "/policies:validate", (*handler).validatePolicies},
	{http.MethodGet, "/policies/{id}", (*handler).getPolicy},
	{http.MethodDelete, "/policies/{id}", (*handler).deletePolicy},
	{http.MethodGet, "/explain", (*handler).explain},
	{http.MethodGet, "/filters", (*handler).listFilters},
	{http.MethodGet, "/filters/{filter}", (*handler).getFilter},
	{http.MethodPost, "/filters", (*handler).createFilter},
	{http.MethodPut, "/filters/{filter}", (*handler).updateFilter},
	{http.MethodPut, "/filters/{filter}/data", (*handler).uploadFilterData},
	{http.MethodDelete, "/filters/{filter}", (*handler).deleteFilter},
	{http.MethodPost, "/filters/dependencies", (*handler).putDependency},
	{http.MethodGet, "/filters/dependencies", (*handler).listDependencies},
	{http.MethodGet, "/filters/dependencies/{dep}", (*handler).getDependency},
	{http.MethodDelete, "/filters/dependencies/{dep}", (*handler).deleteDependency},
	{http.MethodGet, "/controllers", (*handler).listControllers},
	{http.MethodGet, "/metrics", (*handler).listMetrics},
	{http.MethodGet, "/metrics/{metric}", (*handler).getMetric},
	{http.MethodGet, "/locality/{bucket}/{key...}", (*handler).locality},
	{http.MethodGet, "/nodes", (*handler).listNodes},
	{http.MethodGet, "/tenants/{name}/context-rules", (*handler).getContextRules},
	{http.MethodPut, "/tenants/{name}/context-rules", (*handler).putContextRules},
	{http.MethodDelete, "/tenants/{name}/context-rules", (*handler).deleteContextRules},
	{http.MethodGet, "/context/flows", (*handler).contextFlows},
	{http.MethodGet, "/volumes/{volume}/locality", (*handler).volumeLocality},
	{http.MethodGet, "/volumes/{volume}/explain", (*handler).explainVolume},
	{http.MethodPost, "/pools", (*handler).createPool},
	{http.MethodGet, "/pools", (*handler).listPools},
	{http.MethodDelete, "/pools/{pool}", (*handler).deletePool},
	{http.MethodPost, "/volumes", (*handler).createVolume},
	{http.MethodGet, "/volumes", (*handler).listVolumes},
	{http.MethodGet, "/volumes/{volume}", (*handler).getVolume},
	{http.MethodDelete, "/volumes/{volume}", (*handler).deleteVolume},
	{http.MethodPut, "/volumes/{volume}/size", (*handler).resizeVolume},
	{http.MethodPut, "/volumes/{volume}/throttle", (*handler).setVolumeThrottle},
	{http.MethodPost, "/nbd/clients", (*handler).createNBDClient},
	{http.MethodPost, "/nbd/psk", (*handler).createNBDPSK},
	{http.MethodDelete, "/nbd/psk/{name}", (*handler).deleteNBDPSK},
	{http.MethodGet, "/slos", (*handler).listSLOs},
	{http.MethodGet, "/slos/{name}", (*handler).getSLO},
	{http.MethodPut, "/slos/{name}", (*handler).putSLO},
	{http.MethodDelete, "/slos/{name}", (*handler).deleteSLO},
	{http.MethodGet, "/bw", (*handler).bandwidth},
	{http.MethodGet, "/bw/osinfo", (*handler).bandwidthOSInfo},
	{http.MethodGet, "/bw/nodes/{node}", (*handler).bandwidthNode},
	{http.MethodGet, "/audit", (*handler).auditTail},
	{http.MethodGet, "/trash/{name}", (*handler).listTrash},
	{http.MethodPost, "/trash/{name}/{id}/restore", (*handler).restoreTrash},
	{http.MethodDelete, "/trash/{name}/{id}", (*handler).purgeTrash},
	{http.MethodGet, "/backup", (*handler).backup},
	{http.MethodPost, "/scrub", (*handler).startScrub},
	{http.MethodGet, "/scrub", (*handler).scrubStatus},
	{http.MethodGet, "/fsck", (*handler).fsck},
}

// New returns the control API handler.
func New(cfg Config) http.Handler {
	h := &handler{volumes: cfg.Volumes, store: cfg.Store, policies: cfg.Policies, usage: cfg.Usage, controllers: cfg.Controllers, workload: cfg.Workload, filters: cfg.Filters, log: cfg.Logger, mux: http.NewServeMux(),
		locator: cfg.Locality, node: cfg.Node, nodes: cfg.Nodes, fails: authfail.New(authfail.Config{})}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.qos = cfg.QoS
	h.context = cfg.Context
	h.trash = cfg.Trash
	if cfg.Audit != nil {
		h.audit, h.opIDs = cfg.Audit, operationIDs()
	}
	h.backups = cfg.Backups
	h.scrub = cfg.Scrub
	h.quotas = cfg.Quotas
	h.fsckSource = cfg.Fsck
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		h.tokenHash = &sum
	} else {
		h.log.Warn("admin API has no token configured; all requests will be refused")
	}
	if cfg.MetricsToken != "" {
		sum := sha256.Sum256([]byte(cfg.MetricsToken))
		h.metricsHash = &sum
	}
	if cfg.Metrics != nil {
		h.mux.Handle("GET /metrics", cfg.Metrics)
	}
	if cfg.Storage != nil {
		h.storage = &storageHealth{probe: cfg.Storage, every: 2 * time.Second}
	}
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if h.storage == nil {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
			return
		}
		// A full disk still serves reads and deletes: degraded, not down.
		state, detail := h.storage.get()
		body := map[string]string{"status": "ok", "storage": state}
		code := http.StatusOK
		switch state {
		case StorageFull:
			body["status"], body["detail"] = "degraded", detail
		case StorageReadOnly, StorageFailing:
			body["status"], body["detail"], code = "unhealthy", detail, http.StatusServiceUnavailable
		}
		writeJSON(w, code, body)
	})
	for _, p := range prefixes {
		for _, rt := range routes {
			h.mux.HandleFunc(rt.method+" "+p+rt.path, func(w http.ResponseWriter, r *http.Request) {
				if err := rt.serve(h, w, r); err != nil {
					h.fail(w, r, err)
				}
			})
		}
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	reqID := rand.Text()[:16]
	w.Header().Set("X-Request-Id", reqID)
	// Responses can carry secrets: never let a proxy or browser keep them.
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	ctx := context.WithValue(r.Context(), reqIDKey{}, reqID)
	note := &auditNote{}
	if h.audit != nil {
		ctx = context.WithValue(ctx, auditNoteKey{}, note)
	}
	r = r.WithContext(ctx)

	h.dispatch(sw, r)
	if h.audit != nil && audited(r, sw.status) {
		h.record(r, sw.status, reqID, note)
	}

	// Path and status only: bodies carry secrets and headers the token.
	// Probes and scrapes come every few seconds: debug level.
	lvl := slog.LevelInfo
	if r.URL.Path == "/healthz" || r.URL.Path == "/metrics" || (r.Method == http.MethodGet && quietReads(r.Context())) {
		lvl = slog.LevelDebug
	}
	h.log.LogAttrs(ctx, lvl, "admin request",
		slog.String("request_id", reqID),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", sw.status),
		slog.Duration("duration", time.Since(start)),
		slog.String("remote", r.RemoteAddr))
}

func (h *handler) dispatch(w http.ResponseWriter, r *http.Request) {
	if !h.open(r) && !RateLimitBearer(w, r, h.fails, h.allowed) {
		return
	}
	next, pattern := h.mux.Handler(r)
	if pattern == "" {
		// ServeMux answers unmatched requests (404, 405 with Allow, or a
		// redirect) in plain text; keep its decision, answer in JSON.
		rec := &statusOnly{header: http.Header{}}
		next.ServeHTTP(rec, r)
		h.unmatched(w, r, rec)
		return
	}
	// Not next: only ServeMux.ServeHTTP fills in the path values.
	h.mux.ServeHTTP(w, r)
}

func (h *handler) unmatched(w http.ResponseWriter, r *http.Request, rec *statusOnly) {
	switch rec.status {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", rec.header.Get("Allow"))
		writeError(w, apiErr(rec.status, "MethodNotAllowed", fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path)))
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		w.Header().Set("Location", rec.header.Get("Location"))
		writeError(w, apiErr(rec.status, "Redirect", "see Location"))
	default:
		writeError(w, apiErr(http.StatusNotFound, "NotFound", fmt.Sprintf("no such API path %s", r.URL.Path)))
	}
}

// open reports whether r needs no token: the health check.
func (h *handler) open(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == "/healthz"
}

// RateLimitBearer checks r's bearer token with allowed, under fails: a
// client address with too many wrong tokens is refused (429) before its
// token is checked; a wrong token (a missing one guesses nothing) counts
// one failure. It answers the refusals itself and reports whether r may
// go on. Every admin listener of Facet's roles checks its tokens so.
func RateLimitBearer(w http.ResponseWriter, r *http.Request, fails *authfail.Limiter, allowed func(*http.Request) bool) bool {
	src := authfail.ClientAddr(r)
	if ok, wait := fails.Allowed(src); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		writeError(w, &apiError{status: http.StatusTooManyRequests, code: "TooManyAttempts", message: "too many failed authentications from this address; try again later"})
		return false
	}
	if allowed(r) {
		return true
	}
	if r.Header.Get("Authorization") != "" {
		fails.Failed(src)
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="facet-admin"`)
	writeError(w, &apiError{status: http.StatusUnauthorized, code: "Unauthorized", message: "missing or invalid admin bearer token"})
	return false
}

// allowed reports whether r may go on: /metrics takes either token, the
// rest the admin token.
func (h *handler) allowed(r *http.Request) bool {
	switch {
	case h.open(r):
		return true
	case r.URL.Path == "/metrics":
		return h.authorized(r) || BearerMatches(r, h.metricsHash)
	}
	return h.authorized(r)
}

func (h *handler) authorized(r *http.Request) bool { return BearerMatches(r, h.tokenHash) }

// BearerMatches reports whether r carries the bearer token hashed (SHA-256)
// to want; a nil want refuses everything. Other listeners of Facet's roles
// use it so that there is one token check.
func BearerMatches(r *http.Request, want *[sha256.Size]byte) bool {
	if want == nil {
		return false
	}
	auth := r.Header.Get("Authorization")
	const scheme = "Bearer "
	if len(auth) <= len(scheme) || !strings.EqualFold(auth[:len(scheme)], scheme) {
		return false
	}
	// Comparing fixed-size digests keeps the comparison constant-time
	// regardless of the presented token's length.
	got := sha256.Sum256([]byte(strings.TrimSpace(auth[len(scheme):])))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

type reqIDKey struct{}

type quietKey struct{}

// QuietReads marks requests made with ctx as a dashboard's periodic
// reads: their access-log lines go to debug level (changes stay at info).
// Only in-process callers can set it.
func QuietReads(ctx context.Context) context.Context { return context.WithValue(ctx, quietKey{}, true) }

func quietReads(ctx context.Context) bool { q, _ := ctx.Value(quietKey{}).(bool); return q }

// statusWriter remembers the status for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// statusOnly captures ServeMux's verdict on an unmatched request and drops
// its plain-text body.
type statusOnly struct {
	header http.Header
	status int
}

func (s *statusOnly) Header() http.Header         { return s.header }
func (s *statusOnly) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusOnly) WriteHeader(code int)        { s.status = code }

// apiError is an error with its HTTP status and stable code, answered as
// {"error": message, "code": code}, plus the diagnostics of a policy text
// that did not validate.
type apiError struct {
	status   int
	code     string
	message  string
	errors   []Diagnostic
	warnings []Diagnostic
}

func (e *apiError) Error() string { return e.message }

// fail answers err. Store errors are mapped to API errors by errors.Is;
// anything unexpected is logged in full and answered as a bare 500, since
// internal details are not the client's business.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = storeError(err, resourceOf(r))
	}
	// A 501 (this server lacks the service) is the caller's to know, not
	// a failure: the dashboard asks for optional services on every page.
	if obs.ClassOf(ae.status, ae.code) == obs.ClassServer {
		id, _ := r.Context().Value(reqIDKey{}).(string)
		h.log.Error("admin request failed", "request_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, ae)
}

// resource names what a request is about, for error messages.
type resource struct {
	tenant, accessKey, group, policy, filter string
}

func resourceOf(r *http.Request) resource {
	return resource{
		tenant: r.PathValue("name"), accessKey: r.PathValue("access_key"),
		group: r.PathValue("group"), policy: r.PathValue("id"), filter: r.PathValue("filter"),
	}
}

// storeError maps the errors of the store and of the policy service to API
// errors; anything else is an internal error.
func storeError(err error, res resource) *apiError {
	switch {
	case errors.Is(err, meta.ErrInvalidTenantName):
		return apiErr(http.StatusBadRequest, "InvalidTenantName",
			fmt.Sprintf("invalid tenant name %q: want 1-63 characters [a-z0-9][a-z0-9-_.]*", res.tenant))
	case errors.Is(err, meta.ErrTenantExists):
		return apiErr(http.StatusConflict, "TenantExists", fmt.Sprintf("tenant %q already exists", res.tenant))
	case errors.Is(err, meta.ErrTenantNotFound):
		return apiErr(http.StatusNotFound, "NoSuchTenant", fmt.Sprintf("tenant %q does not exist", res.tenant))
	case errors.Is(err, meta.ErrTenantNotEmpty):
		return apiErr(http.StatusConflict, "TenantNotEmpty",
			fmt.Sprintf("tenant %q still owns buckets; delete them first", res.tenant))
	case errors.Is(err, meta.ErrKeyNotFound):
		return apiErr(http.StatusNotFound, "NoSuchAccessKey",
			fmt.Sprintf("tenant %q has no access key %q", res.tenant, res.accessKey))
	case errors.Is(err, meta.ErrInvalidGroupName):
		return apiErr(http.StatusBadRequest, "InvalidGroupName",
			fmt.Sprintf("invalid group name %q: want 1-63 characters [a-z0-9][a-z0-9-_.]*", res.group))
	case errors.Is(err, meta.ErrGroupExists):
		return apiErr(http.StatusConflict, "GroupExists", fmt.Sprintf("group %q already exists", res.group))
	case errors.Is(err, meta.ErrGroupNotFound):
		return apiErr(http.StatusNotFound, "NoSuchGroup", fmt.Sprintf("group %q does not exist", res.group))
	case errors.Is(err, meta.ErrInvalidGroupMember):
		return apiErr(http.StatusBadRequest, "InvalidGroupMember", detail(err, meta.ErrInvalidGroupMember))
	case errors.Is(err, meta.ErrNotGroupMember):
		return apiErr(http.StatusNotFound, "NoSuchMember", detail(err, meta.ErrNotGroupMember))
	case errors.Is(err, meta.ErrPolicyNotFound):
		return apiErr(http.StatusNotFound, "NoSuchPolicy", fmt.Sprintf("policy %q does not exist", res.policy))
	case errors.Is(err, meta.ErrPolicyNameTaken):
		return apiErr(http.StatusConflict, "PolicyNameTaken", detail(err, meta.ErrPolicyNameTaken))
	case errors.Is(err, meta.ErrInvalidPolicy):
		return apiErr(http.StatusBadRequest, "InvalidPolicy", detail(err, meta.ErrInvalidPolicy))
	case errors.Is(err, meta.ErrFilterNotFound):
		return apiErr(http.StatusNotFound, "NoSuchFilter", fmt.Sprintf("filter %q does not exist", res.filter))
	case errors.Is(err, ErrInvalidInput):
		return apiErr(http.StatusBadRequest, "InvalidInput", detail(err, ErrInvalidInput))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apiErr(http.StatusServiceUnavailable, "RequestCanceled", "request canceled")
	}
	return apiErr(http.StatusInternalServerError, "InternalError", "internal error")
}

// detail is err's message from the sentinel on, without the layers of
// context in front of it ("meta: add policies: ...") that speak of the
// server's insides rather than of the request.
func detail(err, sentinel error) string {
	msg := err.Error()
	if i := strings.Index(msg, sentinel.Error()); i >= 0 && len(msg) > i+len(sentinel.Error()) {
		return msg[i:]
	}
	// The sentinel comes last: the words in front of it are the detail.
	return msg
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, Error{Error: e.message, Code: e.code, Errors: e.errors, Warnings: e.warnings})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the status is sent; a broken connection has no one left to tell
}

// decodeBody reads exactly one JSON object into v, rejecting unknown fields
// so that a misspelt field is an error rather than silently ignored.
func decodeBody(r *http.Request, w http.ResponseWriter, v any) error {
	return decodeBodyLimit(r, w, v, maxBody)
}

func decodeBodyLimit(r *http.Request, w http.ResponseWriter, v any, limit int64) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apiErr(http.StatusRequestEntityTooLarge, "BodyTooLarge", fmt.Sprintf("request body over %d bytes", limit))
		}
		return apiErr(http.StatusBadRequest, "MalformedJSON", "malformed JSON body: "+err.Error())
	}
	if _, err := dec.Token(); err != io.EOF {
		return apiErr(http.StatusBadRequest, "MalformedJSON", "malformed JSON body: trailing data after the object")
	}
	return nil
}

func apiErr(status int, code, message string) *apiError {
	return &apiError{status: status, code: code, message: message}
}
