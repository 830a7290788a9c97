package bus

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/tlsconf"
	"github.com/facet-sds/facet/internal/tlsconf/tlstest"
)

// waitLog waits until logs holds want.
func waitLog(t *testing.T, logs *syncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("log never said %q: %s", want, logs.String())
		}
	}
}

// A bus server with TLS and a token: a client with the CA and the token in
// its URL publishes and subscribes; one without the CA is refused the
// certificate, one with a wrong token the authorization, and neither
// logs the token; the in-process connection needs no URL.
func TestBusTLSAndToken(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	pair := ca.Issue(t, filepath.Join(dir, "bus"), 5)
	certs, err := tlsconf.Load(tlsconf.Source{CertFile: pair.CertFile, KeyFile: pair.KeyFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const token = "bus-token-s3cr3t-0123456789"
	srv, err := StartServer(ServerOptions{Name: "tls", Addr: "127.0.0.1:0", TLS: certs.Config(), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !strings.HasPrefix(srv.URL(), "tls://127.0.0.1:") {
		t.Fatalf("URL %q, want tls://", srv.URL())
	}
	withToken := strings.Replace(srv.URL(), "tls://", "tls://"+token+"@", 1)

	in, err := srv.Connect("in-process")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	got := collect(t, in, "facet.metrics.node.*")
	if err := in.Flush(10 * time.Second); err != nil {
		t.Fatalf("in-process connection with credentials: %v", err)
	}
	var pubLogs syncBuffer
	pub, err := Dial(withToken, "pub", ca.CertFile, slog.New(slog.NewTextHandler(&pubLogs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.Publish("facet.metrics.node.put_ops", []byte("sealed")); err != nil {
		t.Fatal(err)
	}
	if m := wait(t, got, "message over TLS"); m.data != "sealed" {
		t.Fatalf("got %+v", m)
	}
	waitLog(t, &pubLogs, "bus connected")
	if strings.Contains(pubLogs.String(), token) {
		t.Errorf("the token is in the connection log: %s", pubLogs.String())
	}

	for _, tc := range []struct{ name, url, ca, want string }{
		{"no CA", withToken, "", "certificate"},
		{"wrong token", strings.Replace(srv.URL(), "tls://", "tls://wrong-token@", 1), ca.CertFile, "uthorization"},
		{"no token", srv.URL(), ca.CertFile, "uthorization"},
	} {
		var logs syncBuffer
		c, err := Dial(tc.url, tc.name, tc.ca, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		waitLog(t, &logs, "bus connect failed")
		waitLog(t, &logs, tc.want)
		if c.Connected() {
			t.Errorf("%s: connected", tc.name)
		}
		c.Close()
		if strings.Contains(logs.String(), token) {
			t.Errorf("%s: the token is in the log: %s", tc.name, logs.String())
		}
	}
}

// A user and password in the URL, over TLS.
func TestBusTLSUserPassword(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	pair := ca.Issue(t, filepath.Join(dir, "bus"), 6)
	certs, err := tlsconf.Load(tlsconf.Source{CertFile: pair.CertFile, KeyFile: pair.KeyFile}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := StartServer(ServerOptions{Name: "tls", Addr: "127.0.0.1:0", TLS: certs.Config(), User: "gw", Password: "pw-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// nats:// with a CA file: TLS all the same.
	url := strings.Replace(srv.URL(), "tls://", "nats://gw:pw-0123456789@", 1)
	c, err := Dial(url, "gw", ca.CertFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Flush(10 * time.Second); err != nil {
		t.Fatalf("user and password over TLS: %v", err)
	}
	if _, err := StartServer(ServerOptions{User: "only-user"}); err == nil {
		t.Error("a user without a password started")
	}
}
