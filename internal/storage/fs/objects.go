package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	bolt "go.etcd.io/bbolt"
)

// CreateBucket creates an empty bucket or fails with storage.ErrBucketExists.
func (s *Store) CreateBucket(ctx context.Context, bucket string) error {
	if bucket == "" {
		return errors.New("fs: empty bucket name")
	}
	rec := bucketRecord{Created: time.Now().UnixNano()}
	return s.update(ctx, func(tx *bolt.Tx) error {
		root := tx.Bucket(rootBucket)
		if root.Bucket([]byte(bucket)) != nil {
			return fmt.Errorf("fs: bucket %q: %w", bucket, storage.ErrBucketExists)
		}
		b, err := root.CreateBucket([]byte(bucket))
		if err != nil {
			return fmt.Errorf("fs: create bucket %q: %w", bucket, err)
		}
		for _, name := range [][]byte{objBucket, uplBucket, prtBucket} {
			if _, err := b.CreateBucket(name); err != nil {
				return fmt.Errorf("fs: create bucket %q: %w", bucket, err)
			}
		}
		return put(b, infoKey, &rec)
	})
}

// DeleteBucket removes a bucket that holds no objects, aborting its open
// multipart uploads as S3 does: uploads alone do not keep a bucket alive.
// The check and the removal are one transaction, so an object stored
// meanwhile either keeps the bucket or finds it gone.
func (s *Store) DeleteBucket(ctx context.Context, bucket string) error {
	var dropped []string
	err := s.update(ctx, func(tx *bolt.Tx) error {
		dropped = nil
		b, err := bucketOf(tx, bucket)
		if err != nil {
			return err
		}
		objs, err := sub(b, objBucket)
		if err != nil {
			return err
		}
		if k, _ := objs.Cursor().First(); k != nil {
			return fmt.Errorf("fs: bucket %q: %w", bucket, storage.ErrBucketNotEmpty)
		}
		// Kept versions and delete markers keep a bucket too, as in S3.
		if ver := b.Bucket(verBucket); ver != nil {
			if k, _ := ver.Cursor().First(); k != nil {
				return fmt.Errorf("fs: bucket %q: %w", bucket, storage.ErrBucketNotEmpty)
			}
		}
		prt, err := sub(b, prtBucket)
		if err != nil {
			return err
		}
		// The parts' data files go once the index no longer has them.
		if err := prt.ForEach(func(_, v []byte) error {
			var rec partRecord
			if err := decode(v, &rec); err != nil {
				return err
			}
			dropped = append(dropped, rec.File)
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(rootBucket).DeleteBucket([]byte(bucket))
	})
	if err != nil {
		return err
	}
	s.removeData(dropped...)
	return nil
}

// BucketExists reports whether bucket exists.
func (s *Store) BucketExists(ctx context.Context, bucket string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		_, err := bucketOf(tx, bucket)
		return err
	})
	if errors.Is(err, storage.ErrBucketNotFound) {
		return false, nil
	}
	return err == nil, err
}

// checkBucket fails early, before a body is consumed, when bucket is
// missing. The commit checks again since the bucket may go meanwhile.
func (s *Store) checkBucket(ctx context.Context, bucket string) error {
	ok, err := s.BucketExists(ctx, bucket)
	if err == nil && !ok {
		err = fmt.Errorf("fs: bucket %q: %w", bucket, storage.ErrBucketNotFound)
	}
	return err
}

// PutObject streams in.Body into a new data file and makes it the object.
func (s *Store) PutObject(ctx context.Context, bucket, key string, in storage.PutInput) (storage.ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return storage.ObjectInfo{}, err
	}
	if err := s.checkBucket(ctx, bucket); err != nil {
		return storage.ObjectInfo{}, err
	}
	meta, id, n, err := s.writeInput(ctx, in)
	if err != nil {
		return storage.ObjectInfo{}, fmt.Errorf("fs: put %q/%q: %w", bucket, key, err)
	}
	rec := objRecord{File: id, Stored: n, Modified: time.Now().UnixNano(), Meta: meta}
	old, err := s.commitObject(ctx, bucket, key, &rec, nil)
	if err != nil {
		s.removeData(id)
		return storage.ObjectInfo{}, err
	}
	s.removeData(old...)
	return rec.committedInfo(bucket, key), nil
}

// committedInfo is the info of a version place committed: its version id
// shows where the bucket is or was versioned.
func (r *objRecord) committedInfo(bucket, key string) storage.ObjectInfo {
	info := r.info(bucket, key)
	info.VersionID = r.shown
	return info
}

// commitObject indexes rec as the latest version of bucket/key and
// returns the data files no record refers to any more (the replaced
// version's, where the bucket keeps none). check, when set, runs first in
// the same transaction and may refuse the commit.
func (s *Store) commitObject(ctx context.Context, bucket, key string, rec *objRecord, check func(tx *bolt.Tx, b *bolt.Bucket) error) (old []string, err error) {
	err = s.update(ctx, func(tx *bolt.Tx) error {
		old = nil
		b, err := bucketOf(tx, bucket)
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(tx, b); err != nil {
				return err
			}
		}
		old, err = s.place(b, bucket, key, rec)
		return err
	})
	if err != nil {
		old = nil
	}
	return old, err
}

// writeInput stores in.Body in a new data file and returns the metadata as
// in.Seal completed it.
func (s *Store) writeInput(ctx context.Context, in storage.PutInput) (meta storage.ObjectMeta, id string, n int64, err error) {
	meta = in.Meta
	var seal func() error
	if in.Seal != nil {
		seal = func() error {
			if err := in.Seal(&meta); err != nil {
				return fmt.Errorf("fs: write refused: %w", err)
			}
			return nil
		}
	}
	id, n, err = s.writeFile(ctx,
		func(w io.Writer) (int64, error) { return s.copyBody(ctx, w, in.Body) },
		seal)
	return meta, id, n, err
}

// maxOpenRetries bounds the lookups GetObject repeats when the file it
// found was replaced before it could open it; each retry sees a newer
// index, so more than a few means continuous overwrites of one key.
const maxOpenRetries = 16

// GetObject opens the data file of the object's latest version. The
// reader keeps returning the bytes of the version it opened, whatever
// happens to the key afterwards.
func (s *Store) GetObject(ctx context.Context, bucket, key string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	return s.GetObjectVersion(ctx, bucket, key, "", rng)
}

// clampRange turns an optional range into start and length within size.
func clampRange(rng *storage.Range, size int64) (start, length int64, err error) {
	if rng == nil || size == 0 {
		return 0, size, nil
	}
	if rng.Start < 0 || rng.Length < 0 || rng.Start >= size {
		return 0, 0, fmt.Errorf("range %d+%d of %d bytes: %w", rng.Start, rng.Length, size, storage.ErrInvalidRange)
	}
	return rng.Start, min(rng.Length, size-rng.Start), nil
}

// HeadObject returns the info of the object's latest version.
func (s *Store) HeadObject(ctx context.Context, bucket, key string) (storage.ObjectInfo, error) {
	return s.HeadObjectVersion(ctx, bucket, key, "")
}

// DeleteObject deletes as S3's DELETE without a version id does: the
// object, or in a versioned bucket by a delete marker. A missing key is
// not an error.
func (s *Store) DeleteObject(ctx context.Context, bucket, key string) error {
	_, err := s.DeleteVersion(ctx, bucket, key, "")
	return err
}

// UpdateMeta replaces the latest version's metadata and last-modified
// time without rewriting its data. In a bucket that keeps versions this is
// a new version: its data file is a second name of the old one's.
func (s *Store) UpdateMeta(ctx context.Context, bucket, key string, meta storage.ObjectMeta) (storage.ObjectInfo, error) {
	cur, _, err := s.lookupVersion(bucket, key, "")
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	state, err := s.BucketVersioning(ctx, bucket)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	if state != storage.VersioningOff {
		id, err := s.linkData(cur.File)
		if err != nil {
			return storage.ObjectInfo{}, err
		}
		rec := objRecord{File: id, Stored: cur.Stored, Modified: time.Now().UnixNano(), Meta: meta}
		old, err := s.commitObject(ctx, bucket, key, &rec, func(tx *bolt.Tx, b *bolt.Bucket) error {
			// Only onto the version whose bytes were linked.
			if _, now, err := objectIn(tx, bucket, key); err != nil || now.File != cur.File {
				return fmt.Errorf("fs: %q/%q: %w", bucket, key, storage.ErrVersionChanged)
			}
			return nil
		})
		if err != nil {
			s.removeData(id)
			return storage.ObjectInfo{}, err
		}
		s.removeData(old...)
		return rec.committedInfo(bucket, key), nil
	}
	var rec objRecord
	now := time.Now().UnixNano()
	err = s.update(ctx, func(tx *bolt.Tx) error {
		objs, r, err := objectIn(tx, bucket, key)
		if err != nil {
			return err
		}
		r.Meta = meta
		r.Modified = now
		rec = r
		return put(objs, []byte(key), &rec)
	})
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	return rec.info(bucket, key), nil
}
