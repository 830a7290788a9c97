package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// slowBody delivers size bytes of b in small pieces with a pause between
// them, so that a PUT of it is still in flight when the server is told to
// stop; started is closed at its first read.
type slowBody struct {
	b       byte
	left    int
	started chan struct{}
	once    sync.Once
}

func (s *slowBody) Read(p []byte) (int, error) {
	s.once.Do(func() { close(s.started) })
	if s.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), s.left, 32<<10)
	for i := range p[:n] {
		p[i] = s.b
	}
	s.left -= n
	time.Sleep(4 * time.Millisecond)
	return n, nil
}

// startServer builds and starts a serve-role Server over dir, and returns
// it with an SDK client for a fresh tenant, or for creds when given.
func startServer(t *testing.T, dir string, hook func(GoroutineCounts), creds aws.CredentialsProvider) (*Server, *s3.Client, string) {
	t.Helper()
	addrs := make(chan [2]string, 1)
	srv, err := New(t.Context(), Options{DataDir: dir, S3Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminToken: testTok,
		Domains: []string{"localhost"}, Block: BlockOptions{Addr: "127.0.0.1:0"},
		QoS:    QoSOptions{MultipartExpiry: time.Hour, MultipartSweep: time.Minute},
		Logger: slog.New(slog.DiscardHandler), Ready: func(s3, admin string) { addrs <- [2]string{s3, admin} }, OnStoresClosing: hook})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	a := <-addrs
	if creds != nil {
		return srv, s3.New(s3.Options{BaseEndpoint: aws.String("http://" + a[0]), Region: "us-east-1", UsePathStyle: true, Credentials: creds}), a[0]
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+a[1]+"/v1/tenants", strings.NewReader(fmt.Sprintf(`{"name":"t%d"}`, time.Now().UnixNano()%1e6)))
	req.Header.Set("Authorization", "Bearer "+testTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var key map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&key); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create tenant: %d %v", resp.StatusCode, err)
	}
	client := s3.New(s3.Options{BaseEndpoint: aws.String("http://" + a[0]), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key["access_key"], key["secret_key"], "")})
	return srv, client, a[0]
}

// Shutdown with PUTs in flight: every PUT that started before the stop
// completes (200, and reads back whole after a restart), none is cut
// mid-body, and every goroutine the server started has exited when the
// stores close.
func TestShutdownDrainsThenClosesStores(t *testing.T) {
	dir := t.TempDir()
	var (
		mu      sync.Mutex
		atClose *GoroutineCounts
	)
	srv, client, _ := startServer(t, dir, func(c GoroutineCounts) {
		mu.Lock()
		atClose = &c
		mu.Unlock()
	}, nil)
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("drain")}); err != nil {
		t.Fatal(err)
	}
	if c := srv.Goroutines(); c.Started == 0 || c.Exited != 0 {
		t.Fatalf("running server: %+v", c)
	}

	const n, size = 6, 4 << 20
	type result struct {
		key    string
		status int
		err    error
	}
	results := make(chan result, n)
	var started []chan struct{}
	for i := range n {
		key := fmt.Sprintf("obj-%d", i)
		ps, err := s3.NewPresignClient(client).PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("drain"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		body := &slowBody{b: byte('a' + i), left: size, started: make(chan struct{})}
		started = append(started, body.started)
		req, _ := http.NewRequest(ps.Method, ps.URL, body)
		req.ContentLength = size
		for k, v := range ps.SignedHeader {
			if !strings.EqualFold(k, "host") {
				req.Header[k] = v
			}
		}
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				results <- result{key: key, err: err}
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results <- result{key: key, status: resp.StatusCode}
		}()
	}
	for _, s := range started {
		<-s
	}
	// The server has accepted them and is reading their bodies (a
	// connection still in the listener's backlog when it closes is
	// refused before any byte is taken).
	time.Sleep(300 * time.Millisecond)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	mu.Lock()
	c := atClose
	mu.Unlock()
	if c == nil {
		t.Fatal("the stores were closed without the hook seeing the goroutines")
	}
	if c.Started == 0 || c.Started != c.Exited || len(c.Running) != 0 {
		t.Fatalf("goroutines when the stores closed: %+v", *c)
	}
	t.Logf("goroutines started=%d exited=%d", c.Started, c.Exited)

	var done, refused []string
	for range n {
		r := <-results
		switch {
		case r.err == nil && r.status == http.StatusOK:
			done = append(done, r.key)
		case r.err != nil:
			refused = append(refused, r.key) // must have left nothing
		default:
			t.Errorf("PUT %s in flight at shutdown: status %d; want 200", r.key, r.status)
		}
	}
	t.Logf("PUTs in flight at shutdown: %d completed, %d refused before the server read them", len(done), len(refused))
	if len(done) == 0 {
		t.Fatalf("no PUT in flight at shutdown completed (refused: %v)", refused)
	}

	// Read back through a new server over the same data.
	srv2, client2, _ := startServer(t, dir, nil, client.Options().Credentials)
	defer srv2.Shutdown(context.Background())
	for _, key := range done {
		out, err := client2.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("drain"), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("get %s after restart: %v", key, err)
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		want := bytes.Repeat([]byte{key[len(key)-1] - '0' + 'a'}, size)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("get %s after restart: %d bytes, %v; want %d", key, len(got), err, size)
		}
	}
	for _, key := range refused {
		if _, err := client2.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("drain"), Key: aws.String(key)}); apiCode(err) != "NotFound" {
			t.Errorf("PUT %s was refused, yet: %v", key, err)
		}
	}
}

// A server that was built but never started shuts down cleanly, closing
// what New opened; a second Shutdown is harmless.
func TestShutdownWithoutStart(t *testing.T) {
	srv, err := New(t.Context(), Options{DataDir: t.TempDir(), S3Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", AdminToken: testTok,
		Block: BlockOptions{Addr: "127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c := srv.Goroutines(); c.Started != 0 {
		t.Fatalf("goroutines started without Start: %+v", c)
	}
}

// A listener that cannot be bound fails Start; Shutdown then stops the
// goroutines Start ran and closes the stores.
func TestStartFailsOnABusyPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	var atClose *GoroutineCounts
	srv, err := New(t.Context(), Options{DataDir: t.TempDir(), S3Addr: "127.0.0.1:0", AdminAddr: busy.Addr().String(), AdminToken: testTok,
		OnStoresClosing: func(c GoroutineCounts) { atClose = &c }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err == nil || !strings.Contains(err.Error(), "listen admin") {
		t.Fatalf("Start on a busy admin port: %v", err)
	}
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if atClose == nil || atClose.Started == 0 || atClose.Started != atClose.Exited {
		t.Fatalf("goroutines when the stores closed: %+v", atClose)
	}
}

// A PUT that does not finish within the shutdown's time is cut (its
// connection closed), and its handler has returned before the stores
// close.
func TestShutdownTimeoutCutsRequestsBeforeStoresClose(t *testing.T) {
	var atClose *GoroutineCounts
	srv, client, _ := startServer(t, t.TempDir(), func(c GoroutineCounts) { atClose = &c }, nil)
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("stuck")}); err != nil {
		t.Fatal(err)
	}
	ps, err := s3.NewPresignClient(client).PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("stuck"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest(ps.Method, ps.URL, pr)
	req.ContentLength = 1 << 20
	for k, v := range ps.SignedHeader {
		if !strings.EqualFold(k, "host") {
			req.Header[k] = v
		}
	}
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	if _, err := pw.Write(make([]byte, 64<<10)); err != nil { // then nothing more
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = srv.Shutdown(sctx)
	if err == nil || !strings.Contains(err.Error(), "requests cut") {
		t.Fatalf("shutdown with a stuck PUT: %v; want the request cut", err)
	}
	if atClose == nil || atClose.Started != atClose.Exited {
		t.Fatalf("stores closed with goroutines running: %+v", atClose)
	}
	pw.CloseWithError(io.ErrUnexpectedEOF)
	if err := <-errc; err == nil {
		t.Fatal("the cut PUT got an answer")
	}
}
