package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// facet serve exposes Prometheus metrics on the admin listener, to the
// metrics token, counting signed S3 requests by tenant.
func TestServeMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			DataDir: t.TempDir(), S3Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminToken: testTok,
			MetricsToken: testScrape,
			// Above net/http's 5 s grace for connections that never
			// sent a request.
			ShutdownTimeout: 15 * time.Second,
			Ready:           func(s3, admin string) { ready <- [2]string{s3, admin} },
		}, slog.New(slog.DiscardHandler))
	}()
	var addrs [2]string
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatalf("server did not start: %v", err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	admin := func(method, path, bearer, body string) (int, []byte) {
		req, _ := http.NewRequest(method, "http://"+addrs[1]+path, strings.NewReader(body))
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, body := admin(http.MethodPost, "/v1/tenants", testTok, `{"name":"acme"}`)
	var key map[string]string
	if err := json.Unmarshal(body, &key); err != nil || code != http.StatusCreated {
		t.Fatalf("create tenant: %d %s", code, body)
	}
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String("http://" + addrs[0]), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key["access_key"], key["secret_key"], ""),
	})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("metered")}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("metered"), Key: aws.String("k"),
		Body: bytes.NewReader(make([]byte, 4096))}); err != nil {
		t.Fatal(err)
	}

	if code, _ := admin(http.MethodGet, "/metrics", "", ""); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token: %d", code)
	}
	if code, _ := admin(http.MethodGet, "/v1/tenants", testScrape, ""); code != http.StatusUnauthorized {
		t.Fatalf("the metrics token opened the admin API: %d", code)
	}
	code, text := admin(http.MethodGet, "/metrics", testScrape, "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, text)
	}
	for _, line := range []string{
		`facet_s3_requests_total{class="ok",code="OK",op="PutObject",tenant="acme"} 1`,
		`facet_s3_request_bytes_total{direction="in",tenant="acme"} 4096`,
		`facet_throttled_seconds_total{tenant="acme"} 0`,
		`facet_active_requests 0`,
		"facet_policy_table_version ",
	} {
		if !bytes.Contains(text, []byte("\n"+line)) {
			t.Errorf("exposition lacks %q", line)
		}
	}
}
