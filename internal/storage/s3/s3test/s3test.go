// Package s3test owns the test fixture of the remote storage backend: a
// real third-party S3 server (versitygw, Apache-2.0, pinned, installed by
// bench/peers/versitygw.sh into a cache outside the repository, never linked
// into Facet) running on a random loopback port over a posix directory.
package s3test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
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
	// Client talks to the server directly, as root.
	Client *s3.Client
	// Stop kills the server (a backend outage); the data stays.
	Stop func()
}

// URL is the --backend URL of the server's bucket under prefix.
func (s Server) URL(prefix string) string {
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
	bin := binary(t)
	dir := t.TempDir()
	s := Server{Addr: FreeAddr(t), Access: "facettest", Secret: fmt.Sprintf("secret%x", time.Now().UnixNano()), Bucket: "facet"}
	cmd := exec.Command(bin, "--port", s.Addr, "--health", "/health", "posix", dir)
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
		resp, err := http.Get("http://" + s.Addr + "/health")
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
		Region: "us-east-1", BaseEndpoint: aws.String("http://" + s.Addr), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s.Access, s.Secret, ""),
	})
	if _, err := s.Client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		t.Fatalf("create backend bucket: %v", err)
	}
	return s
}
