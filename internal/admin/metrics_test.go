package admin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// /metrics takes the admin token or the metrics token, never nothing, and
// the metrics token opens nothing else.
func TestMetricsAuth(t *testing.T) {
	const metricsToken = "scrape-token-abcdef"
	exposition := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "facet_up 1\n")
	})
	get := func(h http.Handler, path, bearer string) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusOK && path == "/metrics" && !strings.Contains(rec.Body.String(), "facet_up 1") {
			t.Fatalf("metrics body %q", rec.Body.String())
		}
		return rec.Code
	}
	f := newFixture(t)
	h := New(Config{Store: f.store, Token: token, Metrics: exposition, MetricsToken: metricsToken})
	for _, c := range []struct {
		path, bearer string
		want         int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "wrong", http.StatusUnauthorized},
		{"/metrics", token, http.StatusOK},
		{"/metrics", metricsToken, http.StatusOK},
		{"/v1/tenants", metricsToken, http.StatusUnauthorized},
		{"/v1/tenants", token, http.StatusOK},
	} {
		if got := get(h, c.path, c.bearer); got != c.want {
			t.Errorf("GET %s with %q: %d, want %d", c.path, c.bearer, got, c.want)
		}
	}

	// Without a metrics token only the admin token opens /metrics.
	h = New(Config{Store: f.store, Token: token, Metrics: exposition})
	if got := get(h, "/metrics", ""); got != http.StatusUnauthorized {
		t.Errorf("no metrics token, no bearer: %d", got)
	}
	if got := get(h, "/metrics", token); got != http.StatusOK {
		t.Errorf("no metrics token, admin bearer: %d", got)
	}
	// Without an exposition there is no /metrics.
	h = New(Config{Store: f.store, Token: token})
	if got := get(h, "/metrics", token); got != http.StatusNotFound {
		t.Errorf("no exposition: %d", got)
	}
}
