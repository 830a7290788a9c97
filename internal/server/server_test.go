package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// startForTest runs a whole single-node Facet in-process on loopback ports
// and returns an SDK client for a fresh tenant.
func startForTest(t *testing.T) (*s3.Client, string) {
	t.Helper()
	return startWithBackend(t, "")
}

// startWithBackend is startForTest with objects in the remote store named
// by backendURL (empty: the embedded filesystem).
func startWithBackend(t *testing.T, backendURL string) (*s3.Client, string) {
	t.Helper()
	c, s3Addr, _ := startWith(t, func(o *Options) { o.BackendURL = backendURL })
	return c, s3Addr
}

// startWith is startForTest with options changed by opts; it also returns
// the admin address (token testTok).
func startWith(t *testing.T, opts func(*Options)) (*s3.Client, string, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	o := Options{
		DataDir: t.TempDir(), S3Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminToken: testTok,
		// Above net/http's 5 s grace for connections that never sent a
		// request (a client dials one more than it ends up using).
		ShutdownTimeout: 15 * time.Second, Domains: []string{"localhost"},
		Ready: func(s3, admin string) { ready <- [2]string{s3, admin} },
	}
	opts(&o)
	go func() { done <- Run(ctx, o, slog.New(slog.DiscardHandler)) }()
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
	req, _ := http.NewRequest(http.MethodPost, "http://"+addrs[1]+"/api/v1/tenants", strings.NewReader(`{"name":"tenant1"}`))
	req.Header.Set("Authorization", "Bearer "+testTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var k struct{ AccessKey, SecretKey string }
	var raw map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create tenant: %d %v %v", resp.StatusCode, raw, err)
	}
	if false {
		t.Fatal(err)
	}
	k.AccessKey, k.SecretKey = raw["access_key"], raw["secret_key"]
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String("http://" + addrs[0]), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(k.AccessKey, k.SecretKey, ""),
	})
	return client, addrs[0], addrs[1]
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestServeRoundTrip(t *testing.T) {
	client, _ := startForTest(t)
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bucket1")}); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("facet"), 1000)
	for _, key := range []string{"plain", "a//b", "../x", "dir/€ sp+ace%"} {
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket1"), Key: aws.String(key), Body: bytes.NewReader(body),
			Metadata: map[string]string{"color": "blue"}, ContentType: aws.String("text/plain")}); err != nil {
			t.Fatalf("put %q: %v", key, err)
		}
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket1"), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("get %q: %v", key, err)
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(got, body) || out.Metadata["color"] != "blue" || aws.ToString(out.ContentType) != "text/plain" {
			t.Fatalf("get %q: %d bytes, meta %v, ct %v", key, len(got), out.Metadata, aws.ToString(out.ContentType))
		}
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket1"), Key: aws.String("plain"), Range: aws.String("bytes=-7")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(got) != "tfacet"[0:0]+string(body[len(body)-7:]) || aws.ToString(out.ContentRange) != "bytes 4993-4999/5000" {
		t.Fatalf("range: %q %s", got, aws.ToString(out.ContentRange))
	}
	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bucket1"), Delimiter: aws.String("/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Contents) != 1 || len(list.CommonPrefixes) != 3 {
		t.Fatalf("list: %d objects, %d prefixes", len(list.Contents), len(list.CommonPrefixes))
	}
	_, err = client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket1"), Key: aws.String("missing")})
	if apiCode(err) != "NoSuchKey" {
		t.Fatalf("missing: %v", err)
	}
	_, err = client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("bucket1")})
	if apiCode(err) != "BucketNotEmpty" {
		t.Fatalf("delete non-empty: %v", err)
	}
}

// Bearer tokens of the tests: at least MinTokenLen bytes.
const (
	testTok    = "tok-0123456789abcdef0123456789abcdef"
	testCtok   = "ctok-0123456789abcdef0123456789abcdef"
	testScrape = "scrape-0123456789abcdef0123456789abcdef"
)

// An admin or metrics token shorter than MinTokenLen, given or stored, is
// refused at start with a message naming it; nothing is opened.
func TestShortTokenRefused(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		opts       Options
		stored     string
	}{
		{"admin", "--admin-token is 5 bytes; it must be at least 32", Options{AdminToken: "short"}, ""},
		{"metrics", "--metrics-token is 6 bytes; it must be at least 32", Options{AdminToken: testTok, MetricsToken: "scrape"}, ""},
		{"stored", "admin.token holds a token of 3 bytes", Options{}, "abc\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.DataDir, tc.opts.S3Addr, tc.opts.AdminAddr = t.TempDir(), "127.0.0.1:0", "127.0.0.1:0"
			if tc.stored != "" {
				if err := os.WriteFile(filepath.Join(tc.opts.DataDir, "admin.token"), []byte(tc.stored), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			srv, err := New(t.Context(), tc.opts)
			if err == nil {
				_ = srv.Shutdown(t.Context())
				t.Fatal("a short token was accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q; want it to say %q", err, tc.want)
			}
		})
	}
}
