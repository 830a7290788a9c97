package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/meta"
)

// fakePolicies stands in for internal/policy. Its "language": each
// non-blank line is a policy; a line containing "compresion" is an unknown
// filter, one containing "WHEN" is stored pending. It stores through the
// real metadata store, as the real service does.
type fakePolicies struct {
	store *meta.Store

	mu        sync.Mutex
	validated []string
	explained []ExplainQuery
	failWith  error
}

func (f *fakePolicies) Validate(_ context.Context, text string) (ValidateResult, error) {
	f.mu.Lock()
	f.validated = append(f.validated, text)
	err := f.failWith
	f.mu.Unlock()
	if err != nil {
		return ValidateResult{}, err
	}
	var res ValidateResult
	for i, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if col := strings.Index(line, "compresion"); col >= 0 {
			res.Errors = append(res.Errors, Diagnostic{
				Line: i + 1, Column: len([]rune(line[:col])) + 1, Message: `unknown filter "compresion"`,
				Source: line, Suggestion: "compression",
			})
			continue
		}
		ps := PolicySummary{Line: i + 1, Text: line, State: "active", Targets: []string{"TENANT t1"}}
		if strings.Contains(line, "WHEN") {
			ps.State, ps.Reason = "pending", "metric conditions are not executed yet"
		}
		res.Policies = append(res.Policies, ps)
	}
	if len(res.Policies) > 1 {
		res.Warnings = append(res.Warnings, Diagnostic{Message: "several policies", Policies: []string{"line 1", "line 2"}})
	}
	res.Valid = len(res.Errors) == 0
	return res, nil
}

func (f *fakePolicies) Apply(ctx context.Context, text string) ([]meta.Policy, ValidateResult, error) {
	res, err := f.Validate(ctx, text)
	if err != nil || !res.Valid {
		return nil, res, err
	}
	var nps []meta.NewPolicy
	for _, p := range res.Policies {
		name, _, _ := strings.Cut(p.Text, ":")
		if strings.Contains(name, " ") {
			name = ""
		}
		nps = append(nps, meta.NewPolicy{Name: name, Text: p.Text, Line: p.Line, State: meta.PolicyState(p.State),
			Reason: p.Reason, Compiled: json.RawMessage(`{"fake":true}`)})
	}
	ps, err := f.store.AddPolicies(ctx, nps)
	return ps, res, err
}

func (f *fakePolicies) Explain(_ context.Context, q ExplainQuery) (Explanation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.explained = append(f.explained, q)
	if q.Key == "bad-key" {
		return Explanation{}, fmt.Errorf("%w: key %q is not explainable", ErrInvalidInput, q.Key)
	}
	return Explanation{
		Tenant: q.Tenant, Bucket: q.Bucket, Key: q.Key, Version: 7,
		Pipelines: []Pipeline{
			{Method: "PUT", Stage: "gateway", Filters: []ExplainStep{{Filter: "compression", Params: map[string]string{"engine": "gzip"}, Policy: "p2", Level: "tenant", Target: "TENANT t1"}}},
			{Method: "PUT", Stage: "storage"}, // nil filters: answered as []
		},
	}, nil
}

func (f *fakePolicies) Filters(context.Context) ([]FilterInfo, error) {
	return []FilterInfo{
		FilterInfoFrom(&filter.Info{
			Name: "compression", Version: 1, Kind: "native", Reversible: true,
			Methods: []filter.Method{filter.MethodPut, filter.MethodGet}, Stages: []filter.Stage{filter.StageGateway, filter.StageStorage},
			Params: []filter.ParamSpec{
				{Name: "engine", Type: filter.TypeEnum, Default: "zstd", Enum: []string{"gzip", "zstd", "lz4"}},
				{Name: "level", Type: filter.TypeInt, Default: "3", Min: 1, Max: 22},
			},
		}),
		FilterInfoFrom(&filter.Info{Name: "noop", Version: 1, Kind: "native"}),
	}, nil
}

type fakeUsage map[string]Usage

func (u fakeUsage) TenantUsage(_ context.Context, tenant string) (Usage, error) {
	return u[tenant], nil
}

func newControlFixture(t *testing.T) (*fixture, *fakePolicies) {
	t.Helper()
	f := newFixture(t)
	fp := &fakePolicies{store: f.store}
	f.h = New(Config{
		Store: f.store, Token: token, Policies: fp,
		Usage: fakeUsage{"acme": {StoredBytes: 250, LogicalBytes: 1000, Objects: 3}},
	})
	return f, fp
}

func TestGroupRoutes(t *testing.T) {
	f, _ := newControlFixture(t)
	r := f.do(t, "POST", "/v1/groups", `{"name":"gold","members":["t2","t1/photos","t1"]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var g Group
	decodeStrict(t, r.body, &g)
	if g.Name != "gold" || !slices.Equal(g.Members, []string{"t1", "t1/photos", "t2"}) || g.Created.IsZero() {
		t.Fatalf("created %+v", g)
	}
	r = f.do(t, "POST", "/v1/groups", `{"name":"empty"}`)
	decodeStrict(t, r.body, &g)
	if r.status != http.StatusCreated || g.Members == nil {
		t.Fatalf("create empty: %d %s", r.status, r.body)
	}

	r = f.do(t, "POST", "/v1/groups/gold/members", `{"members":["t3"]}`)
	decodeStrict(t, r.body, &g)
	if r.status != http.StatusOK || !slices.Equal(g.Members, []string{"t1", "t1/photos", "t2", "t3"}) {
		t.Fatalf("add: %d %s", r.status, r.body)
	}
	r = f.do(t, "POST", "/v1/groups/gold/members:remove", `{"members":["t1","t2"]}`)
	decodeStrict(t, r.body, &g)
	if r.status != http.StatusOK || !slices.Equal(g.Members, []string{"t1/photos", "t3"}) {
		t.Fatalf("remove: %d %s", r.status, r.body)
	}
	r = f.do(t, "GET", "/v1/groups", "")
	var gl GroupList
	decodeStrict(t, r.body, &gl)
	if r.status != http.StatusOK || len(gl.Groups) != 2 || gl.Groups[0].Name != "empty" || gl.Groups[1].Name != "gold" {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	r = f.do(t, "GET", "/api/v1/groups/gold", "")
	decodeStrict(t, r.body, &g)
	if r.status != http.StatusOK || g.Name != "gold" {
		t.Fatalf("get under /api/v1: %d %s", r.status, r.body)
	}

	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code, msg                string
	}{
		{"duplicate", "POST", "/v1/groups", `{"name":"gold"}`, 409, "GroupExists", `group "gold" already exists`},
		{"bad name", "POST", "/v1/groups", `{"name":"Gold"}`, 400, "InvalidGroupName", `invalid group name "Gold"`},
		{"bad member", "POST", "/v1/groups", `{"name":"x","members":["t1","T2/b"]}`, 400, "InvalidGroupMember", `"T2/b"`},
		{"add bad member", "POST", "/v1/groups/gold/members", `{"members":["t1/a/b"]}`, 400, "InvalidGroupMember", `"t1/a/b"`},
		{"add none", "POST", "/v1/groups/gold/members", `{"members":[]}`, 400, "MissingMembers", "at least one"},
		{"remove non-member", "POST", "/v1/groups/gold/members:remove", `{"members":["t3","t9"]}`, 404, "NoSuchMember", `"t9" is not in group "gold"`},
		{"add to unknown", "POST", "/v1/groups/ghost/members", `{"members":["t1"]}`, 404, "NoSuchGroup", `group "ghost" does not exist`},
		{"get unknown", "GET", "/v1/groups/ghost", "", 404, "NoSuchGroup", `"ghost"`},
		{"unknown field", "POST", "/v1/groups", `{"name":"x","member":["t1"]}`, 400, "MalformedJSON", "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, tc.method, tc.path, tc.body)
			wantError(t, r, tc.status, tc.code)
			if !bytes.Contains(r.body, []byte(jsonString(tc.msg))) {
				t.Fatalf("message %s, want it to contain %s", r.body, tc.msg)
			}
		})
	}
	if g, _ := f.store.GetGroup(t.Context(), "gold"); !slices.Equal(g.Members, []string{"t1/photos", "t3"}) {
		t.Fatalf("failed requests changed the group: %+v", g)
	}
	if r := f.do(t, "DELETE", "/v1/groups/gold", ""); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantError(t, f.do(t, "DELETE", "/v1/groups/gold", ""), 404, "NoSuchGroup")
}

// jsonString is s as it appears inside a JSON string (quotes escaped).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestPolicyRoutes(t *testing.T) {
	ctx := t.Context()
	f, fp := newControlFixture(t)
	v0, _ := f.store.PolicyVersion(ctx)

	// text/plain, two lines.
	r := f.do(t, "POST", "/v1/policies", "zip: FOR TENANT t1 DO SET compression\nFOR TENANT t1 WHEN get_ops > 5 DO SET encryption\n",
		"Authorization", "Bearer "+token, "Content-Type", "text/plain; charset=utf-8")
	if r.status != http.StatusCreated {
		t.Fatalf("apply: %d %s", r.status, r.body)
	}
	var applied PolicyApplied
	decodeStrict(t, r.body, &applied)
	if len(applied.Policies) != 2 || applied.Policies[0].ID != "p1" || applied.Policies[0].Name != "zip" ||
		applied.Policies[1].State != "pending" || applied.Policies[1].Reason == "" || applied.Policies[1].Line != 2 ||
		len(applied.Warnings) != 1 || applied.Policies[0].Compiled != nil {
		t.Fatalf("applied: %s", r.body)
	}
	if v, _ := f.store.PolicyVersion(ctx); v != v0+1 {
		t.Fatalf("version %d after one apply from %d", v, v0)
	}

	// JSON form, no content type = text.
	r = f.do(t, "POST", "/v1/policies", `{"text":"FOR TENANT t2 DO SET noop"}`, "Authorization", "Bearer "+token, "Content-Type", "application/json")
	decodeStrict(t, r.body, &applied)
	if r.status != http.StatusCreated || len(applied.Policies) != 1 || applied.Policies[0].Text != "FOR TENANT t2 DO SET noop" {
		t.Fatalf("apply JSON: %d %s", r.status, r.body)
	}
	r = f.do(t, "POST", "/api/v1/policies", "FOR TENANT t3 DO SET noop")
	if r.status != http.StatusCreated {
		t.Fatalf("apply without content type: %d %s", r.status, r.body)
	}

	// An invalid text: 400 with positioned diagnostics, nothing stored.
	before, _ := f.store.ListPolicies(ctx)
	vBefore, _ := f.store.PolicyVersion(ctx)
	r = f.do(t, "POST", "/v1/policies", "FOR TENANT t1 DO SET noop\nFOR TENANT t1 DO SET compresion WITH engine=gzip")
	wantErrorLoose(t, r, http.StatusBadRequest, "InvalidPolicy")
	var e Error
	decodeStrict(t, r.body, &e)
	if e.Error != `line 2:22: unknown filter "compresion"` || len(e.Errors) != 1 || e.Errors[0].Suggestion != "compression" ||
		e.Errors[0].Source != "FOR TENANT t1 DO SET compresion WITH engine=gzip" || e.Errors[0].Column != 22 {
		t.Fatalf("invalid policy answer: %s", r.body)
	}
	after, _ := f.store.ListPolicies(ctx)
	if vAfter, _ := f.store.PolicyVersion(ctx); len(after) != len(before) || vAfter != vBefore {
		t.Fatal("an invalid text changed the store")
	}
	// A name already taken is the store's refusal, a conflict.
	wantError(t, f.do(t, "POST", "/v1/policies", "zip: FOR TENANT t9 DO SET noop"), http.StatusConflict, "PolicyNameTaken")

	// List, get, delete.
	r = f.do(t, "GET", "/v1/policies", "")
	var pl PolicyList
	decodeStrict(t, r.body, &pl)
	if r.status != http.StatusOK || len(pl.Policies) != 4 || pl.Policies[1].State != "pending" || pl.Policies[3].ID != "p4" {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if bytes.Contains(r.body, []byte("compiled")) {
		t.Fatalf("list shows compiled forms: %s", r.body)
	}
	r = f.do(t, "GET", "/v1/policies/p1", "")
	var p Policy
	decodeStrict(t, r.body, &p)
	var compact bytes.Buffer
	_ = json.Compact(&compact, p.Compiled)
	if r.status != http.StatusOK || p.Name != "zip" || compact.String() != `{"fake":true}` {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	if r := f.do(t, "DELETE", "/v1/policies/p1", ""); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantError(t, f.do(t, "GET", "/v1/policies/p1", ""), 404, "NoSuchPolicy")
	wantError(t, f.do(t, "DELETE", "/v1/policies/p1", ""), 404, "NoSuchPolicy")

	// Validate: a dry run, 200 either way, nothing stored.
	vBefore, _ = f.store.PolicyVersion(ctx)
	r = f.do(t, "POST", "/v1/policies:validate", "FOR TENANT t1 DO SET compresion")
	var vr ValidateResult
	decodeStrict(t, r.body, &vr)
	if r.status != http.StatusOK || vr.Valid || len(vr.Errors) != 1 || vr.Policies == nil || vr.Warnings == nil {
		t.Fatalf("validate invalid: %d %s", r.status, r.body)
	}
	r = f.do(t, "POST", "/v1/policies:validate", `{"text":"FOR TENANT t1 DO SET compression"}`, "Authorization", "Bearer "+token, "Content-Type", "application/json")
	decodeStrict(t, r.body, &vr)
	if r.status != http.StatusOK || !vr.Valid || len(vr.Policies) != 1 || vr.Errors == nil {
		t.Fatalf("validate valid: %d %s", r.status, r.body)
	}
	if v, _ := f.store.PolicyVersion(ctx); v != vBefore {
		t.Fatal("validate changed the store")
	}
	if ps, _ := f.store.ListPolicies(ctx); len(ps) != 3 {
		t.Fatalf("validate stored policies: %d", len(ps))
	}

	// Body handling.
	for _, tc := range []struct {
		name, ct, body string
		status         int
		code           string
	}{
		{"empty", "text/plain", "  \n", 400, "MissingPolicyText"},
		{"empty JSON text", "application/json", `{"text":""}`, 400, "MissingPolicyText"},
		{"unknown JSON field", "application/json", `{"txt":"x"}`, 400, "MalformedJSON"},
		{"xml", "application/xml", "<p/>", 415, "UnsupportedMediaType"},
		{"bad content type", "text/", "x", 415, "UnsupportedMediaType"},
		{"not utf-8", "text/plain", "FOR TENANT \xff", 400, "MalformedBody"},
		{"too large", "text/plain", strings.Repeat("x", maxPolicyBody+1), 413, "BodyTooLarge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/v1/policies", "/v1/policies:validate"} {
				wantError(t, f.do(t, "POST", path, tc.body, "Authorization", "Bearer "+token, "Content-Type", tc.ct), tc.status, tc.code)
			}
		})
	}
	fp.mu.Lock()
	for _, text := range fp.validated {
		if strings.TrimSpace(text) == "" || strings.Contains(text, "\xff") {
			t.Errorf("the service was called with a refused body %q", text)
		}
	}
	fp.mu.Unlock()

	// Service failures are internal errors, hidden from the client.
	fp.mu.Lock()
	fp.failWith = errors.New("compiler exploded at 0xdeadbeef")
	fp.mu.Unlock()
	r = f.do(t, "POST", "/v1/policies:validate", "FOR TENANT t1 DO SET noop")
	wantError(t, r, 500, "InternalError")
	if bytes.Contains(r.body, []byte("deadbeef")) {
		t.Fatalf("internal detail leaked: %s", r.body)
	}
}

// wantErrorLoose is wantError for bodies with more than {error, code}.
func wantErrorLoose(t *testing.T, r response, status int, code string) {
	t.Helper()
	var e Error
	if r.status != status || json.Unmarshal(r.body, &e) != nil || e.Code != code {
		t.Fatalf("got %d %s, want %d %s", r.status, r.body, status, code)
	}
}

func TestExplainRoute(t *testing.T) {
	f, fp := newControlFixture(t)
	if _, err := f.store.CreateTenant(t.Context(), "t1"); err != nil {
		t.Fatal(err)
	}
	r := f.do(t, "GET", "/v1/explain?tenant=t1&bucket=docs&key=a%2Fb.pdf&size=1048576&type=application%2Fpdf", "")
	var ex Explanation
	decodeStrict(t, r.body, &ex)
	if r.status != http.StatusOK || ex.Version != 7 || len(ex.Pipelines) != 2 || ex.Pipelines[1].Filters == nil ||
		ex.Pipelines[0].Filters[0].Policy != "p2" {
		t.Fatalf("explain: %d %s", r.status, r.body)
	}
	fp.mu.Lock()
	got := fp.explained[len(fp.explained)-1]
	fp.mu.Unlock()
	if got != (ExplainQuery{Tenant: "t1", Bucket: "docs", Key: "a/b.pdf", Size: 1048576, Type: "application/pdf"}) {
		t.Fatalf("service asked %+v", got)
	}
	f.do(t, "GET", "/v1/explain?tenant=t1", "")
	fp.mu.Lock()
	got = fp.explained[len(fp.explained)-1]
	fp.mu.Unlock()
	if got != (ExplainQuery{Tenant: "t1", Size: -1}) {
		t.Fatalf("service asked %+v for a bare tenant", got)
	}
	calls := len(fp.explained)
	for _, tc := range []struct {
		query  string
		status int
		code   string
	}{
		{"", 400, "MissingParameter"},
		{"bucket=b", 400, "MissingParameter"},
		{"tenant=t1&key=k", 400, "MissingParameter"},
		{"tenant=t1&size=-1", 400, "InvalidParameter"},
		{"tenant=t1&size=10MB", 400, "InvalidParameter"},
		{"tenant=t1&sise=10", 400, "InvalidParameter"},
		{"tenant=ghost", 404, "NoSuchTenant"},
	} {
		wantError(t, f.do(t, "GET", "/v1/explain?"+tc.query, ""), tc.status, tc.code)
	}
	if len(fp.explained) != calls {
		t.Fatal("the service was asked to explain a refused query")
	}
	r = f.do(t, "GET", "/v1/explain?tenant=t1&bucket=b&key=bad-key", "")
	wantError(t, r, 400, "InvalidInput")
	if !bytes.Contains(r.body, []byte(`invalid input: key \"bad-key\" is not explainable`)) {
		t.Fatalf("service's input error: %s", r.body)
	}
}

func TestFilterRoutes(t *testing.T) {
	f, _ := newControlFixture(t)
	r := f.do(t, "GET", "/v1/filters", "")
	var fl FilterList
	decodeStrict(t, r.body, &fl)
	if r.status != http.StatusOK || len(fl.Filters) != 2 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	c := fl.Filters[0]
	if c.Name != "compression" || !slices.Equal(c.Methods, []string{"PUT", "GET"}) || !slices.Equal(c.Stages, []string{"gateway", "storage"}) ||
		!c.Reversible || c.Params[0].Min != nil || c.Params[1].Min == nil || *c.Params[1].Min != 1 || *c.Params[1].Max != 22 ||
		!slices.Equal(c.Params[0].Enum, []string{"gzip", "zstd", "lz4"}) {
		t.Fatalf("compression: %+v", c)
	}
	if n := fl.Filters[1]; n.Methods == nil || n.Stages == nil || n.Params == nil {
		t.Fatalf("empty lists must be [] not null: %s", r.body)
	}
	r = f.do(t, "GET", "/v1/filters/compression", "")
	var one FilterInfo
	decodeStrict(t, r.body, &one)
	if r.status != http.StatusOK || one.Name != "compression" {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	r = f.do(t, "GET", "/v1/filters/compresion", "")
	wantError(t, r, 404, "NoSuchFilter")
	if !bytes.Contains(r.body, []byte(`filter \"compresion\" does not exist`)) {
		t.Fatalf("message: %s", r.body)
	}
}

func TestDataKeyAndUsageRoutes(t *testing.T) {
	f, _ := newControlFixture(t)
	if r := f.do(t, "POST", "/v1/tenants", `{"name":"acme"}`); r.status != http.StatusCreated {
		t.Fatal(r.status)
	}
	v0, _ := f.store.PolicyVersion(t.Context())
	r := f.do(t, "GET", "/v1/tenants/acme/data-keys", "")
	var dk DataKeys
	decodeStrict(t, r.body, &dk)
	if r.status != http.StatusOK || dk.Tenant != "acme" || dk.Current == "" || len(dk.History) != 1 {
		t.Fatalf("data keys: %d %s", r.status, r.body)
	}
	first := dk.Current
	r = f.do(t, "POST", "/v1/tenants/acme/keys:rotate-data-key", "")
	decodeStrict(t, r.body, &dk)
	if r.status != http.StatusOK || dk.Current == first || len(dk.History) != 2 || dk.History[0].ID != first {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	if v, _ := f.store.PolicyVersion(t.Context()); v != v0+1 {
		t.Fatalf("rotation did not bump the version once: %d -> %d", v0, v)
	}
	wantError(t, f.do(t, "POST", "/v1/tenants/ghost/keys:rotate-data-key", ""), 404, "NoSuchTenant")
	wantError(t, f.do(t, "GET", "/v1/tenants/ghost/data-keys", ""), 404, "NoSuchTenant")
	// Access keys and data keys do not collide.
	if r := f.do(t, "GET", "/v1/tenants/acme/keys", ""); r.status != http.StatusOK || bytes.Contains(r.body, []byte(first)) {
		t.Fatalf("access key list: %d %s", r.status, r.body)
	}

	r = f.do(t, "GET", "/v1/tenants/acme/usage", "")
	var u TenantUsage
	decodeStrict(t, r.body, &u)
	if r.status != http.StatusOK || u != (TenantUsage{Tenant: "acme", StoredBytes: 250, LogicalBytes: 1000, Objects: 3, SavedBytes: 750, Savings: 0.75}) {
		t.Fatalf("usage: %d %s", r.status, r.body)
	}
	wantError(t, f.do(t, "GET", "/v1/tenants/ghost/usage", ""), 404, "NoSuchTenant")
	if _, err := f.store.CreateTenant(t.Context(), "empty"); err != nil {
		t.Fatal(err)
	}
	r = f.do(t, "GET", "/v1/tenants/empty/usage", "")
	decodeStrict(t, r.body, &u)
	if r.status != http.StatusOK || u.Savings != 0 || u.LogicalBytes != 0 {
		t.Fatalf("usage of an empty tenant: %d %s", r.status, r.body)
	}
}

func TestServicesNotConfigured(t *testing.T) {
	f := newFixture(t) // no PolicyService, no UsageSource
	if _, err := f.store.CreateTenant(t.Context(), "acme"); err != nil {
		t.Fatal(err)
	}
	for _, rq := range []struct{ method, path, body string }{
		{"POST", "/v1/policies", "FOR TENANT acme DO SET noop"},
		{"POST", "/v1/policies:validate", "FOR TENANT acme DO SET noop"},
		{"GET", "/v1/explain?tenant=acme", ""},
		{"GET", "/v1/filters", ""},
		{"GET", "/v1/filters/noop", ""},
		{"GET", "/v1/tenants/acme/usage", ""},
		{"GET", "/v1/controllers", ""},
	} {
		wantError(t, f.do(t, rq.method, rq.path, rq.body), http.StatusNotImplemented, "NotImplemented")
	}
	// What the store alone serves still works.
	if r := f.do(t, "GET", "/v1/policies", ""); r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"policies": []`)) {
		t.Fatalf("policy list without a service: %d %s", r.status, r.body)
	}
}

// The OpenAPI document and the wire types describe the same JSON: every
// $ref resolves, and each schema named after a wire type lists exactly
// its fields, requiring only fields that are always present.
func TestOpenAPISchemasMatchWireTypes(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	_ = json.Unmarshal(openAPIDoc, &generic)
	for _, m := range regexp.MustCompile(`"\$ref":\s*"#/([^"]+)"`).FindAllStringSubmatch(string(openAPIDoc), -1) {
		var node any = generic
		for _, part := range strings.Split(m[1], "/") {
			obj, ok := node.(map[string]any)
			if !ok || obj[part] == nil {
				t.Errorf("$ref %s does not resolve", m[1])
				break
			}
			node = obj[part]
		}
	}

	wire := []any{
		CreateTenantRequest{}, Credentials{}, Tenant{}, Key{}, Bucket{}, TenantList{}, KeyList{}, BucketList{}, Error{},
		CreateGroupRequest{}, GroupMembersRequest{}, Group{}, GroupList{}, PolicyText{}, Policy{}, PolicyList{},
		PolicyApplied{}, Diagnostic{}, PolicySummary{}, ValidateResult{}, ExplainStep{}, Pipeline{}, Explanation{},
		FilterParam{}, FilterInfo{}, FilterList{}, DataKeyID{}, DataKeys{}, TenantUsage{},
		ControllerStatus{}, ControllerValue{}, ControllerList{},
		MetricInfo{}, MetricList{}, MetricValue{}, MetricValues{},
	}
	for _, v := range wire {
		typ := reflect.TypeOf(v)
		sch, ok := doc.Components.Schemas[typ.Name()]
		if !ok {
			t.Errorf("wire type %s has no schema", typ.Name())
			continue
		}
		var fields, always []string
		for i := range typ.NumField() {
			name, opts, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			fields = append(fields, name)
			if !strings.Contains(opts, "omitempty") {
				always = append(always, name)
			}
		}
		var props []string
		for p := range sch.Properties {
			props = append(props, p)
		}
		slices.Sort(fields)
		slices.Sort(props)
		if !slices.Equal(fields, props) {
			t.Errorf("%s: Go fields %v, schema properties %v", typ.Name(), fields, props)
		}
		for _, r := range sch.Required {
			if !slices.Contains(always, r) {
				t.Errorf("%s: schema requires %q, which Go may omit", typ.Name(), r)
			}
		}
	}
}
