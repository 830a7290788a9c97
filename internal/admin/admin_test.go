package admin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/facet-sds/facet/internal/authfail"
	"github.com/facet-sds/facet/internal/meta"
)

const token = "test-admin-token-0123456789"

// syncBuffer collects log output from concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type fixture struct {
	store *meta.Store
	h     http.Handler
	logs  *syncBuffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	mk := make([]byte, meta.MasterKeySize)
	if _, err := rand.Read(mk); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := meta.Open(t.Context(), filepath.Join(t.TempDir(), "meta.db"), mk, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return &fixture{store: st, h: New(Config{Store: st, Token: token, Logger: logger}), logs: logs}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (f *fixture) do(t *testing.T, method, path, body string, hdr ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if len(hdr) == 0 {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Remote-Addr" { // the client's address, not a header
			req.RemoteAddr = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// decodeStrict decodes a JSON body into v, failing on unknown fields so the
// tests pin the exact wire shape.
func decodeStrict(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

func wantError(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q", ct)
	}
	var e Error
	decodeStrict(t, r.body, &e)
	if e.Code != code || e.Error == "" {
		t.Fatalf("error body %+v, want code %s", e, code)
	}
}

// After DefaultFailures wrong tokens, an address is refused with 429
// before its token is checked (the right one included), and only that
// address: another with the right token, and the health check, go on.
func TestAuthFailuresRateLimited(t *testing.T) {
	f := newFixture(t)
	const bad, good = "198.51.100.7:4000", "198.51.100.8:4000"
	for range authfail.DefaultFailures {
		wantError(t, f.do(t, http.MethodGet, "/api/v1/tenants", "", "Authorization", "Bearer nope", "Remote-Addr", bad), http.StatusUnauthorized, "Unauthorized")
	}
	for _, tok := range []string{"nope", token} {
		r := f.do(t, http.MethodGet, "/api/v1/tenants", "", "Authorization", "Bearer "+tok, "Remote-Addr", bad)
		wantError(t, r, http.StatusTooManyRequests, "TooManyAttempts")
		if r.header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	if r := f.do(t, http.MethodGet, "/api/v1/tenants", "", "Authorization", "Bearer "+token, "Remote-Addr", good); r.status != http.StatusOK {
		t.Fatalf("another address with the right token: %d %s", r.status, r.body)
	}
	if r := f.do(t, http.MethodGet, "/healthz", "", "Remote-Addr", bad); r.status != http.StatusOK {
		t.Fatalf("health check from the limited address: %d", r.status)
	}
	// A missing token guesses nothing: it does not count.
	const none = "198.51.100.9:4000"
	for range 2 * authfail.DefaultFailures {
		f.do(t, http.MethodGet, "/api/v1/tenants", "", "X-None", "x", "Remote-Addr", none)
	}
	if r := f.do(t, http.MethodGet, "/api/v1/tenants", "", "Authorization", "Bearer "+token, "Remote-Addr", none); r.status != http.StatusOK {
		t.Fatalf("after requests without a token: %d", r.status)
	}
}

func TestAuth(t *testing.T) {
	f := newFixture(t)
	client := 0
	for name, hdr := range map[string][]string{
		"none":         {"X-None", "x"},
		"wrong token":  {"Authorization", "Bearer nope"},
		"token prefix": {"Authorization", "Bearer " + token[:10]},
		"basic":        {"Authorization", "Basic " + token},
		"bare token":   {"Authorization", token},
		"empty bearer": {"Authorization", "Bearer "},
	} {
		t.Run(name, func(t *testing.T) {
			for _, p := range []string{"/api/v1/tenants", "/api/v1/openapi.json", "/api/v1/nowhere", "/"} {
				// Each from its own address: under the failed-auth limit.
				client++
				r := f.do(t, http.MethodGet, p, "", append(hdr, "Remote-Addr", fmt.Sprintf("192.0.2.%d:1234", client))...)
				wantError(t, r, http.StatusUnauthorized, "Unauthorized")
				if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Fatalf("%s: WWW-Authenticate %q", p, r.header.Get("WWW-Authenticate"))
				}
			}
		})
	}
	if r := f.do(t, http.MethodGet, "/api/v1/tenants", "", "Authorization", "bearer "+token); r.status != http.StatusOK {
		t.Fatalf("lower-case scheme: %d", r.status)
	}
	r := f.do(t, http.MethodGet, "/healthz", "", "X-None", "x")
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"ok"`)) {
		t.Fatalf("healthz without token: %d %s", r.status, r.body)
	}
	if r := f.do(t, http.MethodPost, "/healthz", "", "X-None", "x"); r.status != http.StatusUnauthorized {
		t.Fatalf("POST /healthz without token: %d", r.status)
	}
}

func TestNoTokenConfiguredLocksAPI(t *testing.T) {
	f := newFixture(t)
	h := New(Config{Store: f.store})
	for _, auth := range []string{"", "Bearer ", "Bearer x"} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/tenants", nil)
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("auth %q with no configured token: %d", auth, rec.Code)
		}
	}
}

func TestRoutes(t *testing.T) {
	ctx := t.Context()
	f := newFixture(t)

	// Create.
	r := f.do(t, http.MethodPost, "/api/v1/tenants", `{"name":"acme"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("secret-bearing response Cache-Control %q", cc)
	}
	var c1 Credentials
	decodeStrict(t, r.body, &c1)
	if c1.Tenant != "acme" || len(c1.AccessKey) != 20 || len(c1.SecretKey) != 40 {
		t.Fatalf("credentials %+v", c1)
	}
	if tenant, secret, err := f.store.LookupAccessKey(ctx, c1.AccessKey); err != nil || tenant != "acme" || secret != c1.SecretKey {
		t.Fatalf("created key does not resolve: %v", err)
	}
	if r := f.do(t, http.MethodPost, "/api/v1/tenants", `{"name":"beta"}`); r.status != http.StatusCreated {
		t.Fatalf("create beta: %d", r.status)
	}

	// List and get.
	r = f.do(t, http.MethodGet, "/api/v1/tenants", "")
	var tl TenantList
	decodeStrict(t, r.body, &tl)
	if r.status != http.StatusOK || len(tl.Tenants) != 2 || tl.Tenants[0].Name != "acme" || tl.Tenants[1].Name != "beta" || tl.Tenants[0].Created.IsZero() {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	r = f.do(t, http.MethodGet, "/api/v1/tenants/acme", "")
	var tn Tenant
	decodeStrict(t, r.body, &tn)
	if r.status != http.StatusOK || tn.Name != "acme" {
		t.Fatalf("get: %d %s", r.status, r.body)
	}

	// Keys.
	r = f.do(t, http.MethodPost, "/api/v1/tenants/acme/keys", "")
	var c2 Credentials
	decodeStrict(t, r.body, &c2)
	if r.status != http.StatusCreated || c2.Tenant != "acme" || c2.AccessKey == c1.AccessKey || c2.SecretKey == "" {
		t.Fatalf("create key: %d %s", r.status, r.body)
	}
	r = f.do(t, http.MethodGet, "/api/v1/tenants/acme/keys", "")
	if bytes.Contains(r.body, []byte(c1.SecretKey)) || bytes.Contains(r.body, []byte(c2.SecretKey)) || bytes.Contains(r.body, []byte("secret")) {
		t.Fatalf("key list shows secrets: %s", r.body)
	}
	var kl KeyList
	decodeStrict(t, r.body, &kl)
	if r.status != http.StatusOK || len(kl.Keys) != 2 {
		t.Fatalf("list keys: %d %s", r.status, r.body)
	}
	for _, k := range kl.Keys {
		if k.Tenant != "acme" || (k.AccessKey != c1.AccessKey && k.AccessKey != c2.AccessKey) {
			t.Fatalf("unexpected key %+v", k)
		}
	}
	if r := f.do(t, http.MethodDelete, "/api/v1/tenants/acme/keys/"+c1.AccessKey, ""); r.status != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if _, _, err := f.store.LookupAccessKey(ctx, c1.AccessKey); err == nil {
		t.Fatal("revoked key still resolves")
	}
	wantError(t, f.do(t, http.MethodDelete, "/api/v1/tenants/acme/keys/"+c1.AccessKey, ""), http.StatusNotFound, "NoSuchAccessKey")
	// beta cannot revoke acme's key through its own path.
	wantError(t, f.do(t, http.MethodDelete, "/api/v1/tenants/beta/keys/"+c2.AccessKey, ""), http.StatusNotFound, "NoSuchAccessKey")

	// Buckets.
	r = f.do(t, http.MethodGet, "/api/v1/tenants/acme/buckets", "")
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"buckets": []`)) {
		t.Fatalf("empty bucket list: %d %s", r.status, r.body)
	}
	for _, b := range []string{"photos", "logs"} {
		if err := f.store.ClaimBucket(ctx, "acme", b); err != nil {
			t.Fatal(err)
		}
	}
	r = f.do(t, http.MethodGet, "/api/v1/tenants/acme/buckets", "")
	var bl BucketList
	decodeStrict(t, r.body, &bl)
	if r.status != http.StatusOK || len(bl.Buckets) != 2 || bl.Buckets[0].Name != "logs" || bl.Buckets[1].Name != "photos" {
		t.Fatalf("bucket list: %d %s", r.status, r.body)
	}

	// Delete: refused while buckets remain, then allowed.
	wantError(t, f.do(t, http.MethodDelete, "/api/v1/tenants/acme", ""), http.StatusConflict, "TenantNotEmpty")
	for _, b := range []string{"photos", "logs"} {
		if err := f.store.ReleaseBucket(ctx, "acme", b); err != nil {
			t.Fatal(err)
		}
	}
	if r := f.do(t, http.MethodDelete, "/api/v1/tenants/acme", ""); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if _, _, err := f.store.LookupAccessKey(ctx, c2.AccessKey); err == nil {
		t.Fatal("key of deleted tenant still resolves")
	}
	wantError(t, f.do(t, http.MethodGet, "/api/v1/tenants/acme", ""), http.StatusNotFound, "NoSuchTenant")
}

func TestErrors(t *testing.T) {
	f := newFixture(t)
	if r := f.do(t, http.MethodPost, "/api/v1/tenants", `{"name":"acme"}`); r.status != http.StatusCreated {
		t.Fatal(r.status)
	}
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"duplicate", "POST", "/api/v1/tenants", `{"name":"acme"}`, 409, "TenantExists"},
		{"bad name", "POST", "/api/v1/tenants", `{"name":"Bad Name"}`, 400, "InvalidTenantName"},
		{"empty name", "POST", "/api/v1/tenants", `{"name":""}`, 400, "InvalidTenantName"},
		{"missing name", "POST", "/api/v1/tenants", `{}`, 400, "InvalidTenantName"},
		{"no body", "POST", "/api/v1/tenants", ``, 400, "MalformedJSON"},
		{"not json", "POST", "/api/v1/tenants", `name=acme`, 400, "MalformedJSON"},
		{"unknown field", "POST", "/api/v1/tenants", `{"name":"zeta","nmae":"x"}`, 400, "MalformedJSON"},
		{"trailing data", "POST", "/api/v1/tenants", `{"name":"zeta"} {"name":"eta"}`, 400, "MalformedJSON"},
		{"wrong type", "POST", "/api/v1/tenants", `{"name":5}`, 400, "MalformedJSON"},
		{"too large", "POST", "/api/v1/tenants", `{"name":"` + strings.Repeat("a", maxBody) + `"}`, 413, "BodyTooLarge"},
		{"get unknown", "GET", "/api/v1/tenants/ghost", ``, 404, "NoSuchTenant"},
		{"delete unknown", "DELETE", "/api/v1/tenants/ghost", ``, 404, "NoSuchTenant"},
		{"key for unknown", "POST", "/api/v1/tenants/ghost/keys", ``, 404, "NoSuchTenant"},
		{"keys of unknown", "GET", "/api/v1/tenants/ghost/keys", ``, 404, "NoSuchTenant"},
		{"revoke for unknown", "DELETE", "/api/v1/tenants/ghost/keys/FKAAAAAAAAAAAAAAAAAA", ``, 404, "NoSuchTenant"},
		{"revoke unknown key", "DELETE", "/api/v1/tenants/acme/keys/FKAAAAAAAAAAAAAAAAAA", ``, 404, "NoSuchAccessKey"},
		{"buckets of unknown", "GET", "/api/v1/tenants/ghost/buckets", ``, 404, "NoSuchTenant"},
		{"unknown path", "GET", "/api/v1/nowhere", ``, 404, "NotFound"},
		{"unknown subpath", "GET", "/api/v1/tenants/acme/volumes", ``, 404, "NotFound"},
		{"wrong method", "PUT", "/api/v1/tenants", ``, 405, "MethodNotAllowed"},
		{"wrong method item", "PUT", "/api/v1/tenants/acme", ``, 405, "MethodNotAllowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, tc.method, tc.path, tc.body)
			wantError(t, r, tc.status, tc.code)
			if tc.status == 405 && !strings.Contains(r.header.Get("Allow"), "GET") {
				t.Fatalf("405 without Allow: %q", r.header.Get("Allow"))
			}
		})
	}
	// Nothing of the failed creations was stored.
	ts, err := f.store.ListTenants(t.Context())
	if err != nil || len(ts) != 1 {
		t.Fatalf("tenants after bad input: %+v %v", ts, err)
	}
}

// failingStore makes every operation fail with an unexpected error.
type failingStore struct{ Store }

var errBoom = errors.New("disk on fire")

func (failingStore) ListTenants(context.Context) ([]meta.Tenant, error) { return nil, errBoom }
func (failingStore) CreateTenantWithKey(context.Context, string) (meta.Tenant, meta.NewKey, error) {
	return meta.Tenant{}, meta.NewKey{}, errBoom
}

func TestInternalErrorHidesDetails(t *testing.T) {
	logs := &syncBuffer{}
	f := &fixture{h: New(Config{Store: failingStore{}, Token: token, Logger: slog.New(slog.NewJSONHandler(logs, nil))})}
	for _, r := range []response{
		f.do(t, http.MethodGet, "/api/v1/tenants", ""),
		f.do(t, http.MethodPost, "/api/v1/tenants", `{"name":"acme"}`),
	} {
		wantError(t, r, http.StatusInternalServerError, "InternalError")
		if bytes.Contains(r.body, []byte("fire")) {
			t.Fatalf("internal detail leaked: %s", r.body)
		}
	}
	if !strings.Contains(logs.String(), "disk on fire") {
		t.Fatalf("internal error not logged: %s", logs)
	}
}

func TestLogsHoldNoSecrets(t *testing.T) {
	f := newFixture(t)
	r := f.do(t, http.MethodPost, "/api/v1/tenants", `{"name":"acme"}`)
	var c Credentials
	decodeStrict(t, r.body, &c)
	r = f.do(t, http.MethodPost, "/api/v1/tenants/acme/keys", "")
	var c2 Credentials
	decodeStrict(t, r.body, &c2)
	f.do(t, http.MethodGet, "/api/v1/tenants", "", "Authorization", "Bearer wrong-"+token)

	logs := f.logs.String()
	if !strings.Contains(logs, `"path":"/api/v1/tenants"`) {
		t.Fatalf("requests not logged: %s", logs)
	}
	for what, s := range map[string]string{"secret": c.SecretKey, "second secret": c2.SecretKey, "token": token} {
		if strings.Contains(logs, s) {
			t.Fatalf("%s appears in the logs", what)
		}
	}
}

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	f := newFixture(t)
	for _, p := range prefixes {
		r := f.do(t, http.MethodGet, p+"/openapi.json", "")
		if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" || !bytes.Equal(r.body, openAPIDoc) {
			t.Fatalf("%s/openapi.json: %d %q", p, r.status, r.header.Get("Content-Type"))
		}
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Servers []struct {
			URL string `json:"url"`
		} `json:"servers"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	var servers []string
	for _, s := range doc.Servers {
		servers = append(servers, s.URL)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") || !slices.Equal(servers, prefixes) {
		t.Fatalf("openapi header: %q %v", doc.OpenAPI, servers)
	}
	documented := 0
	for _, ops := range doc.Paths {
		for m := range ops {
			if m != "parameters" {
				documented++
			}
		}
	}
	for _, rt := range routes {
		ops, ok := doc.Paths[rt.path]
		if !ok {
			t.Errorf("%s %s not documented", rt.method, rt.path)
			continue
		}
		if _, ok := ops[strings.ToLower(rt.method)]; !ok {
			t.Errorf("%s %s not documented", rt.method, rt.path)
		}
	}
	if documented != len(routes) {
		t.Errorf("document has %d operations, the handler %d", documented, len(routes))
	}
}

// A service this server lacks answers 501 without an ERROR line: the
// dashboard asks for optional services on every page, and nothing failed.
func TestNotImplementedIsNoFailure(t *testing.T) {
	f := newFixture(t)
	if r := f.do(t, http.MethodGet, "/v1/controllers", "", "Authorization", "Bearer "+token); r.status != http.StatusNotImplemented {
		t.Fatalf("GET /v1/controllers without controllers: %d %s", r.status, r.body)
	}
	if strings.Contains(f.logs.String(), `"level":"ERROR"`) {
		t.Fatalf("an ERROR line for a 501:\n%s", f.logs.String())
	}
}
