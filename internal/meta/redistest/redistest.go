// Package redistest starts throw-away redis-server processes for tests:
// one per call, on a random port, in the test's temporary directory, with
// persistence off, stopped when the test ends.
//
// A missing redis-server fails the test (scripts/ensure-deps.sh installs
// it), unless FACET_SKIP_REDIS=1 says to skip Redis tests on purpose.
package redistest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvSkip names the variable that, set to 1, skips Redis tests instead of
// failing them when redis-server is missing.
const EnvSkip = "FACET_SKIP_REDIS"

// startTimeout bounds how long a server may take to accept connections. It
// is a failure bound, not a measurement: a loaded machine just waits.
const startTimeout = 30 * time.Second

// Server is a running redis-server.
type Server struct {
	// Addr is host:port.
	Addr string
	// TLSAddr is the TLS port's host:port (StartTLS), else "".
	TLSAddr string
	proc    *os.Process
	done    chan struct{} // closed once the process has exited
	out     *syncBuffer
}

// URL returns a redis:// URL for database db, with query appended when
// not empty (e.g. "prefix=t1:").
func (s *Server) URL(db int, query string) string {
	u := "redis://" + s.Addr + "/" + strconv.Itoa(db)
	if query != "" {
		u += "?" + query
	}
	return u
}

// TLSURL returns a rediss:// URL of the TLS port for database db, with
// query appended when not empty (e.g. "ca=/path/ca.crt").
func (s *Server) TLSURL(db int, query string) string {
	u := "rediss://" + s.TLSAddr + "/" + strconv.Itoa(db)
	if query != "" {
		u += "?" + query
	}
	return u
}

// Kill stops the server at once, as a crash would.
func (s *Server) Kill() {
	_ = s.proc.Kill() // fails only if it already exited, which is the goal
	<-s.done
}

// Freeze stops the server with SIGSTOP, as a hung server would be: its
// connections stay open and nothing answers. The test's cleanup resumes it.
func (s *Server) Freeze(t testing.TB) {
	t.Helper()
	if err := s.proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("freeze redis-server: %v", err)
	}
	t.Cleanup(func() { _ = s.proc.Signal(syscall.SIGCONT) })
}

// Resume continues a frozen server (SIGCONT).
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("resume redis-server: %v", err)
	}
}

// Start starts a redis-server for t and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartTLS(t, TLSFiles{})
}

// TLSFiles are the PEM files of a TLS port: the server's certificate and
// key, and the CA its clients' certificates would be checked against
// (clients need none: tls-auth-clients is off).
type TLSFiles struct{ Cert, Key, CA string }

// StartTLS starts a redis-server with a TLS port too (TLSAddr) when
// files are given; the plain port stays for the readiness probe.
func StartTLS(t testing.TB, files TLSFiles) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(EnvSkip) == "1" {
			t.Skipf("redis-server not installed and %s=1", EnvSkip)
		}
		t.Fatalf("redis-server not found (run scripts/ensure-deps.sh, or set %s=1 to skip Redis tests): %v", EnvSkip, err)
	}
	// A port picked free can be taken by someone else before redis binds
	// it; try a few.
	var lastErr error
	for range 5 {
		s, err := start(t, bin, files)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("start redis-server: %v", lastErr)
	return nil
}

func start(t testing.TB, bin string, files TLSFiles) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	out := &syncBuffer{}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--logfile", "", "--loglevel", "warning"}
	tlsAddr := ""
	if files.Cert != "" {
		tport, err := freePort()
		if err != nil {
			return nil, err
		}
		tlsAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(tport))
		args = append(args, "--tls-port", strconv.Itoa(tport), "--tls-cert-file", files.Cert, "--tls-key-file", files.Key,
			"--tls-ca-cert-file", files.CA, "--tls-auth-clients", "no")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), TLSAddr: tlsAddr, proc: cmd.Process, done: make(chan struct{}), out: out}
	go func() {
		_ = cmd.Wait() // a killed server's exit status says nothing
		close(s.done)
	}()
	if err := waitReady(s.Addr, s.done); err != nil {
		s.Kill()
		return nil, fmt.Errorf("%w; output:\n%s", err, out.String())
	}
	t.Cleanup(s.Kill)
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls the server with PING until it answers PONG, it exits, or
// startTimeout passes.
func waitReady(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for {
		if ping(addr) == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("redis-server exited")
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("redis-server did not answer PING")
		}
	}
}

func ping(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

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
