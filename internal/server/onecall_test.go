package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/internal/storage/s3/s3test"
)

// backendLog is a reverse proxy in front of the remote store that records
// every request Facet sends it.
type backendLog struct {
	mu   sync.Mutex
	reqs []string // "METHOD /path"
}

func (l *backendLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.reqs
	l.reqs = nil
	return out
}

// startCountingBackend returns the --backend URL of a proxy in front of
// remote, and the log of what went through it.
func startCountingBackend(t *testing.T, remote s3test.Server, prefix string) (string, *backendLog) {
	t.Helper()
	target, _ := url.Parse("http://" + remote.Addr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	l := &backendLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.reqs = append(l.reqs, r.Method+" "+r.URL.Path)
		l.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u := remote.URL(prefix)
	return strings.Replace(u, remote.Addr, strings.TrimPrefix(srv.URL, "http://"), 1), l
}

// TestRemoteGetIsOneBackendCall: through a gateway over a remote store, a
// GET is answered from ONE backend request (GetObject: metadata and body
// of the same version), compressed or not, and a PUT of a small object is
// one request too (no HEAD of the object it replaces).
func TestRemoteGetIsOneBackendCall(t *testing.T) {
	remote := s3test.Start(t)
	backendURL, log := startCountingBackend(t, remote, "one")
	client, _, admin := startWith(t, func(o *Options) { o.BackendURL = backendURL })
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bucket1")}); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("one read "), 500)
	put := func(key string) {
		t.Helper()
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket1"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	get := func(key string) {
		t.Helper()
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket1"), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("get %s: %v", key, err)
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("get %s: %d bytes, %v", key, len(got), err)
		}
	}
	onKey := func(reqs []string, key string) []string {
		var out []string
		for _, r := range reqs {
			if strings.HasSuffix(r, "/one/bucket1/"+key) {
				out = append(out, r)
			}
		}
		return out
	}

	put("plain")
	put("plain") // an overwrite
	// Each PUT is one HEAD, which tells the quotas' usage what the write
	// replaces (internal/quota), then one PUT.
	head, write := "HEAD /"+remote.Bucket+"/one/bucket1/plain", "PUT /"+remote.Bucket+"/one/bucket1/plain"
	if reqs := onKey(log.take(), "plain"); !slices.Equal(reqs, []string{head, write, head, write}) {
		t.Errorf("two small PUTs sent %v to the backend for the key, want a HEAD and one PUT each", reqs)
	}
	get("plain")
	if reqs := log.take(); len(reqs) != 1 || !strings.HasPrefix(reqs[0], "GET ") {
		t.Errorf("a GET sent %v to the backend, want one GET", reqs)
	}

	// A compressed object: the decoder reads the stream the GET opened.
	addPolicy(t, admin, "FOR TENANT tenant1 DO SET compression")
	put("packed")
	raw, err := remote.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(remote.Bucket), Key: aws.String("one/bucket1/packed")})
	if err != nil || aws.ToInt64(raw.ContentLength) >= int64(len(body)) {
		t.Fatalf("object not compressed in the backend: %v", err)
	}
	log.take()
	get("packed")
	if reqs := log.take(); len(reqs) != 1 || !strings.HasPrefix(reqs[0], "GET ") {
		t.Errorf("a GET of a compressed object sent %v to the backend, want one GET", reqs)
	}
}
