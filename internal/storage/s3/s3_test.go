package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/s3/s3test"
	"github.com/facet-sds/facet/internal/storage/storagetest"
)

// newBackend opens a Backend on a fresh versitygw with Facet bucket "b".
func newBackend(t *testing.T) *Backend {
	t.Helper()
	b := open(t, s3test.Start(t).URL("pfx"))
	if err := b.CreateBucket(context.Background(), "b"); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	return b
}

func TestConformance(t *testing.T) {
	srv := s3test.Start(t)
	n := 0
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		// One server, a fresh prefix per backend: prefixes isolate fully.
		n++
		return open(t, srv.URL(fmt.Sprintf("c%d", n)))
	})
}

func open(t *testing.T, url string) *Backend {
	t.Helper()
	b, err := Open(context.Background(), url, Options{PartSize: 5 << 20, SpoolDir: t.TempDir(), NoSweep: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// TestInternalObjectsCleaned: metadata sidecars, upload sidecars and the
// streaming uploads of failed PutObjects do not outlive their use.
func TestInternalObjectsCleaned(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	um := map[string]string{}
	for i := range 40 {
		um[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", 60)
	}
	storagetest.Put(t, b, "b", "big", []byte("data"), storage.ObjectMeta{UserMeta: um})
	storagetest.Put(t, b, "b", "big", []byte("data2"), storage.ObjectMeta{UserMeta: um})
	// A small PUT does not HEAD the object it replaces: the replaced
	// object's sidecar is left to the sweep.
	if n := countKeys(t, b, b.root+".facet/meta/"); n != 2 {
		t.Fatalf("%d metadata sidecars after overwrite, want 2", n)
	}
	if n, err := b.sweepSidecars(ctx, 0); err != nil || n != 1 {
		t.Fatalf("the sweep deleted %d sidecars (%v), want the one orphaned", n, err)
	}
	if n, err := b.sweepSidecars(ctx, 0); err != nil || n != 0 {
		t.Fatalf("the sweep deleted %d sidecars (%v) where none is orphaned", n, err)
	}
	if got, _ := storagetest.Get(t, b, "b", "big", nil); string(got) != "data2" {
		t.Fatalf("after the sweep the object reads %q", got)
	}
	large := storagetest.Pattern(11 << 20)
	storagetest.Put(t, b, "b", "large", large, storage.ObjectMeta{})
	// A streamed PUT replaces the object's sidecar (its HEAD runs beside
	// the parts' upload).
	storagetest.Put(t, b, "b", "large", large, storage.ObjectMeta{})
	if n := countKeys(t, b, b.root+".facet/meta/"); n != 2 {
		t.Fatalf("%d metadata sidecars after a streamed overwrite, want 2 (big's and large's)", n)
	}
	if err := b.DeleteObject(ctx, "b", "big"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteObject(ctx, "b", "large"); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, b, b.root+".facet/meta/"); n != 0 {
		t.Fatalf("%d metadata sidecars left", n)
	}

	_, err := b.PutObject(ctx, "b", "broken", storage.PutInput{Body: io.MultiReader(bytes.NewReader(large), &storagetest.ErrReader{Err: io.ErrUnexpectedEOF})})
	storagetest.WantErr(t, err, io.ErrUnexpectedEOF)
	lu, err := b.cli.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &b.bucket})
	if err != nil || len(lu.Uploads) != 0 {
		t.Fatalf("backend uploads left: %d, %v", len(lu.Uploads), err)
	}

	up, err := b.CreateUpload(ctx, "b", "mp", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutPart(ctx, "b", "mp", up.UploadID, 1, storage.PutInput{Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if err := b.AbortUpload(ctx, "b", "mp", up.UploadID); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, b, b.root+".facet/uploads/"); n != 0 {
		t.Fatalf("%d upload sidecars left", n)
	}
	// Nothing internal leaks into listings.
	storagetest.Put(t, b, "b", "only", []byte("x"), storage.ObjectMeta{})
	res, err := b.ListObjects(ctx, "b", storage.ListOptions{})
	if err != nil || len(res.Objects) != 1 || res.Objects[0].Key != "only" {
		t.Fatalf("listing = %+v, %v", res, err)
	}
}

// TestDeleteBucketAbortsUploads: a bucket whose only content is open
// uploads is deleted, and nothing of them stays on the backend: Facet's
// uploads, their sidecars, and a streaming PutObject's own upload left by
// a crash (made here directly on the backend).
func TestDeleteBucketAbortsUploads(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	for _, key := range []string{"mp", "dir/mp"} {
		up, err := b.CreateUpload(ctx, "b", key, storage.ObjectMeta{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.PutPart(ctx, "b", key, up.UploadID, 1, storage.PutInput{Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	full := b.objKey("b", "crashed-put")
	if _, err := b.cli.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b.bucket, Key: &full}); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteBucket(ctx, "b"); err != nil {
		t.Fatalf("DeleteBucket: %v", err)
	}
	lu, err := b.cli.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &b.bucket})
	if err != nil || len(lu.Uploads) != 0 {
		t.Fatalf("backend uploads left: %d, %v", len(lu.Uploads), err)
	}
	if n := countKeys(t, b, b.root+".facet/uploads/"); n != 0 {
		t.Fatalf("%d upload sidecars left", n)
	}
	if ok, err := b.BucketExists(ctx, "b"); err != nil || ok {
		t.Fatalf("BucketExists after delete = %v, %v", ok, err)
	}
}

func countKeys(t *testing.T, b *Backend, prefix string) int {
	t.Helper()
	out, err := b.cli.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Contents)
}

// TestUnavailable: a backend that accepts connections but never answers
// yields ErrUnavailable within the call timeout, not a hang.
func TestUnavailable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	_, err = Open(context.Background(), "s3://ak:sk@"+l.Addr().String()+"/bkt?tls=false", Options{Timeout: 300 * time.Millisecond})
	storagetest.WantErr(t, err, storage.ErrUnavailable)
	if strings.Contains(err.Error(), "sk@") {
		t.Fatalf("error leaks the secret: %v", err)
	}

	// A closed port is unavailable too.
	addr := s3test.FreeAddr(t)
	_, err = Open(context.Background(), "s3://ak:sk@"+addr+"/bkt?tls=false", Options{Timeout: 300 * time.Millisecond})
	storagetest.WantErr(t, err, storage.ErrUnavailable)
}

func TestOpenURL(t *testing.T) {
	t.Setenv("FACET_BACKEND_ACCESS_KEY", "")
	t.Setenv("FACET_BACKEND_SECRET_KEY", "")
	for _, u := range []string{"http://h/b", "s3://h/b?tls=false", "s3://a:s@h/?tls=false"} {
		if _, err := Open(context.Background(), u, Options{}); err == nil {
			t.Errorf("Open(%q) accepted", u)
		}
	}
	_, err := Open(context.Background(), "s3://a:supersecret@%zz/b", Options{})
	if err == nil || strings.Contains(err.Error(), "supersecret") {
		t.Fatalf("malformed URL: %v", err)
	}
}

// hangingTransport answers normally until hang is set, then never answers.
type hangingTransport struct{ hang atomic.Bool }

func (h *hangingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.hang.Load() {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestBackendStopsAnswering: once the backend stops answering, every call,
// GET included, fails with ErrUnavailable instead of waiting forever.
func TestBackendStopsAnswering(t *testing.T) {
	srv := s3test.Start(t)
	tr := &hangingTransport{}
	b, err := Open(context.Background(), srv.URL("h"), Options{Timeout: 300 * time.Millisecond, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.CreateBucket(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	storagetest.Put(t, b, "b", "k", []byte("v"), storage.ObjectMeta{})
	tr.hang.Store(true)
	_, _, err = b.GetObject(ctx, "b", "k", nil)
	storagetest.WantErr(t, err, storage.ErrUnavailable)
	_, err = b.HeadObject(ctx, "b", "k")
	storagetest.WantErr(t, err, storage.ErrUnavailable)
	_, err = b.PutObject(ctx, "b", "k2", storage.PutInput{Body: strings.NewReader("x")})
	storagetest.WantErr(t, err, storage.ErrUnavailable)
	_, err = b.ListObjects(ctx, "b", storage.ListOptions{})
	storagetest.WantErr(t, err, storage.ErrUnavailable)
}

// stallingTransport answers normally until stall is set; then a response's
// body yields its first read and nothing more.
type stallingTransport struct{ stall atomic.Bool }

func (s *stallingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && s.stall.Load() {
		resp.Body = &stallingBody{ReadCloser: resp.Body, ctx: r.Context()}
	}
	return resp, err
}

type stallingBody struct {
	io.ReadCloser
	ctx   context.Context
	first bool
}

func (b *stallingBody) Read(p []byte) (int, error) {
	if !b.first {
		b.first = true
		return b.ReadCloser.Read(p)
	}
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

// TestGetBodyStalls: a backend that stops sending in the middle of a GET's
// body fails the read with ErrUnavailable after the call timeout instead of
// holding the client's GET forever; a reader that is merely slow between
// reads is not cut off.
func TestGetBodyStalls(t *testing.T) {
	srv := s3test.Start(t)
	tr := &stallingTransport{}
	b, err := Open(context.Background(), srv.URL("st"), Options{Timeout: 300 * time.Millisecond, HTTPClient: &http.Client{Transport: tr}, NoSweep: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	if err := b.CreateBucket(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	body := storagetest.Pattern(1 << 20)
	storagetest.Put(t, b, "b", "k", body, storage.ObjectMeta{})

	// Slow between reads, longer than the timeout: still whole.
	rc, _, err := b.GetObject(ctx, "b", "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 256<<10)
	for {
		n, err := rc.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("a slow reader's GET failed: %v", err)
		}
		time.Sleep(400 * time.Millisecond)
	}
	rc.Close()
	if !bytes.Equal(got, body) {
		t.Fatalf("a slow reader got %d bytes, not the %d written", len(got), len(body))
	}

	tr.stall.Store(true)
	rc, _, err = b.GetObject(ctx, "b", "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	storagetest.WantErr(t, err, storage.ErrUnavailable)
}

// TestKeyTooLong: a key that S3 allows but that does not fit the backend
// under the prefix and bucket, or that the backend itself refuses as too
// long, is ErrKeyTooLong (KeyTooLongError for the client), not a failure.
func TestKeyTooLong(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	// Short path elements: versitygw's posix store holds 255 bytes each.
	n := 1024 - len(b.objKey("b", "")) + 1
	long := strings.Repeat("k", n%8) + strings.Repeat("/kkkkkkk", n/8)
	_, err := b.PutObject(ctx, "b", long, storage.PutInput{Body: strings.NewReader("x")})
	storagetest.WantErr(t, err, storage.ErrKeyTooLong)
	_, err = b.CreateUpload(ctx, "b", long, storage.ObjectMeta{})
	storagetest.WantErr(t, err, storage.ErrKeyTooLong)
	storagetest.Put(t, b, "b", long[1:], []byte("x"), storage.ObjectMeta{})
	// versitygw's posix store refuses a path element over 255 bytes with
	// KeyTooLongError.
	_, err = b.PutObject(ctx, "b", strings.Repeat("e", 300), storage.PutInput{Body: strings.NewReader("x")})
	storagetest.WantErr(t, err, storage.ErrKeyTooLong)
}

// TestCredentialsFromEnv: a backend URL without user info takes its keys
// from FACET_BACKEND_ACCESS_KEY / FACET_BACKEND_SECRET_KEY; keys in the URL
// beat the environment.
func TestCredentialsFromEnv(t *testing.T) {
	srv := s3test.Start(t)
	bare := fmt.Sprintf("s3://%s/%s/env?tls=false", srv.Addr, srv.Bucket)
	t.Setenv("FACET_BACKEND_ACCESS_KEY", srv.Access)
	t.Setenv("FACET_BACKEND_SECRET_KEY", srv.Secret)
	b := open(t, bare)
	if err := b.CreateBucket(context.Background(), "b"); err != nil {
		t.Fatalf("CreateBucket with keys from the environment: %v", err)
	}
	storagetest.Put(t, b, "b", "k", []byte("v"), storage.ObjectMeta{})
	open(t, srv.URL("env")) // the URL's keys, right, beat the environment's

	t.Setenv("FACET_BACKEND_SECRET_KEY", "wrong")
	if _, err := Open(context.Background(), bare, Options{NoSweep: true}); err == nil {
		t.Fatal("a wrong secret from the environment was accepted")
	}
	t.Setenv("FACET_BACKEND_ACCESS_KEY", "wrong")
	open(t, srv.URL("env"))
}

// TestSmallNonLastParts: parts that filters shrank below S3's 5 MiB minimum
// (compressed parts), mixed with big ones, complete into one object that
// reads back byte for byte, whole and by range; nothing of the upload is
// left in the backend.
func TestSmallNonLastParts(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	for name, sizes := range map[string][]int{
		"all small":       {1 << 20, 2 << 20, 300 << 10, 17},
		"small then big":  {3 << 20, 6 << 20, 1 << 20, 6<<20 + 5},
		"big then small":  {6 << 20, 100, 7 << 20},
		"big only (copy)": {5 << 20, 6 << 20},
		"one tiny part":   {5},
		"empty last part": {2 << 20, 0},
		"buffer boundary": {4 << 20, 4 << 20, 4 << 20},
	} {
		t.Run(name, func(t *testing.T) {
			key := "mp-" + strings.ReplaceAll(name, " ", "-")
			up, err := b.CreateUpload(ctx, "b", key, storage.ObjectMeta{})
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			var done []storage.CompletePart
			for i, n := range sizes {
				body := storagetest.Pattern(n)
				body = append([]byte(nil), body...)
				if len(body) > 0 {
					body[0] = byte(i) // parts differ
				}
				want = append(want, body...)
				etag := fmt.Sprintf("etag%d", i+1)
				if _, err := b.PutPart(ctx, "b", key, up.UploadID, i+1, storage.PutInput{Body: bytes.NewReader(body), Meta: storage.ObjectMeta{ETag: etag, Size: int64(n)}}); err != nil {
					t.Fatalf("part %d: %v", i+1, err)
				}
				done = append(done, storage.CompletePart{Number: i + 1, ETag: etag})
			}
			info, err := b.CompleteUpload(ctx, "b", key, up.UploadID, done, storage.ObjectMeta{Size: int64(len(want)), ETag: "x-2"})
			if err != nil {
				t.Fatalf("complete: %v", err)
			}
			if info.StoredSize != int64(len(want)) {
				t.Fatalf("stored size %d, want %d", info.StoredSize, len(want))
			}
			got, _ := storagetest.Get(t, b, "b", key, nil)
			if !bytes.Equal(got, want) {
				t.Fatalf("read back %d bytes differing from the %d written", len(got), len(want))
			}
			if len(want) > 10 {
				start := int64(len(want)/2 - 5)
				mid, _ := storagetest.Get(t, b, "b", key, &storage.Range{Start: start, Length: 10})
				if !bytes.Equal(mid, want[start:start+10]) {
					t.Fatalf("range read differs")
				}
			}
			if n := countKeys(t, b, b.uploadDir(up.UploadID)); n != 0 {
				t.Fatalf("%d objects of the completed upload left in the backend", n)
			}
		})
	}
}

// TestSidecarSweep: the sweep keeps the sidecar an object points at, sidecars
// younger than the grace, and untagged ones; it deletes those no object
// points at (a crashed write's, a deleted object's).
func TestSidecarSweep(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	um := map[string]string{}
	for i := range 40 {
		um[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", 60)
	}
	storagetest.Put(t, b, "b", "o", []byte("1"), storage.ObjectMeta{UserMeta: um})
	storagetest.Put(t, b, "b", "gone", []byte("x"), storage.ObjectMeta{UserMeta: um})
	// A sidecar left by a crash between writing it and its object.
	if err := b.putSmall(ctx, b.metaSidecar("crashed"), []byte("{}"), sidecarTag(b.objKey("b", "o"))); err != nil {
		t.Fatal(err)
	}
	// A sidecar written by an older Facet carries no object tag.
	if err := b.putSmall(ctx, b.metaSidecar("untagged"), []byte("{}"), nil); err != nil {
		t.Fatal(err)
	}
	// Gone without DeleteObject's own cleanup: its sidecar is orphaned.
	if err := b.deleteKey(ctx, b.objKey("b", "gone")); err != nil {
		t.Fatal(err)
	}
	if n, err := b.sweepSidecars(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("young sidecars swept: %d %v", n, err)
	}
	if n, err := b.sweepSidecars(ctx, 0); err != nil || n != 2 {
		t.Fatalf("the sweep deleted %d (%v); want 2 (the crashed write's and the deleted object's)", n, err)
	}
	if n := countKeys(t, b, b.root+".facet/meta/"); n != 2 {
		t.Fatalf("%d sidecars left; want 2 (the live object's and the untagged one)", n)
	}
	if info, err := b.HeadObject(ctx, "b", "o"); err != nil || len(info.Meta.UserMeta) != 40 {
		t.Fatalf("the live object lost its metadata: %+v %v", info.Meta.UserMeta, err)
	}
}
