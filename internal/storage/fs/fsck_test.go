package fs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/facet-sds/facet/internal/storage"
)

// fileOfKey returns the data file of a bucket's latest object key.
func fileOfKey(t *testing.T, s *Store, bucket, key string) string {
	t.Helper()
	var rec objRecord
	if err := s.db.View(func(tx *bolt.Tx) error {
		return decode(tx.Bucket(rootBucket).Bucket([]byte(bucket)).Bucket(objBucket).Get([]byte(key)), &rec)
	}); err != nil {
		t.Fatal(err)
	}
	return s.dataPath(rec.File)
}

func kinds(rep CheckReport) string {
	var k []string
	for _, f := range rep.Findings {
		s := f.Kind
		if f.Key != "" {
			s += ":" + f.Key
		}
		if f.Repaired {
			s += "(repaired)"
		}
		k = append(k, s)
	}
	sort.Strings(k)
	return strings.Join(k, " ")
}

// TestCheck: a healthy store with objects, versions, a delete marker and
// an open upload checks clean; every kind of damage is then found and
// named, leftovers are told from damage, and --repair removes only what
// is safe.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	s, dir := newStore(t)
	putBody := func(bucket, key, body string) {
		t.Helper()
		if _, err := s.PutObject(ctx, bucket, key, storage.PutInput{Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"gone", "short", "rotten", "fine"} {
		putBody("b", k, "body of "+k)
	}
	if err := s.CreateBucket(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetVersioning(ctx, "v", storage.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	putBody("v", "k", "one")
	putBody("v", "k", "two")
	if err := s.DeleteObject(ctx, "v", "k"); err != nil { // a delete marker
		t.Fatal(err)
	}
	up, err := s.CreateUpload(ctx, "b", "mp", storage.ObjectMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutPart(ctx, "b", "mp", up.UploadID, 1, storage.PutInput{Body: strings.NewReader("part one")}); err != nil {
		t.Fatal(err)
	}
	verify := func(_ context.Context, f *os.File, size int64, _ map[string]string) error {
		b := make([]byte, size)
		if _, err := f.ReadAt(b, 0); err != nil {
			return err
		}
		if bytes.Contains(b, []byte("ROTTEN")) {
			return errors.New("block 0 fails its checksum")
		}
		return nil
	}
	rep, err := s.Check(ctx, CheckOptions{Verify: verify})
	if err != nil || rep.Damage != 0 || len(rep.Findings) != 0 {
		t.Fatalf("healthy store (online): %+v, %v", rep, err)
	}
	if rep.Objects != 4 || rep.Versions != 2 || rep.Markers != 1 || rep.Uploads != 1 || rep.Parts != 1 || rep.Verified != 7 {
		t.Fatalf("counted %+v", rep)
	}
	gone, short, rotten := fileOfKey(t, s, "b", "gone"), fileOfKey(t, s, "b", "short"), fileOfKey(t, s, "b", "rotten")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Damage, a crash's leftovers, and an upload record lost under its part.
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(short, 3); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rotten, []byte("body of ROTTEN"), 0o640); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(dir, "data", "ab")
	orphan, temp := filepath.Join(shard, "ab"+strings.Repeat("0", 30)), filepath.Join(shard, "ab"+strings.Repeat("1", 30)+tmpSuffix)
	for _, p := range []string{orphan, temp} {
		if err := os.WriteFile(p, []byte("left over"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	db, err := bolt.Open(filepath.Join(dir, "index.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(rootBucket).Bucket([]byte("b")).DeleteBucket(uplBucket)
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	rep, err = Check(ctx, dir, CheckOptions{Verify: verify})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(rep), "checksum:rotten dangling-part missing:gone orphan size:short temp"; got != want {
		t.Fatalf("found %q, want %q", got, want)
	}
	if rep.Damage != 4 {
		t.Fatalf("damage %d, want 4 (leftovers are not damage)", rep.Damage)
	}

	rep, err = Check(ctx, dir, CheckOptions{Verify: verify, Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(rep), "checksum:rotten dangling-part(repaired) missing:gone orphan(repaired) size:short temp(repaired)"; got != want {
		t.Fatalf("repair: %q, want %q", got, want)
	}
	rep, err = Check(ctx, dir, CheckOptions{Verify: verify})
	if err != nil || kinds(rep) != "checksum:rotten missing:gone size:short" {
		t.Fatalf("after repair: %q, %v", kinds(rep), err)
	}
	for _, p := range []string{orphan, temp} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s not removed: %v", p, err)
		}
	}
	// The store still opens and serves what is intact.
	s = openStore(t, dir)
	defer s.Close()
	rc, _, err := s.GetObject(ctx, "b", "fine", nil)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
}
