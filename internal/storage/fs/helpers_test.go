package fs

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
)

func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// newStore opens a store in a fresh directory with one bucket "b".
func newStore(t testing.TB) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s := openStore(t, dir)
	t.Cleanup(func() { _ = s.Close() })
	if err := s.CreateBucket(context.Background(), "b"); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	return s, dir
}

func etagOf(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// putBytes stores body with its MD5 as ETag, set by Seal the way the S3
// layer does once the stream has ended.
func putBytes(t testing.TB, s *Store, bucket, key string, body []byte) storage.ObjectInfo {
	t.Helper()
	info, err := s.PutObject(context.Background(), bucket, key, storage.PutInput{
		Body: bytes.NewReader(body),
		Meta: storage.ObjectMeta{ContentType: "application/octet-stream"},
		Seal: func(m *storage.ObjectMeta) error {
			m.ETag = etagOf(body)
			m.Size = int64(len(body))
			return nil
		},
	})
	if err != nil {
		t.Fatalf("PutObject(%q): %v", key, err)
	}
	return info
}

func getBytes(t testing.TB, s *Store, bucket, key string, rng *storage.Range) ([]byte, storage.ObjectInfo) {
	t.Helper()
	rc, info, err := s.GetObject(context.Background(), bucket, key, rng)
	if err != nil {
		t.Fatalf("GetObject(%q): %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return b, info
}

// dataFiles lists the files under the store's data directory.
func dataFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(dir, "data"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk data dir: %v", err)
	}
	return out
}

// failingReader returns its data, then err.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}
