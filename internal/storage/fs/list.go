package fs

import (
	"bytes"
	"context"

	"github.com/facet-sds/facet/internal/storage"
	bolt "go.etcd.io/bbolt"
)

const defaultMaxKeys = 1000

// walk is one ordered pass over an index bucket, shared by object and
// upload listings. The index key of an entry starts with its object key.
type walk struct {
	prefix, delim []byte
	// start is the index key to seek to; skip, when set, is an index key
	// at or before the marker that must not be returned.
	start, skip []byte
	// markerPrefix is a common prefix the previous page ended with; it is
	// not returned again.
	markerPrefix []byte
	max          int
	// objectKey extracts the object key from an index key.
	objectKey func(k []byte) []byte

	entry  func(k, v []byte) error
	common func(p []byte)

	// visited counts cursor positions, so tests can check that a rolled-up
	// prefix is jumped over rather than read key by key.
	visited int
}

// run walks the cursor and reports whether entries remained beyond max.
func (w *walk) run(c *bolt.Cursor) (truncated bool, err error) {
	if w.max <= 0 {
		w.max = defaultMaxKeys
	}
	start := w.start
	if bytes.Compare(start, w.prefix) < 0 {
		start = w.prefix
	}
	n := 0
	k, v := c.Seek(start)
	for k != nil {
		w.visited++
		key := w.objectKey(k)
		if !bytes.HasPrefix(key, w.prefix) {
			break
		}
		if w.skip != nil && bytes.Equal(k, w.skip) {
			k, v = c.Next()
			continue
		}
		if len(w.delim) > 0 {
			if i := bytes.Index(key[len(w.prefix):], w.delim); i >= 0 {
				p := key[:len(w.prefix)+i+len(w.delim)]
				if !bytes.Equal(p, w.markerPrefix) {
					if n == w.max {
						return true, nil
					}
					w.common(p)
					n++
				}
				// Jump over every key under p in one seek.
				next := successor(p)
				if next == nil {
					break
				}
				k, v = c.Seek(next)
				continue
			}
		}
		if n == w.max {
			return true, nil
		}
		if err := w.entry(k, v); err != nil {
			return false, err
		}
		n++
		k, v = c.Next()
	}
	return false, nil
}

// successor returns the smallest byte string greater than every string
// starting with p, or nil when there is none (p is all 0xff). It copies:
// p may point into the read-only mmap of the index.
func successor(p []byte) []byte {
	s := bytes.Clone(p)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != 0xff {
			s[i]++
			return s[:i+1]
		}
	}
	return nil
}

func identity(k []byte) []byte { return k }

// ListObjects lists a bucket's objects in key order.
func (s *Store) ListObjects(ctx context.Context, bucket string, opts storage.ListOptions) (storage.ListResult, error) {
	res, _, err := s.listObjects(ctx, bucket, opts)
	return res, err
}

func (s *Store) listObjects(ctx context.Context, bucket string, opts storage.ListOptions) (storage.ListResult, int, error) {
	var res storage.ListResult
	if err := ctx.Err(); err != nil {
		return res, 0, err
	}
	w := &walk{
		prefix:    []byte(opts.Prefix),
		delim:     []byte(opts.Delimiter),
		max:       opts.MaxKeys,
		objectKey: identity,
		entry: func(k, v []byte) error {
			var rec objRecord
			if err := decode(v, &rec); err != nil {
				return err
			}
			res.Objects = append(res.Objects, rec.info(bucket, string(k)))
			res.NextMarker = string(k)
			return nil
		},
		common: func(p []byte) {
			res.CommonPrefixes = append(res.CommonPrefixes, string(p))
			res.NextMarker = string(p)
		},
	}
	if opts.Marker != "" {
		w.start = []byte(opts.Marker)
		w.skip = w.start
		w.markerPrefix = w.start
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		objs, err := subOf(tx, bucket, objBucket)
		if err != nil {
			return err
		}
		res.IsTruncated, err = w.run(objs.Cursor())
		return err
	})
	if err != nil {
		return storage.ListResult{}, w.visited, err
	}
	return res, w.visited, nil
}

// ListUploads lists a bucket's multipart uploads by key, then initiation.
func (s *Store) ListUploads(ctx context.Context, bucket string, opts storage.ListUploadsOptions) (storage.ListUploadsResult, error) {
	var res storage.ListUploadsResult
	if err := ctx.Err(); err != nil {
		return res, err
	}
	w := &walk{
		prefix: []byte(opts.Prefix),
		delim:  []byte(opts.Delimiter),
		max:    opts.MaxUploads,
		objectKey: func(k []byte) []byte {
			if i := bytes.IndexByte(k, 0); i >= 0 {
				return k[:i]
			}
			return k
		},
		entry: func(k, v []byte) error {
			var rec uploadRecord
			if err := decode(v, &rec); err != nil {
				return err
			}
			i := bytes.IndexByte(k, 0)
			if i < 0 {
				return nil // not an upload entry; nothing writes these
			}
			key, id := string(k[:i]), string(k[i+1:])
			res.Uploads = append(res.Uploads, rec.upload(bucket, key, id))
			res.NextKeyMarker, res.NextUploadIDMarker = key, id
			return nil
		},
		common: func(p []byte) {
			res.CommonPrefixes = append(res.CommonPrefixes, string(p))
			res.NextKeyMarker, res.NextUploadIDMarker = string(p), ""
		},
	}
	if opts.KeyMarker != "" {
		if opts.UploadIDMarker != "" {
			// Uploads of the marker key after the marker id, then
			// later keys.
			w.start = uploadKey(opts.KeyMarker, opts.UploadIDMarker)
			w.skip = w.start
		} else {
			// Only keys after the marker: skip every "<marker>\0<id>".
			w.start = append([]byte(opts.KeyMarker), 1)
		}
		w.markerPrefix = []byte(opts.KeyMarker)
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		upl, err := subOf(tx, bucket, uplBucket)
		if err != nil {
			return err
		}
		res.IsTruncated, err = w.run(upl.Cursor())
		return err
	})
	if err != nil {
		return storage.ListUploadsResult{}, err
	}
	return res, nil
}
