package tlsconf_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/tlsconf"
	"github.com/facet-sds/facet/internal/tlsconf/tlstest"
)

// handshake returns the serial (hex) the server config presents for sni.
func handshake(t *testing.T, srv *tls.Config, ca *tlstest.CA, sni string) string {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { _ = tls.Server(b, srv).Handshake() }()
	cfg := ca.ClientConfig()
	cfg.ServerName = sni
	if sni == "" {
		cfg.InsecureSkipVerify = true // no name to verify: only which certificate comes
	}
	c := tls.Client(a, cfg)
	if err := c.Handshake(); err != nil {
		t.Fatalf("handshake (SNI %q): %v", sni, err)
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Text(16)
}

func TestDirSelectsBySNI(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, t.TempDir())
	ca.Issue(t, filepath.Join(dir, "default"), 1)
	ca.Issue(t, filepath.Join(dir, "a"), 0xa, "a.example")
	ca.Issue(t, filepath.Join(dir, "wild"), 0xb, "*.w.example")
	certs, err := tlsconf.Load(tlsconf.Source{Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := certs.Config()
	for sni, want := range map[string]string{"": "1", "localhost": "1", "a.example": "a", "A.Example": "a", "x.w.example": "b"} {
		if got := handshake(t, cfg, ca, sni); got != want {
			t.Errorf("SNI %q: serial %s, want %s", sni, got, want)
		}
	}
	if cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion %x, want TLS 1.2", cfg.MinVersion)
	}
}

func TestWatchReloadsAndKeepsOldOnBadPair(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	pair := ca.Issue(t, filepath.Join(dir, "s"), 1)
	certs, err := tlsconf.Load(tlsconf.Source{CertFile: pair.CertFile, KeyFile: pair.KeyFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { certs.Watch(ctx, 5*time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()
	ca.Issue(t, filepath.Join(dir, "s"), 2)
	for certs.Serial() != "2" {
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.WriteFile(pair.KeyFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := certs.Reload(); err == nil {
		t.Fatal("a garbage key reloaded")
	}
	if got := handshake(t, certs.Config(), ca, "localhost"); got != "2" {
		t.Fatalf("after a failed reload: serial %s, want 2 kept", got)
	}
}

func TestSourceCheck(t *testing.T) {
	for _, tc := range []struct {
		src  tlsconf.Source
		want string
	}{
		{tlsconf.Source{CertFile: "c"}, "--tls-cert and --tls-key go together"},
		{tlsconf.Source{KeyFile: "k"}, "--tls-cert and --tls-key go together"},
		{tlsconf.Source{CertFile: "c", KeyFile: "k", Dir: "d"}, "exclusive"},
	} {
		if err := tc.src.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.src, err, tc.want)
		}
	}
	if _, err := tlsconf.Load(tlsconf.Source{Dir: t.TempDir()}, nil); err == nil || !strings.Contains(err.Error(), "holds no NAME.crt") {
		t.Errorf("empty dir: %v", err)
	}
}
