package fs

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/facet-sds/facet/internal/storage"
	bolt "go.etcd.io/bbolt"
)

// Index layout. The root bbolt bucket holds one nested bucket per storage
// bucket, named by the bucket name; inside it:
//
//	info             bucketRecord
//	obj/<key>        objRecord
//	upl/<key>\0<id>  uploadRecord (keys hold no NUL, so this sorts by key,
//	                 then by upload id, which starts with the initiation time)
//	prt/<id><n>      partRecord, n a big-endian uint32 part number
//	ver/<key>\0<^st> objRecord of a version that is not the latest, or of
//	                 a delete marker: st is its stamp, inverted big-endian,
//	                 so a key's versions sort newest first (versions.go).
//	                 Made when the bucket is first versioned.
//	vnl/<key>        the ver/ key of key's null version, while it is kept in
//	                 ver/ (versions.go), so it is found without a walk.
var (
	rootBucket = []byte("buckets")
	infoKey    = []byte("info")
	objBucket  = []byte("obj")
	uplBucket  = []byte("upl")
	prtBucket  = []byte("prt")
	verBucket  = []byte("ver")
	nulBucket  = []byte("vnl")
)

// recVersion prefixes every index value so that a later layout can be told
// apart from this one instead of being misread.
const recVersion byte = 1

const maxKeyLen = 1024

type bucketRecord struct {
	Created int64 `json:"c"`
	// Versioning is the bucket's S3 versioning state, "" never versioned.
	Versioning storage.Versioning `json:"v,omitempty"`
}

type objRecord struct {
	File     string             `json:"f"`
	Stored   int64              `json:"ss"`
	Modified int64              `json:"mt"` // unix nanoseconds
	Meta     storage.ObjectMeta `json:"m"`
	// VersionID is the version's id, "" for the null version. Stamp
	// orders a key's versions, larger is newer; records written before
	// stamps existed have 0 and are ordered by Modified. Marker makes the
	// record a delete marker, which has no data file. Per-version
	// attributes S3 has beyond these (retention, legal hold, tags,
	// storage class) join as further omitempty fields.
	VersionID string `json:"vid,omitempty"`
	Stamp     uint64 `json:"st,omitempty"`
	Marker    bool   `json:"dm,omitempty"`
	// shown is the version id as S3 shows it, set by place for the
	// caller's answer; never stored.
	shown string
}

func (r *objRecord) info(bucket, key string) storage.ObjectInfo {
	return storage.ObjectInfo{
		Bucket:       bucket,
		Key:          key,
		LastModified: time.Unix(0, r.Modified).UTC(),
		StoredSize:   r.Stored,
		Meta:         r.Meta,
	}
}

type uploadRecord struct {
	Initiated int64              `json:"i"`
	Meta      storage.ObjectMeta `json:"m"`
}

func (r *uploadRecord) upload(bucket, key, id string) storage.Upload {
	return storage.Upload{
		Bucket:    bucket,
		Key:       key,
		UploadID:  id,
		Initiated: time.Unix(0, r.Initiated).UTC(),
		Meta:      r.Meta,
	}
}

type partRecord struct {
	File      string            `json:"f"`
	Stored    int64             `json:"ss"`
	Modified  int64             `json:"mt"`
	ETag      string            `json:"e"`
	Size      int64             `json:"s"`
	Checksums map[string]string `json:"ck,omitempty"`
	System    map[string]string `json:"sys,omitempty"`
}

func (r *partRecord) part(n int) storage.Part {
	return storage.Part{
		Number:       n,
		ETag:         r.ETag,
		Size:         r.Size,
		StoredSize:   r.Stored,
		LastModified: time.Unix(0, r.Modified).UTC(),
		Checksums:    r.Checksums,
		System:       r.System,
	}
}

func encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("fs: encode index record: %w", err)
	}
	return append([]byte{recVersion}, b...), nil
}

func decode(b []byte, v any) error {
	if len(b) == 0 || b[0] != recVersion {
		return fmt.Errorf("fs: index record of unknown version")
	}
	if err := json.Unmarshal(b[1:], v); err != nil {
		return fmt.Errorf("fs: decode index record: %w", err)
	}
	return nil
}

// put encodes v and stores it under k.
func put(b *bolt.Bucket, k []byte, v any) error {
	val, err := encode(v)
	if err != nil {
		return err
	}
	return b.Put(k, val)
}

// getObj loads an object record; ok is false when the key is absent.
func getObj(objs *bolt.Bucket, key string) (rec objRecord, ok bool, err error) {
	v := objs.Get([]byte(key))
	if v == nil {
		return rec, false, nil
	}
	return rec, true, decode(v, &rec)
}

// bucketOf returns the index bucket of a storage bucket.
func bucketOf(tx *bolt.Tx, bucket string) (*bolt.Bucket, error) {
	if bucket != "" {
		if b := tx.Bucket(rootBucket).Bucket([]byte(bucket)); b != nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("fs: bucket %q: %w", bucket, storage.ErrBucketNotFound)
}

// subOf returns one of a storage bucket's sub-buckets.
func subOf(tx *bolt.Tx, bucket string, name []byte) (*bolt.Bucket, error) {
	b, err := bucketOf(tx, bucket)
	if err != nil {
		return nil, err
	}
	return sub(b, name)
}

// objectIn returns the objects sub-bucket and the record of bucket/key, or
// storage.ErrObjectNotFound.
func objectIn(tx *bolt.Tx, bucket, key string) (*bolt.Bucket, objRecord, error) {
	objs, err := subOf(tx, bucket, objBucket)
	if err != nil {
		return nil, objRecord{}, err
	}
	rec, ok, err := getObj(objs, key)
	if err == nil && !ok {
		err = fmt.Errorf("fs: %q/%q: %w", bucket, key, storage.ErrObjectNotFound)
	}
	return objs, rec, err
}

// sub returns one of a bucket's fixed sub-buckets; CreateBucket made them.
func sub(b *bolt.Bucket, name []byte) (*bolt.Bucket, error) {
	s := b.Bucket(name)
	if s == nil {
		return nil, fmt.Errorf("fs: index is missing sub-bucket %q", name)
	}
	return s, nil
}

// checkKey rejects keys S3 would not accept. NUL is refused because it
// separates key and upload id in the index.
func checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("fs: empty key: %w", storage.ErrInvalidKey)
	case len(key) > maxKeyLen:
		return fmt.Errorf("fs: key of %d bytes: %w", len(key), storage.ErrInvalidKey)
	case !utf8.ValidString(key):
		return fmt.Errorf("fs: key is not UTF-8: %w", storage.ErrInvalidKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] == 0 {
			return fmt.Errorf("fs: key holds NUL: %w", storage.ErrInvalidKey)
		}
	}
	return nil
}

func uploadKey(key, id string) []byte {
	b := make([]byte, 0, len(key)+1+len(id))
	b = append(b, key...)
	b = append(b, 0)
	return append(b, id...)
}

func partKey(id string, n int) []byte {
	b := make([]byte, len(id)+4)
	copy(b, id)
	binary.BigEndian.PutUint32(b[len(id):], uint32(n))
	return b
}
