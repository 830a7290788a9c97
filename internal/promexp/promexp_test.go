package promexp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/buildinfo"
	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/builtin"
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/ownership"
	"github.com/facet-sds/facet/internal/s3api"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage/fs"
)

const adminToken = "admin-token-for-tests"

// headerAuth names the tenant in X-Test-Tenant; a request without it is
// refused as an unsigned one would be.
type headerAuth struct{}

type plainBody struct {
	io.Reader
	n int64
}

func (b plainBody) DecodedLength() int64 { return b.n }
func (b plainBody) Trailer() http.Header { return http.Header{} }

func (headerAuth) Authenticate(r *http.Request) (string, string, s3api.RequestBody, error) {
	tenant := r.Header.Get("X-Test-Tenant")
	if tenant == "" {
		return "", "", nil, s3err.New(s3err.AccessDenied)
	}
	return tenant, "AK" + tenant, plainBody{Reader: r.Body, n: r.ContentLength}, nil
}

// memBuckets is the ownership table.
type memBuckets struct {
	mu    sync.Mutex
	owner map[string]string
}

func (m *memBuckets) ClaimBucket(_ context.Context, tenant, bucket string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch m.owner[bucket] {
	case "":
		m.owner[bucket] = tenant
		return nil
	case tenant:
		return s3err.ErrBucketOwnedByYou
	}
	return s3err.ErrBucketOwnedByOther
}

func (m *memBuckets) ReleaseBucket(_ context.Context, _, bucket string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.owner, bucket)
	return nil
}

func (m *memBuckets) BucketOwner(_ context.Context, bucket string) (string, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.owner[bucket]; t != "" {
		return t, time.Unix(0, 0), nil
	}
	return "", time.Time{}, s3err.ErrNoSuchBucket
}

func (m *memBuckets) ListBuckets(context.Context, string) ([]ownership.Bucket, error) {
	return nil, nil
}

// zipBucket compresses what is written to bucket "zipped".
type zipBucket struct{ reg *filter.Registry }

func (z zipBucket) ForPut(req *filter.Request) dataplane.Pipeline {
	if req.Bucket != "zipped" {
		return dataplane.Pipeline{}
	}
	in, _ := z.reg.Lookup("compression")
	f, err := in.New(nil, filter.Env{})
	if err != nil {
		panic(err)
	}
	return dataplane.Pipeline{Steps: []dataplane.Step{{Stage: filter.StageGateway, Filter: f, Policy: "test"}}}
}

type version uint64

func (v version) Version() uint64 { return uint64(v) }

// gateway is an S3 front end and an admin listener sharing one Exporter.
type gateway struct {
	exp   *Exporter
	s3    http.Handler
	admin http.Handler
	store *fs.Store
}

func newGateway(t *testing.T, cfg Config, extra obs.Observer) *gateway {
	t.Helper()
	st, err := fs.Open(t.Context(), t.TempDir(), fs.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	exp := New(cfg)
	reg := builtin.NewRegistry()
	s3 := s3api.New(s3api.Config{
		Backend: st, Buckets: &memBuckets{owner: map[string]string{}}, Auth: headerAuth{},
		Data: dataplane.New(dataplane.Config{Backend: st,
			Pipelines: dataplane.Timed(zipBucket{reg}, exp),
			Decoders:  dataplane.Decoders{Registry: reg, Observer: exp}}),
		Observer: Multi(exp, extra),
	})
	return &gateway{exp: exp, s3: s3, store: st,
		admin: admin.New(admin.Config{Token: adminToken, Metrics: exp.Handler()})}
}

// do runs one S3 request and returns the response's status and body.
func (g *gateway) do(t *testing.T, tenant, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if tenant != "" {
		req.Header.Set("X-Test-Tenant", tenant)
	}
	rec := httptest.NewRecorder()
	g.s3.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// scrape reads /metrics through the admin handler.
func (g *gateway) scrape(t *testing.T) []byte {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	rec := httptest.NewRecorder()
	g.admin.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

type families map[string]*dto.MetricFamily

func parse(t *testing.T, text []byte) families {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("parse exposition: %v\n%s", err, text)
	}
	return fams
}

// value returns the value of the series of family name with exactly the
// given labels ("k=v" pairs), and whether it exists.
func (f families) value(name string, labels ...string) (float64, bool) {
	fam := f[name]
	if fam == nil {
		return 0, false
	}
	want := map[string]string{}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		want[k] = v
	}
outer:
	for _, m := range fam.Metric {
		if len(m.Label) != len(want) {
			continue
		}
		for _, lp := range m.Label {
			if v, ok := want[lp.GetName()]; !ok || v != lp.GetValue() {
				continue outer
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func (f families) want(t *testing.T, v float64, name string, labels ...string) {
	t.Helper()
	got, ok := f.value(name, labels...)
	if !ok {
		t.Errorf("%s%v: no such series", name, labels)
	} else if got != v {
		t.Errorf("%s%v = %v, want %v", name, labels, got, v)
	}
}

func (f families) absent(t *testing.T, name string, labels ...string) {
	t.Helper()
	if got, ok := f.value(name, labels...); ok {
		t.Errorf("%s%v = %v, want no series", name, labels, got)
	}
}

// gate is an observer that lets the test see a request in progress.
type gate struct {
	started chan struct{}
}

func (g *gate) Started(*obs.Observation) {
	select {
	case g.started <- struct{}{}:
	default:
	}
}
func (g *gate) Body(_ *obs.Observation, r io.Reader) io.Reader { return r }
func (g *gate) Done(*obs.Observation)                          {}

func TestScrapeAfterRequests(t *testing.T) {
	obs := &gate{started: make(chan struct{}, 1)}
	g := newGateway(t, Config{Policies: version(7)}, obs)

	if code, body := g.do(t, "t1", http.MethodPut, "/bkt1", nil); code != 200 {
		t.Fatalf("create bucket: %d %s", code, body)
	}
	<-obs.started
	// A PUT whose body is still coming is an active request.
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		req := httptest.NewRequest(http.MethodPut, "/bkt1/slow", pr)
		req.Header.Set("X-Test-Tenant", "t1")
		req.ContentLength = 3
		rec := httptest.NewRecorder()
		g.s3.ServeHTTP(rec, req)
		done <- rec.Code
	}()
	<-obs.started
	parse(t, g.scrape(t)).want(t, 1, "facet_active_requests")
	pw.Write([]byte("abc"))
	pw.Close()
	if code := <-done; code != 200 {
		t.Fatalf("slow PUT: %d", code)
	}

	var outT1 int
	put := bytes.Repeat([]byte("x"), 4096)
	for _, r := range []struct {
		tenant, method, path string
		body                 []byte
		status               int
	}{
		{"t1", http.MethodPut, "/bkt1/k", put, 200},
		{"t1", http.MethodGet, "/bkt1/k", nil, 200},
		{"t1", http.MethodGet, "/bkt1/missing", nil, 404},
		{"", http.MethodGet, "/bkt1/k", nil, 403},
		{"t2", http.MethodPut, "/zipped", nil, 200},
		{"t2", http.MethodPut, "/zipped/z", bytes.Repeat([]byte("compressible "), 10_000), 200},
		{"t2", http.MethodGet, "/zipped/z", nil, 200},
	} {
		code, body := g.do(t, r.tenant, r.method, r.path, r.body)
		if code != r.status {
			t.Fatalf("%s %s: %d %s", r.method, r.path, code, body)
		}
		if r.tenant == "t1" {
			outT1 += len(body)
		}
	}
	g.exp.Throttled("t1", 1500*time.Millisecond)
	g.exp.ControllerStarted("c1")
	g.exp.ControllerRestarted("c2")
	g.exp.ControllerRestarted("c2")

	f := parse(t, g.scrape(t))
	f.want(t, 0, "facet_active_requests") // the refused GET did not count down
	f.want(t, 1, "facet_s3_requests_total", "op=CreateBucket", "tenant=t1", "code=OK", "class=ok")
	f.want(t, 2, "facet_s3_requests_total", "op=PutObject", "tenant=t1", "code=OK", "class=ok")
	f.want(t, 1, "facet_s3_requests_total", "op=GetObject", "tenant=t1", "code=OK", "class=ok")
	f.want(t, 1, "facet_s3_requests_total", "op=GetObject", "tenant=t1", "code=NoSuchKey", "class=client_error")
	f.want(t, 1, "facet_s3_requests_total", "op=GetObject", "tenant=-", "code=AccessDenied", "class=client_error")
	f.want(t, 1, "facet_s3_requests_total", "op=PutObject", "tenant=t2", "code=OK", "class=ok")
	f.want(t, 3, "facet_s3_request_duration_seconds", "op=PutObject")
	f.want(t, 4, "facet_s3_request_duration_seconds", "op=GetObject")
	f.want(t, 2, "facet_s3_request_duration_seconds", "op=CreateBucket")
	f.want(t, 3+4096, "facet_s3_request_bytes_total", "direction=in", "tenant=t1")
	f.want(t, float64(outT1), "facet_s3_request_bytes_total", "direction=out", "tenant=t1")
	f.want(t, 130_000, "facet_s3_request_bytes_total", "direction=in", "tenant=t2")
	f.want(t, 130_000, "facet_s3_request_bytes_total", "direction=out", "tenant=t2")

	// The compression filter's own output: what was stored on PUT, the
	// plaintext on GET; and some time in both directions.
	info, err := g.store.HeadObject(t.Context(), "zipped", "z")
	if err != nil {
		t.Fatal(err)
	}
	if info.StoredSize >= 130_000 {
		t.Fatalf("stored %d bytes: not compressed", info.StoredSize)
	}
	f.want(t, float64(info.StoredSize), "facet_filter_bytes_total", "filter=compression", "stage=gateway", "method=PUT")
	f.want(t, 130_000, "facet_filter_bytes_total", "filter=compression", "stage=-", "method=GET")
	for _, m := range []string{"PUT", "GET"} {
		stage := map[string]string{"PUT": "gateway", "GET": "-"}[m]
		if v, ok := f.value("facet_filter_seconds_total", "filter=compression", "stage="+stage, "method="+m); !ok || v <= 0 {
			t.Errorf("compression %s seconds: %v %v", m, v, ok)
		}
	}

	f.want(t, 1.5, "facet_throttled_seconds_total", "tenant=t1")
	f.want(t, 0, "facet_throttled_seconds_total", "tenant=t2")
	f.absent(t, "facet_throttled_seconds_total", "tenant=-")
	f.want(t, 0, "facet_controller_restarts_total", "controller=c1")
	f.want(t, 2, "facet_controller_restarts_total", "controller=c2")
	g.exp.ControllerRemoved("c2")
	f.want(t, 7, "facet_policy_table_version")
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "promhttp_metric_handler_requests_total"} {
		if f[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	if _, ok := parse(t, g.scrape(t)).value("facet_controller_restarts_total", "controller=c2"); ok {
		t.Error("removed controller still exposed")
	}
}

// Bucket labels appear only when asked for, and only for buckets a
// request was allowed to use.
func TestBucketLabels(t *testing.T) {
	g := newGateway(t, Config{BucketLabels: true}, nil)
	g.do(t, "t1", http.MethodPut, "/bkt1", nil)
	g.do(t, "t1", http.MethodPut, "/bkt1/k", []byte("hello"))
	g.do(t, "t1", http.MethodGet, "/made-up-name/k", nil)
	g.do(t, "", http.MethodGet, "/bkt1/k", nil)
	f := parse(t, g.scrape(t))
	f.want(t, 1, "facet_s3_requests_total", "op=PutObject", "tenant=t1", "code=OK", "class=ok", "bucket=bkt1")
	f.want(t, 1, "facet_s3_requests_total", "op=GetObject", "tenant=t1", "code=NoSuchBucket", "class=client_error", "bucket=-")
	f.want(t, 1, "facet_s3_requests_total", "op=GetObject", "tenant=-", "code=AccessDenied", "class=client_error", "bucket=-")
	f.want(t, 5, "facet_s3_request_bytes_total", "direction=in", "tenant=t1", "bucket=bkt1")
	f.want(t, 1, "facet_s3_request_duration_seconds", "op=PutObject") // no bucket label on the histogram
	if strings.Contains(string(g.scrape(t)), "made-up-name") {
		t.Error("a refused bucket name became a label")
	}

	// Off by default.
	g = newGateway(t, Config{}, nil)
	g.do(t, "t1", http.MethodPut, "/bkt1", nil)
	f = parse(t, g.scrape(t))
	f.want(t, 1, "facet_s3_requests_total", "op=CreateBucket", "tenant=t1", "code=OK", "class=ok")
}

// promtool, Prometheus' own linter, accepts the exposition.
func TestPromtoolCheckMetrics(t *testing.T) {
	bin := promtool(t)
	g := newGateway(t, Config{Policies: version(3), BucketLabels: true}, nil)
	g.do(t, "t1", http.MethodPut, "/zipped", nil)
	g.do(t, "t1", http.MethodPut, "/zipped/z", bytes.Repeat([]byte("abc"), 1000))
	g.do(t, "t1", http.MethodGet, "/zipped/z", nil)
	g.do(t, "", http.MethodGet, "/zipped/z", nil)
	g.exp.Throttled("t1", time.Second)
	g.exp.ControllerRestarted("policy-p1")
	text := g.scrape(t)
	cmd := exec.CommandContext(t.Context(), bin, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\n--- exposition ---\n%s", err, out, text)
	}
	for _, fam := range []string{"facet_s3_requests_total", "facet_filter_seconds_total", "facet_throttled_seconds_total",
		"facet_controller_restarts_total", "facet_policy_table_version", "facet_active_requests", "facet_s3_request_duration_seconds"} {
		if !bytes.Contains(text, []byte(fmt.Sprintf("# TYPE %s ", fam))) {
			t.Errorf("promtool checked an exposition without %s", fam)
		}
	}
}

// Multi drops nils, flattens, and chains Body wrappers in order.
func TestMulti(t *testing.T) {
	var calls []string
	rec := func(name string) obs.Observer { return &recorder{name: name, calls: &calls} }
	a, b := rec("a"), rec("b")
	if Multi(nil, a, nil) != a {
		t.Fatal("one observer is not returned as is")
	}
	m := Multi(Multi(a, nil), b)
	o := &obs.Observation{}
	m.Started(o)
	r := m.Body(o, strings.NewReader("x"))
	m.Done(o)
	got, _ := io.ReadAll(r)
	if strings.Join(calls, " ") != "a.started b.started a.body b.body a.done b.done" || string(got) != "x<a><b>" {
		t.Fatalf("calls %v, body %q", calls, got)
	}
}

type recorder struct {
	name  string
	calls *[]string
}

func (r *recorder) Started(*obs.Observation) { *r.calls = append(*r.calls, r.name+".started") }
func (r *recorder) Done(*obs.Observation)    { *r.calls = append(*r.calls, r.name+".done") }
func (r *recorder) Body(_ *obs.Observation, in io.Reader) io.Reader {
	*r.calls = append(*r.calls, r.name+".body")
	return io.MultiReader(in, strings.NewReader("<"+r.name+">"))
}

// Client errors and server errors are told apart, and a request for an S3
// operation Facet lacks is counted under that operation's name, as a
// client error: s3cmd info and mc stat make several on every run.
func TestErrorClasses(t *testing.T) {
	g := newGateway(t, Config{}, nil)
	for _, r := range []struct {
		method, path string
		status       int
	}{
		{http.MethodPut, "/bkt", 200},
		{http.MethodPut, "/bkt?website", 501},
		{http.MethodGet, "/bkt?policy", 501},
		{http.MethodHead, "/bkt/missing", 404},
		{http.MethodGet, "/bkt/k?tagging", 501},
	} {
		if code, body := g.do(t, "t1", r.method, r.path, nil); code != r.status {
			t.Fatalf("%s %s: %d %s", r.method, r.path, code, body)
		}
	}
	f := parse(t, g.scrape(t))
	f.want(t, 1, "facet_s3_requests_total", "op=PutBucketWebsite", "tenant=t1", "code=NotImplemented", "class=client_error")
	f.want(t, 1, "facet_s3_requests_total", "op=GetBucketPolicy", "tenant=t1", "code=NotImplemented", "class=client_error")
	f.want(t, 1, "facet_s3_requests_total", "op=GetObjectTagging", "tenant=t1", "code=NotImplemented", "class=client_error")
	f.want(t, 1, "facet_s3_requests_total", "op=HeadObject", "tenant=t1", "code=NoSuchKey", "class=client_error")
	for _, m := range f["facet_s3_requests_total"].Metric {
		for _, lp := range m.Label {
			if lp.GetName() == "op" && lp.GetValue() == "-" || lp.GetName() == "class" && lp.GetValue() == "server_error" {
				t.Errorf("series %v", m.Label)
			}
		}
	}
}

// facet_build_info names the build, at 1, as Prometheus' convention has
// it; by default the running binary's.
func TestBuildInfo(t *testing.T) {
	b := buildinfo.Info{Version: "v9.8.7", Commit: "abc123", GoVersion: "go1.99", Date: "2026-11-27T00:00:00Z"}
	g := newGateway(t, Config{Build: b}, nil)
	parse(t, g.scrape(t)).want(t, 1, "facet_build_info", "version=v9.8.7", "commit=abc123", "goversion=go1.99")
	own := buildinfo.Get()
	g = newGateway(t, Config{}, nil)
	parse(t, g.scrape(t)).want(t, 1, "facet_build_info", "version="+own.Version, "commit="+own.Commit, "goversion="+own.GoVersion)
}
