package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/s3/s3test"
)

// newBackend opens a Backend on a fresh versitygw with Facet bucket "b".
func newBackend(t *testing.T) *Backend {
	t.Helper()
	srv := s3test.Start(t)
	b, err := Open(context.Background(), srv.URL("pfx"), Options{PartSize: 5 << 20, SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.CreateBucket(context.Background(), "b"); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	return b
}

func etagOf(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

func sealer(body []byte) func(*storage.ObjectMeta) error {
	return func(m *storage.ObjectMeta) error {
		m.ETag = etagOf(body)
		m.Size = int64(len(body))
		return nil
	}
}

func putBytes(t *testing.T, b *Backend, bucket, key string, body []byte, meta storage.ObjectMeta) storage.ObjectInfo {
	t.Helper()
	info, err := b.PutObject(context.Background(), bucket, key, storage.PutInput{Body: bytes.NewReader(body), Meta: meta, Seal: sealer(body)})
	if err != nil {
		t.Fatalf("PutObject(%q): %v", key, err)
	}
	return info
}

func getBytes(t *testing.T, b *Backend, bucket, key string, rng *storage.Range) ([]byte, storage.ObjectInfo) {
	t.Helper()
	rc, info, err := b.GetObject(context.Background(), bucket, key, rng)
	if err != nil {
		t.Fatalf("GetObject(%q): %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return data, info
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}

func pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + i/4096)
	}
	return p
}

func TestVersity(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()

	t.Run("buckets", func(t *testing.T) {
		wantErr(t, b.CreateBucket(ctx, "b"), storage.ErrBucketExists)
		ok, err := b.BucketExists(ctx, "nope")
		if err != nil || ok {
			t.Fatalf("BucketExists(nope) = %v, %v", ok, err)
		}
		wantErr(t, b.DeleteBucket(ctx, "nope"), storage.ErrBucketNotFound)
		if err := b.CreateBucket(ctx, "tmp"); err != nil {
			t.Fatal(err)
		}
		putBytes(t, b, "tmp", "k", []byte("x"), storage.ObjectMeta{})
		wantErr(t, b.DeleteBucket(ctx, "tmp"), storage.ErrBucketNotEmpty)
		if err := b.DeleteObject(ctx, "tmp", "k"); err != nil {
			t.Fatal(err)
		}
		if err := b.DeleteBucket(ctx, "tmp"); err != nil {
			t.Fatalf("DeleteBucket(empty): %v", err)
		}
		if ok, _ := b.BucketExists(ctx, "tmp"); ok {
			t.Fatal("bucket still exists after delete")
		}
	})

	t.Run("small object round trip", func(t *testing.T) {
		body := []byte("hello, remote world")
		meta := storage.ObjectMeta{ContentType: "text/plain", UserMeta: map[string]string{"a": "é ü"}, System: map[string]string{"f": "gzip"}}
		putBytes(t, b, "b", "dir/hello.txt", body, meta)
		got, info := getBytes(t, b, "b", "dir/hello.txt", nil)
		if !bytes.Equal(got, body) {
			t.Fatalf("body = %q", got)
		}
		if info.Meta.ETag != etagOf(body) || info.Meta.Size != int64(len(body)) || info.StoredSize != int64(len(body)) {
			t.Fatalf("info = %+v", info)
		}
		if info.Meta.ContentType != "text/plain" || info.Meta.UserMeta["a"] != "é ü" || info.Meta.System["f"] != "gzip" {
			t.Fatalf("meta = %+v", info.Meta)
		}
		part, _ := getBytes(t, b, "b", "dir/hello.txt", &storage.Range{Start: 7, Length: 6})
		if string(part) != "remote" {
			t.Fatalf("range = %q", part)
		}
		_, _, err := b.GetObject(ctx, "b", "dir/hello.txt", &storage.Range{Start: 100, Length: 1})
		wantErr(t, err, storage.ErrInvalidRange)
		h, err := b.HeadObject(ctx, "b", "dir/hello.txt")
		if err != nil || h.Meta.ETag != etagOf(body) {
			t.Fatalf("Head = %+v, %v", h, err)
		}
	})

	t.Run("not found", func(t *testing.T) {
		_, _, err := b.GetObject(ctx, "b", "missing", nil)
		wantErr(t, err, storage.ErrObjectNotFound)
		_, err = b.HeadObject(ctx, "b", "missing")
		wantErr(t, err, storage.ErrObjectNotFound)
		_, _, err = b.GetObject(ctx, "nobucket", "k", nil)
		wantErr(t, err, storage.ErrBucketNotFound)
		_, err = b.PutObject(ctx, "nobucket", "k", storage.PutInput{Body: strings.NewReader("x")})
		wantErr(t, err, storage.ErrBucketNotFound)
		if err := b.DeleteObject(ctx, "b", "missing"); err != nil {
			t.Fatalf("DeleteObject(missing) = %v, want nil", err)
		}
	})

	t.Run("large metadata goes to a sidecar", func(t *testing.T) {
		um := map[string]string{}
		for i := range 40 {
			um[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", 60)
		}
		putBytes(t, b, "b", "bigmeta", []byte("data"), storage.ObjectMeta{UserMeta: um})
		_, info := getBytes(t, b, "b", "bigmeta", nil)
		if len(info.Meta.UserMeta) != 40 || info.Meta.UserMeta["k39"] != um["k39"] {
			t.Fatalf("user meta lost: %d entries", len(info.Meta.UserMeta))
		}
		// Overwrite with small metadata, then delete: the sidecar goes too.
		putBytes(t, b, "b", "bigmeta", []byte("data2"), storage.ObjectMeta{})
		if err := b.DeleteObject(ctx, "b", "bigmeta"); err != nil {
			t.Fatal(err)
		}
		if n := countKeys(t, b, b.root+".facet/meta/"); n != 0 {
			t.Fatalf("%d metadata sidecars left", n)
		}
	})

	t.Run("streamed large object", func(t *testing.T) {
		body := pattern(12<<20 + 123)
		info := putBytes(t, b, "b", "large", body, storage.ObjectMeta{System: map[string]string{"x": "y"}})
		if info.StoredSize != int64(len(body)) {
			t.Fatalf("StoredSize = %d", info.StoredSize)
		}
		got, ginfo := getBytes(t, b, "b", "large", nil)
		if !bytes.Equal(got, body) {
			t.Fatal("large body differs")
		}
		if ginfo.Meta.ETag != etagOf(body) || ginfo.Meta.System["x"] != "y" {
			t.Fatalf("meta = %+v", ginfo.Meta)
		}
		mid, _ := getBytes(t, b, "b", "large", &storage.Range{Start: 6 << 20, Length: 1000})
		if !bytes.Equal(mid, body[6<<20:6<<20+1000]) {
			t.Fatal("range across parts differs")
		}
	})

	t.Run("seal veto leaves the old object", func(t *testing.T) {
		old := []byte("old")
		putBytes(t, b, "b", "veto", old, storage.ObjectMeta{})
		veto := errors.New("vetoed")
		for _, n := range []int{10, 11 << 20} {
			_, err := b.PutObject(ctx, "b", "veto", storage.PutInput{
				Body: bytes.NewReader(pattern(n)),
				Seal: func(*storage.ObjectMeta) error { return veto },
			})
			wantErr(t, err, veto)
			got, _ := getBytes(t, b, "b", "veto", nil)
			if !bytes.Equal(got, old) {
				t.Fatalf("size %d: object replaced despite veto", n)
			}
		}
		// A body that fails mid-stream stores nothing either.
		_, err := b.PutObject(ctx, "b", "broken", storage.PutInput{Body: io.MultiReader(bytes.NewReader(pattern(6<<20)), &errReader{io.ErrUnexpectedEOF})})
		wantErr(t, err, io.ErrUnexpectedEOF)
		_, err = b.HeadObject(ctx, "b", "broken")
		wantErr(t, err, storage.ErrObjectNotFound)
		lu, err := b.cli.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &b.bucket})
		if err != nil || len(lu.Uploads) != 0 {
			t.Fatalf("backend uploads left: %d, %v", len(lu.Uploads), err)
		}
	})

	t.Run("update meta", func(t *testing.T) {
		body := []byte("meta me")
		putBytes(t, b, "b", "um", body, storage.ObjectMeta{ContentType: "a/b"})
		m := storage.ObjectMeta{ETag: etagOf(body), Size: int64(len(body)), ContentType: "c/d", UserMeta: map[string]string{"n": "1"}}
		if _, err := b.UpdateMeta(ctx, "b", "um", m); err != nil {
			t.Fatal(err)
		}
		got, info := getBytes(t, b, "b", "um", nil)
		if !bytes.Equal(got, body) || info.Meta.ContentType != "c/d" || info.Meta.UserMeta["n"] != "1" {
			t.Fatalf("after UpdateMeta: %q %+v", got, info.Meta)
		}
		_, err := b.UpdateMeta(ctx, "b", "nope", m)
		wantErr(t, err, storage.ErrObjectNotFound)
	})
}

func countKeys(t *testing.T, b *Backend, prefix string) int {
	t.Helper()
	out, err := b.cli.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Contents)
}

type errReader struct{ err error }

func (r *errReader) Read([]byte) (int, error) { return 0, r.err }

func TestVersityList(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	keys := []string{"a", "b/1", "b/2", "c", "d/x/1", "e"}
	for _, k := range keys {
		putBytes(t, b, "b", k, []byte(k), storage.ObjectMeta{})
	}
	// Another bucket's keys and internal objects never show.
	if err := b.CreateBucket(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	putBytes(t, b, "other", "zz", []byte("z"), storage.ObjectMeta{})

	var seen []string
	opts := storage.ListOptions{Delimiter: "/", MaxKeys: 2}
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("listing does not end")
		}
		res, err := b.ListObjects(ctx, "b", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Objects {
			if o.Meta.ETag != etagOf([]byte(o.Key)) {
				t.Fatalf("%s: ETag %q", o.Key, o.Meta.ETag)
			}
			seen = append(seen, o.Key)
		}
		seen = append(seen, res.CommonPrefixes...)
		if !res.IsTruncated {
			break
		}
		opts.Marker = res.NextMarker
	}
	got := strings.Join(sortedCopy(seen), ",")
	if got != "a,b/,c,d/,e" {
		t.Fatalf("listing = %s", got)
	}
	res, err := b.ListObjects(ctx, "b", storage.ListOptions{Prefix: "b/"})
	if err != nil || len(res.Objects) != 2 || res.Objects[1].Key != "b/2" {
		t.Fatalf("prefix listing = %+v, %v", res, err)
	}
	_, err = b.ListObjects(ctx, "nope", storage.ListOptions{})
	wantErr(t, err, storage.ErrBucketNotFound)
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestVersityMultipart(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	up, err := b.CreateUpload(ctx, "b", "mp", storage.ObjectMeta{ContentType: "x/y"})
	if err != nil {
		t.Fatal(err)
	}
	// A streamed PutObject in flight elsewhere is not a Facet upload; a
	// second Facet upload is.
	up2, err := b.CreateUpload(ctx, "b", "mp2", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	p1, p2 := pattern(5<<20+7), []byte("tail")
	var parts []storage.CompletePart
	for i, body := range [][]byte{p1, p2} {
		p, err := b.PutPart(ctx, "b", "mp", up.UploadID, i+1, storage.PutInput{Body: bytes.NewReader(body), Seal: func(m *storage.ObjectMeta) error {
			m.ETag, m.Size = etagOf(body), int64(len(body))
			m.Checksums = map[string]string{"CRC32": fmt.Sprint(i)}
			return nil
		}})
		if err != nil {
			t.Fatalf("PutPart %d: %v", i+1, err)
		}
		if p.StoredSize != int64(len(body)) || p.ETag != etagOf(body) {
			t.Fatalf("part = %+v", p)
		}
		parts = append(parts, storage.CompletePart{Number: i + 1, ETag: p.ETag})
	}
	// A vetoed part is not listed.
	_, err = b.PutPart(ctx, "b", "mp", up.UploadID, 3, storage.PutInput{Body: strings.NewReader("no"), Seal: func(*storage.ObjectMeta) error { return errors.New("veto") }})
	if err == nil {
		t.Fatal("vetoed part accepted")
	}
	got, trunc, err := b.ListParts(ctx, "b", "mp", up.UploadID, 0, 1)
	if err != nil || len(got) != 1 || !trunc || got[0].Number != 1 {
		t.Fatalf("ListParts page 1 = %+v %v %v", got, trunc, err)
	}
	got, trunc, err = b.ListParts(ctx, "b", "mp", up.UploadID, 1, 10)
	if err != nil || len(got) != 1 || trunc || got[0].Number != 2 || got[0].Checksums["CRC32"] != "1" {
		t.Fatalf("ListParts page 2 = %+v %v %v", got, trunc, err)
	}
	lu, err := b.ListUploads(ctx, "b", storage.ListUploadsOptions{})
	if err != nil || len(lu.Uploads) != 2 || lu.Uploads[0].Key != "mp" || lu.Uploads[0].Meta.ContentType != "x/y" {
		t.Fatalf("ListUploads = %+v, %v", lu, err)
	}
	wantErr(t, b.DeleteBucket(ctx, "b"), storage.ErrBucketNotEmpty)

	_, err = b.CompleteUpload(ctx, "b", "mp", up.UploadID, []storage.CompletePart{{Number: 1, ETag: "bad"}}, storage.ObjectMeta{})
	wantErr(t, err, storage.ErrInvalidPart)
	_, err = b.CompleteUpload(ctx, "b", "mp", up.UploadID, []storage.CompletePart{parts[1], parts[0]}, storage.ObjectMeta{})
	wantErr(t, err, storage.ErrInvalidPartOrder)

	final := storage.ObjectMeta{ETag: "abc-2", Size: int64(len(p1) + len(p2)), ContentType: "x/y"}
	info, err := b.CompleteUpload(ctx, "b", "mp", up.UploadID, parts, final)
	if err != nil {
		t.Fatalf("CompleteUpload: %v", err)
	}
	if info.Meta.PartsCount != 2 || len(info.Meta.PartSizes) != 2 || info.Meta.PartSizes[0] != int64(len(p1)) {
		t.Fatalf("complete info = %+v", info.Meta)
	}
	body, ginfo := getBytes(t, b, "b", "mp", nil)
	if !bytes.Equal(body, append(append([]byte(nil), p1...), p2...)) {
		t.Fatal("assembled body differs")
	}
	if ginfo.Meta.ETag != "abc-2" || ginfo.Meta.PartsCount != 2 {
		t.Fatalf("assembled meta = %+v", ginfo.Meta)
	}
	_, err = b.GetUpload(ctx, "b", "mp", up.UploadID)
	wantErr(t, err, storage.ErrUploadNotFound)

	if err := b.AbortUpload(ctx, "b", "mp2", up2.UploadID); err != nil {
		t.Fatalf("AbortUpload: %v", err)
	}
	wantErr(t, b.AbortUpload(ctx, "b", "mp2", up2.UploadID), storage.ErrUploadNotFound)
	_, err = b.PutPart(ctx, "b", "mp2", up2.UploadID, 1, storage.PutInput{Body: strings.NewReader("x")})
	wantErr(t, err, storage.ErrUploadNotFound)
	if n := countKeys(t, b, b.root+".facet/uploads/"); n != 0 {
		t.Fatalf("%d upload sidecars left", n)
	}
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
	wantErr(t, err, storage.ErrUnavailable)
	if strings.Contains(err.Error(), "sk@") {
		t.Fatalf("error leaks the secret: %v", err)
	}

	// A closed port is unavailable too.
	addr := s3test.FreeAddr(t)
	_, err = Open(context.Background(), "s3://ak:sk@"+addr+"/bkt?tls=false", Options{Timeout: 300 * time.Millisecond})
	wantErr(t, err, storage.ErrUnavailable)
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
