package fs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	bolt "go.etcd.io/bbolt"
)

// maxPartNumber is S3's limit.
const maxPartNumber = 10000

// newUploadID returns 24 bytes in hex: the initiation time, so that ids of
// one key sort by initiation as S3 lists them, then 128 random bits.
func newUploadID(t time.Time) string {
	var b [24]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixNano()))
	_, _ = rand.Read(b[8:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

func uploadNotFound(bucket, key, id string) error {
	return fmt.Errorf("fs: upload %q of %q/%q: %w", id, bucket, key, storage.ErrUploadNotFound)
}

// uploadIn returns the index bucket and record of an upload.
func uploadIn(tx *bolt.Tx, bucket, key, id string) (*bolt.Bucket, uploadRecord, error) {
	var rec uploadRecord
	b, err := bucketOf(tx, bucket)
	if err != nil {
		return nil, rec, err
	}
	upl, err := sub(b, uplBucket)
	if err != nil {
		return nil, rec, err
	}
	v := upl.Get(uploadKey(key, id))
	if v == nil || id == "" {
		return nil, rec, uploadNotFound(bucket, key, id)
	}
	return b, rec, decode(v, &rec)
}

// partsIn returns the parts sub-bucket after checking the upload exists.
func partsIn(tx *bolt.Tx, bucket, key, id string) (*bolt.Bucket, error) {
	b, _, err := uploadIn(tx, bucket, key, id)
	if err != nil {
		return nil, err
	}
	return sub(b, prtBucket)
}

// CreateUpload starts a multipart upload.
func (s *Store) CreateUpload(ctx context.Context, bucket, key string, meta storage.ObjectMeta) (storage.Upload, error) {
	if err := checkKey(key); err != nil {
		return storage.Upload{}, err
	}
	now := time.Now()
	id := newUploadID(now)
	rec := uploadRecord{Initiated: now.UnixNano(), Meta: meta}
	err := s.update(ctx, func(tx *bolt.Tx) error {
		upl, err := subOf(tx, bucket, uplBucket)
		if err != nil {
			return err
		}
		return put(upl, uploadKey(key, id), &rec)
	})
	if err != nil {
		return storage.Upload{}, err
	}
	return rec.upload(bucket, key, id), nil
}

// GetUpload returns an in-progress upload.
func (s *Store) GetUpload(ctx context.Context, bucket, key, uploadID string) (storage.Upload, error) {
	if err := ctx.Err(); err != nil {
		return storage.Upload{}, err
	}
	var rec uploadRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		_, rec, err = uploadIn(tx, bucket, key, uploadID)
		return err
	})
	if err != nil {
		return storage.Upload{}, err
	}
	return rec.upload(bucket, key, uploadID), nil
}

// PutPart stores a part durably; a part number uploaded again replaces the
// earlier part.
func (s *Store) PutPart(ctx context.Context, bucket, key, uploadID string, number int, in storage.PutInput) (storage.Part, error) {
	if number < 1 || number > maxPartNumber {
		return storage.Part{}, fmt.Errorf("fs: part number %d: %w", number, storage.ErrInvalidPart)
	}
	if _, err := s.GetUpload(ctx, bucket, key, uploadID); err != nil {
		return storage.Part{}, err
	}
	meta, id, n, err := s.writeInput(ctx, in)
	if err != nil {
		return storage.Part{}, fmt.Errorf("fs: put part %d of %q/%q: %w", number, bucket, key, err)
	}
	rec := partRecord{
		File: id, Stored: n, Modified: time.Now().UnixNano(),
		ETag: meta.ETag, Size: meta.Size, Checksums: meta.Checksums, System: meta.System,
	}
	var old string
	err = s.update(ctx, func(tx *bolt.Tx) error {
		old = ""
		prt, err := partsIn(tx, bucket, key, uploadID)
		if err != nil {
			return err
		}
		pk := partKey(uploadID, number)
		if v := prt.Get(pk); v != nil {
			var prev partRecord
			if decode(v, &prev) == nil {
				old = prev.File
			}
		}
		return put(prt, pk, &rec)
	})
	if err != nil {
		s.removeData(id)
		return storage.Part{}, err
	}
	s.removeData(old)
	return rec.part(number), nil
}

// partsOf walks the parts of an upload in number order; fn stops the walk
// by returning false.
func partsOf(prt *bolt.Bucket, uploadID string, from int, fn func(n int, rec *partRecord) (bool, error)) error {
	c := prt.Cursor()
	for k, v := c.Seek(partKey(uploadID, from)); k != nil; k, v = c.Next() {
		if len(k) != len(uploadID)+4 || !bytes.HasPrefix(k, []byte(uploadID)) {
			return nil
		}
		var rec partRecord
		if err := decode(v, &rec); err != nil {
			return err
		}
		more, err := fn(int(binary.BigEndian.Uint32(k[len(uploadID):])), &rec)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// ListParts lists parts with numbers above marker, at most maxParts (1000
// when maxParts <= 0).
func (s *Store) ListParts(ctx context.Context, bucket, key, uploadID string, marker, maxParts int) ([]storage.Part, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if maxParts <= 0 {
		maxParts = defaultMaxKeys
	}
	var parts []storage.Part
	truncated := false
	err := s.db.View(func(tx *bolt.Tx) error {
		prt, err := partsIn(tx, bucket, key, uploadID)
		if err != nil {
			return err
		}
		return partsOf(prt, uploadID, min(max(marker, 0), maxPartNumber)+1, func(n int, rec *partRecord) (bool, error) {
			if len(parts) == maxParts {
				truncated = true
				return false, nil
			}
			parts = append(parts, rec.part(n))
			return true, nil
		})
	})
	if err != nil {
		return nil, false, err
	}
	return parts, truncated, nil
}

func unquote(etag string) string {
	return strings.TrimSuffix(strings.TrimPrefix(etag, `"`), `"`)
}

// CompleteUpload concatenates the named parts into a new data file and
// makes it the object, then drops the upload and all its parts.
func (s *Store) CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []storage.CompletePart, meta storage.ObjectMeta) (storage.ObjectInfo, error) {
	if len(parts) == 0 {
		return storage.ObjectInfo{}, fmt.Errorf("fs: complete without parts: %w", storage.ErrInvalidPart)
	}
	for i := 1; i < len(parts); i++ {
		if parts[i].Number <= parts[i-1].Number {
			return storage.ObjectInfo{}, fmt.Errorf("fs: part %d after %d: %w", parts[i].Number, parts[i-1].Number, storage.ErrInvalidPartOrder)
		}
	}
	if err := ctx.Err(); err != nil {
		return storage.ObjectInfo{}, err
	}
	files := make([]string, len(parts))
	sizes := make([]int64, len(parts))
	err := s.db.View(func(tx *bolt.Tx) error {
		prt, err := partsIn(tx, bucket, key, uploadID)
		if err != nil {
			return err
		}
		for i, p := range parts {
			rec, err := partIn(prt, uploadID, p.Number)
			if err != nil {
				return err
			}
			if !strings.EqualFold(unquote(p.ETag), unquote(rec.ETag)) {
				return fmt.Errorf("fs: part %d has ETag %q, not %q: %w", p.Number, rec.ETag, unquote(p.ETag), storage.ErrInvalidPart)
			}
			files[i], sizes[i] = rec.File, rec.Stored
		}
		return nil
	})
	if err != nil {
		return storage.ObjectInfo{}, err
	}

	id, n, err := s.writeFile(ctx, func(w io.Writer) (int64, error) {
		var total int64
		for i, f := range files {
			m, err := s.copyPart(ctx, w, f)
			total += m
			if err != nil {
				return total, fmt.Errorf("part %d: %w", parts[i].Number, err)
			}
		}
		return total, nil
	}, nil)
	if err != nil {
		return storage.ObjectInfo{}, fmt.Errorf("fs: complete %q/%q: %w", bucket, key, err)
	}

	meta.PartsCount = len(parts)
	meta.PartSizes = sizes
	rec := objRecord{File: id, Stored: n, Modified: time.Now().UnixNano(), Meta: meta}
	var dropped []string
	old, err := s.commitObject(ctx, bucket, key, &rec, func(tx *bolt.Tx, b *bolt.Bucket) error {
		dropped = nil
		prt, err := sub(b, prtBucket)
		if err != nil {
			return err
		}
		upl, err := sub(b, uplBucket)
		if err != nil {
			return err
		}
		if upl.Get(uploadKey(key, uploadID)) == nil {
			return uploadNotFound(bucket, key, uploadID)
		}
		// A part re-uploaded while we copied would make the object
		// differ from what the caller's ETag describes.
		for i, p := range parts {
			cur, err := partIn(prt, uploadID, p.Number)
			if err != nil {
				return err
			}
			if cur.File != files[i] {
				return fmt.Errorf("fs: part %d replaced during completion: %w", p.Number, storage.ErrInvalidPart)
			}
		}
		dropped, err = dropUpload(b, key, uploadID)
		return err
	})
	if err != nil {
		s.removeData(id)
		return storage.ObjectInfo{}, err
	}
	s.removeData(old...)
	s.removeData(dropped...)
	return rec.committedInfo(bucket, key), nil
}

// partIn loads one part record or fails with storage.ErrInvalidPart.
func partIn(prt *bolt.Bucket, uploadID string, n int) (partRecord, error) {
	var rec partRecord
	v := prt.Get(partKey(uploadID, n))
	if v == nil {
		return rec, fmt.Errorf("fs: part %d not uploaded: %w", n, storage.ErrInvalidPart)
	}
	return rec, decode(v, &rec)
}

// copyPart appends one part's data file to w.
func (s *Store) copyPart(ctx context.Context, w io.Writer, id string) (int64, error) {
	f, err := s.openData(id)
	if errors.Is(err, os.ErrNotExist) {
		// Replaced or aborted since we looked it up.
		return 0, fmt.Errorf("fs: part data gone: %w", storage.ErrInvalidPart)
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return s.copyBody(ctx, w, f)
}

// dropUpload deletes an upload and its parts from the index and returns
// their data files, to be removed once the transaction has committed.
func dropUpload(b *bolt.Bucket, key, uploadID string) ([]string, error) {
	upl, err := sub(b, uplBucket)
	if err != nil {
		return nil, err
	}
	prt, err := sub(b, prtBucket)
	if err != nil {
		return nil, err
	}
	var files []string
	var keys [][]byte
	if err := partsOf(prt, uploadID, 0, func(n int, rec *partRecord) (bool, error) {
		files = append(files, rec.File)
		keys = append(keys, partKey(uploadID, n))
		return true, nil
	}); err != nil {
		return nil, err
	}
	// Deleting behind a live cursor skips entries in bbolt, hence the
	// collected keys.
	for _, k := range keys {
		if err := prt.Delete(k); err != nil {
			return nil, err
		}
	}
	return files, upl.Delete(uploadKey(key, uploadID))
}

// AbortUpload drops an upload and its parts.
func (s *Store) AbortUpload(ctx context.Context, bucket, key, uploadID string) error {
	var dropped []string
	err := s.update(ctx, func(tx *bolt.Tx) error {
		dropped = nil
		b, _, err := uploadIn(tx, bucket, key, uploadID)
		if err != nil {
			return err
		}
		dropped, err = dropUpload(b, key, uploadID)
		return err
	})
	if err != nil {
		return err
	}
	s.removeData(dropped...)
	return nil
}
