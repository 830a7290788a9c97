package fs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/storage"
)

// DeleteObjectIf deletes the version it names and nothing else: another
// version (same bytes written again included) or a missing key changes
// nothing.
func TestDeleteObjectIf(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	v1 := putBytes(t, s, "b", "k", []byte("one"))
	v2 := putBytes(t, s, "b", "k", []byte("one"))
	if err := s.DeleteObjectIf(ctx, "b", "k", v1.Meta.ETag, v1.LastModified); !errors.Is(err, storage.ErrVersionChanged) {
		t.Fatalf("older version: %v", err)
	}
	if err := s.DeleteObjectIf(ctx, "b", "k", "other", v2.LastModified); !errors.Is(err, storage.ErrVersionChanged) {
		t.Fatalf("other etag: %v", err)
	}
	if _, err := s.HeadObject(ctx, "b", "k"); err != nil {
		t.Fatalf("a refused delete deleted: %v", err)
	}
	if err := s.DeleteObjectIf(ctx, "b", "k", v2.Meta.ETag, v2.LastModified); err != nil {
		t.Fatal(err)
	}
	if _, err := s.HeadObject(ctx, "b", "k"); !errors.Is(err, storage.ErrObjectNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := s.DeleteObjectIf(ctx, "b", "k", v2.Meta.ETag, time.Time{}); !errors.Is(err, storage.ErrObjectNotFound) {
		t.Fatalf("missing: %v", err)
	}
}
