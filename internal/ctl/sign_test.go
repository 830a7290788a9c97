package ctl

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/ui"
)

// A tenant's `facet ctl` signs its calls with its access key; the admin
// listener (the dashboard's handler in front of the control API, as
// `facet serve` mounts it) scopes them to the tenant.
func TestTenantKeysSignCalls(t *testing.T) {
	var st *meta.Store
	newEnvWith(t, func(s *meta.Store, _ *admin.Config) { st = s })
	_, acme, err := st.CreateTenantWithKey(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateTenantWithKey(t.Context(), "zeta"); err != nil {
		t.Fatal(err)
	}
	api := admin.New(admin.Config{Store: st, Token: token})
	srv := httptest.NewServer(ui.New(ui.Config{API: api, Token: token, Store: st}).Handler())
	defer srv.Close()
	t.Setenv(EnvAdminToken, "")
	as := func(args ...string) result {
		return ctl(t, append([]string{"--admin", srv.URL, "--access-key", acme.AccessKey, "--secret-key", acme.SecretKey}, args...)...)
	}

	out := mustOK(t, as("tenant", "list"))
	if !strings.Contains(out, "acme") || strings.Contains(out, "zeta") {
		t.Fatalf("tenant list: %s", out)
	}
	if r := as("tenant", "get", "zeta"); r.err == nil || !strings.Contains(r.err.Error(), "Forbidden") {
		t.Fatalf("another tenant: %v", r.err)
	}
	// TENANT may be omitted: it is the key's. This API has no bin (501),
	// which shows the call reached /v1/trash/acme.
	if r := as("trash", "list"); r.err == nil || !strings.Contains(r.err.Error(), "NotImplemented") {
		t.Fatalf("trash list: %v", r.err)
	}
	if r := as("trash", "list", "zeta"); r.err == nil || !strings.Contains(r.err.Error(), "own recycle bin only") {
		t.Fatalf("zeta's bin: %v", r.err)
	}
	// The environment works as the flags do.
	t.Setenv(EnvAccessKey, acme.AccessKey)
	t.Setenv(EnvSecretKey, acme.SecretKey)
	if out := mustOK(t, ctl(t, "--admin", srv.URL, "tenant", "list")); !strings.Contains(out, "acme") {
		t.Fatalf("env keys: %s", out)
	}
	t.Setenv(EnvSecretKey, "")
	if r := ctl(t, "--admin", srv.URL, "tenant", "list"); r.err == nil || !strings.Contains(r.err.Error(), "--secret-key") {
		t.Fatalf("access key without secret: %v", r.err)
	}
	if r := ctl(t, "--admin", srv.URL, "--secret-key", "wrong", "tenant", "list"); r.err == nil || !strings.Contains(r.err.Error(), "SignatureDoesNotMatch") {
		t.Fatalf("wrong secret: %v", r.err)
	}
	// The admin token still names any tenant, and must name it.
	t.Setenv(EnvAccessKey, "")
	if r := ctl(t, "--admin", srv.URL, "--token", token, "trash", "list"); r.err == nil || !strings.Contains(r.err.Error(), "name the TENANT") {
		t.Fatalf("admin without tenant: %v", r.err)
	}
}
