package fs

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/facet-sds/facet/internal/storage"
)

// DeleteObjectIf deletes bucket/key only while it holds the version with
// this ETag and last-modified time, in the same index transaction that
// reads it, so no write can come between the check and the delete. A
// missing object is storage.ErrObjectNotFound, another version
// storage.ErrVersionChanged; neither changes anything. The recycle bin
// uses it to delete exactly the version it kept (internal/filter/trash).
func (s *Store) DeleteObjectIf(ctx context.Context, bucket, key, etag string, modified time.Time) error {
	var old []string
	now := time.Now().UnixNano()
	err := s.update(ctx, func(tx *bolt.Tx) error {
		old = nil
		_, rec, err := objectIn(tx, bucket, key)
		if err != nil {
			return err
		}
		if rec.Meta.ETag != etag || rec.Modified != modified.UnixNano() {
			return fmt.Errorf("fs: %q/%q: %w", bucket, key, storage.ErrVersionChanged)
		}
		b, err := bucketOf(tx, bucket)
		if err != nil {
			return err
		}
		// As DeleteObject: in a versioned bucket, a delete marker.
		old, err = s.place(b, bucket, key, &objRecord{Marker: true, Modified: now})
		return err
	})
	if err != nil {
		return err
	}
	s.removeData(old...)
	return nil
}
