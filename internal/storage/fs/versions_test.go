package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/facet-sds/facet/internal/storage"
	bolt "go.etcd.io/bbolt"
)

func versionBytes(t *testing.T, s *Store, key, id string) ([]byte, storage.ObjectInfo) {
	t.Helper()
	rc, info, err := s.GetObjectVersion(context.Background(), "b", key, id, nil)
	if err != nil {
		t.Fatalf("GetObjectVersion(%q, %q): %v", key, id, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b, info
}

type listed struct {
	key, id        string
	latest, marker bool
}

func listAll(t *testing.T, s *Store, opts storage.ListVersionsOptions) (out []listed, pages int) {
	t.Helper()
	for {
		res, err := s.ListObjectVersions(context.Background(), "b", opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, v := range res.Versions {
			out = append(out, listed{v.Key, v.VersionID, v.IsLatest, v.DeleteMarker})
		}
		if !res.IsTruncated {
			return out, pages
		}
		opts.KeyMarker, opts.VersionIDMarker = res.NextKeyMarker, res.NextVersionIDMarker
	}
}

func TestVersionsLifecycle(t *testing.T) {
	s, dir := newStore(t)
	ctx := context.Background()
	null := putBytes(t, s, "b", "k", []byte("null"))
	if null.VersionID != "" {
		t.Fatalf("never-versioned PUT has version %q", null.VersionID)
	}
	if err := s.SetVersioning(ctx, "b", storage.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v1 := putBytes(t, s, "b", "k", []byte("one"))
	v2 := putBytes(t, s, "b", "k", []byte("two"))
	if v1.VersionID == "" || v1.VersionID == v2.VersionID || v1.VersionID < v2.VersionID {
		t.Fatalf("ids %q %q: want distinct, newest sorting first", v1.VersionID, v2.VersionID)
	}
	for id, want := range map[string]string{"null": "null", v1.VersionID: "one", v2.VersionID: "two", "": "two"} {
		if b, _ := versionBytes(t, s, "k", id); string(b) != want {
			t.Errorf("version %q = %q, want %q", id, b, want)
		}
	}
	if _, info := getBytes(t, s, "b", "k", nil); info.VersionID != v2.VersionID {
		t.Errorf("latest has id %q", info.VersionID)
	}

	dm, err := s.DeleteVersion(ctx, "b", "k", "")
	if err != nil || !dm.DeleteMarker || dm.VersionID == "" {
		t.Fatalf("delete: %+v %v", dm, err)
	}
	var me *storage.DeleteMarkerError
	if _, err := s.HeadObject(ctx, "b", "k"); !errors.As(err, &me) || !errors.Is(err, storage.ErrObjectNotFound) || me.VersionID != dm.VersionID {
		t.Fatalf("HEAD after a marker: %v", err)
	}
	if _, err := s.HeadObjectVersion(ctx, "b", "k", dm.VersionID); !errors.Is(err, storage.ErrDeleteMarkerNamed) {
		t.Fatalf("HEAD of the marker: %v", err)
	}
	if res, _ := s.ListObjects(ctx, "b", storage.ListOptions{}); len(res.Objects) != 0 {
		t.Fatalf("ListObjects lists a deleted key: %+v", res.Objects)
	}
	got, _ := listAll(t, s, storage.ListVersionsOptions{MaxKeys: 1})
	want := []listed{{"k", dm.VersionID, true, true}, {"k", v2.VersionID, false, false}, {"k", v1.VersionID, false, false}, {"k", "null", false, false}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("versions:\n got %v\nwant %v", got, want)
	}
	if err := s.DeleteBucket(ctx, "b"); !errors.Is(err, storage.ErrBucketNotEmpty) {
		t.Fatalf("DeleteBucket with versions: %v", err)
	}

	// Removing the marker makes v2 the latest again; removing v2 then v1.
	if r, err := s.DeleteVersion(ctx, "b", "k", dm.VersionID); err != nil || !r.DeleteMarker {
		t.Fatalf("delete marker: %+v %v", r, err)
	}
	if b, _ := getBytes(t, s, "b", "k", nil); string(b) != "two" {
		t.Fatalf("after the marker went: %q", b)
	}
	for _, id := range []string{v2.VersionID, v1.VersionID} {
		if _, err := s.DeleteVersion(ctx, "b", "k", id); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := getBytes(t, s, "b", "k", nil); string(b) != "null" {
		t.Fatalf("after deleting versions: %q", b)
	}
	if _, err := s.HeadObjectVersion(ctx, "b", "k", v1.VersionID); !errors.Is(err, storage.ErrNoSuchVersion) {
		t.Fatalf("deleted version: %v", err)
	}
	if _, err := s.HeadObjectVersion(ctx, "b", "k", "bogus"); !errors.Is(err, storage.ErrInvalidVersion) {
		t.Fatalf("bogus version: %v", err)
	}
	if n := len(dataFiles(t, dir)); n != 1 {
		t.Fatalf("%d data files left, want the null version's only", n)
	}

	// Suspended: the null version is replaced, kept versions stay.
	v3 := putBytes(t, s, "b", "k", []byte("three"))
	if err := s.SetVersioning(ctx, "b", storage.VersioningSuspended); err != nil {
		t.Fatal(err)
	}
	n1 := putBytes(t, s, "b", "k", []byte("n1"))
	n2 := putBytes(t, s, "b", "k", []byte("n2"))
	if n1.VersionID != "null" || n2.VersionID != "null" {
		t.Fatalf("suspended ids %q %q", n1.VersionID, n2.VersionID)
	}
	got, _ = listAll(t, s, storage.ListVersionsOptions{})
	want = []listed{{"k", "null", true, false}, {"k", v3.VersionID, false, false}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("suspended versions:\n got %v\nwant %v", got, want)
	}
	if n := len(dataFiles(t, dir)); n != 2 {
		t.Fatalf("%d data files, want 2", n)
	}

	checkNullIndex(t, s, "k")
	if err := s.SetVersioning(ctx, "b", storage.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	v4 := putBytes(t, s, "b", "k", []byte("four")) // the null version goes to ver/
	checkNullIndex(t, s, "k")
	if b, _ := versionBytes(t, s, "k", "null"); string(b) != "n2" {
		t.Fatalf("null version after an Enabled PUT: %q", b)
	}
	if err := s.SetVersioning(ctx, "b", storage.VersioningSuspended); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteVersion(ctx, "b", "k", ""); err != nil { // a null marker replaces it
		t.Fatal(err)
	}
	checkNullIndex(t, s, "k")
	if _, err := s.DeleteVersion(ctx, "b", "k", "null"); err != nil {
		t.Fatal(err)
	}
	checkNullIndex(t, s, "k")
	if b, _ := getBytes(t, s, "b", "k", nil); string(b) != "four" {
		t.Fatalf("after deleting the null marker: %q", b)
	}
	_ = v4

	// Reopening keeps every version's file (recovery must count them).
	_ = s.Close()
	s = openStore(t, dir)
	t.Cleanup(func() { _ = s.Close() })
	if b, _ := versionBytes(t, s, "k", v3.VersionID); string(b) != "three" {
		t.Fatalf("after reopen: %q", b)
	}
}

func TestListVersionsDelimiterAndMarkers(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	if err := s.SetVersioning(ctx, "b", storage.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	keys := []string{"a", "d/1", "d/2", "e", "f"}
	ids := map[string][]string{}
	for _, k := range keys {
		for i := 0; i < 3; i++ {
			ids[k] = append([]string{putBytes(t, s, "b", k, []byte(k)).VersionID}, ids[k]...)
		}
	}
	if _, err := s.DeleteVersion(ctx, "b", "e", ""); err != nil {
		t.Fatal(err)
	}
	all, _ := listAll(t, s, storage.ListVersionsOptions{})
	for step := 1; step <= 4; step++ {
		got, pages := listAll(t, s, storage.ListVersionsOptions{MaxKeys: step})
		if fmt.Sprint(got) != fmt.Sprint(all) || pages != (len(all)+step-1)/step {
			t.Fatalf("pages of %d: %d pages\n got %v\nwant %v", step, pages, got, all)
		}
	}
	res, err := s.ListObjectVersions(ctx, "b", storage.ListVersionsOptions{Delimiter: "/", MaxKeys: 4})
	if err != nil || fmt.Sprint(res.CommonPrefixes) != "[d/]" || len(res.Versions) != 3 || !res.IsTruncated {
		t.Fatalf("delimiter: %+v %v", res, err)
	}
	res, err = s.ListObjectVersions(ctx, "b", storage.ListVersionsOptions{Delimiter: "/", KeyMarker: "d/\xff"})
	if err != nil || len(res.CommonPrefixes) != 0 || res.Versions[0].Key != "e" || !res.Versions[0].DeleteMarker || !res.Versions[0].IsLatest {
		t.Fatalf("after the prefix: %+v %v", res, err)
	}
	// A version marker in the middle of a key's versions.
	res, err = s.ListObjectVersions(ctx, "b", storage.ListVersionsOptions{KeyMarker: "d/1", VersionIDMarker: ids["d/1"][0], MaxKeys: 3})
	if err != nil || len(res.Versions) != 3 || res.Versions[0].VersionID != ids["d/1"][1] || res.Versions[2].Key != "d/2" || !res.Versions[2].IsLatest {
		t.Fatalf("version marker: %+v %v", res, err)
	}
	if _, err := s.ListObjectVersions(ctx, "b", storage.ListVersionsOptions{KeyMarker: "a", VersionIDMarker: "x"}); !errors.Is(err, storage.ErrInvalidVersion) {
		t.Fatalf("bogus marker: %v", err)
	}
}

// checkNullIndex checks that vnl/ points at exactly the null version a
// walk of key's versions finds.
func checkNullIndex(t *testing.T, s *Store, key string) {
	t.Helper()
	if err := s.db.View(func(tx *bolt.Tx) error {
		b, err := bucketOf(tx, "b")
		if err != nil {
			return err
		}
		ver := b.Bucket(verBucket)
		var walked []byte
		p := verPrefix(key)
		c := ver.Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			var rec objRecord
			if err := decode(v, &rec); err != nil {
				return err
			}
			if rec.VersionID == "" {
				if walked != nil {
					t.Errorf("two null versions of %q in ver/", key)
				}
				walked = bytes.Clone(k)
			}
		}
		if got := b.Bucket(nulBucket).Get([]byte(key)); !bytes.Equal(got, walked) {
			t.Errorf("vnl/ of %q = %x; the null version kept is at %x", key, got, walked)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
