package meta

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/meta/redistest"
	"github.com/facet-sds/facet/internal/tlsconf/tlstest"
)

// TestRedisTLS: a rediss:// URL with ca= verifies redis-server's TLS port
// against the test CA; without the CA the certificate is refused; ca= on
// a plain redis:// URL is an error naming rediss; the password never
// shows in an error.
func TestRedisTLS(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	pair := ca.Issue(t, filepath.Join(dir, "redis"), 7)
	srv := redistest.StartTLS(t, redistest.TLSFiles{Cert: pair.CertFile, Key: pair.KeyFile, CA: ca.CertFile})

	mk := testKey(t)
	s := openRedisStore(t, srv.TLSURL(0, "ca="+ca.CertFile), mk)
	if _, err := s.CreateTenant(ctx, "over-tls"); err != nil {
		t.Fatalf("store over rediss: %v", err)
	}
	// The plain port sees what the TLS port wrote: the same server.
	plain := openRedisStore(t, srv.URL(0, ""), mk)
	if _, err := plain.GetTenant(ctx, "over-tls"); err != nil {
		t.Fatalf("tenant written over TLS: %v", err)
	}

	if _, err := OpenURL(ctx, srv.TLSURL(0, ""), "", mk, nil); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("rediss without the CA: %v, want a certificate error", err)
	}
	withPass := "rediss://:hunter2-secret@" + srv.TLSAddr + "/0"
	if _, err := OpenURL(ctx, withPass, "", mk, nil); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("an unverified server, password in the URL: %v, want an error without the password", err)
	}
	if _, err := OpenURL(ctx, srv.URL(0, "ca="+ca.CertFile), "", mk, nil); err == nil || !strings.Contains(err.Error(), "rediss://") {
		t.Errorf("ca= on redis://: %v, want an error naming rediss://", err)
	}
	if _, err := OpenURL(ctx, srv.TLSURL(0, "skip_verify=true"), "", mk, nil); err == nil || !strings.Contains(err.Error(), "skip_verify is not supported") {
		t.Errorf("skip_verify: %v, want a refusal", err)
	}
	if _, err := OpenURL(ctx, srv.TLSURL(0, "ca="+filepath.Join(dir, "missing.crt")), "", mk, nil); err == nil || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("missing CA file: %v", err)
	}
}
