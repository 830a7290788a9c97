package s3

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/s3/s3test"
	"github.com/facet-sds/facet/internal/tlsconf/tlstest"
)

// TestBackendTLS: a versitygw serving HTTPS with a test CA's certificate
// is reached with tls=true&ca=FILE and stores and returns bytes; without
// the CA the certificate is refused (and the secret stays out of the
// error); ca= with tls=false and a bad tls= value are refused.
func TestBackendTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	pair := ca.Issue(t, filepath.Join(dir, "vgw"), 9)
	srv := s3test.StartTLS(t, s3test.TLS{Cert: pair.CertFile, Key: pair.KeyFile, CA: ca.CertFile})
	b := open(t, srv.URL("tls"))
	ctx := context.Background()
	if err := b.CreateBucket(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("over tls "), 1000)
	if _, err := b.PutObject(ctx, "b", "k", storage.PutInput{Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("PUT over TLS: %v", err)
	}
	rc, _, err := b.GetObject(ctx, "b", "k", nil)
	if err != nil {
		t.Fatalf("GET over TLS: %v", err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("GET over TLS: %d bytes, %v", len(got), err)
	}

	noCA := strings.Replace(srv.URL("tls"), "&ca=", "&x=", 1)
	noCA = noCA[:strings.Index(noCA, "&x=")]
	if _, err := Open(ctx, noCA, Options{NoSweep: true}); err == nil || !strings.Contains(err.Error(), "certificate") || strings.Contains(err.Error(), srv.Secret) {
		t.Errorf("without the CA: %v, want a certificate error without the secret", err)
	}
	for u, want := range map[string]string{
		"s3://a:s@" + srv.Addr + "/facet?tls=false&ca=" + ca.CertFile: "tls=false",
		"s3://a:s@" + srv.Addr + "/facet?tls=yes":                     "want true or false",
		"s3://a:s@" + srv.Addr + "/facet?ca=" + dir + "/missing.crt":  "CA file",
	} {
		if _, err := Open(ctx, u, Options{NoSweep: true}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s): %v, want %q", u, err, want)
		}
	}
}
