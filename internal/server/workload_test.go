package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/bus"
)

// testGateway is a facet serve in this process.
type testGateway struct {
	t      *testing.T
	admin  string
	client *s3.Client
}

func startTestGateway(t *testing.T, opts Options) *testGateway {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	opts.DataDir, opts.S3Addr, opts.AdminAddr, opts.AdminToken = t.TempDir(), "127.0.0.1:0", "127.0.0.1:0", testTok
	opts.ShutdownTimeout = 5 * time.Second
	opts.Ready = func(s3, admin string) { ready <- [2]string{s3, admin} }
	go func() { done <- Run(ctx, opts, slog.New(slog.DiscardHandler)) }()
	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("server did not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	g := &testGateway{t: t, admin: "http://" + addrs[1]}
	code, body := g.do(http.MethodPost, "/v1/tenants", `{"name":"acme"}`)
	var key map[string]string
	if err := json.Unmarshal(body, &key); err != nil || code != http.StatusCreated {
		t.Fatalf("create tenant: %d %s", code, body)
	}
	g.client = s3.New(s3.Options{
		BaseEndpoint: aws.String("http://" + addrs[0]), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key["access_key"], key["secret_key"], ""),
	})
	if _, err := g.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bkt1")}); err != nil {
		t.Fatal(err)
	}
	return g
}

func (g *testGateway) do(method, path, body string) (int, []byte) {
	g.t.Helper()
	req, _ := http.NewRequest(method, g.admin+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (g *testGateway) put(key string) {
	g.t.Helper()
	_, err := g.client.PutObject(g.t.Context(), &s3.PutObjectInput{Bucket: aws.String("bkt1"), Key: aws.String(key),
		Body: bytes.NewReader(bytes.Repeat([]byte("compressible text, "), 200))})
	if err != nil {
		g.t.Fatal(err)
	}
}

func (g *testGateway) metric(name, target string) admin.MetricValues {
	g.t.Helper()
	code, body := g.do(http.MethodGet, "/v1/metrics/"+name+"?target="+url.QueryEscape(target), "")
	var v admin.MetricValues
	if err := json.Unmarshal(body, &v); err != nil || code != http.StatusOK {
		g.t.Fatalf("metric %s: %d %s", name, code, body)
	}
	return v
}

// Two gateways on one external bus (as `facet bus` runs it): each one's
// control API shows the tenant's values merged from both nodes, and a
// dynamic policy applied on one switches on from the merged load.
func TestServeWorkloadMetricsOnSharedBus(t *testing.T) {
	srv, err := bus.StartServer(bus.ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a := startTestGateway(t, Options{BusURL: srv.URL(), Node: "gw-a", MetricsPeriod: 200 * time.Millisecond})
	b := startTestGateway(t, Options{BusURL: srv.URL(), Node: "gw-b", MetricsPeriod: 200 * time.Millisecond})

	code, body := a.do(http.MethodGet, "/v1/metrics", "")
	var list admin.MetricList
	if err := json.Unmarshal(body, &list); err != nil || code != http.StatusOK || len(list.Metrics) < 10 {
		t.Fatalf("metric list: %d %s", code, body)
	}
	code, body = a.do(http.MethodPost, "/v1/policies", "FOR TENANT acme WHEN put_ops > 3 DO SET compression")
	var applied admin.PolicyApplied
	if err := json.Unmarshal(body, &applied); err != nil || code/100 != 2 || len(applied.Policies) != 1 {
		t.Fatalf("apply policy: %d %s", code, body)
	}
	id := applied.Policies[0].ID

	// Keep both gateways busy until gateway A reports a period merged from
	// both nodes and the policy is active (bounded against hangs only).
	deadline := time.Now().Add(2 * time.Minute)
	var merged admin.MetricValues
	var state string
	for i := 0; merged.Nodes < 2 || merged.Values[0].Value == 0 || state != "active"; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("after %d PUTs per gateway: put_ops %+v, policy %s", i, merged, state)
		}
		a.put(fmt.Sprintf("a%d", i))
		b.put(fmt.Sprintf("b%d", i))
		if i%10 == 0 {
			merged = a.metric("put_ops", "tenant:acme")
			_, body := a.do(http.MethodGet, "/v1/policies/"+id, "")
			var p admin.Policy
			_ = json.Unmarshal(body, &p)
			state = p.State
		}
	}
	if merged.Values[0].Target != "tenant:acme" || merged.Period == nil || merged.PeriodSeconds != 0.2 {
		t.Fatalf("merged value: %+v", merged)
	}
	// Sampled: a period may have no sample (0), but text this repetitive
	// compresses far better than 2x when it has one.
	if v := a.metric("compressibility", "bucket:acme/bkt1"); v.Values[0].Value != 0 && v.Values[0].Value < 2 {
		t.Fatalf("compressibility of repeated text: %+v", v)
	}
	// Another tenant's target is 0, not absent, and not acme's.
	if v := a.metric("put_ops", "tenant:nobody"); len(v.Values) != 1 || v.Values[0].Value != 0 {
		t.Fatalf("idle tenant: %+v", v)
	}
	if code, _ := a.do(http.MethodGet, "/v1/metrics/nope", ""); code != http.StatusNotFound {
		t.Fatalf("unknown metric: %d", code)
	}
}

// With --no-workload-metrics, requests are not measured, and the control
// API still answers.
func TestServeWithoutWorkloadMetrics(t *testing.T) {
	g := startTestGateway(t, Options{NoWorkloadMetrics: true, BusListen: "127.0.0.1:0"})
	g.put("k")
	if v := g.metric("put_ops", "tenant:acme"); v.Nodes != 0 || v.Period != nil || v.Values[0].Value != 0 {
		t.Fatalf("metrics off: %+v", v)
	}
}
