package fs

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/facet-sds/facet/internal/diskformat"
)

// TestFormatVersion: a new index records the current format; one written
// before formats were recorded is migrated by Open (InspectFormat says so
// first); one claiming a newer format is refused with what to do, before
// anything is written to it.
func TestFormatVersion(t *testing.T) {
	s, dir := newStore(t) // holds bucket "b"
	index := filepath.Join(dir, "index.db")
	edit := func(v []byte) {
		t.Helper()
		db, err := bolt.Open(index, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(func(tx *bolt.Tx) error {
			if v == nil {
				return tx.DeleteBucket(formatBucket)
			}
			return tx.Bucket(formatBucket).Put(formatKey, v)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := InspectFormat(dir); err != nil || !rep.Exists || rep.Stored != FormatVersion || len(rep.Steps) != 0 {
		t.Fatalf("new index: %+v, %v", rep, err)
	}

	edit(nil) // as written before formats were recorded
	rep, err := InspectFormat(dir)
	if err != nil || rep.Stored != diskformat.Unversioned || len(rep.Steps) != FormatVersion || !strings.Contains(rep.Steps[0], "format 0 -> 1") {
		t.Fatalf("unversioned index: %+v, %v", rep, err)
	}
	s = openStore(t, dir)
	if ok, err := s.BucketExists(context.Background(), "b"); err != nil || !ok {
		t.Fatalf("the migrated index lost its bucket: %v, %v", ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := InspectFormat(dir); err != nil || rep.Stored != FormatVersion || len(rep.Steps) != 0 {
		t.Fatalf("migrated index: %+v, %v", rep, err)
	}

	edit([]byte("9"))
	if rep, err := InspectFormat(dir); err != nil || !strings.Contains(rep.Error, "has format 9") {
		t.Fatalf("newer index: %+v, %v", rep, err)
	}
	if _, err := Open(context.Background(), dir, Options{}); !errors.Is(err, diskformat.ErrTooNew) || !strings.Contains(err.Error(), "reads formats up to "+strconv.Itoa(FormatVersion)) {
		t.Fatalf("open a newer index: %v", err)
	}
}
