package ui

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/audit"
	"github.com/facet-sds/facet/internal/authfail"
)

// errorBody is the dashboard's error answer, shaped like the control
// API's so that the pages read both alike.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: msg, Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is sent; a broken connection has no one left to tell
}

// LoginRequest is the body of POST /ui/api/login: the admin token, or a
// tenant's access key and secret key.
type LoginRequest struct {
	Token     string `json:"token,omitempty"`
	AccessKey string `json:"access_key,omitempty"`
	SecretKey string `json:"secret_key,omitempty"`
}

// SessionInfo is the body of a sign-in and of GET /ui/api/session. CSRF
// is the token every change must carry in X-CSRF-Token; the page keeps it
// in memory only.
type SessionInfo struct {
	Role   string `json:"role"`
	Tenant string `json:"tenant,omitempty"`
	CSRF   string `json:"csrf"`
}

const maxLoginBody = 4 << 10

// serveAPI routes /ui/api/...: sign-in and session, the event stream, the
// policies view, and the control API under /v1/.
func (u *UI) serveAPI(w http.ResponseWriter, r *http.Request, path string) {
	if path == "/login" {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeErr(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "sign in with POST")
			return
		}
		u.login(w, r)
		return
	}
	id := sessionID(r)
	sess, ok := u.sessions.get(id)
	if ok && sess.role == roleTenant && !u.tenantKeyValid(r, sess) {
		u.sessions.delete(id)
		ok = false
	}
	if !ok {
		writeErr(w, http.StatusUnauthorized, "Unauthorized", "not signed in, or the session expired")
		return
	}
	// Every change carries the session's CSRF token, which only the
	// dashboard's own pages know (SameSite=Strict already keeps other
	// sites' requests from carrying the cookie).
	if !safeMethod(r.Method) && !csrfOK(r, sess) {
		writeErr(w, http.StatusForbidden, "InvalidCSRFToken", "missing or wrong "+csrfHeader+" header")
		return
	}
	switch {
	case path == "/session" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, SessionInfo{Role: sess.role, Tenant: sess.tenant, CSRF: sess.csrf})
	case path == "/logout" && r.Method == http.MethodPost:
		u.sessions.delete(id)
		clearCookie(w, r)
		w.WriteHeader(http.StatusNoContent)
	case path == "/events" && r.Method == http.MethodGet:
		u.live.serveEvents(w, r, sess, func() bool { return u.stillValid(r, id) })
	case path == "/policies" && r.Method == http.MethodGet:
		u.policyView(w, r, sess)
	case strings.HasPrefix(path, "/v1/"):
		u.proxy(w, r, sess, path)
	default:
		writeErr(w, http.StatusNotFound, "NotFound", "no such dashboard path /ui/api"+path)
	}
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// stillValid is checked now and then by long-lived streams: the session
// has not ended, and a tenant's key has not been revoked.
func (u *UI) stillValid(r *http.Request, id string) bool {
	sess, ok := u.sessions.get(id)
	return ok && (sess.role != roleTenant || u.tenantKeyValid(r, sess))
}

// tenantKeyValid checks that a tenant session's access key still exists
// and still belongs to the tenant (the store caches keys, so this is no
// round-trip on each request).
func (u *UI) tenantKeyValid(r *http.Request, sess session) bool {
	t, _, err := u.store.LookupAccessKey(r.Context(), sess.accessKey)
	return err == nil && t == sess.tenant
}

func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	addr := authfail.ClientAddr(r)
	if ok, wait := u.logins.Allowed(addr); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		writeErr(w, http.StatusTooManyRequests, "TooManyAttempts", "too many failed sign-ins; try again later")
		u.recordSignIn(r, http.StatusTooManyRequests, "TooManyAttempts", "", "", "")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		// A cross-site form cannot send JSON without a preflight.
		writeErr(w, http.StatusUnsupportedMediaType, "UnsupportedMediaType", "send the credentials as application/json")
		return
	}
	var req LoginRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxLoginBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeErr(w, http.StatusBadRequest, "MalformedJSON", "malformed sign-in body")
		return
	}
	var sess session
	switch {
	case req.Token != "" && req.AccessKey == "" && req.SecretKey == "":
		sum := sha256.Sum256([]byte(req.Token))
		if u.tokenHash == nil || subtle.ConstantTimeCompare(sum[:], u.tokenHash[:]) != 1 {
			u.refuse(w, addr)
			u.recordSignIn(r, http.StatusUnauthorized, "InvalidCredentials", "", "", "")
			return
		}
		sess = session{role: roleAdmin}
	case req.Token == "" && req.AccessKey != "" && req.SecretKey != "":
		tenant, secret, err := u.store.LookupAccessKey(r.Context(), req.AccessKey)
		if err != nil || subtle.ConstantTimeCompare([]byte(secret), []byte(req.SecretKey)) != 1 {
			u.refuse(w, addr)
			// The key id the client claimed, to tell whose key is tried.
			u.recordSignIn(r, http.StatusUnauthorized, "InvalidCredentials", "", claimedKey(req.AccessKey), "")
			return
		}
		sess = session{role: roleTenant, tenant: tenant, accessKey: req.AccessKey}
	default:
		writeErr(w, http.StatusBadRequest, "MissingCredentials", "give the admin token, or an access key and its secret key")
		return
	}
	// A fresh id at each sign-in: an id planted before it is worthless.
	if old := sessionID(r); old != "" {
		u.sessions.delete(old)
	}
	id, p := u.sessions.create(sess)
	setCookie(w, r, id, u.sessions.max)
	u.log.Info("dashboard sign-in", "role", p.role, "tenant", p.tenant, "remote", addr)
	actor := "admin"
	if sess.role == roleTenant {
		actor = "tenant"
	}
	u.recordSignIn(r, http.StatusOK, "", sess.tenant, sess.accessKey, actor)
	writeJSON(w, http.StatusOK, SessionInfo{Role: p.role, Tenant: p.tenant, CSRF: p.csrf})
}

// recordSignIn writes a sign-in's audit record: never the token or the
// secret key, only the access key id.
func (u *UI) recordSignIn(r *http.Request, status int, code, tenant, accessKey, actor string) {
	if u.audit == nil {
		return
	}
	u.audit.Record(audit.Record{Kind: audit.KindSignIn, Tenant: tenant, AccessKey: accessKey, Actor: actor,
		Source: r.RemoteAddr, Op: "DashboardSignIn", Method: r.Method, Path: r.URL.Path,
		Result: audit.ResultOf(status), Status: status, Code: code})
}

// deny answers a control API call the dashboard or the tenant-signed API
// refuses itself, under a request id, and writes its audit record (the
// control API records those it answers).
func (u *UI) deny(w http.ResponseWriter, r *http.Request, status int, code, msg string, c admin.Caller) {
	id := rand.Text()[:16]
	w.Header().Set("X-Request-Id", id)
	writeErr(w, status, code, msg)
	if u.audit == nil {
		return
	}
	actor := ""
	if c.Tenant != "" {
		actor = "tenant"
	}
	u.audit.Record(audit.Record{Kind: audit.KindAdmin, RequestID: id, Tenant: c.Tenant, AccessKey: claimedKey(c.AccessKey), Actor: actor,
		Source: r.RemoteAddr, Op: "-", Method: r.Method, Path: r.URL.Path, Query: audit.RedactQuery(r.URL.RawQuery),
		Result: audit.ResultOf(status), Status: status, Code: code})
}

// claimedKey is a refused sign-in's access key id as the audit log may
// keep it: a plausible id, else nothing (a secret typed into the id
// field must not be logged).
func claimedKey(id string) string {
	if len(id) == 0 || len(id) > 64 {
		return ""
	}
	for _, c := range id {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return id
}

// refuse answers a failed sign-in without saying which part was wrong.
func (u *UI) refuse(w http.ResponseWriter, addr string) {
	u.logins.Failed(addr)
	u.log.Info("dashboard sign-in refused", "remote", addr)
	writeErr(w, http.StatusUnauthorized, "InvalidCredentials", "wrong token or keys")
}

// proxy passes a /ui/api/v1/... request to the control API: as it is for
// the admin, and for a tenant only as scope.go allows, rewritten to the
// tenant's own resources, its answer filtered.
func (u *UI) proxy(w http.ResponseWriter, r *http.Request, sess session, path string) {
	if sess.role == roleAdmin {
		// As the browser sent it, escapes included (an object key may hold
		// %2F), minus the dashboard's prefix.
		raw := ""
		if esc, ok := strings.CutPrefix(r.URL.EscapedPath(), "/ui/api"); ok && r.URL.RawPath != "" {
			raw = esc
		}
		u.callAPI(w, r, r.Method, path, raw, r.URL.RawQuery, r.Body)
		return
	}
	u.proxyTenant(w, r, admin.Caller{Tenant: sess.tenant, AccessKey: sess.accessKey}, path, r.Body)
}

// proxyTenant passes a request of tenant me to the control API as the
// tenant scope (scope.go) allows: a dashboard session's, or one signed
// with the tenant's access key (signed.go).
func (u *UI) proxyTenant(w http.ResponseWriter, r *http.Request, c admin.Caller, path string, body io.Reader) {
	me := c.Tenant
	d := tenantDecision(r.Method, path, r.URL.Query(), me)
	if d.deny != "" {
		u.deny(w, r, http.StatusForbidden, "Forbidden", d.deny, c)
		return
	}
	// The control API's audit record names the tenant, not the admin
	// token the call is made with.
	r = r.WithContext(admin.OnBehalfOf(r.Context(), c))
	if d.filter == nil {
		u.callAPI(w, r, r.Method, d.path, "", d.query, body)
		return
	}
	rec := newRecorder()
	u.callAPI(rec, r, r.Method, d.path, "", d.query, body)
	if rec.status != http.StatusOK {
		rec.copyTo(w)
		return
	}
	out, err := d.filter(r, u, me, rec.body.Bytes())
	if err != nil {
		u.log.Error("dashboard: filtering an answer for a tenant", "path", d.path, "err", err)
		writeErr(w, http.StatusInternalServerError, "InternalError", "internal error")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// callAPI calls the control API in-process with the admin token. The
// request is built afresh: only the method, the approved path (decoded;
// rawPath, when given, is its escaped form) and query, the body and its
// content type pass; the browser's cookies do not.
func (u *UI) callAPI(w http.ResponseWriter, r *http.Request, method, path, rawPath, query string, body io.Reader) {
	// The pages poll (policies, controllers, bandwidth) every few seconds:
	// the control API logs their reads at debug level, changes at info.
	req, err := http.NewRequestWithContext(admin.QuietReads(r.Context()), method, "/", body)
	if err != nil {
		writeErr(w, http.StatusBadRequest, "InvalidRequest", "bad API request")
		return
	}
	req.URL = &url.URL{Path: path, RawPath: rawPath, RawQuery: query}
	req.RequestURI = ""
	req.RemoteAddr = r.RemoteAddr
	req.ContentLength = r.ContentLength
	if ct := r.Header.Get("Content-Type"); ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Authorization", "Bearer "+u.apiToken)
	u.api.ServeHTTP(w, req)
}

// getAPI calls a GET of the control API and decodes its JSON answer; a
// status other than 200 is an *apiStatus error.
func (u *UI) getAPI(r *http.Request, path, query string, v any) error {
	rec := newRecorder()
	u.callAPI(rec, r, http.MethodGet, path, "", query, http.NoBody)
	if rec.status != http.StatusOK {
		return &apiStatus{status: rec.status, body: rec.body.Bytes()}
	}
	return json.Unmarshal(rec.body.Bytes(), v)
}

type apiStatus struct {
	status int
	body   []byte
}

func (e *apiStatus) Error() string { return fmt.Sprintf("control API answered %d", e.status) }

func isStatus(err error, status int) bool {
	var as *apiStatus
	return errors.As(err, &as) && as.status == status
}
