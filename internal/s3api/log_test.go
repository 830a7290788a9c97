package s3api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/ownership"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage/fs"
)

// oneTenant authenticates every request as tenant "t".
type oneTenant struct{}

type rawBody struct{ io.Reader }

func (rawBody) DecodedLength() int64 { return -1 }
func (rawBody) Trailer() http.Header { return http.Header{} }

func (oneTenant) Authenticate(r *http.Request) (string, string, RequestBody, error) {
	return "t", "AKT", rawBody{r.Body}, nil
}

type mapBuckets struct {
	mu sync.Mutex
	m  map[string]string
}

func (b *mapBuckets) ClaimBucket(_ context.Context, tenant, bucket string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m[bucket] != "" {
		return s3err.ErrBucketOwnedByYou
	}
	b.m[bucket] = tenant
	return nil
}

func (b *mapBuckets) ReleaseBucket(_ context.Context, _, bucket string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, bucket)
	return nil
}

func (b *mapBuckets) BucketOwner(_ context.Context, bucket string) (string, time.Time, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.m[bucket]; t != "" {
		return t, time.Time{}, nil
	}
	return "", time.Time{}, s3err.ErrNoSuchBucket
}

func (b *mapBuckets) ListBuckets(context.Context, string) ([]ownership.Bucket, error) {
	return nil, nil
}

// An error's log line names the S3 operation and is at the level of its
// class: a 501 (a client asking for an operation Facet lacks) at INFO
// with the operation in op and message, a HEAD of a missing key (a probe
// rclone makes per file) at DEBUG, never at ERROR; no "err":null.
func TestErrorLogLines(t *testing.T) {
	st, err := fs.Open(t.Context(), t.TempDir(), fs.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := New(Config{Backend: st, Buckets: &mapBuckets{m: map[string]string{}}, Auth: oneTenant{}, Logger: log})
	do := func(method, path string, status int) map[string]any {
		t.Helper()
		buf.Reset()
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		if rec.Code != status {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		for _, line := range bytes.Split(buf.Bytes(), []byte("\n")) {
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && m["msg"] == "s3 error" {
				if _, ok := m["err"]; ok && m["err"] == nil {
					t.Errorf("%s %s: err:null in %s", method, path, line)
				}
				return m
			}
		}
		if status >= 300 {
			t.Fatalf("%s %s: no error line in %s", method, path, buf.String())
		}
		return nil
	}
	do(http.MethodPut, "/bkt", 200)
	m := do(http.MethodPut, "/bkt?website", 501)
	if m["level"] != "INFO" || m["op"] != "PutBucketWebsite" || m["code"] != "NotImplemented" || m["message"] != "PutBucketWebsite is not implemented" {
		t.Errorf("501: %v", m)
	}
	m = do(http.MethodHead, "/bkt/missing", 404)
	if m["level"] != "DEBUG" || m["op"] != "HeadObject" || m["code"] != "NoSuchKey" {
		t.Errorf("HEAD 404: %v", m)
	}
	m = do(http.MethodGet, "/bkt/missing", 404)
	if m["level"] != "INFO" || m["op"] != "GetObject" {
		t.Errorf("GET 404: %v", m)
	}
}

// A client that stops reading a GET mid-body is logged at INFO, not as a
// stream failure at ERROR, and is not counted as a server error.
func TestClientGoneMidGetIsNoError(t *testing.T) {
	st, err := fs.Open(t.Context(), t.TempDir(), fs.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	done := make(chan *obs.Observation, 16)
	s := New(Config{Backend: st, Buckets: &mapBuckets{m: map[string]string{}}, Auth: oneTenant{}, Logger: log,
		Observer: doneObserver(done)})
	for _, p := range []string{"/bkt", "/bkt/big"} {
		body := []byte(nil)
		if p == "/bkt/big" {
			body = bytes.Repeat([]byte("x"), 64<<20)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, p, bytes.NewReader(body)))
		if rec.Code != http.StatusOK {
			t.Fatalf("PUT %s: %d %s", p, rec.Code, rec.Body)
		}
		<-done
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /bkt/big HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := io.ReadFull(conn, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).SetLinger(0) // a reset, as a cancelled download
	conn.Close()
	select {
	case o := <-done:
		if obs.ClassOf(o.Status, o.ErrCode) != obs.ClassOK {
			t.Errorf("the abandoned GET counts as %s (%d %q)", obs.ClassOf(o.Status, o.ErrCode), o.Status, o.ErrCode)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the GET never ended")
	}
	logs := buf.String()
	if strings.Contains(logs, `"level":"ERROR"`) || !strings.Contains(logs, "client went away mid-response") {
		t.Fatalf("%s", logs)
	}
}

type doneObserver chan *obs.Observation

func (doneObserver) Started(*obs.Observation)                       {}
func (doneObserver) Body(_ *obs.Observation, r io.Reader) io.Reader { return r }
func (d doneObserver) Done(o *obs.Observation)                      { c := *o; d <- &c }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
