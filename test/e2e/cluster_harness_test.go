package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/internal/storage/s3/s3test"
)

// The scale-out cluster harness (issue 9), reusable by any test of a fleet:
// a restartable redis-server (the shared metadata store), `facet bus`,
// versitygw as the shared object store, `facet controller` processes and
// `facet gateway` processes, all on 127.0.0.1 with random ports and temp
// dirs, stopped when the test ends.
//
//	c := startCluster(t, clusterOptions{Gateways: 2, Controllers: 1})
//	cr := c.gw[0].createTenant(t, "acme")      // any gateway's admin API
//	cl := c.gw[1].sdk(cr)                      // aws-sdk-go-v2 on gateway 2
//	c.redis.stop(); ...; c.redis.restart()     // a metadata-store outage
//	c.backend.Client                           // the backend, read directly

// clusterOptions shape a cluster.
type clusterOptions struct {
	Gateways    int // facet gateway processes (default 1)
	Controllers int // facet controller processes (0: none)
	// Env is added to every Facet process's environment (FACET_<FLAG>=...).
	Env []string
	// Prefix is the backend prefix under the versitygw bucket (default
	// "fleet").
	Prefix string
	// Token is the fleet's admin token (default: a random one).
	Token string
}

// cluster is a running fleet.
type cluster struct {
	redis   *redisProc
	bus     *busProc
	backend s3test.Server
	// env configures a Facet process of the fleet: FACET_META, FACET_BUS,
	// FACET_BACKEND, FACET_MASTER_KEY, FACET_ADMIN_TOKEN.
	env         []string
	token       string
	gw          []*server
	controllers []*controllerProc
}

// startCluster starts redis, the bus, versitygw, then the controllers and
// the gateways of opts.
func startCluster(t *testing.T, opts clusterOptions) *cluster {
	t.Helper()
	if opts.Gateways == 0 {
		opts.Gateways = 1
	}
	if opts.Prefix == "" {
		opts.Prefix = "fleet"
	}
	c := &cluster{token: opts.Token}
	if c.token == "" {
		c.token = "fleet-admin-" + randHex(16)
	}
	c.redis = startRedis(t)
	busAddr := freeAddr(t)
	c.bus = startBus(t, busAddr)
	c.backend = s3test.Start(t)
	mk := make([]byte, 32)
	if _, err := rand.Read(mk); err != nil {
		t.Fatal(err)
	}
	c.env = append([]string{
		"FACET_META=" + c.redis.url(), "FACET_BUS=nats://" + busAddr, "FACET_BACKEND=" + c.backend.URL(opts.Prefix),
		"FACET_MASTER_KEY=" + base64.StdEncoding.EncodeToString(mk), "FACET_ADMIN_TOKEN=" + c.token,
		"FACET_METRICS_PERIOD=1s",
		// The fleet's gateways share one compilation cache for WASM
		// filters, as gateways of one host do (not the user's own).
		"FACET_WASM_CACHE_DIR=" + t.TempDir(),
	}, opts.Env...)
	for i := range opts.Controllers {
		c.controllers = append(c.controllers, startController(t, fmt.Sprintf("c%d", i+1), c.env))
	}
	for range opts.Gateways {
		c.addGateway(t)
	}
	return c
}

// addGateway starts one more `facet gateway` of the fleet.
func (c *cluster) addGateway(t *testing.T) *server {
	t.Helper()
	var lastErr error
	for range 3 {
		s := &server{t: t, s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: c.token, done: make(chan struct{})}
		err := s.launch([]string{"gateway", "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr}, c.env)
		if err == nil {
			c.gw = append(c.gw, s)
			return s
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("starting facet gateway: %v", lastErr)
	return nil
}

// activeController is the controller holding the lease (nil when none
// says so right now).
func (c *cluster) activeController() *controllerProc {
	for _, cp := range c.controllers {
		if st, err := cp.status(); err == nil && st.Lease == "held" {
			return cp
		}
	}
	return nil
}

// backendObject reads a key of the backend bucket directly from versitygw
// (not through Facet): what the fleet really stored.
func (c *cluster) backendObject(t *testing.T, key string) []byte {
	t.Helper()
	out, err := c.backend.Client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: &c.backend.Bucket, Key: &key})
	if err != nil {
		t.Fatalf("backend GET %s: %v", key, err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(out.Body); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// redisProc is a redis-server that can be stopped and started again on the
// same port and data (append-only file, fsync on every write), for outage
// tests; internal/meta/redistest's servers only die.
type redisProc struct {
	t    *testing.T
	addr string
	dir  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	out  *lockedBuffer
}

func startRedis(t *testing.T) *redisProc {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found (scripts/ensure-deps.sh installs it): %v", err)
	}
	r := &redisProc{t: t, dir: t.TempDir()}
	var err error
	for range 5 {
		r.addr = freeAddr(t)
		if err = r.start(); err == nil {
			t.Cleanup(r.stop)
			return r
		}
	}
	t.Fatalf("start redis-server: %v", err)
	return nil
}

func (r *redisProc) url() string { return "redis://" + r.addr + "/0" }

// start runs the server (again) on r.addr and waits until it answers.
func (r *redisProc) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, port, _ := net.SplitHostPort(r.addr)
	cmd := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always",
		"--daemonize", "no", "--logfile", "", "--loglevel", "warning")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.cmd, r.done, r.out = cmd, done, out
	deadline := time.Now().Add(startupTimeout)
	for {
		if c, err := net.DialTimeout("tcp", r.addr, time.Second); err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			n, _ := c.Read(buf)
			c.Close()
			if string(buf[:n]) == "+PONG\r\n" {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("redis-server exited: %s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("redis-server on %s did not answer PING", r.addr)
		}
	}
}

// restart starts a stopped server again, failing the test if it cannot.
func (r *redisProc) restart() {
	r.t.Helper()
	if err := r.start(); err != nil {
		r.t.Fatal(err)
	}
}

// stop shuts the server down (SIGTERM: the append-only file is complete)
// and waits until it is gone.
func (r *redisProc) stop() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// lockedBuffer is a bytes.Buffer written by a process's output copier and
// read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// kill9 kills a controller at once, as a crash would: it keeps its lease
// until the lease expires.
func (c *controllerProc) kill9() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// metricValue reads one un-labelled sample (e.g. "facet_meta_up") from a
// gateway's /metrics; ok is false when it is absent.
func (s *server) metricValue(t *testing.T, name string) (float64, bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.adminAddr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	body := string(raw)
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// policyVersion is the version of the policy table a node runs with.
func (s *server) policyVersion(t *testing.T) float64 {
	t.Helper()
	v, ok := s.metricValue(t, "facet_policy_table_version")
	if !ok {
		t.Fatal("no facet_policy_table_version in /metrics")
	}
	return v
}

// logBytes is the node's log so far.
func (s *server) logBytes() []byte {
	b, _ := os.ReadFile(s.logPath)
	return b
}

// EnvE2ETarget, set to "gateway", makes startServer (and every test that
// starts a plain `facet serve` through it) run a one-gateway fleet
// instead: redis-server, `facet bus`, versitygw and `facet gateway`. The
// S3 conformance tests then pass through the gateway over the remote
// backend (`make e2e-gateway` runs the subset that does not look into a
// data directory).
const EnvE2ETarget = "FACET_E2E_TARGET"

func gatewayTarget() bool { return os.Getenv(EnvE2ETarget) == "gateway" }

// startGatewayTarget is startServer's stand-in for FACET_E2E_TARGET=gateway.
func startGatewayTarget(t *testing.T, token string) *server {
	t.Helper()
	return startCluster(t, clusterOptions{Gateways: 1, Token: token}).gw[0]
}
