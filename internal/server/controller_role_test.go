package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/controller"
	"github.com/facet-sds/facet/internal/filter/builtin"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/meta/redistest"
)

// Two controller roles on one store: one holds the lease and runs the
// controllers, the other waits; when the holder stops, it gives the lease
// up and the standby takes over.
func TestControllerRoleLeaseFailover(t *testing.T) {
	mk := make([]byte, meta.MasterKeySize)
	if _, err := rand.Read(mk); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	store, err := meta.Open(t.Context(), filepath.Join(t.TempDir(), meta.DefaultBoltFile), mk, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	policies := control.New(control.Config{Store: store, Registry: builtin.NewRegistry(), Logger: logger})
	if err := policies.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	start := func(id string) (*controllerRole, context.CancelFunc, chan struct{}) {
		r := &controllerRole{id: id, ttl: 2 * time.Second, store: store, policies: policies, log: logger,
			guard: controller.NewLeaseGuard(nil), start: func(_ string, f func()) { go f() }}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		return r, cancel, done
	}
	lease := func(r *controllerRole) string {
		st, err := r.status(t.Context(), true)
		if err != nil {
			t.Fatal(err)
		}
		return st.Lease
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	a, stopA, doneA := start("a")
	waitFor("a holds the lease", func() bool { return lease(a) == "held" })
	b, _, _ := start("b")
	// b has asked at least once (at start) and was refused.
	time.Sleep(300 * time.Millisecond)
	if lease(b) != "standby" || lease(a) != "held" {
		t.Fatalf("a %s, b %s; want held and standby", lease(a), lease(b))
	}
	if h, err := store.LeaseHolder(t.Context(), ControllerLease); err != nil || h != "a" {
		t.Fatalf("stored holder %q, %v; want a", h, err)
	}
	termA, ok := a.guard.Held()
	if _, bOK := b.guard.Held(); !ok || termA == 0 || bOK {
		t.Fatalf("publication guards: a term %d held %v, b held %v; want only a", termA, ok, bOK)
	}
	stopA()
	<-doneA
	if lease(a) != "standby" {
		t.Fatal("a stopped and still reports the lease")
	}
	if _, ok := a.guard.Held(); ok {
		t.Fatal("a stopped its controllers and may still publish")
	}
	waitFor("b takes over", func() bool { return lease(b) == "held" })
	// The successor publishes under a newer term, which gateways prefer
	// to a's (issue 23).
	if termB, ok := b.guard.Held(); !ok || termB <= termA {
		t.Fatalf("b's term %d (held %v); want above a's %d", termB, ok, termA)
	}
	if h, err := store.LeaseHolder(t.Context(), ControllerLease); err != nil || h != "b" {
		t.Fatalf("stored holder %q, %v; want b", h, err)
	}
}

// TestControllerRoleAdminAPI: `facet controller` serves the admin API over
// the fleet's shared store. A tenant and a policy created through it work
// on a gateway of the same fleet (the policy table version the gateway
// exposes moves past the change); its lease view stays on /v1/controllers;
// what needs a gateway's own runtime answers 501, and the token is
// required.
func TestControllerRoleAdminAPI(t *testing.T) {
	rds := redistest.Start(t)
	srv, err := bus.StartServer(bus.ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv("FACET_MASTER_KEY", base64.StdEncoding.EncodeToString(masterKeyForTest(t)))
	gw := startTestGateway(t, Options{MetaURL: rds.URL(0, ""), BusURL: srv.URL(), Node: "gw", NoControllers: true})

	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Role: RoleController, DataDir: t.TempDir(), MetaURL: rds.URL(0, ""), BusURL: srv.URL(), Node: "c1",
			AdminAddr: "127.0.0.1:0", AdminToken: testCtok, ShutdownTimeout: 5 * time.Second, Ready: func(_, a string) { ready <- a }}, slog.New(slog.DiscardHandler))
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("controller did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	ctl := &testGateway{t: t, admin: "http://" + addr}
	call := func(token, method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, ctl.admin+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	if code, _ := call(testTok, http.MethodGet, "/v1/tenants", ""); code != http.StatusUnauthorized {
		t.Fatalf("the gateway's token on the controller: %d, want 401", code)
	}
	code, body := call(testCtok, http.MethodPost, "/v1/tenants", `{"name":"viactl"}`)
	var key map[string]string
	if err := json.Unmarshal(body, &key); err != nil || code != http.StatusCreated {
		t.Fatalf("create tenant on the controller: %d %s", code, body)
	}
	cl := s3.New(s3.Options{BaseEndpoint: gw.client.Options().BaseEndpoint, Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key["access_key"], key["secret_key"], "")})
	if _, err := cl.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String("viactl")}); err != nil {
		t.Fatalf("the tenant created on the controller cannot use the gateway: %v", err)
	}

	before := gw.policyVersion()
	code, body = call(testCtok, http.MethodPost, "/v1/policies", "FOR TENANT viactl DO SET compression")
	var applied admin.PolicyApplied
	if err := json.Unmarshal(body, &applied); err != nil || code/100 != 2 || len(applied.Policies) != 1 {
		t.Fatalf("apply a policy on the controller: %d %s", code, body)
	}
	for deadline := time.Now().Add(30 * time.Second); gw.policyVersion() <= before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway's policy table is still at version %v", before)
		}
	}
	if code, body := gw.do(http.MethodGet, "/v1/policies/"+applied.Policies[0].ID, ""); code != http.StatusOK {
		t.Fatalf("the gateway does not list the policy: %d %s", code, body)
	}

	code, body = call(testCtok, http.MethodGet, "/v1/controllers", "")
	var st controllerRoleStatus
	if err := json.Unmarshal(body, &st); err != nil || code != http.StatusOK || st.ID != "c1" || st.Role != "controller" {
		t.Fatalf("GET /v1/controllers: %d %s", code, body)
	}
	if code, body := call(testCtok, http.MethodGet, "/v1/tenants/viactl/usage", ""); code != http.StatusNotImplemented {
		t.Fatalf("usage (needs the object store) on the controller: %d %s, want 501", code, body)
	}
}

// policyVersion is the gateway's facet_policy_table_version in /metrics.
func (g *testGateway) policyVersion() float64 {
	g.t.Helper()
	code, body := g.do(http.MethodGet, "/metrics", "")
	if code != http.StatusOK {
		g.t.Fatalf("GET /metrics: %d", code)
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, "facet_policy_table_version "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				g.t.Fatal(err)
			}
			return f
		}
	}
	g.t.Fatal("facet_policy_table_version not in /metrics")
	return 0
}

func masterKeyForTest(t *testing.T) []byte {
	mk := make([]byte, meta.MasterKeySize)
	if _, err := rand.Read(mk); err != nil {
		t.Fatal(err)
	}
	return mk
}

// TestControllerRoleFencedOnFrozenRedis is issue 23's lease defect
// reproduced with a hung store, not a dead one: with Redis frozen
// (SIGSTOP) the holder's lease loop is stuck renewing, and its guard (which
// every publication of the bandwidth controller consults; see
// controller.TestRunnerFencedByLease) must lapse by itself before the
// lease can expire in the store, so that a deposed holder publishes
// nothing while a successor may already hold the lease. When Redis comes
// back, the old holder stays fenced and a successor holds a newer term.
func TestControllerRoleFencedOnFrozenRedis(t *testing.T) {
	rds := redistest.Start(t)
	mk := masterKeyForTest(t)
	logger := slog.New(slog.DiscardHandler)
	open := func() *meta.Store {
		s, err := meta.OpenURL(t.Context(), rds.URL(0, ""), t.TempDir(), mk, logger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	const ttl = 1500 * time.Millisecond
	start := func(id string, store *meta.Store) *controllerRole {
		policies := control.New(control.Config{Store: store, Registry: builtin.NewRegistry(), Logger: logger})
		if err := policies.Reload(t.Context()); err != nil {
			t.Fatal(err)
		}
		r := &controllerRole{id: id, ttl: ttl, store: store, policies: policies, log: logger,
			guard: controller.NewLeaseGuard(nil), start: func(_ string, f func()) { go f() }}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { r.run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		return r
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
		}
	}
	a := start("a", open())
	waitFor("a holds the lease", func() bool { _, ok := a.guard.Held(); return ok })
	termA, _ := a.guard.Held()
	// b waits on standby, on its own connections.
	b := start("b", open())

	rds.Freeze(t)
	frozen := time.Now()
	// a's last renewal came before the freeze, and its guard runs to that
	// renewal + 2/3 ttl, before the store's lease (renewal + ttl) ends:
	// one ttl after the freeze the guard has lapsed, whatever the loop is
	// doing. Polling only shows that it lapses while the loop is stuck.
	waitFor("a's guard lapses with Redis frozen", func() bool { _, ok := a.guard.Held(); return !ok })
	if lapsed := time.Since(frozen); lapsed > ttl {
		// Not a speed check: past ttl the store's lease may have gone to
		// a successor while a could still publish.
		t.Fatalf("a's guard was held %v into the freeze, past the lease's ttl %v", lapsed, ttl)
	}
	// Still frozen: a stays fenced (its renewal cannot succeed).
	time.Sleep(ttl)
	if _, ok := a.guard.Held(); ok {
		t.Fatal("a holds its guard again while Redis is frozen")
	}

	// Once Redis answers, the standby takes the lease if the old one
	// has expired by then, or a renews first. Either way exactly one
	// holds it, and a successor's term is newer.
	if _, ok := b.guard.Held(); ok {
		t.Fatal("standby b holds a guard")
	}
	rds.Resume(t)
	waitFor("one of a, b holds the lease", func() bool {
		_, aok := a.guard.Held()
		_, bok := b.guard.Held()
		return aok != bok
	})
	if termB, ok := b.guard.Held(); ok && termB <= termA {
		t.Fatalf("successor b holds term %d, not newer than a's %d", termB, termA)
	}
}
