package s3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/facet-sds/facet/internal/storage"
)

// TestRawErrors: the small calls' error answers map to the storage
// sentinels as the SDK's do, and only failures worth another attempt
// are retried.
func TestRawErrors(t *testing.T) {
	var calls atomic.Int64
	status, doc := 0, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") || r.URL.EscapedPath() != "/bkt/a%20b/c" {
			t.Errorf("request %s %s, auth %q", r.Method, r.URL.EscapedPath(), r.Header.Get("Authorization"))
		}
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			io.WriteString(w, doc)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	c := newRawClient(srv.Client(), u, "bkt", "ak", "sk", "us-east-1", false)
	ctx := context.Background()
	for _, tt := range []struct {
		method string
		status int
		doc    string
		want   error
		tries  int64
	}{
		{http.MethodHead, 404, "", storage.ErrObjectNotFound, 1},
		{http.MethodGet, 404, "<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>", storage.ErrObjectNotFound, 1},
		{http.MethodGet, 416, "<Error><Code>InvalidRange</Code></Error>", storage.ErrInvalidRange, 1},
		{http.MethodGet, 503, "<Error><Code>SlowDown</Code></Error>", storage.ErrUnavailable, 3},
		{http.MethodPut, 500, "not xml", storage.ErrUnavailable, 3},
		{http.MethodGet, 403, "<Error><Code>AccessDenied</Code></Error>", nil, 1},
	} {
		status, doc = tt.status, tt.doc
		calls.Store(0)
		var err error
		switch tt.method {
		case http.MethodHead:
			_, err = c.head(ctx, "a b/c")
		case http.MethodGet:
			_, err = c.get(ctx, "a b/c", "")
		case http.MethodPut:
			err = c.put(ctx, "a b/c", []byte("x"), nil)
		}
		err = mapErr(err)
		if err == nil || tt.want != nil && !errors.Is(err, tt.want) || calls.Load() != tt.tries {
			t.Errorf("%s %d: %v after %d tries, want %v after %d", tt.method, tt.status, err, calls.Load(), tt.want, tt.tries)
		}
	}
}

func FuzzErrorAnswer(f *testing.F) {
	f.Add(404, []byte("<Error><Code>NoSuchKey</Code><Message>m</Message></Error>"))
	f.Add(500, []byte("<Error><Code>"))
	f.Add(416, []byte(""))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := errorAnswer(status, true, bytes.NewReader(body))
		if e.Status != status || e.Code == "" && http.StatusText(status) != "" {
			t.Fatalf("errorAnswer(%d) = %+v", status, e)
		}
	})
}

// BenchmarkBackendCall: a small PutObject through the SDK's operation
// stack against the same request signed and sent with net/http (raw.go),
// to a loopback server that answers at once.
func BenchmarkBackendCall(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("ETag", `"0123"`)
	}))
	defer srv.Close()
	data := make([]byte, 4096)
	um := map[string]string{metaKey: strings.Repeat("m", 120)}
	b.Run("sdk", func(b *testing.B) {
		cli := s3.New(s3.Options{
			APIOptions: []func(*middleware.Stack) error{v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware},
			Region:     "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider("ak", "sk", ""), HTTPClient: srv.Client(),
			RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
			ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired, ContinueHeaderThresholdBytes: -1,
		})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cli.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("some/key"),
				Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))), Metadata: um}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		u, _ := url.Parse(srv.URL)
		c := newRawClient(srv.Client(), u, "bkt", "ak", "sk", "us-east-1", false)
		b.ReportAllocs()
		for b.Loop() {
			if err := c.put(context.Background(), "some/key", data, um); err != nil {
				b.Fatal(err)
			}
		}
	})
}
