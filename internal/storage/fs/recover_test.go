package fs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
)

func TestReopenKeepsEverything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	ctx := context.Background()
	s := openStore(t, dir)
	if err := s.CreateBucket(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("persist"), 10000)
	putBytes(t, s, "b", "k", body)
	putBytes(t, s, "b", "dir/k2", []byte("two"))
	up, err := s.CreateUpload(ctx, "b", "mp", storage.ObjectMeta{ContentType: "x/y"})
	if err != nil {
		t.Fatal(err)
	}
	part := putPart(t, s, "mp", up.UploadID, 1, []byte("part one"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir)
	defer s.Close()
	if got, info := getBytes(t, s, "b", "k", nil); !bytes.Equal(got, body) || info.Meta.ETag != etagOf(body) {
		t.Fatalf("after reopen: %d bytes, %+v", len(got), info)
	}
	res, err := s.ListObjects(ctx, "b", storage.ListOptions{})
	if err != nil || len(res.Objects) != 2 {
		t.Fatalf("after reopen listed %+v, %v", res, err)
	}
	got, err := s.GetUpload(ctx, "b", "mp", up.UploadID)
	if err != nil || got.Meta.ContentType != "x/y" || !got.Initiated.Equal(up.Initiated) {
		t.Fatalf("upload after reopen: %+v, %v", got, err)
	}
	if _, err := s.CompleteUpload(ctx, "b", "mp", up.UploadID, []storage.CompletePart{{Number: 1, ETag: part.ETag}}, storage.ObjectMeta{}); err != nil {
		t.Fatalf("complete after reopen: %v", err)
	}
	if got, _ := getBytes(t, s, "b", "mp", nil); string(got) != "part one" {
		t.Fatalf("completed after reopen: %q", got)
	}
}

// TestOpenRemovesLeftovers plants what crashes leave behind: a temp file
// (crash before rename) and a finished data file no index entry names
// (crash before the index commit, or before an old version was removed).
func TestOpenRemovesLeftovers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	ctx := context.Background()
	s := openStore(t, dir)
	if err := s.CreateBucket(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	putBytes(t, s, "b", "k", []byte("keep me"))
	up, err := s.CreateUpload(ctx, "b", "mp", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	putPart(t, s, "mp", up.UploadID, 1, []byte("keep this part"))
	live := dataFiles(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	tmp := filepath.Join(dir, "data", "ab", "ab"+newID()[2:]+tmpSuffix)
	orphanID := "cd" + newID()[2:]
	orphan := filepath.Join(dir, "data", "cd", orphanID)
	foreign := filepath.Join(dir, "data", "00", "README")
	for _, p := range []string{tmp, orphan, foreign} {
		if err := os.WriteFile(p, []byte("torn"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	s = openStore(t, dir)
	defer s.Close()
	for _, p := range []string{tmp, orphan} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived Open: %v", p, err)
		}
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("a file that is not ours was removed: %v", err)
	}
	if got := dataFiles(t, dir); !slices.Equal(slices.DeleteFunc(got, func(p string) bool { return p == foreign }), live) {
		t.Fatalf("data files after Open %v, want %v", got, live)
	}
	if got, _ := getBytes(t, s, "b", "k", nil); string(got) != "keep me" {
		t.Fatalf("object after cleanup: %q", got)
	}
	parts, _, err := s.ListParts(ctx, "b", "mp", up.UploadID, 0, 0)
	if err != nil || len(parts) != 1 {
		t.Fatalf("parts after cleanup: %+v, %v", parts, err)
	}
	res, err := s.ListObjects(ctx, "b", storage.ListOptions{})
	if err != nil || len(res.Objects) != 1 {
		t.Fatalf("listing after cleanup: %+v, %v", res, err)
	}
}
