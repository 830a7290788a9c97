// Package storagetest owns the conformance suite every storage.Backend must
// pass: the semantics the S3 front end relies on (sentinel errors, Seal
// before visibility, listing with prefix/delimiter/marker, multipart), run
// against the embedded filesystem backend and the remote S3 backend alike.
package storagetest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
)

// Run runs the suite; newBackend returns a fresh, empty backend that lives
// until the test ends.
func Run(t *testing.T, newBackend func(t *testing.T) storage.Backend) {
	t.Run("Buckets", func(t *testing.T) { testBuckets(t, newBackend(t)) })
	t.Run("Objects", func(t *testing.T) { testObjects(t, withBucket(t, newBackend)) })
	t.Run("SealVeto", func(t *testing.T) { testSealVeto(t, withBucket(t, newBackend)) })
	t.Run("UpdateMeta", func(t *testing.T) { testUpdateMeta(t, withBucket(t, newBackend)) })
	t.Run("List", func(t *testing.T) { testList(t, withBucket(t, newBackend)) })
	t.Run("Multipart", func(t *testing.T) { testMultipart(t, withBucket(t, newBackend)) })
}

// withBucket returns a fresh backend holding bucket "b".
func withBucket(t *testing.T, newBackend func(t *testing.T) storage.Backend) storage.Backend {
	t.Helper()
	b := newBackend(t)
	if err := b.CreateBucket(context.Background(), "b"); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	return b
}

// ETag is the hex MD5 of body.
func ETag(body []byte) string {
	sum := md5.Sum(body)
	return hex.EncodeToString(sum[:])
}

func sealer(body []byte) func(*storage.ObjectMeta) error {
	return func(m *storage.ObjectMeta) error {
		m.ETag = ETag(body)
		m.Size = int64(len(body))
		return nil
	}
}

// Put stores body with its MD5 as ETag, set by Seal as the S3 layer does.
func Put(t *testing.T, b storage.Backend, bucket, key string, body []byte, meta storage.ObjectMeta) storage.ObjectInfo {
	t.Helper()
	info, err := b.PutObject(context.Background(), bucket, key, storage.PutInput{Body: bytes.NewReader(body), Meta: meta, Seal: sealer(body)})
	if err != nil {
		t.Fatalf("PutObject(%q): %v", key, err)
	}
	return info
}

// Get reads an object (or a range of it) whole.
func Get(t *testing.T, b storage.Backend, bucket, key string, rng *storage.Range) ([]byte, storage.ObjectInfo) {
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

// WantErr fails unless errors.Is(err, target).
func WantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}

// Pattern is n deterministic, non-repeating-looking bytes.
func Pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + i/4096)
	}
	return p
}

// ErrReader fails every Read with Err.
type ErrReader struct{ Err error }

func (r *ErrReader) Read([]byte) (int, error) { return 0, r.Err }

func testBuckets(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	if err := b.CreateBucket(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	WantErr(t, b.CreateBucket(ctx, "b"), storage.ErrBucketExists)
	if ok, err := b.BucketExists(ctx, "b"); err != nil || !ok {
		t.Fatalf("BucketExists(b) = %v, %v", ok, err)
	}
	if ok, err := b.BucketExists(ctx, "nope"); err != nil || ok {
		t.Fatalf("BucketExists(nope) = %v, %v", ok, err)
	}
	WantErr(t, b.DeleteBucket(ctx, "nope"), storage.ErrBucketNotFound)
	Put(t, b, "b", "k", []byte("x"), storage.ObjectMeta{})
	// Open multipart uploads, one with a part: with an object beside them
	// the bucket stays, uploads and all.
	var ups []storage.Upload
	for _, key := range []string{"u", "v/w"} {
		up, err := b.CreateUpload(ctx, "b", key, storage.ObjectMeta{})
		if err != nil {
			t.Fatal(err)
		}
		ups = append(ups, up)
	}
	part := []byte("part")
	if _, err := b.PutPart(ctx, "b", "u", ups[0].UploadID, 1, storage.PutInput{Body: bytes.NewReader(part), Seal: func(m *storage.ObjectMeta) error {
		m.ETag, m.Size = ETag(part), int64(len(part))
		return nil
	}}); err != nil {
		t.Fatalf("PutPart: %v", err)
	}
	WantErr(t, b.DeleteBucket(ctx, "b"), storage.ErrBucketNotEmpty)
	if _, err := b.GetUpload(ctx, "b", "u", ups[0].UploadID); err != nil {
		t.Fatalf("upload gone after a refused DeleteBucket: %v", err)
	}
	if err := b.DeleteObject(ctx, "b", "k"); err != nil {
		t.Fatal(err)
	}
	// Uploads alone do not keep a bucket: S3 aborts them and deletes it.
	if err := b.DeleteBucket(ctx, "b"); err != nil {
		t.Fatalf("DeleteBucket(only uploads): %v", err)
	}
	_, err := b.GetUpload(ctx, "b", "u", ups[0].UploadID)
	WantErr(t, err, storage.ErrBucketNotFound)
	if ok, _ := b.BucketExists(ctx, "b"); ok {
		t.Fatal("bucket still exists after delete")
	}
	_, _, err = b.GetObject(ctx, "b", "k", nil)
	WantErr(t, err, storage.ErrBucketNotFound)
	_, err = b.PutObject(ctx, "b", "k", storage.PutInput{Body: strings.NewReader("x")})
	WantErr(t, err, storage.ErrBucketNotFound)
	_, err = b.ListObjects(ctx, "b", storage.ListOptions{})
	WantErr(t, err, storage.ErrBucketNotFound)
	_, err = b.CreateUpload(ctx, "b", "k", storage.ObjectMeta{})
	WantErr(t, err, storage.ErrBucketNotFound)

	// A bucket made again under the name inherits none of the uploads.
	if err := b.CreateBucket(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if lu, err := b.ListUploads(ctx, "b", storage.ListUploadsOptions{}); err != nil || len(lu.Uploads) != 0 {
		t.Fatalf("ListUploads of the new bucket = %+v, %v", lu, err)
	}
	for _, up := range ups {
		_, err := b.GetUpload(ctx, "b", up.Key, up.UploadID)
		WantErr(t, err, storage.ErrUploadNotFound)
	}
	if err := b.DeleteBucket(ctx, "b"); err != nil {
		t.Fatalf("DeleteBucket(new, empty): %v", err)
	}
}

func testObjects(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	body := []byte("hello, storage world")
	meta := storage.ObjectMeta{ContentType: "text/plain", UserMeta: map[string]string{"a": "é ü"}, System: map[string]string{"f": "gzip"}}
	Put(t, b, "b", "dir/hello.txt", body, meta)
	got, info := Get(t, b, "b", "dir/hello.txt", nil)
	if !bytes.Equal(got, body) {
		t.Fatalf("body = %q", got)
	}
	if info.Meta.ETag != ETag(body) || info.Meta.Size != int64(len(body)) || info.StoredSize != int64(len(body)) {
		t.Fatalf("info = %+v", info)
	}
	if info.Meta.ContentType != "text/plain" || info.Meta.UserMeta["a"] != "é ü" || info.Meta.System["f"] != "gzip" {
		t.Fatalf("meta = %+v", info.Meta)
	}
	part, _ := Get(t, b, "b", "dir/hello.txt", &storage.Range{Start: 7, Length: 7})
	if string(part) != "storage" {
		t.Fatalf("range = %q", part)
	}
	_, _, err := b.GetObject(ctx, "b", "dir/hello.txt", &storage.Range{Start: 100, Length: 1})
	WantErr(t, err, storage.ErrInvalidRange)
	h, err := b.HeadObject(ctx, "b", "dir/hello.txt")
	if err != nil || h.Meta.ETag != ETag(body) || h.StoredSize != int64(len(body)) {
		t.Fatalf("Head = %+v, %v", h, err)
	}

	// Overwrite, with metadata large enough to exceed S3's 2 KB header
	// budget: it must survive whole.
	um := map[string]string{}
	for i := range 40 {
		um[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", 60)
	}
	Put(t, b, "b", "dir/hello.txt", []byte("v2"), storage.ObjectMeta{UserMeta: um})
	got, info = Get(t, b, "b", "dir/hello.txt", nil)
	if string(got) != "v2" || len(info.Meta.UserMeta) != 40 || info.Meta.UserMeta["k39"] != um["k39"] {
		t.Fatalf("after overwrite: %q, %d user meta entries", got, len(info.Meta.UserMeta))
	}

	// Larger than any single buffer or part: streamed, ranges across parts.
	large := Pattern(12<<20 + 123)
	linfo := Put(t, b, "b", "large", large, storage.ObjectMeta{System: map[string]string{"x": "y"}})
	if linfo.StoredSize != int64(len(large)) {
		t.Fatalf("StoredSize = %d", linfo.StoredSize)
	}
	got, info = Get(t, b, "b", "large", nil)
	if !bytes.Equal(got, large) || info.Meta.ETag != ETag(large) || info.Meta.System["x"] != "y" {
		t.Fatalf("large object differs (%d bytes, meta %+v)", len(got), info.Meta)
	}
	mid, _ := Get(t, b, "b", "large", &storage.Range{Start: 5<<20 - 10, Length: 1000})
	if !bytes.Equal(mid, large[5<<20-10:5<<20+990]) {
		t.Fatal("range across parts differs")
	}

	_, _, err = b.GetObject(ctx, "b", "missing", nil)
	WantErr(t, err, storage.ErrObjectNotFound)
	_, err = b.HeadObject(ctx, "b", "missing")
	WantErr(t, err, storage.ErrObjectNotFound)
	if err := b.DeleteObject(ctx, "b", "missing"); err != nil {
		t.Fatalf("DeleteObject(missing) = %v, want nil", err)
	}
	for _, k := range []string{"dir/hello.txt", "large"} {
		if err := b.DeleteObject(ctx, "b", k); err != nil {
			t.Fatal(err)
		}
		_, err = b.HeadObject(ctx, "b", k)
		WantErr(t, err, storage.ErrObjectNotFound)
	}
}

func testSealVeto(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	old := []byte("old")
	Put(t, b, "b", "veto", old, storage.ObjectMeta{})
	veto := errors.New("vetoed")
	for _, n := range []int{10, 11 << 20} {
		_, err := b.PutObject(ctx, "b", "veto", storage.PutInput{
			Body: bytes.NewReader(Pattern(n)),
			Seal: func(*storage.ObjectMeta) error { return veto },
		})
		WantErr(t, err, veto)
		got, _ := Get(t, b, "b", "veto", nil)
		if !bytes.Equal(got, old) {
			t.Fatalf("size %d: object replaced despite veto", n)
		}
	}
	// A body that fails mid-stream stores nothing either.
	_, err := b.PutObject(ctx, "b", "broken", storage.PutInput{Body: io.MultiReader(bytes.NewReader(Pattern(6<<20)), &ErrReader{io.ErrUnexpectedEOF})})
	WantErr(t, err, io.ErrUnexpectedEOF)
	_, err = b.HeadObject(ctx, "b", "broken")
	WantErr(t, err, storage.ErrObjectNotFound)
	lu, err := b.ListUploads(ctx, "b", storage.ListUploadsOptions{})
	if err != nil || len(lu.Uploads) != 0 {
		t.Fatalf("uploads after failed puts: %+v, %v", lu.Uploads, err)
	}
}

func testUpdateMeta(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	body := []byte("meta me")
	Put(t, b, "b", "um", body, storage.ObjectMeta{ContentType: "a/b"})
	m := storage.ObjectMeta{ETag: ETag(body), Size: int64(len(body)), ContentType: "c/d", UserMeta: map[string]string{"n": "1"}}
	if _, err := b.UpdateMeta(ctx, "b", "um", m); err != nil {
		t.Fatal(err)
	}
	got, info := Get(t, b, "b", "um", nil)
	if !bytes.Equal(got, body) || info.Meta.ContentType != "c/d" || info.Meta.UserMeta["n"] != "1" || info.Meta.ETag != ETag(body) {
		t.Fatalf("after UpdateMeta: %q %+v", got, info.Meta)
	}
	_, err := b.UpdateMeta(ctx, "b", "nope", m)
	WantErr(t, err, storage.ErrObjectNotFound)
}

// RefList is the listing S3 defines, by brute force over the sorted keys:
// keys after the marker with the prefix, rolled up at the first delimiter
// after the prefix, a prefix equal to the marker not repeated, at most max
// entries.
func RefList(keys []string, o storage.ListOptions) (entries []string, truncated bool) {
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	last := ""
	for _, k := range sorted {
		if k <= o.Marker || !strings.HasPrefix(k, o.Prefix) {
			continue
		}
		e := k
		if o.Delimiter != "" {
			if i := strings.Index(k[len(o.Prefix):], o.Delimiter); i >= 0 {
				e = "P:" + k[:len(o.Prefix)+i+len(o.Delimiter)]
				if e == last || e[2:] == o.Marker {
					continue
				}
			}
		}
		if len(entries) == o.MaxKeys {
			return entries, true
		}
		entries = append(entries, e)
		last = e
	}
	return entries, false
}

// Flatten is a page as RefList shows it: keys, and common prefixes
// marked "P:", in lexical order.
func Flatten(res storage.ListResult) []string {
	var out []string
	for _, o := range res.Objects {
		out = append(out, o.Key)
	}
	for _, p := range res.CommonPrefixes {
		out = append(out, "P:"+p)
	}
	slices.SortFunc(out, func(a, b string) int {
		return strings.Compare(strings.TrimPrefix(a, "P:"), strings.TrimPrefix(b, "P:"))
	})
	return out
}

// listKeys avoid a key that is also a "directory" of another key ("a" and
// "a/b"): filesystem-backed S3 servers (versitygw's posix backend) cannot
// hold both, and the suite must run against them.
var listKeys = []string{
	"a/b", "a/c", "a/d/e", "ab", "b/x", "b/y/z", "c", "d/\u00e9", "d/\u00e9x/f",
	"photos/2024/jan/1.jpg", "photos/2024/feb/2.jpg", "photos/2025/x.jpg",
	"z\u00ff", "\U0001F600/a", "-", "%", "x::y::z", "x:",
}

func testList(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	for _, k := range listKeys {
		Put(t, b, "b", k, []byte(k), storage.ObjectMeta{})
	}
	// Another bucket's keys never show.
	if err := b.CreateBucket(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	Put(t, b, "other", "a/zz", []byte("z"), storage.ObjectMeta{})

	markers := []string{"", "a/", "a/b", "b/", "photos/2024/", "photos/2024/jan/1.jpg", "x:", "zzzz"}
	for _, p := range []string{"", "a", "a/", "photos/", "photos/2024/", "x::", "nothing"} {
		for _, d := range []string{"", "/", "::"} {
			for _, m := range markers {
				for _, max := range []int{1, 2, 1000} {
					o := storage.ListOptions{Prefix: p, Delimiter: d, Marker: m, MaxKeys: max}
					res, err := b.ListObjects(ctx, "b", o)
					if err != nil {
						t.Fatal(err)
					}
					want, wantTrunc := RefList(listKeys, o)
					got := Flatten(res)
					if !slices.Equal(got, want) || res.IsTruncated != wantTrunc {
						t.Fatalf("%+v:\n got %q trunc=%v\nwant %q trunc=%v", o, got, res.IsTruncated, want, wantTrunc)
					}
					if wantTrunc && res.NextMarker != strings.TrimPrefix(got[len(got)-1], "P:") {
						t.Fatalf("%+v: NextMarker %q, last entry %q", o, res.NextMarker, got[len(got)-1])
					}
					for _, obj := range res.Objects {
						if obj.Meta.ETag != ETag([]byte(obj.Key)) || obj.Meta.Size != int64(len(obj.Key)) {
							t.Fatalf("%s: listed meta %+v", obj.Key, obj.Meta)
						}
					}
				}
			}
		}
	}
}

func testMultipart(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	up, err := b.CreateUpload(ctx, "b", "mp", storage.ObjectMeta{ContentType: "x/y"})
	if err != nil {
		t.Fatal(err)
	}
	up2, err := b.CreateUpload(ctx, "b", "mp2", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := b.GetUpload(ctx, "b", "mp", up.UploadID); err != nil || g.Meta.ContentType != "x/y" {
		t.Fatalf("GetUpload = %+v, %v", g, err)
	}
	_, err = b.GetUpload(ctx, "b", "other-key", up.UploadID)
	WantErr(t, err, storage.ErrUploadNotFound)

	p1, p2 := Pattern(5<<20+7), []byte("tail")
	var parts []storage.CompletePart
	for i, body := range [][]byte{p1, p2} {
		p, err := b.PutPart(ctx, "b", "mp", up.UploadID, i+1, storage.PutInput{Body: bytes.NewReader(body), Seal: func(m *storage.ObjectMeta) error {
			m.ETag, m.Size = ETag(body), int64(len(body))
			m.Checksums = map[string]string{"CRC32": fmt.Sprint(i)}
			return nil
		}})
		if err != nil {
			t.Fatalf("PutPart %d: %v", i+1, err)
		}
		if p.StoredSize != int64(len(body)) || p.ETag != ETag(body) || p.Number != i+1 {
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
	if err != nil || len(got) != 1 || trunc || got[0].Number != 2 || got[0].Checksums["CRC32"] != "1" || got[0].Size != 4 {
		t.Fatalf("ListParts page 2 = %+v %v %v", got, trunc, err)
	}
	lu, err := b.ListUploads(ctx, "b", storage.ListUploadsOptions{})
	if err != nil || len(lu.Uploads) != 2 || lu.Uploads[0].Key != "mp" || lu.Uploads[0].Meta.ContentType != "x/y" || lu.Uploads[1].Key != "mp2" {
		t.Fatalf("ListUploads = %+v, %v", lu, err)
	}

	_, err = b.CompleteUpload(ctx, "b", "mp", up.UploadID, []storage.CompletePart{{Number: 1, ETag: "bad"}}, storage.ObjectMeta{})
	WantErr(t, err, storage.ErrInvalidPart)
	_, err = b.CompleteUpload(ctx, "b", "mp", up.UploadID, []storage.CompletePart{{Number: 9, ETag: "x"}}, storage.ObjectMeta{})
	WantErr(t, err, storage.ErrInvalidPart)
	_, err = b.CompleteUpload(ctx, "b", "mp", up.UploadID, []storage.CompletePart{parts[1], parts[0]}, storage.ObjectMeta{})
	WantErr(t, err, storage.ErrInvalidPartOrder)

	final := storage.ObjectMeta{ETag: "abc-2", Size: int64(len(p1) + len(p2)), ContentType: "x/y"}
	info, err := b.CompleteUpload(ctx, "b", "mp", up.UploadID, parts, final)
	if err != nil {
		t.Fatalf("CompleteUpload: %v", err)
	}
	if info.Meta.PartsCount != 2 || !slices.Equal(info.Meta.PartSizes, []int64{int64(len(p1)), int64(len(p2))}) || info.StoredSize != final.Size {
		t.Fatalf("complete info = %+v", info)
	}
	body, ginfo := Get(t, b, "b", "mp", nil)
	if !bytes.Equal(body, append(slices.Clone(p1), p2...)) {
		t.Fatal("assembled body differs")
	}
	if ginfo.Meta.ETag != "abc-2" || ginfo.Meta.PartsCount != 2 || ginfo.Meta.ContentType != "x/y" {
		t.Fatalf("assembled meta = %+v", ginfo.Meta)
	}
	_, err = b.GetUpload(ctx, "b", "mp", up.UploadID)
	WantErr(t, err, storage.ErrUploadNotFound)

	if err := b.AbortUpload(ctx, "b", "mp2", up2.UploadID); err != nil {
		t.Fatalf("AbortUpload: %v", err)
	}
	WantErr(t, b.AbortUpload(ctx, "b", "mp2", up2.UploadID), storage.ErrUploadNotFound)
	_, err = b.PutPart(ctx, "b", "mp2", up2.UploadID, 1, storage.PutInput{Body: strings.NewReader("x")})
	WantErr(t, err, storage.ErrUploadNotFound)
	lu, err = b.ListUploads(ctx, "b", storage.ListUploadsOptions{})
	if err != nil || len(lu.Uploads) != 0 {
		t.Fatalf("ListUploads after complete and abort = %+v, %v", lu, err)
	}
}
