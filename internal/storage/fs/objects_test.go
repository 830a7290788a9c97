package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
)

func TestPutGetOverwriteDelete(t *testing.T) {
	s, dir := newStore(t)
	ctx := context.Background()

	v1 := bytes.Repeat([]byte("one "), 1000)
	info := putBytes(t, s, "b", "k", v1)
	if info.StoredSize != int64(len(v1)) || info.Meta.ETag != etagOf(v1) || info.Meta.Size != int64(len(v1)) {
		t.Fatalf("put info = %+v", info)
	}
	got, ginfo := getBytes(t, s, "b", "k", nil)
	if !bytes.Equal(got, v1) || ginfo.Meta.ETag != etagOf(v1) || ginfo.Meta.ContentType != "application/octet-stream" {
		t.Fatalf("get = %d bytes, info %+v", len(got), ginfo)
	}

	v2 := []byte("two")
	putBytes(t, s, "b", "k", v2)
	if got, _ := getBytes(t, s, "b", "k", nil); !bytes.Equal(got, v2) {
		t.Fatalf("after overwrite got %q", got)
	}
	if n := len(dataFiles(t, dir)); n != 1 {
		t.Fatalf("after overwrite %d data files, want 1 (old file removed)", n)
	}
	head, err := s.HeadObject(ctx, "b", "k")
	if err != nil || head.Meta.ETag != etagOf(v2) || head.StoredSize != 3 {
		t.Fatalf("HeadObject = %+v, %v", head, err)
	}

	if err := s.DeleteObject(ctx, "b", "k"); err != nil {
		t.Fatalf("DeleteObject: %v", err)
	}
	if err := s.DeleteObject(ctx, "b", "k"); err != nil {
		t.Fatalf("DeleteObject of a missing key: %v", err)
	}
	_, _, err = s.GetObject(ctx, "b", "k", nil)
	wantErr(t, err, storage.ErrObjectNotFound)
	_, err = s.HeadObject(ctx, "b", "k")
	wantErr(t, err, storage.ErrObjectNotFound)
	if n := len(dataFiles(t, dir)); n != 0 {
		t.Fatalf("after delete %d data files remain", n)
	}

	// Empty objects are objects too.
	putBytes(t, s, "b", "empty", nil)
	if got, info := getBytes(t, s, "b", "empty", nil); len(got) != 0 || info.StoredSize != 0 {
		t.Fatalf("empty object: %q %+v", got, info)
	}
}

func TestMissingBucket(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	_, err := s.PutObject(ctx, "nope", "k", storage.PutInput{Body: strings.NewReader("x")})
	wantErr(t, err, storage.ErrBucketNotFound)
	_, _, err = s.GetObject(ctx, "nope", "k", nil)
	wantErr(t, err, storage.ErrBucketNotFound)
	_, err = s.ListObjects(ctx, "nope", storage.ListOptions{})
	wantErr(t, err, storage.ErrBucketNotFound)
	wantErr(t, s.DeleteObject(ctx, "nope", "k"), storage.ErrBucketNotFound)
	_, err = s.CreateUpload(ctx, "nope", "k", storage.ObjectMeta{})
	wantErr(t, err, storage.ErrBucketNotFound)
	wantErr(t, s.DeleteBucket(ctx, "nope"), storage.ErrBucketNotFound)
	if ok, err := s.BucketExists(ctx, "nope"); ok || err != nil {
		t.Fatalf("BucketExists(nope) = %v, %v", ok, err)
	}
}

func TestBucketLifecycle(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	wantErr(t, s.CreateBucket(ctx, "b"), storage.ErrBucketExists)
	if ok, err := s.BucketExists(ctx, "b"); !ok || err != nil {
		t.Fatalf("BucketExists(b) = %v, %v", ok, err)
	}

	putBytes(t, s, "b", "k", []byte("x"))
	wantErr(t, s.DeleteBucket(ctx, "b"), storage.ErrBucketNotEmpty)
	if err := s.DeleteObject(ctx, "b", "k"); err != nil {
		t.Fatal(err)
	}
	// An open upload does not keep the bucket: it is aborted with it.
	up, err := s.CreateUpload(ctx, "b", "u", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBucket(ctx, "b"); err != nil {
		t.Fatalf("DeleteBucket of a bucket with only an upload: %v", err)
	}
	if ok, _ := s.BucketExists(ctx, "b"); ok {
		t.Fatal("bucket still exists after DeleteBucket")
	}
	// A recreated bucket starts empty.
	if err := s.CreateBucket(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	res, err := s.ListObjects(ctx, "b", storage.ListOptions{})
	if err != nil || len(res.Objects) != 0 {
		t.Fatalf("recreated bucket lists %+v, %v", res, err)
	}
	_, err = s.GetUpload(ctx, "b", "u", up.UploadID)
	wantErr(t, err, storage.ErrUploadNotFound)
}

func TestRanges(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	body := make([]byte, 3<<20+17) // spans several copy buffers
	for i := range body {
		body[i] = byte(i * 7)
	}
	putBytes(t, s, "b", "k", body)
	for _, r := range []storage.Range{
		{Start: 0, Length: 1},
		{Start: 0, Length: int64(len(body))},
		{Start: 5, Length: 100},
		{Start: 1<<20 - 3, Length: 1<<20 + 9},
		{Start: int64(len(body)) - 1, Length: 1},
		{Start: 10, Length: int64(len(body)) * 2}, // clamped to the end
		{Start: 42, Length: 0},
	} {
		got, _ := getBytes(t, s, "b", "k", &r)
		end := min(r.Start+r.Length, int64(len(body)))
		if !bytes.Equal(got, body[r.Start:end]) {
			t.Errorf("range %+v: got %d bytes, want %d", r, len(got), end-r.Start)
		}
	}
	for _, r := range []storage.Range{{Start: int64(len(body)), Length: 1}, {Start: -1, Length: 2}} {
		_, _, err := s.GetObject(ctx, "b", "k", &r)
		wantErr(t, err, storage.ErrInvalidRange)
	}
	putBytes(t, s, "b", "empty", nil)
	if got, _ := getBytes(t, s, "b", "empty", &storage.Range{Start: 0, Length: 10}); len(got) != 0 {
		t.Fatalf("range of an empty object returned %d bytes", len(got))
	}
}

func TestHostileKeys(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	s := openStore(t, dir)
	defer s.Close()
	ctx := context.Background()
	for _, bucket := range []string{"b", "..", "../../x"} {
		if err := s.CreateBucket(ctx, bucket); err != nil {
			t.Fatalf("CreateBucket(%q): %v", bucket, err)
		}
	}
	keys := []string{
		"../x", "../../../../../../etc/passwd", "a//b", "./", ".", "..", "/", "//", "/abs",
		"a/../../b", "%2e%2e/x", "%", "%00", "trailing/", `back\slash\..\..`, "日本語/キー", "emoji 🎉",
		strings.Repeat("../", 341) + "z", // 1024 bytes
		strings.Repeat("é", 512),         // 1024 bytes of UTF-8
		"index.db", "data", "data/00", "tmp.tmp", " ", "\t\n",
	}
	for _, bucket := range []string{"b", "..", "../../x"} {
		for i, k := range keys {
			putBytes(t, s, bucket, k, []byte(fmt.Sprint(bucket, i)))
		}
	}
	for _, bucket := range []string{"b", "..", "../../x"} {
		for i, k := range keys {
			if got, _ := getBytes(t, s, bucket, k, nil); string(got) != fmt.Sprint(bucket, i) {
				t.Errorf("%q/%q read back %q", bucket, k, got)
			}
		}
		res, err := s.ListObjects(ctx, bucket, storage.ListOptions{})
		if err != nil || len(res.Objects) != len(keys) {
			t.Fatalf("list %q: %d objects, %v", bucket, len(res.Objects), err)
		}
	}
	// Nothing was created beside the store directory, and inside it only
	// the index and the data tree.
	ents, err := os.ReadDir(parent)
	if err != nil || len(ents) != 1 || ents[0].Name() != "store" {
		t.Fatalf("parent dir holds %v (%v), want only store", ents, err)
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." || rel == "index.db" || rel == "data" {
			return nil
		}
		parts := strings.Split(rel, string(filepath.Separator))
		if parts[0] != "data" || len(parts) > 3 || len(parts) == 3 && !validID(parts[2]) || len(parts) == 2 && len(parts[1]) != 2 {
			t.Errorf("unexpected path %q", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, k := range []string{"", strings.Repeat("x", 1025), "a\x00b", "\xff\xfe"} {
		_, err := s.PutObject(ctx, "b", k, storage.PutInput{Body: strings.NewReader("x")})
		wantErr(t, err, storage.ErrInvalidKey)
		_, err = s.CreateUpload(ctx, "b", k, storage.ObjectMeta{})
		wantErr(t, err, storage.ErrInvalidKey)
	}
}

func TestSealVetoAndBodyErrorStoreNothing(t *testing.T) {
	s, dir := newStore(t)
	ctx := context.Background()
	putBytes(t, s, "b", "k", []byte("old"))

	veto := errors.New("checksum mismatch")
	sealed := false
	_, err := s.PutObject(ctx, "b", "k", storage.PutInput{
		Body: strings.NewReader("new"),
		Seal: func(m *storage.ObjectMeta) error { sealed = true; return veto },
	})
	wantErr(t, err, veto)
	if !sealed {
		t.Fatal("Seal was not called")
	}

	bodyErr := io.ErrUnexpectedEOF
	_, err = s.PutObject(ctx, "b", "k", storage.PutInput{
		Body: &failingReader{data: bytes.Repeat([]byte("n"), 3<<20), err: bodyErr},
		Seal: func(m *storage.ObjectMeta) error { t.Error("Seal called after a body error"); return nil },
	})
	wantErr(t, err, bodyErr)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.PutObject(cctx, "b", "k", storage.PutInput{Body: strings.NewReader("new")})
	wantErr(t, err, context.Canceled)

	if got, _ := getBytes(t, s, "b", "k", nil); string(got) != "old" {
		t.Fatalf("object = %q after refused writes, want old", got)
	}
	if n := len(dataFiles(t, dir)); n != 1 {
		t.Fatalf("%d data files after refused writes, want 1", n)
	}
}

// cancelReader cancels its context after the first read, as a client that
// disconnects mid-upload.
type cancelReader struct {
	cancel context.CancelFunc
	n      int
}

func (r *cancelReader) Read(p []byte) (int, error) {
	r.n++
	if r.n > 1 {
		r.cancel()
	}
	return len(p), nil
}

func TestCancelMidBody(t *testing.T) {
	s, dir := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := s.PutObject(ctx, "b", "k", storage.PutInput{Body: &cancelReader{cancel: cancel}})
	wantErr(t, err, context.Canceled)
	if n := len(dataFiles(t, dir)); n != 0 {
		t.Fatalf("%d data files after a cancelled put", n)
	}
}

func TestSealCompletesMeta(t *testing.T) {
	s, _ := newStore(t)
	info, err := s.PutObject(context.Background(), "b", "k", storage.PutInput{
		Body: strings.NewReader("hello"),
		Meta: storage.ObjectMeta{UserMeta: map[string]string{"a": "1"}},
		Seal: func(m *storage.ObjectMeta) error {
			m.ETag, m.Size = "e", 5
			m.Checksums = map[string]string{"CRC32": "AAAA"}
			m.System = map[string]string{"filter": "none"}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	head, err := s.HeadObject(context.Background(), "b", "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []storage.ObjectInfo{info, head} {
		m := got.Meta
		if m.ETag != "e" || m.Size != 5 || m.UserMeta["a"] != "1" || m.Checksums["CRC32"] != "AAAA" || m.System["filter"] != "none" {
			t.Fatalf("meta = %+v", m)
		}
	}
}

func TestUpdateMeta(t *testing.T) {
	s, dir := newStore(t)
	ctx := context.Background()
	before := putBytes(t, s, "b", "k", []byte("data"))
	files := dataFiles(t, dir)
	meta := before.Meta
	meta.ContentType = "text/plain"
	meta.UserMeta = map[string]string{"x": "y"}
	info, err := s.UpdateMeta(ctx, "b", "k", meta)
	if err != nil {
		t.Fatal(err)
	}
	got, head := getBytes(t, s, "b", "k", nil)
	if string(got) != "data" || head.Meta.ContentType != "text/plain" || head.Meta.UserMeta["x"] != "y" || info.Meta.ContentType != "text/plain" {
		t.Fatalf("after UpdateMeta: %q %+v", got, head.Meta)
	}
	if after := dataFiles(t, dir); len(after) != 1 || after[0] != files[0] {
		t.Fatalf("UpdateMeta touched data files: %v -> %v", files, after)
	}
	_, err = s.UpdateMeta(ctx, "b", "missing", meta)
	wantErr(t, err, storage.ErrObjectNotFound)
}

func TestOpenReaderSurvivesOverwriteAndDelete(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	old := bytes.Repeat([]byte("A"), 2<<20)
	putBytes(t, s, "b", "k", old)
	rc, _, err := s.GetObject(ctx, "b", "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rr, _, err := s.GetObject(ctx, "b", "k", &storage.Range{Start: 1 << 20, Length: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	putBytes(t, s, "b", "k", bytes.Repeat([]byte("B"), 2<<20))
	if err := s.DeleteObject(ctx, "b", "k"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, old) {
		t.Fatalf("open reader: %d bytes, %v; want the old version", len(got), err)
	}
	got, err = io.ReadAll(rr)
	if err != nil || string(got) != "AAAAAAAAAA" {
		t.Fatalf("open range reader: %q, %v", got, err)
	}
}

// TestConcurrentOverwrite runs writers that overwrite one key with uniform
// bodies against readers that must always see one body whole.
func TestConcurrentOverwrite(t *testing.T) {
	s, dir := newStore(t)
	ctx := context.Background()
	const size = 256 << 10
	putBytes(t, s, "b", "k", bytes.Repeat([]byte{'a'}, size))

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				c := byte('a' + (w*25+i)%26)
				if _, err := s.PutObject(ctx, "b", "k", storage.PutInput{Body: bytes.NewReader(bytes.Repeat([]byte{c}, size))}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var rwg sync.WaitGroup
	for range 4 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				rc, _, err := s.GetObject(ctx, "b", "k", nil)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					t.Error(err)
					return
				}
				if len(b) != size || bytes.Count(b, b[:1]) != size {
					t.Errorf("read a mix: %d bytes, first %q", len(b), b[:1])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	if n := len(dataFiles(t, dir)); n != 1 {
		t.Fatalf("%d data files after overwrites, want 1", n)
	}
}

// TestGroupCommitIsolatesRefusals checks that a refused request sharing an
// index commit with others does not make them fail.
func TestGroupCommitIsolatesRefusals(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := s.PutObject(ctx, "b", fmt.Sprint("k", i), storage.PutInput{Body: strings.NewReader("x")}); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			err := s.DeleteObject(ctx, "missing-bucket", "k")
			if !errors.Is(err, storage.ErrBucketNotFound) {
				t.Errorf("delete in a missing bucket: %v", err)
			}
			wantErr(t, s.CreateBucket(ctx, "b"), storage.ErrBucketExists)
		}()
	}
	wg.Wait()
	res, err := s.ListObjects(ctx, "b", storage.ListOptions{})
	if err != nil || len(res.Objects) != 64 {
		t.Fatalf("listed %d objects, %v; want 64", len(res.Objects), err)
	}
}

func TestClosedStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := openStore(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	wantErr(t, s.CreateBucket(context.Background(), "b"), ErrClosed)
}

func TestSecondOpenFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := openStore(t, dir)
	defer s.Close()
	if _, err := Open(context.Background(), dir, Options{LockTimeout: 50e6}); err == nil {
		t.Fatal("a second Open of the same directory succeeded")
	}
}
