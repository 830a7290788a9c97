// Package s3test owns the test fixture of the remote storage backend: a
// real third-party S3 server (versitygw, Apache-2.0, pinned, installed by
// bench/peers/versitygw.sh into a cache outside the repository, never linked
// into Facet) running on a random loopback port over a posix directory.
package s3test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Server is a running versitygw with one bucket.
type Server struct {
	Addr, Access, Secret, Bucket string
	// CAFile, when set, is the CA of the server's TLS certificate
	// (StartTLS): URL then asks for TLS verified against it.
	CAFile string
	// Dir is versitygw's posix directory: the bucket's objects are files
	// under Dir/Bucket.
	Dir string
	// Client talks to the server directly, as root.
	Client *s3.Client
	// Stop kills the server (a backend outage); the data stays.
	Stop func()
}

// URL is the --backend URL of the server's bucket under prefix.
func (s Server) URL(prefix string) string {
	if s.CAFile != "" {
		return fmt.Sprintf("s3://%s:%s@%s/%s/%s?tls=true&ca=%s", s.Access, s.Secret, s.Addr, s.Bucket, prefix, url.QueryEscape(s.CAFile))
	}
	return fmt.Sprintf("s3://%s:%s@%s/%s/%s?tls=false", s.Access, s.Secret, s.Addr, s.Bucket, prefix)
}

// binary returns the pinned versitygw, installing it when missing. It fails
// the test when that is impossible, unless FACET_SKIP_VERSITYGW=1.
func binary(t testing.TB) string {
	t.Helper()
	if os.Getenv("FACET_SKIP_VERSITYGW") == "1" {
		t.Skip("FACET_SKIP_VERSITYGW=1")
	}
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
	cmd := exec.Command(filepath.Join(repo, "bench", "peers", "versitygw.sh"), "install")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("installing versitygw: %v\n%s\n(set FACET_SKIP_VERSITYGW=1 to skip)", err, out)
	}
	// The same cache directory as bench/peers/common.sh.
	cache := os.Getenv("FACET_PEERS_CACHE")
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			base = filepath.Join(os.Getenv("HOME"), ".cache")
		}
		cache = filepath.Join(base, "facet-bench-peers")
	}
	return filepath.Join(cache, "bin", "versitygw")
}

// FreeAddr returns an unused loopback address.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Start runs versitygw with data in a temp dir until the test ends, and
// creates the bucket "facet".
func Start(t testing.TB) Server {
	t.Helper()
	return StartTLS(t, TLS{})
}

// TLS are the PEM files of a TLS server: its certificate and key, and the
// CA that issued it (for the clients).
type TLS struct{ Cert, Key, CA string }

// StartTLS is Start serving HTTPS with files' certificate when given.
func StartTLS(t testing.TB, files TLS) Server {
	t.Helper()
	bin := binary(t)
	dir := t.TempDir()
	s := Server{Addr: FreeAddr(t), Access: "facettest", Secret: fmt.Sprintf("secret%x", time.Now().UnixNano()), Bucket: "facet", CAFile: files.CA, Dir: dir}
	args := []string{"--port", s.Addr, "--health", "/health"}
	scheme, hc := "http", &http.Client{}
	if files.Cert != "" {
		args = append(args, "--cert", files.Cert, "--key", files.Key)
		pem, err := os.ReadFile(files.CA)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		scheme, hc = "https", &http.Client{Transport: tr}
	}
	cmd := exec.Command(bin, append(args, "posix", dir)...)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+s.Access, "ROOT_SECRET_ACCESS_KEY="+s.Secret)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	var once sync.Once
	s.Stop = func() { once.Do(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) }
	t.Cleanup(s.Stop)
	up := false
	for range 300 {
		resp, err := hc.Get(scheme + "://" + s.Addr + "/health")
		if err == nil {
			resp.Body.Close()
			up = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !up {
		t.Fatalf("versitygw did not come up:\n%s", logs.String())
	}
	s.Client = s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(scheme + "://" + s.Addr), UsePathStyle: true, HTTPClient: hc,
		Credentials: credentials.NewStaticCredentialsProvider(s.Access, s.Secret, ""),
	})
	if _, err := s.Client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		t.Fatalf("create backend bucket: %v", err)
	}
	return s
}
