package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/meta/redistest"
	"github.com/facet-sds/facet/internal/storage/s3/s3test"
	"github.com/facet-sds/facet/internal/tlsconf/tlstest"
)

// startTLS starts `facet serve` over TLS with a certificate of the test
// CA (serial 100) in dir, plus extra flags.
func startTLS(t *testing.T, ca *tlstest.CA, pair tlstest.Pair, extra ...string) *server {
	t.Helper()
	s := &server{t: t, dataDir: t.TempDir(), s3Addr: freeAddr(t), adminAddr: freeAddr(t),
		token: "e2e-admin-" + randHex(16), done: make(chan struct{}), ca: ca}
	args := append([]string{"serve", "--data", s.dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr,
		"--admin-token", s.token, "--tls-cert", pair.CertFile, "--tls-key", pair.KeyFile}, extra...)
	if err := s.launch(args, nil); err != nil {
		t.Fatalf("facet serve over TLS: %v", err)
	}
	return s
}

// serial is the serial number (decimal) of the certificate a new TLS
// connection to addr sees, verified against ca.
func serial(t *testing.T, ca *tlstest.CA, addr string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, ca.ClientConfig())
	if err != nil {
		t.Fatalf("TLS dial %s: %v", addr, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// waitSerial waits until new connections to addr see want.
func waitSerial(t *testing.T, ca *tlstest.CA, addr, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for serial(t, ca, addr) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s still serves serial %s, want %s", addr, serial(t, ca, addr), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTLSServe: both listeners speak TLS 1.2+ with the configured
// certificate; aws-sdk-go-v2 and facet ctl verify it against the test CA;
// plain HTTP to a TLS port is answered 400, never redirected.
func TestTLSServe(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	s := startTLS(t, ca, ca.Issue(t, dir+"/server", 100))
	ctx := ctxT(t)
	c := s.createTenant(t, "tls") // facet ctl --ca over https
	cl := s.sdk(c)
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("sealed")}); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("tls"), 100_000)
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sealed"), Key: aws.String("k"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := getBytes(t, cl, "sealed", "k"); !bytes.Equal(got, body) {
		t.Fatalf("GET over TLS: %d bytes, want %d", len(got), len(body))
	}
	for _, addr := range []string{s.s3Addr, s.adminAddr} {
		if got := serial(t, ca, addr); got != "100" {
			t.Errorf("%s serves serial %s, want 100", addr, got)
		}
		// TLS 1.1 is refused.
		old := ca.ClientConfig()
		old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
		if conn, err := tls.Dial("tcp", addr, old); err == nil {
			conn.Close()
			t.Errorf("%s accepted TLS 1.1", addr)
		}
		// Plain HTTP to the TLS port: 400, no redirect.
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("plain HTTP to %s: %v", addr, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || !strings.Contains(string(b), "HTTPS") {
			t.Errorf("plain HTTP to TLS port %s: %d %q Location=%q, want 400 without redirect", addr, resp.StatusCode, b, resp.Header.Get("Location"))
		}
	}
	// A client without the CA refuses the server.
	if _, err := http.Get("https://" + s.s3Addr + "/"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the test CA: %v, want a certificate error", err)
	}
	// ctl without the CA fails with the verification error.
	out, err := exec.Command(facetBin, "ctl", "--admin", "https://"+s.adminAddr, "--token", s.token, "tenant", "list").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "certificate") {
		t.Errorf("ctl without --ca: err %v, output %s; want a certificate error", err, out)
	}
}

// TestTLSRotationUnderLoad replaces the certificate files (new serial)
// while clients PUT and GET: no request fails, and new connections see
// the new certificate.
func TestTLSRotationUnderLoad(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	s := startTLS(t, ca, ca.Issue(t, dir+"/server", 100), "--tls-reload-every", "200ms")
	ctx := ctxT(t)
	c := s.createTenant(t, "rot")
	setup := s.sdk(c)
	if _, err := setup.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("rot")}); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				// A fresh client every few requests: new handshakes
				// during the rotation, not just kept-alive connections.
				cl := s.sdk(c)
				for j := range 5 {
					key := fmt.Sprintf("w%d/%d-%d", w, i, j)
					body := []byte(strings.Repeat(key, 50))
					_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("rot"), Key: &key, Body: bytes.NewReader(body)})
					if err == nil {
						var out *s3.GetObjectOutput
						if out, err = cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("rot"), Key: &key}); err == nil {
							var got []byte
							got, err = io.ReadAll(out.Body)
							out.Body.Close()
							if err == nil && !bytes.Equal(got, body) {
								err = fmt.Errorf("GET %s: wrong bytes", key)
							}
						}
					}
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err)
						continue
					}
					ok.Add(1)
				}
			}
		})
	}
	waitOK := func(n int64) {
		for ok.Load() < n && failed.Load() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitOK(40)
	for serialN := int64(200); serialN <= 400; serialN += 100 {
		ca.Issue(t, dir+"/server", serialN)
		waitSerial(t, ca, s.s3Addr, fmt.Sprint(serialN))
		waitSerial(t, ca, s.adminAddr, fmt.Sprint(serialN))
		waitOK(ok.Load() + 40)
	}
	stop.Store(true)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d requests failed during rotation; first: %v", n, n+ok.Load(), firstErr.Load())
	}
	t.Logf("%d requests across three rotations, none failed", ok.Load())
}

// TestTLSReloadOnSIGHUP: with polling off, new certificate files are
// served only once SIGHUP arrives.
func TestTLSReloadOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	s := startTLS(t, ca, ca.Issue(t, dir+"/server", 100), "--tls-reload-every", "0")
	ca.Issue(t, dir+"/server", 300)
	// Polling is off: the old certificate stays until the signal.
	if got := serial(t, ca, s.s3Addr); got != "100" {
		t.Fatalf("serial %s before SIGHUP, want 100 (no polling)", got)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitSerial(t, ca, s.s3Addr, "300")
	waitSerial(t, ca, s.adminAddr, "300")
	if s.exited() {
		t.Fatal("SIGHUP ended the server")
	}
	// A broken pair is not loaded: the server keeps its certificate.
	if err := os.WriteFile(dir+"/server.key", []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, s, "tls certificates not reloaded")
	if got := serial(t, ca, s.s3Addr); got != "300" {
		t.Fatalf("after a failed reload: serial %s, want 300 kept", got)
	}
}

// TestListenRefusesNonLoopbackPlain: plain HTTP on a non-loopback
// address needs --insecure-listen; TLS does not.
func TestListenRefusesNonLoopbackPlain(t *testing.T) {
	port := strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
	args := []string{"serve", "--data", t.TempDir(), "--s3-addr", "0.0.0.0:" + port, "--admin-addr", freeAddr(t), "--nbd-addr", "off"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, facetBin, args...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--s3-addr 0.0.0.0:"+port+" is not a loopback address") || !strings.Contains(string(out), "--insecure-listen") {
		t.Fatalf("plain serve on 0.0.0.0: err %v, output:\n%s\nwant a refusal naming --s3-addr and --insecure-listen", err, out)
	}

	// The embedded bus's port follows the same rule.
	busArgs := []string{"serve", "--data", t.TempDir(), "--admin-addr", freeAddr(t), "--s3-addr", freeAddr(t), "--nbd-addr", "off", "--bus-listen", "0.0.0.0:" + port}
	out, err = exec.CommandContext(ctx, facetBin, busArgs...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--bus-listen 0.0.0.0:"+port+" is not a loopback address") {
		t.Fatalf("plain --bus-listen on 0.0.0.0: err %v, output:\n%s", err, out)
	}
	out, err = exec.CommandContext(ctx, facetBin, "bus", "--addr", "0.0.0.0:"+port).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--addr 0.0.0.0:"+port+" is not a loopback address") || !strings.Contains(string(out), "--insecure-listen") {
		t.Fatalf("plain facet bus on 0.0.0.0: err %v, output:\n%s", err, out)
	}

	s := &server{t: t, dataDir: t.TempDir(), s3Addr: "0.0.0.0:" + port, adminAddr: freeAddr(t), token: "e2e-admin-" + randHex(16), done: make(chan struct{})}
	if err := s.launch([]string{"serve", "--data", s.dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr, "--admin-token", s.token, "--insecure-listen"}, nil); err != nil {
		t.Fatalf("--insecure-listen: %v", err)
	}
	resp, err := http.Get("http://127.0.0.1:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, _ = s.terminate(20 * time.Second)

	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	pair := ca.Issue(t, dir+"/server", 100)
	s = &server{t: t, dataDir: t.TempDir(), s3Addr: "0.0.0.0:" + port, adminAddr: freeAddr(t), token: "e2e-admin-" + randHex(16), done: make(chan struct{}), ca: ca}
	if err := s.launch([]string{"serve", "--data", s.dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr, "--admin-token", s.token,
		"--tls-cert", pair.CertFile, "--tls-key", pair.KeyFile}, nil); err != nil {
		t.Fatalf("TLS on 0.0.0.0: %v", err)
	}
	if got := serial(t, ca, "127.0.0.1:"+port); got != "100" {
		t.Fatalf("serial %s, want 100", got)
	}
}

// TestTLSDashboardSecureCookie: a dashboard sign-in over TLS sets the
// session cookie Secure (and HttpOnly); over plain HTTP on loopback it
// is not Secure.
func TestTLSDashboardSecureCookie(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	s := startTLS(t, ca, ca.Issue(t, dir+"/server", 100))
	signIn := func(s *server) *http.Cookie {
		body, _ := json.Marshal(map[string]string{"token": s.token})
		resp, err := s.httpClient(10*time.Second).Post(s.scheme()+"://"+s.adminAddr+"/ui/api/login", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(resp.Cookies()) == 0 {
			t.Fatalf("sign-in over %s: %d, cookies %v", s.scheme(), resp.StatusCode, resp.Cookies())
		}
		return resp.Cookies()[0]
	}
	if c := signIn(s); !c.Secure || !c.HttpOnly {
		t.Errorf("session cookie over TLS: Secure=%v HttpOnly=%v, want both", c.Secure, c.HttpOnly)
	}
	if c := signIn(startServer(t, t.TempDir())); c.Secure {
		t.Errorf("session cookie over plain loopback HTTP is Secure: the browser would drop it")
	}
}

// waitLog waits until the server's log holds want.
func waitLog(t *testing.T, s *server, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(s.logPath)
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if strings.Contains(sc.Text(), want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("log never said %q; tail:\n%s", want, s.logTail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTLSBlockAdmin: the block role's admin listener serves TLS too.
func TestTLSBlockAdmin(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	pair := ca.Issue(t, dir+"/server", 100)
	s := &server{t: t, dataDir: t.TempDir(), adminAddr: freeAddr(t), token: "e2e-admin-" + randHex(16), done: make(chan struct{}), ca: ca}
	if err := s.launch([]string{"block", "--data", s.dataDir, "--admin-addr", s.adminAddr, "--admin-token", s.token, "--nbd-addr", freeAddr(t),
		"--tls-cert", pair.CertFile, "--tls-key", pair.KeyFile}, nil); err != nil {
		t.Fatalf("facet block over TLS: %v", err)
	}
	if got := serial(t, ca, s.adminAddr); got != "100" {
		t.Fatalf("block admin serial %s, want 100", got)
	}
	if _, err := s.ctl(t, "pool", "list"); err != nil {
		t.Fatalf("ctl over https to the block role: %v", err)
	}
}

// TestTLSFleet: a gateway reaches every shared store over verified TLS
// with credentials (Redis rediss:// with ca=, `facet bus` with TLS and a
// token, versitygw over HTTPS with ca=) and serves its own listeners over
// TLS; no secret reaches its log.
func TestTLSFleet(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	pair := ca.Issue(t, dir+"/server", 100)
	redis := redistest.StartTLS(t, redistest.TLSFiles{Cert: pair.CertFile, Key: pair.KeyFile, CA: ca.CertFile})
	busAddr := freeAddr(t)
	const busToken = "bus-token-0123456789abcdef-secret"
	startBus(t, busAddr, "--tls-cert", pair.CertFile, "--tls-key", pair.KeyFile, "--token", busToken)
	backend := s3test.StartTLS(t, s3test.TLS{Cert: pair.CertFile, Key: pair.KeyFile, CA: ca.CertFile})
	mk := make([]byte, 32)
	if _, err := rand.Read(mk); err != nil {
		t.Fatal(err)
	}
	token := "fleet-admin-" + randHex(16)
	env := []string{
		"FACET_META=" + redis.TLSURL(0, "ca="+ca.CertFile), "FACET_BUS=tls://" + busToken + "@" + busAddr, "FACET_BUS_CA=" + ca.CertFile,
		"FACET_BACKEND=" + backend.URL("fleet"), "FACET_MASTER_KEY=" + base64.StdEncoding.EncodeToString(mk), "FACET_ADMIN_TOKEN=" + token,
		"FACET_WASM_CACHE_DIR=" + t.TempDir(),
	}
	s := &server{t: t, s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: token, done: make(chan struct{}), ca: ca}
	if err := s.launch([]string{"gateway", "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr, "--tls-cert", pair.CertFile, "--tls-key", pair.KeyFile}, env); err != nil {
		t.Fatalf("facet gateway over TLS: %v", err)
	}
	ctx := ctxT(t)
	c := s.createTenant(t, "fleet")
	cl := s.sdk(c)
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("fleet-bucket")}); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("fleet over tls "), 10_000)
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("fleet-bucket"), Key: aws.String("k"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := getBytes(t, cl, "fleet-bucket", "k"); !bytes.Equal(got, body) {
		t.Fatalf("GET through a gateway over TLS: %d bytes, want %d", len(got), len(body))
	}
	// The controller role: its admin listener over TLS, the shared stores
	// over TLS too.
	ctl := &server{t: t, adminAddr: freeAddr(t), token: token, done: make(chan struct{}), ca: ca}
	if err := ctl.launch([]string{"controller", "--data", t.TempDir(), "--id", "c1", "--admin-addr", ctl.adminAddr, "--admin-token", token,
		"--tls-cert", pair.CertFile, "--tls-key", pair.KeyFile}, env); err != nil {
		t.Fatalf("facet controller over TLS: %v", err)
	}
	if got := serial(t, ca, ctl.adminAddr); got != "100" {
		t.Errorf("controller admin serial %s, want 100", got)
	}
	for _, p := range []*server{s, ctl} {
		waitLog(t, p, "bus connected")
		log, _ := os.ReadFile(p.logPath)
		for _, secret := range []string{busToken, backend.Secret, token, string(mk)} {
			if bytes.Contains(log, []byte(secret)) {
				t.Errorf("the log of %s holds a secret (%.6s...)", p.logPath, secret)
			}
		}
	}
}

// TestTLSDirSNI: with --tls-dir, the SNI name picks the certificate and a
// client without SNI gets default.crt.
func TestTLSDirSNI(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	certs := t.TempDir()
	ca.Issue(t, certs+"/default", 1)
	ca.Issue(t, certs+"/s3", 2, "s3.facet.test")
	s := &server{t: t, dataDir: t.TempDir(), s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: "e2e-admin-" + randHex(16), done: make(chan struct{}), ca: ca}
	if err := s.launch([]string{"serve", "--data", s.dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr, "--admin-token", s.token,
		"--nbd-addr", "off", "--tls-dir", certs}, nil); err != nil {
		t.Fatalf("facet serve --tls-dir: %v", err)
	}
	for sni, want := range map[string]string{"": "1", "localhost": "1", "s3.facet.test": "2"} {
		cfg := ca.ClientConfig()
		cfg.ServerName = sni
		if sni == "" {
			cfg.ServerName = "127.0.0.1" // an IP: Go sends no SNI, and verifies the IP SAN
		}
		conn, err := tls.Dial("tcp", s.s3Addr, cfg)
		if err != nil {
			t.Fatalf("SNI %q: %v", sni, err)
		}
		got := conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
		conn.Close()
		if got != want {
			t.Errorf("SNI %q: serial %s, want %s", sni, got, want)
		}
	}
}

// TestTLSEmbeddedBus: with TLS, serve's --bus-listen port speaks TLS with
// the listeners' certificates; a bus client verifying against the CA
// joins it.
func TestTLSEmbeddedBus(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	busAddr := freeAddr(t)
	s := startTLS(t, ca, ca.Issue(t, dir+"/server", 100), "--bus-listen", busAddr, "--nbd-addr", "off")
	c, err := bus.Dial("tls://"+busAddr, "e2e", ca.CertFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Flush(30 * time.Second); err != nil {
		t.Fatalf("joining the embedded bus over TLS: %v", err)
	}
	// The client insists on TLS (nats.Secure): a plain server would have
	// refused it.
	_ = s
}
