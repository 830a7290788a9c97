package control

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/builtin"
	"github.com/facet-sds/facet/internal/keys"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/ownership"
	"github.com/facet-sds/facet/internal/policy"
	"github.com/facet-sds/facet/internal/s3api"
	"github.com/facet-sds/facet/internal/storage/fs"
)

// countingStore counts every call the service makes to the store.
type countingStore struct {
	Store
	calls atomic.Int64
}

func (c *countingStore) PolicyVersion(ctx context.Context) (uint64, error) {
	c.calls.Add(1)
	return c.Store.PolicyVersion(ctx)
}
func (c *countingStore) Snapshot(ctx context.Context) (meta.Snapshot, error) {
	c.calls.Add(1)
	return c.Store.Snapshot(ctx)
}
func (c *countingStore) ListTenants(ctx context.Context) ([]meta.Tenant, error) {
	c.calls.Add(1)
	return c.Store.ListTenants(ctx)
}
func (c *countingStore) ListGroups(ctx context.Context) ([]meta.Group, error) {
	c.calls.Add(1)
	return c.Store.ListGroups(ctx)
}
func (c *countingStore) ListBuckets(ctx context.Context, t string) ([]ownership.Bucket, error) {
	c.calls.Add(1)
	return c.Store.ListBuckets(ctx, t)
}

// fakeAuth lets every request in as tenant t1: this test is about the
// policy path, not signatures (which internal/s3api/sigv4 tests).
type fakeAuth struct{}

type plainBody struct {
	io.Reader
	n int64
}

func (b plainBody) DecodedLength() int64 { return b.n }
func (b plainBody) Trailer() http.Header { return nil }
func (fakeAuth) Authenticate(r *http.Request) (string, string, s3api.RequestBody, error) {
	return "t1", "AK", plainBody{Reader: r.Body, n: r.ContentLength}, nil
}

type fixture struct {
	store   *meta.Store
	counted *countingStore
	svc     *Service
	s3      http.Handler
	backend *fs.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	master := bytes.Repeat([]byte{7}, 32)
	store, err := meta.Open(ctx, dir+"/meta.db", master, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	backend, err := fs.Open(ctx, dir+"/objects", fs.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	if _, _, err := store.CreateTenantWithKey(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	counted := &countingStore{Store: store}
	reg := builtin.NewRegistry()
	ids := NewKeyIDs()
	k, err := keys.New(master, ids, 0)
	if err != nil {
		t.Fatal(err)
	}
	svc := New(Config{Store: counted, Registry: reg, Keys: k, KeyIDs: ids})
	if err := svc.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	h := s3api.New(s3api.Config{Backend: backend, Buckets: store, Auth: fakeAuth{},
		Data: dataplane.New(dataplane.Config{Backend: backend, Pipelines: svc,
			Decoders: dataplane.Decoders{Registry: reg, Env: filter.Env{Keys: k}}})})
	f := &fixture{store: store, counted: counted, svc: svc, s3: h, backend: backend}
	f.do(t, "PUT", "/docs", nil, 200)
	f.do(t, "PUT", "/logs", nil, 200)
	return f
}

func (f *fixture) do(t *testing.T, method, path string, body []byte, want int) []byte {
	t.Helper()
	r := httptest.NewRequest(method, "http://127.0.0.1:9000"+path, bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	w := httptest.NewRecorder()
	f.s3.ServeHTTP(w, r)
	if w.Code != want {
		t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body.String())
	}
	return w.Body.Bytes()
}

func (f *fixture) apply(t *testing.T, text string) {
	t.Helper()
	_, res, err := f.svc.Apply(context.Background(), text)
	if err != nil || !res.Valid {
		t.Fatalf("apply %q: %v %+v", text, err, res.Errors)
	}
}

func redundant(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "2026-11-22T02:%02d:%02d INFO request id=%d path=/api/v1/items status=200\n", i%60, i%60, i%977)
	}
	return b.Bytes()[:n]
}

// The request path reads the in-memory table only: 1000 requests through
// the S3 handler with policies in force make no call to the store.
func TestNoStoreAccessOnRequestPath(t *testing.T) {
	f := newFixture(t)
	f.apply(t, "FOR TENANT t1 DO SET compression WITH engine=zstd ON gateway, SET encryption ON storage")
	before := f.counted.calls.Load()
	body := redundant(64 << 10)
	for i := 0; i < 500; i++ {
		key := fmt.Sprintf("/logs/k%d", i%50)
		f.do(t, "PUT", key, body, 200)
		if got := f.do(t, "GET", key, nil, 200); !bytes.Equal(got, body) {
			t.Fatalf("GET %s differs", key)
		}
	}
	if n := f.counted.calls.Load() - before; n != 0 {
		t.Fatalf("%d store calls during 1000 requests", n)
	}
	info, err := f.backend.HeadObject(context.Background(), "logs", "k1")
	if err != nil {
		t.Fatal(err)
	}
	if info.StoredSize >= int64(len(body))/4 || info.Meta.Size != int64(len(body)) {
		t.Fatalf("stored %d of %d: compression did not run", info.StoredSize, len(body))
	}
}

// Crystal's P1/P2/P3 (seeds/001 §6): encryption at storage for the tenant,
// then compression at the gateway (pipelining), then a bucket policy that
// deletes compression for incompressible data, keeping encryption.
func TestCrystalScenarioExplain(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.apply(t, "P1: FOR TENANT t1 DO SET encryption ON OBJECT")
	f.apply(t, "P2: FOR TENANT t1 DO SET compression ON PROXY")
	f.apply(t, "P3: FOR CONTAINER t1/docs DO DELETE compression")
	steps := func(bucket string) string {
		ex, err := f.svc.Explain(ctx, admin.ExplainQuery{Tenant: "t1", Bucket: bucket, Key: "x", Size: -1})
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, p := range ex.Pipelines {
			for _, st := range p.Filters {
				s = append(s, p.Method+"/"+p.Stage+":"+st.Filter+"@"+st.PolicyName)
			}
		}
		return strings.Join(s, " ")
	}
	if got := steps("logs"); got != "PUT/gateway:compression@P2 PUT/storage:encryption@P1" {
		t.Fatalf("logs: %s", got)
	}
	if got := steps("docs"); got != "PUT/storage:encryption@P1" {
		t.Fatalf("docs: %s", got)
	}
	// And the data plane does exactly that.
	body := redundant(200 << 10)
	f.do(t, "PUT", "/logs/a", body, 200)
	f.do(t, "PUT", "/docs/a", body, 200)
	for _, b := range []string{"logs", "docs"} {
		info, _ := f.backend.HeadObject(ctx, b, "a")
		plan, err := dataplane.PlanOf(info.Meta.System)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range plan.Records {
			names = append(names, r.Filter)
		}
		want := map[string]string{"logs": "compression,encryption", "docs": "encryption"}[b]
		if strings.Join(names, ",") != want {
			t.Fatalf("%s plan %v, want %s", b, names, want)
		}
		if got := f.do(t, "GET", "/"+b+"/a", nil, 200); !bytes.Equal(got, body) {
			t.Fatalf("%s: GET differs", b)
		}
	}
}

// Policies are stored: a new service over the same store (a restart, or
// another node) builds the same table.
func TestPoliciesSurviveReload(t *testing.T) {
	f := newFixture(t)
	f.apply(t, "FOR TENANT t1 DO SET compression WITH engine=lz4")
	f.apply(t, "FOR TENANT t1 WHEN put_ops > 3 DO SET encryption TRANSIENT")
	other := New(Config{Store: f.store, Registry: builtin.NewRegistry()})
	if err := other.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := other.ForPut(&filter.Request{Tenant: "t1", Bucket: "logs", Key: "k", Size: 10})
	if len(p.Steps) != 1 || p.Steps[0].Filter.Info().Name != "compression" {
		t.Fatalf("steps %+v", p.Steps)
	}
	if other.Version() != f.svc.Version() || other.Version() == 0 {
		t.Fatalf("versions %d %d", other.Version(), f.svc.Version())
	}
	pols, err := f.store.ListPolicies(context.Background())
	if err != nil || len(pols) != 2 || pols[1].State != meta.PolicyPending {
		t.Fatalf("%+v %v", pols, err)
	}
}

func TestValidateReportsPositionedErrors(t *testing.T) {
	f := newFixture(t)
	res, err := f.svc.Validate(context.Background(), "FOR TENANT t1 DO SET compresion")
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid || len(res.Errors) != 1 {
		t.Fatalf("%+v", res)
	}
	d := res.Errors[0]
	if d.Line != 1 || d.Column != 22 || d.Suggestion != "compression" || d.Source != "FOR TENANT t1 DO SET compresion" {
		t.Fatalf("%+v", d)
	}
	res, _ = f.svc.Validate(context.Background(), "FOR TENANT nosuch DO SET compression")
	if res.Valid {
		t.Fatal("unknown tenant accepted")
	}
}

// Objects keep their reverse plan: after the policy is gone they still
// read back, and size/type conditions pick filters per request.
func TestObjectConditionsAndPolicyRemoval(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.apply(t, "FOR TENANT t1 WHEN OBJECT_TYPE=DOCS DO SET compression")
	f.apply(t, "FOR TENANT t1 DO SET encryption TO OBJECT_SIZE>100KB")
	body := redundant(150 << 10)
	f.do(t, "PUT", "/docs/report.pdf", body, 200)
	f.do(t, "PUT", "/docs/small.bin", body[:1000], 200)
	f.do(t, "PUT", "/docs/big.bin", body, 200)
	planOf := func(key string) string {
		info, _ := f.backend.HeadObject(ctx, "docs", key)
		plan, _ := dataplane.PlanOf(info.Meta.System)
		var names []string
		for _, r := range plan.Records {
			names = append(names, r.Filter)
		}
		return strings.Join(names, ",")
	}
	if got := planOf("report.pdf"); got != "compression,encryption" {
		t.Fatalf("report.pdf: %s", got)
	}
	if got := planOf("small.bin"); got != "" {
		t.Fatalf("small.bin: %s", got)
	}
	if got := planOf("big.bin"); got != "encryption" {
		t.Fatalf("big.bin: %s", got)
	}
	pols, _ := f.store.ListPolicies(ctx)
	for _, p := range pols {
		if err := f.store.DeletePolicy(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.svc.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.do(t, "GET", "/docs/report.pdf", nil, 200); !bytes.Equal(got, body) {
		t.Fatal("object unreadable after its policies were deleted")
	}
}

// A metric registered at run time is usable in policies at once.
func TestMetricVocabularyIsLive(t *testing.T) {
	f := newFixture(t)
	var extra []policy.MetricInfo
	f.svc.metrics = func() []policy.MetricInfo { return append(policy.DefaultMetrics(), extra...) }
	text := "FOR TENANT t1 WHEN queue_depth > 3 DO SET compression"
	if res, _ := f.svc.Validate(context.Background(), text); res.Valid {
		t.Fatal("unknown metric accepted")
	}
	extra = append(extra, policy.MetricInfo{Name: "queue_depth", Unit: policy.DefaultMetrics()[0].Unit})
	if res, err := f.svc.Validate(context.Background(), text); err != nil || !res.Valid {
		t.Fatalf("registered metric refused: %v %+v", err, res.Errors)
	}
}

// A policy whose filter could not be built (gzip has no level 0) is
// refused when it is added, at the parameter, and nothing is stored; the
// tenant's PUTs keep working. It used to be stored as active and to fail
// every PUT of the tenant with 500.
func TestApplyRefusesUnbuildableFilterAtItsParameter(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const text = "FOR TENANT t1 DO SET compression WITH engine=gzip, level=0"
	stored, res, err := f.svc.Apply(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid || len(res.Errors) != 1 || len(stored) != 0 {
		t.Fatalf("stored %v, result %+v", stored, res)
	}
	if d := res.Errors[0]; d.Line != 1 || d.Column != strings.Index(text, "level=")+1 || d.Message != "level 0: gzip takes 1-9" {
		t.Fatalf("diagnostic %+v", d)
	}
	if list, err := f.store.ListPolicies(ctx); err != nil || len(list) != 0 {
		t.Fatalf("policies stored: %v %v", list, err)
	}
	f.do(t, "PUT", "/docs/after", []byte("still written"), 200)
	if got := f.do(t, "GET", "/docs/after", nil, 200); string(got) != "still written" {
		t.Fatalf("GET: %q", got)
	}
}

// Reverse plans are undone by decoders provisioned when the registry
// loaded, not built per GET; filters that are not reversible have none.
func TestDecodersAreReady(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"compression", "encryption", "noop"} {
		in, dec, ok := f.svc.Decoder(name)
		if !ok || in.Name != name || dec == nil {
			t.Errorf("%s: no ready decoder (%v, %v)", name, in, ok)
		}
		if in2, dec2, _ := f.svc.Decoder(name); in2 != in || dec2 != dec {
			t.Errorf("%s: a new decoder per call", name)
		}
	}
	for _, name := range []string{"caching", "tagging", "nosuch"} {
		if _, _, ok := f.svc.Decoder(name); ok {
			t.Errorf("%s: has a decoder", name)
		}
	}
}
