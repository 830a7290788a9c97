// Package admin owns Facet's control API: REST/JSON over HTTP, guarded by the
// admin bearer token, for tenants, their access keys and their buckets. It
// also serves the API's OpenAPI 3 description. The CLI client is
// internal/ctl.
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
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/s3api"
)

// Store is what the control API needs from the metadata store;
// *meta.Store implements it.
type Store interface {
	CreateTenantWithKey(ctx context.Context, name string) (meta.Tenant, meta.NewKey, error)
	GetTenant(ctx context.Context, name string) (meta.Tenant, error)
	ListTenants(ctx context.Context) ([]meta.Tenant, error)
	DeleteTenant(ctx context.Context, name string) error
	CreateKey(ctx context.Context, tenant string) (meta.NewKey, error)
	ListKeys(ctx context.Context, tenant string) ([]meta.KeyInfo, error)
	RevokeKey(ctx context.Context, tenant, accessKey string) error
	ListBuckets(ctx context.Context, tenant string) ([]s3api.BucketEntry, error)
}

var _ Store = (*meta.Store)(nil)

// Config configures the control API handler.
type Config struct {
	Store Store
	// Token is the admin bearer token. An empty token locks the API: every
	// request but the health check is refused.
	Token  string
	Logger *slog.Logger
}

// maxBody bounds request bodies; the API's bodies are a few bytes of JSON.
const maxBody = 64 << 10

//go:embed openapi.json
var openAPIDoc []byte

type handler struct {
	store     Store
	log       *slog.Logger
	tokenHash *[sha256.Size]byte // nil: no token configured, refuse all
	mux       *http.ServeMux
}

// route is one API operation. The table is the single list of operations;
// the OpenAPI document is tested against it.
type route struct {
	method, path string
	serve        func(*handler, http.ResponseWriter, *http.Request) error
}

const prefix = "/api/v1"

var routes = []route{
	{http.MethodGet, prefix + "/openapi.json", (*handler).openAPI},
	{http.MethodPost, prefix + "/tenants", (*handler).createTenant},
	{http.MethodGet, prefix + "/tenants", (*handler).listTenants},
	{http.MethodGet, prefix + "/tenants/{name}", (*handler).getTenant},
	{http.MethodDelete, prefix + "/tenants/{name}", (*handler).deleteTenant},
	{http.MethodPost, prefix + "/tenants/{name}/keys", (*handler).createKey},
	{http.MethodGet, prefix + "/tenants/{name}/keys", (*handler).listKeys},
	{http.MethodDelete, prefix + "/tenants/{name}/keys/{access_key}", (*handler).revokeKey},
	{http.MethodGet, prefix + "/tenants/{name}/buckets", (*handler).listBuckets},
}

// New returns the control API handler.
func New(cfg Config) http.Handler {
	h := &handler{store: cfg.Store, log: cfg.Logger, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		h.tokenHash = &sum
	} else {
		h.log.Warn("admin API has no token configured; all requests will be refused")
	}
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	for _, rt := range routes {
		h.mux.HandleFunc(rt.method+" "+rt.path, func(w http.ResponseWriter, r *http.Request) {
			if err := rt.serve(h, w, r); err != nil {
				h.fail(w, r, err)
			}
		})
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
	r = r.WithContext(ctx)

	h.dispatch(sw, r)

	// Path and status only: bodies carry secrets and headers the token.
	h.log.LogAttrs(ctx, slog.LevelInfo, "admin request",
		slog.String("request_id", reqID),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", sw.status),
		slog.Duration("duration", time.Since(start)),
		slog.String("remote", r.RemoteAddr))
}

func (h *handler) dispatch(w http.ResponseWriter, r *http.Request) {
	if !(r.Method == http.MethodGet && r.URL.Path == "/healthz") && !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="facet-admin"`)
		writeError(w, &apiError{http.StatusUnauthorized, "Unauthorized", "missing or invalid admin bearer token"})
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
		writeError(w, &apiError{rec.status, "MethodNotAllowed", fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path)})
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		w.Header().Set("Location", rec.header.Get("Location"))
		writeError(w, &apiError{rec.status, "Redirect", "see Location"})
	default:
		writeError(w, &apiError{http.StatusNotFound, "NotFound", fmt.Sprintf("no such API path %s", r.URL.Path)})
	}
}

func (h *handler) authorized(r *http.Request) bool {
	if h.tokenHash == nil {
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
	return subtle.ConstantTimeCompare(got[:], h.tokenHash[:]) == 1
}

type reqIDKey struct{}

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
// {"error": message, "code": code}.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

// fail answers err. Store errors are mapped to API errors by errors.Is;
// anything unexpected is logged in full and answered as a bare 500, since
// internal details are not the client's business.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = storeError(err, r.PathValue("name"), r.PathValue("access_key"))
	}
	if ae.status >= 500 {
		id, _ := r.Context().Value(reqIDKey{}).(string)
		h.log.Error("admin request failed", "request_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, ae)
}

func storeError(err error, tenant, accessKey string) *apiError {
	switch {
	case errors.Is(err, meta.ErrInvalidTenantName):
		return &apiError{http.StatusBadRequest, "InvalidTenantName",
			fmt.Sprintf("invalid tenant name %q: want 3-63 characters [a-z0-9][a-z0-9-_.]*", tenant)}
	case errors.Is(err, meta.ErrTenantExists):
		return &apiError{http.StatusConflict, "TenantExists", fmt.Sprintf("tenant %q already exists", tenant)}
	case errors.Is(err, meta.ErrTenantNotFound):
		return &apiError{http.StatusNotFound, "NoSuchTenant", fmt.Sprintf("tenant %q does not exist", tenant)}
	case errors.Is(err, meta.ErrTenantNotEmpty):
		return &apiError{http.StatusConflict, "TenantNotEmpty",
			fmt.Sprintf("tenant %q still owns buckets; delete them first", tenant)}
	case errors.Is(err, meta.ErrKeyNotFound):
		return &apiError{http.StatusNotFound, "NoSuchAccessKey",
			fmt.Sprintf("tenant %q has no access key %q", tenant, accessKey)}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{http.StatusServiceUnavailable, "RequestCanceled", "request canceled"}
	}
	return &apiError{http.StatusInternalServerError, "InternalError", "internal error"}
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, Error{Error: e.message, Code: e.code})
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
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{http.StatusRequestEntityTooLarge, "BodyTooLarge", fmt.Sprintf("request body over %d bytes", maxBody)}
		}
		return &apiError{http.StatusBadRequest, "MalformedJSON", "malformed JSON body: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &apiError{http.StatusBadRequest, "MalformedJSON", "malformed JSON body: trailing data after the object"}
	}
	return nil
}
