package ctl

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/meta"
)

const token = "ctl-test-token"

type env struct {
	url   string
	store *meta.Store
}

// newEnv starts the real control API over a real metadata store.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, func(*meta.Store, *admin.Config) {})
}

// newEnvWith is newEnv with configure's additions to the API's Config.
func newEnvWith(t *testing.T, configure func(*meta.Store, *admin.Config)) *env {
	t.Helper()
	mk := make([]byte, meta.MasterKeySize)
	if _, err := rand.Read(mk); err != nil {
		t.Fatal(err)
	}
	st, err := meta.Open(t.Context(), filepath.Join(t.TempDir(), "meta.db"), mk, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := admin.Config{Store: st, Token: token}
	configure(st, &cfg)
	srv := httptest.NewServer(admin.New(cfg))
	t.Cleanup(func() {
		srv.Close()
		_ = st.Close()
	})
	return &env{url: srv.URL, store: st}
}

type result struct {
	stdout, stderr string
	err            error
}

// ctl runs the command tree with the given arguments, as `facet ctl ARGS`.
func ctl(t *testing.T, args ...string) result {
	t.Helper()
	cmd := NewCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return result{stdout: out.String(), stderr: errOut.String(), err: err}
}

// (e *env) ctl passes the server address and token as flags.
func (e *env) ctl(t *testing.T, args ...string) result {
	t.Helper()
	return ctl(t, append([]string{"--admin", e.url, "--token", token}, args...)...)
}

func mustOK(t *testing.T, r result) string {
	t.Helper()
	if r.err != nil {
		t.Fatalf("command failed: %v\nstderr: %s", r.err, r.stderr)
	}
	return r.stdout
}

// oneJSONObject checks that out is exactly one JSON object and returns it.
func oneJSONObject(t *testing.T, out string) map[string]any {
	t.Helper()
	if !strings.HasSuffix(out, "}\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("want one JSON line, got %q", out)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value in %q", out)
	}
	return m
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestTenantCreateJSONShape(t *testing.T) {
	e := newEnv(t)
	// Flags after the positional argument, as scripts write it.
	out := mustOK(t, e.ctl(t, "tenant", "create", "acme", "-o", "json"))
	m := oneJSONObject(t, out)
	if got := keysOf(m); !slices.Equal(got, []string{"access_key", "secret_key", "tenant"}) {
		t.Fatalf("fields %v, want exactly tenant, access_key, secret_key", got)
	}
	ak, _ := m["access_key"].(string)
	sk, _ := m["secret_key"].(string)
	if m["tenant"] != "acme" || len(ak) != 20 || len(sk) != 40 {
		t.Fatalf("values: %v", m)
	}
	tenant, secret, err := e.store.LookupAccessKey(t.Context(), ak)
	if err != nil || tenant != "acme" || secret != sk {
		t.Fatalf("printed credentials do not resolve: %v", err)
	}

	// key create has the same shape.
	m = oneJSONObject(t, mustOK(t, e.ctl(t, "key", "create", "acme", "--output=json")))
	if got := keysOf(m); !slices.Equal(got, []string{"access_key", "secret_key", "tenant"}) || m["access_key"] == ak {
		t.Fatalf("key create: %v", m)
	}
}

func TestWorkflowTable(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	r := e.ctl(t, "tenant", "create", "acme")
	out := mustOK(t, r)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "TENANT") || !strings.HasPrefix(lines[1], "acme ") {
		t.Fatalf("create table: %q", out)
	}
	if !strings.Contains(r.stderr, "cannot be shown again") {
		t.Fatalf("no once-only warning on stderr: %q", r.stderr)
	}
	fields := strings.Fields(lines[1])
	if len(fields) != 3 {
		t.Fatalf("create row %q", lines[1])
	}
	firstKey := fields[1]
	mustOK(t, e.ctl(t, "tenant", "create", "beta"))

	out = mustOK(t, e.ctl(t, "tenant", "list"))
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "acme ") || !strings.HasPrefix(lines[2], "beta ") {
		t.Fatalf("tenant list: %q", out)
	}
	if out := mustOK(t, e.ctl(t, "tenant", "get", "acme")); !strings.Contains(out, "acme") {
		t.Fatalf("tenant get: %q", out)
	}

	second := oneJSONObject(t, mustOK(t, e.ctl(t, "key", "create", "acme", "-o", "json")))["access_key"].(string)
	out = mustOK(t, e.ctl(t, "key", "list", "acme"))
	if !strings.Contains(out, firstKey) || !strings.Contains(out, second) || strings.Count(strings.TrimSpace(out), "\n") != 2 {
		t.Fatalf("key list: %q", out)
	}
	if out := mustOK(t, e.ctl(t, "key", "revoke", "acme", firstKey)); !strings.Contains(out, "revoked") {
		t.Fatalf("revoke: %q", out)
	}
	if _, _, err := e.store.LookupAccessKey(ctx, firstKey); err == nil {
		t.Fatal("revoked key still resolves")
	}

	if err := e.store.ClaimBucket(ctx, "acme", "photos"); err != nil {
		t.Fatal(err)
	}
	out = mustOK(t, e.ctl(t, "bucket", "list", "acme"))
	if !strings.Contains(out, "photos") {
		t.Fatalf("bucket list: %q", out)
	}
	r = e.ctl(t, "tenant", "delete", "acme")
	if r.err == nil || !strings.Contains(r.stderr, "still owns buckets") {
		t.Fatalf("delete non-empty tenant: err=%v stderr=%q", r.err, r.stderr)
	}
	if err := e.store.ReleaseBucket(ctx, "acme", "photos"); err != nil {
		t.Fatal(err)
	}
	mustOK(t, e.ctl(t, "tenant", "delete", "acme"))
	if _, err := e.store.GetTenant(ctx, "acme"); err == nil {
		t.Fatal("tenant survived delete")
	}
}

func TestJSONOutputs(t *testing.T) {
	e := newEnv(t)
	ak := oneJSONObject(t, mustOK(t, e.ctl(t, "tenant", "create", "acme", "-o", "json")))["access_key"].(string)

	var tl admin.TenantList
	decodeOne(t, mustOK(t, e.ctl(t, "tenant", "list", "-o", "json")), &tl)
	if len(tl.Tenants) != 1 || tl.Tenants[0].Name != "acme" {
		t.Fatalf("tenant list: %+v", tl)
	}
	var kl admin.KeyList
	out := mustOK(t, e.ctl(t, "key", "list", "acme", "-o", "json"))
	if strings.Contains(out, "secret") {
		t.Fatalf("key list mentions secrets: %s", out)
	}
	decodeOne(t, out, &kl)
	if len(kl.Keys) != 1 || kl.Keys[0].AccessKey != ak {
		t.Fatalf("key list: %+v", kl)
	}
	var bl admin.BucketList
	decodeOne(t, mustOK(t, e.ctl(t, "bucket", "list", "acme", "-o", "json")), &bl)
	if bl.Buckets == nil || len(bl.Buckets) != 0 {
		t.Fatalf("bucket list: %+v", bl)
	}
	m := oneJSONObject(t, mustOK(t, e.ctl(t, "key", "revoke", "acme", ak, "-o", "json")))
	if m["revoked"] != true || m["access_key"] != ak {
		t.Fatalf("revoke: %v", m)
	}
	m = oneJSONObject(t, mustOK(t, e.ctl(t, "tenant", "delete", "acme", "-o", "json")))
	if m["deleted"] != true || m["tenant"] != "acme" {
		t.Fatalf("delete: %v", m)
	}
}

func decodeOne(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || dec.More() {
		t.Fatalf("decode %q: %v", out, err)
	}
}

func TestServerErrors(t *testing.T) {
	e := newEnv(t)
	mustOK(t, e.ctl(t, "tenant", "create", "acme"))
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"tenant", "create", "acme", "-o", "json"}, `tenant "acme" already exists (TenantExists)`},
		{[]string{"tenant", "create", "Bad"}, "invalid tenant name"},
		{[]string{"tenant", "delete", "ghost"}, `tenant "ghost" does not exist`},
		{[]string{"key", "list", "ghost"}, "NoSuchTenant"},
		{[]string{"key", "revoke", "acme", "FKAAAAAAAAAAAAAAAAAA"}, "NoSuchAccessKey"},
	} {
		r := e.ctl(t, tc.args...)
		if r.err == nil {
			t.Fatalf("%v: succeeded", tc.args)
		}
		if !strings.Contains(r.stderr, tc.msg) {
			t.Fatalf("%v: stderr %q, want %q", tc.args, r.stderr, tc.msg)
		}
		if r.stdout != "" || strings.Contains(r.stdout+r.stderr, "Usage:") {
			t.Fatalf("%v: stdout %q / usage printed on a server error: %q", tc.args, r.stdout, r.stderr)
		}
	}
}

func TestClientSideErrors(t *testing.T) {
	e := newEnv(t)

	r := ctl(t, "--admin", e.url, "--token", "wrong", "tenant", "list")
	if r.err == nil || !strings.Contains(r.stderr, "Unauthorized") {
		t.Fatalf("wrong token: %v %q", r.err, r.stderr)
	}
	t.Setenv(EnvAdminToken, "")
	r = ctl(t, "--admin", e.url, "tenant", "list")
	if r.err == nil || !strings.Contains(r.err.Error(), EnvAdminToken) {
		t.Fatalf("missing token: %v", r.err)
	}
	r = e.ctl(t, "tenant", "list", "-o", "yaml")
	if r.err == nil || !strings.Contains(r.err.Error(), "table or json") {
		t.Fatalf("bad output: %v", r.err)
	}
	r = ctl(t, "--admin", "ftp://x", "--token", token, "tenant", "list")
	if r.err == nil {
		t.Fatal("ftp admin URL accepted")
	}
	// Wrong argument counts are cobra's to report, with usage.
	r = e.ctl(t, "tenant", "create")
	if r.err == nil || !strings.Contains(r.stdout+r.stderr, "Usage:") {
		t.Fatalf("missing argument: %v %q", r.err, r.stderr)
	}

	dead := httptest.NewServer(nil)
	deadURL := dead.URL
	dead.Close()
	r = ctl(t, "--admin", deadURL, "--token", token, "tenant", "list")
	if r.err == nil || !strings.Contains(r.err.Error(), deadURL) {
		t.Fatalf("unreachable server: %v", r.err)
	}

	// A server that is not the admin API: the status is reported.
	other := httptest.NewServer(nil) // DefaultServeMux: 404 text for everything
	defer other.Close()
	r = ctl(t, "--admin", other.URL, "--token", token, "tenant", "list")
	if r.err == nil || !strings.Contains(r.err.Error(), "404") {
		t.Fatalf("non-API server: %v", r.err)
	}
}

func TestEnvironment(t *testing.T) {
	e := newEnv(t)
	t.Setenv(EnvAdminURL, e.url)
	t.Setenv(EnvAdminToken, token)
	m := oneJSONObject(t, mustOK(t, ctl(t, "tenant", "create", "envy", "-o", "json")))
	if m["tenant"] != "envy" {
		t.Fatalf("%v", m)
	}
	// Flags beat the environment.
	r := ctl(t, "--token", "wrong", "tenant", "list")
	if r.err == nil || !strings.Contains(r.stderr, "Unauthorized") {
		t.Fatalf("--token did not override env: %v", r.err)
	}
	// The token is never shown in help.
	help := ctl(t, "--help")
	if strings.Contains(help.stdout+help.stderr, token) {
		t.Fatal("token appears in help")
	}
}
