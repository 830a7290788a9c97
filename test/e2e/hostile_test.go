package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Attacks from a tenant's (or a stranger's) position on the listeners
// (issue 22): slow bodies, idle connections, credential guessing, replayed
// signatures.

// startServeArgs starts `facet serve` with extra flags.
func startServeArgs(t *testing.T, extra ...string) *server {
	t.Helper()
	s := &server{t: t, dataDir: t.TempDir(), s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: testToken(), done: make(chan struct{})}
	args := append([]string{"serve", "--data", s.dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr, "--admin-token", s.token}, extra...)
	if err := s.launch(args, nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// testToken is an admin token long enough for the server's minimum.
func testToken() string { return "e2e-admin-" + randHex(16) }

// rawRequest sends head (request line and headers, without the blank line
// ending them) with Content-Length: length, then the body in pieces, one
// every gap, and returns the status line and the response, or the error
// that ended reading it.
func rawRequest(t *testing.T, addr, head string, length int, pieces []string, gap time.Duration) (*http.Response, time.Duration, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	start := time.Now()
	if _, err := fmt.Fprintf(c, "%s\r\nContent-Length: %d\r\n\r\n", head, length); err != nil {
		t.Fatal(err)
	}
	go func() {
		for _, p := range pieces {
			if _, err := io.WriteString(c, p); err != nil {
				return
			}
			time.Sleep(gap)
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, time.Since(start), err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	return resp, time.Since(start), nil
}

// presignedPut is the request line and Host header of a presigned PUT.
func presignedPut(t *testing.T, s *server, c creds, bucket, key string) string {
	t.Helper()
	req, err := s3.NewPresignClient(s.sdk(c)).PresignPutObject(ctxT(t), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}, s3.WithPresignExpires(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: %s", u.RequestURI(), u.Host)
}

// A body that stops arriving, or trickles below the minimum rate, is cut
// with RequestTimeout soon after the deadline; a slow body that keeps
// above the rate is stored.
func TestSlowBodyCut(t *testing.T) {
	s := startServeArgs(t, "--body-read-timeout", "1s", "--body-min-rate", "16", "--idle-timeout", "1s")
	c := s.createTenant(t, "slow")
	mkBucket(t, s.sdk(c), "slow")

	// Declares 100 bytes, sends 5, then nothing.
	resp, took, err := rawRequest(t, s.s3Addr, presignedPut(t, s, c, "slow", "stalled"), 100, []string{"hello"}, time.Hour)
	if err != nil {
		t.Fatalf("stalled PUT: no response after %v: %v", took, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "<Code>RequestTimeout</Code>") {
		t.Fatalf("stalled PUT: %d %s; want 400 RequestTimeout", resp.StatusCode, body)
	}
	if took > 10*time.Second {
		t.Errorf("stalled PUT cut after %v; want about the 1s deadline", took)
	}

	// One byte every 300 ms is about 3 B/s, under the 16 B/s minimum.
	trickle := make([]string, 100)
	for i := range trickle {
		trickle[i] = "x"
	}
	resp, took, err = rawRequest(t, s.s3Addr, presignedPut(t, s, c, "slow", "trickle"), 100, trickle, 300*time.Millisecond)
	if err != nil {
		t.Fatalf("trickled PUT: no response after %v: %v", took, err)
	}
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "<Code>RequestTimeout</Code>") || took > 15*time.Second {
		t.Fatalf("trickled PUT: %d %s after %v; want 400 RequestTimeout well before the 30 s it takes", resp.StatusCode, body, took)
	}

	// 10 bytes every 300 ms (about 33 B/s, longer than the 1 s deadline
	// in all) keeps moving: stored.
	moving := make([]string, 10)
	for i := range moving {
		moving[i] = "0123456789"
	}
	resp, took, err = rawRequest(t, s.s3Addr, presignedPut(t, s, c, "slow", "moving"), 100, moving, 300*time.Millisecond)
	if err != nil {
		t.Fatalf("slow but moving PUT: %v after %v", err, took)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("slow but moving PUT: %d %s; want 200", resp.StatusCode, body)
	}
	if got, _ := getBytes(t, s.sdk(c), "slow", "moving"); string(got) != strings.Repeat("0123456789", 10) {
		t.Errorf("slow but moving PUT stored %q", got)
	}
}

// An idle keep-alive connection to the admin listener (and to S3) is
// closed after --idle-timeout.
func TestIdleConnectionClosed(t *testing.T) {
	s := startServeArgs(t, "--idle-timeout", "1s")
	for _, addr := range []string{s.adminAddr, s.s3Addr} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err = br.ReadByte()
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(fmt.Sprint(err), "reset") {
			t.Fatalf("%s: idle keep-alive connection: %v after %v; want it closed by the server", addr, err, time.Since(start))
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: idle connection closed after %v; want about 1s", addr, d)
		}
	}
}

// A short admin or metrics token is refused at start, saying why.
func TestShortTokenRefusedAtStart(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--admin-token", "--admin-token is 8 bytes; it must be at least 32"},
		{"--metrics-token", "--metrics-token is 8 bytes; it must be at least 32"},
	} {
		args := []string{"serve", "--data", t.TempDir(), "--s3-addr", freeAddr(t), "--admin-addr", freeAddr(t), tc.flag, "password"}
		if tc.flag != "--admin-token" {
			args = append(args, "--admin-token", testToken())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, facetBin, args...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("facet serve %s password: %v\n%s\nwant a refusal saying %q", tc.flag, err, out, tc.want)
		}
	}
}

// A request signed for S3 and replayed to the admin API (same bytes, same
// Host header) is refused there; a request signed for the admin API is
// refused by S3. Each API accepts its own.
func TestSignatureReplayAcrossListeners(t *testing.T) {
	s := startServer(t, t.TempDir())
	c := s.createTenant(t, "replay")
	creds := aws.Credentials{AccessKeyID: c.AccessKey, SecretAccessKey: c.SecretKey}
	const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	signed := func(addr, service string) *http.Request {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/tenants", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Amz-Content-Sha256", empty)
		if err := v4.NewSigner().SignHTTP(ctxT(t), creds, req, empty, service, region, time.Now()); err != nil {
			t.Fatal(err)
		}
		return req
	}
	send := func(req *http.Request, addr string) (int, string) {
		req.URL.Host = addr // the signed Host header stays
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The S3 request is good on S3 (GetObject of bucket v1: no such bucket).
	if st, body := send(signed(s.s3Addr, "s3"), s.s3Addr); st != http.StatusNotFound || !strings.Contains(body, "NoSuchBucket") {
		t.Fatalf("the S3 request on S3: %d %s; want 404 NoSuchBucket", st, body)
	}
	if st, body := send(signed(s.s3Addr, "s3"), s.adminAddr); st != http.StatusBadRequest || !strings.Contains(body, "AuthorizationHeaderMalformed") || !strings.Contains(body, "facet-admin") {
		t.Errorf("the S3 request replayed to the admin API: %d %s; want 400 AuthorizationHeaderMalformed naming facet-admin", st, body)
	}
	if st, body := send(signed(s.adminAddr, "facet-admin"), s.adminAddr); st != http.StatusOK || !strings.Contains(body, `"replay"`) {
		t.Errorf("the admin call on the admin API: %d %s; want 200 with the tenant", st, body)
	}
	if st, body := send(signed(s.adminAddr, "facet-admin"), s.s3Addr); st != http.StatusBadRequest || !strings.Contains(body, "AuthorizationHeaderMalformed") {
		t.Errorf("the admin call replayed to S3: %d %s; want 400 AuthorizationHeaderMalformed", st, body)
	}
	// facet ctl signs for the admin API.
	out, err := exec.Command(facetBin, "ctl", "--admin", "http://"+s.adminAddr, "--access-key", c.AccessKey, "--secret-key", c.SecretKey, "tenant", "list").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "replay") {
		t.Errorf("facet ctl as the tenant: %v %s", err, out)
	}
}

// Failed authentications are limited per source: after ten wrong
// signatures for one key, S3 answers SlowDown to that key from that
// address, while another key from the same address still works; after ten
// wrong admin tokens, the admin API answers 429 to that address.
func TestFailedAuthRateLimited(t *testing.T) {
	s := startServer(t, t.TempDir())
	good := s.createTenant(t, "good")
	victim := s.createTenant(t, "victim")
	mkBucket(t, s.sdk(good), "good")
	guess := victim
	guess.SecretKey = strings.Repeat("x", len(victim.SecretKey))
	ctx := ctxT(t)
	var codes []string
	for range 12 {
		_, err := s.sdk(guess).ListBuckets(ctx, &s3.ListBucketsInput{})
		codes = append(codes, errCode(err))
	}
	if codes[0] != "SignatureDoesNotMatch" || codes[9] != "SignatureDoesNotMatch" || codes[10] != "SlowDown" || codes[11] != "SlowDown" {
		t.Fatalf("wrong secrets: codes %v; want 10 SignatureDoesNotMatch then SlowDown", codes)
	}
	putBytes(t, s.sdk(good), "good", "k", []byte("still served"))
	if got, _ := getBytes(t, s.sdk(good), "good", "k"); string(got) != "still served" {
		t.Fatalf("another key from the same address: %q", got)
	}

	adminGet := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.adminAddr+"/v1/tenants", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var statuses []int
	for range 11 {
		statuses = append(statuses, adminGet(testToken()))
	}
	if statuses[0] != http.StatusUnauthorized || statuses[9] != http.StatusUnauthorized || statuses[10] != http.StatusTooManyRequests {
		t.Fatalf("wrong admin tokens: %v; want 10 × 401 then 429", statuses)
	}
	if st := adminGet(s.token); st != http.StatusTooManyRequests {
		t.Errorf("the right token from the limited address: %d; want 429 (refused before the check)", st)
	}
}

// One tenant signed in to the dashboard cannot take every event stream:
// past its cap it is refused, and the administrator still gets one.
func TestTenantCannotExhaustEventStreams(t *testing.T) {
	s := startServer(t, t.TempDir())
	c := s.createTenant(t, "greedy")
	login := func(body string) *http.Client {
		jar, err := cookiejar.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Jar: jar}
		resp, err := hc.Post("http://"+s.adminAddr+"/ui/api/login", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("sign-in: %d", resp.StatusCode)
		}
		return hc
	}
	open := func(hc *http.Client) int {
		resp, err := hc.Get("http://" + s.adminAddr + "/ui/api/events")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp.StatusCode
	}
	tenant := login(fmt.Sprintf(`{"access_key":%q,"secret_key":%q}`, c.AccessKey, c.SecretKey))
	codes := map[int]int{}
	for range 40 {
		codes[open(tenant)]++
	}
	if codes[http.StatusOK] != 8 || codes[http.StatusServiceUnavailable] != 32 {
		t.Fatalf("40 streams of one tenant: %v; want 8, then 503", codes)
	}
	if st := open(login(fmt.Sprintf(`{"token":%q}`, s.token))); st != http.StatusOK {
		t.Fatalf("the administrator's stream after the tenant's: %d", st)
	}
}
