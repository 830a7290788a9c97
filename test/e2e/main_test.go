package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/tlsconf/tlstest"
)

// facetBin is the facet binary under test: FACET_BIN when set, otherwise
// built once by TestMain.
var facetBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if b := os.Getenv("FACET_BIN"); b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: FACET_BIN: %v\n", err)
			return 1
		}
		facetBin = abs
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "facet-e2e-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	facetBin = filepath.Join(dir, "facet")
	cmd := exec.Command("go", "build", "-o", facetBin, "github.com/facet-sds/facet/cmd/facet")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building facet: %v\n", err)
		return 1
	}
	return m.Run()
}

// server is one running `facet serve` process.
type server struct {
	t         *testing.T
	dataDir   string
	s3Addr    string
	adminAddr string
	token     string
	logPath   string // stderr: the JSON log
	outPath   string // stdout: one-time announcements
	cmd       *exec.Cmd
	done      chan struct{} // closed when the process has exited
	waitErr   error         // valid after done is closed
	// ca, when set, is the test CA of a server serving TLS (tls_test.go):
	// clients then speak https and verify against it.
	ca *tlstest.CA
}

// scheme is the listeners' URL scheme.
func (s *server) scheme() string {
	if s.ca != nil {
		return "https"
	}
	return "http"
}

// httpClient is a client of the server's listeners, verifying a TLS
// server against the test CA.
func (s *server) httpClient(timeout time.Duration) *http.Client {
	c := &http.Client{Timeout: timeout}
	if s.ca != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = s.ca.ClientConfig()
		c.Transport = tr
	}
	return c
}

const startupTimeout = 30 * time.Second

// startServer starts `facet serve` on dataDir with fresh loopback ports and
// waits until its admin /healthz answers 200. The process is stopped (SIGTERM,
// then SIGKILL) when the test ends.
func startServer(t *testing.T, dataDir string) *server {
	t.Helper()
	return startServerWithToken(t, dataDir, "e2e-admin-"+randHex(16))
}

// startServerWithToken is startServer with a given admin token, so that a
// restart on the same data directory can keep using it.
func startServerWithToken(t *testing.T, dataDir, token string) *server {
	t.Helper()
	return startServerEnv(t, dataDir, token, nil)
}

// startServerEnv starts the server with extra environment variables; an
// empty token means no --admin-token flag (the server then takes
// FACET_ADMIN_TOKEN or generates one).
func startServerEnv(t *testing.T, dataDir, token string, env []string) *server {
	t.Helper()
	if env == nil && gatewayTarget() {
		return startGatewayTarget(t, token)
	}
	var lastErr error
	// Free ports are picked by binding :0 and closing, so another process
	// may grab one in between; retry a few times in that case.
	for attempt := 0; attempt < 3; attempt++ {
		s, err := tryStart(t, dataDir, token, env)
		if err == nil {
			return s
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("starting facet serve: %v", lastErr)
	return nil
}

func tryStart(t *testing.T, dataDir, token string, env []string) (*server, error) {
	s := &server{
		t:         t,
		dataDir:   dataDir,
		s3Addr:    freeAddr(t),
		adminAddr: freeAddr(t),
		token:     token,
		done:      make(chan struct{}),
	}
	args := []string{"serve", "--data", dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr}
	if token != "" {
		args = append(args, "--admin-token", token)
	}
	return s, s.launch(args, env)
}

// launch starts facet with args (a role that serves S3 and admin on
// s.s3Addr and s.adminAddr) and waits until /healthz answers.
func (s *server) launch(args, env []string) error {
	t := s.t
	logDir := t.TempDir()
	logf, err := os.CreateTemp(logDir, "facet-"+args[0]+"-*.log")
	if err != nil {
		return err
	}
	outf, err := os.CreateTemp(logDir, "facet-"+args[0]+"-*.out")
	if err != nil {
		logf.Close()
		return err
	}
	s.logPath, s.outPath = logf.Name(), outf.Name()
	s.cmd = exec.Command(facetBin, args...)
	s.cmd.Stdout, s.cmd.Stderr = outf, logf
	s.cmd.Env = append(os.Environ(), env...)
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		outf.Close()
		return err
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		logf.Close()
		outf.Close()
		close(s.done)
	}()
	t.Cleanup(s.cleanup)
	if err := s.waitHealthy(startupTimeout); err != nil {
		s.kill9()
		return fmt.Errorf("%w; log:\n%s", err, s.logTail(40))
	}
	return nil
}

func (s *server) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := s.httpClient(2 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("facet serve exited early: %v", s.waitErr)
		default:
		}
		resp, err := client.Get(s.scheme() + "://" + s.adminAddr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("facet serve not healthy after %v", timeout)
}

func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *server) cleanup() {
	if !s.exited() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			s.t.Errorf("facet serve did not exit within 20s of SIGTERM; killing it")
			s.kill9()
		}
	}
	if s.t.Failed() {
		s.t.Logf("facet serve log (%s), last lines:\n%s", s.logPath, s.logTail(60))
	}
}

// kill9 kills the server with SIGKILL and waits for it to be gone.
func (s *server) kill9() {
	if s.exited() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// terminate sends SIGTERM and waits (bounded) for the exit; it returns the
// process's exit code.
func (s *server) terminate(timeout time.Duration) (int, error) {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return -1, err
	}
	select {
	case <-s.done:
	case <-time.After(timeout):
		s.kill9()
		return -1, fmt.Errorf("no exit within %v of SIGTERM", timeout)
	}
	var ee *exec.ExitError
	if errors.As(s.waitErr, &ee) {
		return ee.ExitCode(), nil
	}
	if s.waitErr != nil {
		return -1, s.waitErr
	}
	return 0, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) logTail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (s *server) endpoint() string { return s.scheme() + "://" + s.s3Addr }

// creds are a tenant's S3 credentials as printed by `facet ctl ... -o json`.
type creds struct {
	Tenant    string `json:"tenant"`
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
}

// ctl runs `facet ctl` against this server and returns its stdout.
func (s *server) ctl(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := []string{"ctl", "--admin", s.scheme() + "://" + s.adminAddr, "--token", s.token}
	if s.ca != nil {
		full = append(full, "--ca", s.ca.CertFile)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, facetBin, full...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("facet ctl %s: %w; stderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// createTenant creates a tenant through the CLI and returns its first key.
func (s *server) createTenant(t *testing.T, name string) creds {
	t.Helper()
	out, err := s.ctl(t, "tenant", "create", name, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var c creds
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("tenant create output is not the documented JSON: %v\n%s", err, out)
	}
	if c.Tenant == "" || c.AccessKey == "" || c.SecretKey == "" {
		t.Fatalf("tenant create output lacks tenant/access_key/secret_key: %s", out)
	}
	return c
}

// dataFiles lists the regular files under the server's data directory whose
// names end in suffix.
func dataFiles(t *testing.T, dir, suffix string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), suffix) {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// procStatus returns a field of /proc/PID/status in kB (e.g. "VmHWM").
func procStatusKB(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		var kb int64
		if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err != nil {
			return 0, fmt.Errorf("parsing %s: %w", field, err)
		}
		return kb, nil
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", field, pid)
}
