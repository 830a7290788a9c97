package ui

import (
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/metrics"
)

func newCookieJar() (*cookiejar.Jar, error) { return cookiejar.New(nil) }

// FuzzTenantDecision: whatever a tenant session sends, what reaches the
// control API is about that tenant alone.
func FuzzTenantDecision(f *testing.F) {
	for _, s := range []struct{ method, path, query string }{
		{"GET", "/v1/tenants", ""}, {"GET", "/v1/tenants/acme/usage", ""}, {"DELETE", "/v1/tenants/acme/keys/K", ""},
		{"GET", "/v1/explain", "tenant=acme&bucket=b"}, {"GET", "/v1/metrics/put_ops", "target=tenant:acme"},
		{"GET", "/v1/metrics/put_ops", "target=object:acme/b/k/../../zeta"}, {"GET", "/v1/tenants/acme/../zeta", ""},
		{"GET", "/v1/slos/acme", ""}, {"GET", "/v1/explain", "tenant=acme&tenant=zeta"},
		{"GET", "/v1/trash/acme", ""}, {"POST", "/v1/trash/acme/1-2-0000000a/restore", "overwrite=true"},
		{"POST", "/v1/trash/zeta/1-2-0000000a/restore", ""}, {"DELETE", "/v1/trash/acme/1-2-0000000a", ""},
	} {
		f.Add(s.method, s.path, s.query)
	}
	f.Fuzz(func(t *testing.T, method, path, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		d := tenantDecision(method, path, q, "acme")
		if d.deny != "" {
			return
		}
		seg := strings.Split(strings.TrimPrefix(d.path, "/v1/"), "/")
		if !strings.HasPrefix(d.path, "/v1/") {
			t.Fatalf("allowed a path outside the API: %q", d.path)
		}
		if (seg[0] == "tenants" || seg[0] == "slos" || seg[0] == "trash") && len(seg) > 1 && seg[1] != "acme" {
			t.Fatalf("%s %s?%s reaches %s", method, path, query, d.path)
		}
		if seg[0] == "tenants" && len(seg) == 1 {
			t.Fatalf("the tenant list reached the API unfiltered: %+v", d)
		}
		dq, err := url.ParseQuery(d.query)
		if err != nil {
			t.Fatalf("built a bad query %q", d.query)
		}
		if ts, ok := dq["tenant"]; ok && (len(ts) != 1 || ts[0] != "acme") {
			t.Fatalf("%s?%s reaches tenant %v", path, query, ts)
		}
		if seg[0] == "explain" && dq.Get("tenant") != "acme" {
			t.Fatalf("explain without the tenant pinned: %q", d.query)
		}
		if tg, ok := dq["target"]; ok {
			pt, err := metrics.ParseTarget(tg[0])
			if len(tg) != 1 || err != nil || pt.Tenant != "acme" {
				t.Fatalf("metric target %v", tg)
			}
		}
		if seg[0] == "metrics" && len(seg) == 2 && len(dq) == 0 && d.filter == nil {
			t.Fatalf("all targets' values unfiltered: %+v", d)
		}
	})
}
