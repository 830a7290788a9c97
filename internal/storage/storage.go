// Package storage owns the contract between Facet's data path and the place
// where object bytes finally live. Two implementations are planned: the
// embedded filesystem backend (storage/fs) and a remote S3-compatible object
// store. Bytes move as streams; no layer holds a whole object in memory.
package storage

import (
	"context"
	"errors"
	"io"
	"time"
)

// Errors every backend returns (wrapped with %w is fine); the S3 layer maps
// them to S3 error codes with errors.Is.
var (
	ErrBucketNotFound   = errors.New("bucket not found")
	ErrBucketExists     = errors.New("bucket already exists")
	ErrBucketNotEmpty   = errors.New("bucket not empty")
	ErrObjectNotFound   = errors.New("object not found")
	ErrUploadNotFound   = errors.New("multipart upload not found")
	ErrInvalidPart      = errors.New("invalid part")
	ErrInvalidRange     = errors.New("invalid range")
	ErrInvalidKey       = errors.New("invalid object key")
	ErrInvalidPartOrder = errors.New("parts not in ascending order")
	// ErrKeyTooLong: the key is valid for S3 but too long for where the
	// bytes live (a remote store's key also holds a prefix and the bucket).
	ErrKeyTooLong = errors.New("object key too long for the backend")
	// ErrUnavailable means the place bytes live cannot answer now (network
	// failure, timeout, backend overload): the client should retry later.
	ErrUnavailable = errors.New("storage backend unavailable")
	// ErrVersionChanged: a conditional operation found another version
	// of the object than the one it was given.
	ErrVersionChanged = errors.New("object changed")
)

// ObjectMeta is what a client (and Facet's filters) attach to an object.
type ObjectMeta struct {
	// Size is the logical size the client wrote; ETag is the client-visible
	// ETag without quotes (hex MD5, or md5-of-md5s "-N" for multipart).
	Size int64  `json:"size"`
	ETag string `json:"etag"`

	ContentType        string `json:"ct,omitempty"`
	ContentEncoding    string `json:"ce,omitempty"`
	ContentDisposition string `json:"cd,omitempty"`
	ContentLanguage    string `json:"cl,omitempty"`
	CacheControl       string `json:"cc,omitempty"`
	Expires            string `json:"ex,omitempty"`

	// UserMeta holds x-amz-meta-* values keyed by the lower-case suffix.
	UserMeta map[string]string `json:"um,omitempty"`
	// Checksums holds x-amz-checksum-* values keyed by the upper-case
	// algorithm name ("CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME"),
	// base64 as S3 shows them.
	Checksums map[string]string `json:"ck,omitempty"`
	// ChecksumType is "FULL_OBJECT" or "COMPOSITE" when Checksums is set.
	ChecksumType string `json:"ckt,omitempty"`
	// System is Facet's own metadata: filters record their reverse plan here
	// (name, version, parameters, key id — never a key).
	System map[string]string `json:"sys,omitempty"`
	// PartsCount is set for objects assembled by multipart upload.
	PartsCount int `json:"parts,omitempty"`
	// PartSizes holds the stored size of each part of a multipart object, so
	// that GET ?partNumber=N can be answered.
	PartSizes []int64 `json:"psz,omitempty"`
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Bucket       string
	Key          string
	LastModified time.Time
	// StoredSize is the number of bytes the backend holds, which differs from
	// Meta.Size once reversible filters transform the stream.
	StoredSize int64
	Meta       ObjectMeta
	// VersionID is the version's id where the bucket is or was versioned
	// (NullVersion for the null version), "" in a never-versioned bucket.
	VersionID string
	// DeleteMarker and IsLatest describe an entry of ListObjectVersions.
	DeleteMarker, IsLatest bool
}

// PutInput is one object write.
type PutInput struct {
	Body io.Reader
	Meta ObjectMeta
	// Declared is the logical length the writer declared before its body
	// (Content-Length, an aws-chunked body's decoded length, a copy
	// source's size), so that quotas refuse a write before any byte is
	// stored; 0 when unknown. Backends ignore it.
	Declared int64
	// Seal is called after Body has returned io.EOF and before the object
	// becomes visible. It may complete Meta (ETag, Size, checksums known only
	// once the stream has ended) and may veto the write by returning an
	// error, in which case nothing is stored. It may be nil.
	Seal func(m *ObjectMeta) error
}

// Range selects bytes [Start, Start+Length) of the stored stream.
type Range struct {
	Start, Length int64
}

// ListOptions parameterise a listing. Marker is exclusive: keys strictly
// after it are returned.
type ListOptions struct {
	Prefix    string
	Delimiter string
	Marker    string
	MaxKeys   int
}

// ListResult is one page of a listing, keys and common prefixes interleaved
// in lexical order as S3 defines it.
type ListResult struct {
	Objects        []ObjectInfo
	CommonPrefixes []string
	IsTruncated    bool
	// NextMarker is the last key or common prefix returned, to be passed as
	// Marker for the next page.
	NextMarker string
}

// Upload describes an in-progress multipart upload.
type Upload struct {
	Bucket    string
	Key       string
	UploadID  string
	Initiated time.Time
	Meta      ObjectMeta
}

// Part describes one uploaded part.
type Part struct {
	Number       int
	ETag         string
	Size         int64 // logical size the client wrote
	StoredSize   int64
	LastModified time.Time
	Checksums    map[string]string
	System       map[string]string
}

// ListUploadsOptions parameterise ListMultipartUploads.
type ListUploadsOptions struct {
	Prefix         string
	Delimiter      string
	KeyMarker      string
	UploadIDMarker string
	MaxUploads     int
}

// ListUploadsResult is one page of in-progress uploads.
type ListUploadsResult struct {
	Uploads            []Upload
	CommonPrefixes     []string
	IsTruncated        bool
	NextKeyMarker      string
	NextUploadIDMarker string
}

// CompletePart names a part in CompleteMultipartUpload.
type CompletePart struct {
	Number int
	ETag   string
}

// Backend stores buckets and objects. Implementations must be safe for
// concurrent use, durable once a write call returns nil, and atomic on
// overwrite: a reader sees the old object or the new one, never a mix.
type Backend interface {
	CreateBucket(ctx context.Context, bucket string) error
	// DeleteBucket fails with ErrBucketNotEmpty while objects remain;
	// the bucket's open multipart uploads are aborted with it, as S3
	// does, so they alone never keep a bucket.
	DeleteBucket(ctx context.Context, bucket string) error
	BucketExists(ctx context.Context, bucket string) (bool, error)

	PutObject(ctx context.Context, bucket, key string, in PutInput) (ObjectInfo, error)
	// GetObject returns the stored stream, or the given range of it when rng
	// is non-nil, with the info of the very version it streams (one read:
	// the S3 front end answers a GET from it alone, so no overwrite can
	// come between its headers and its body). The caller closes the
	// reader.
	GetObject(ctx context.Context, bucket, key string, rng *Range) (io.ReadCloser, ObjectInfo, error)
	HeadObject(ctx context.Context, bucket, key string) (ObjectInfo, error)
	// DeleteObject is idempotent: deleting a missing key is not an error.
	DeleteObject(ctx context.Context, bucket, key string) error
	// UpdateMeta replaces an object's metadata without rewriting its data
	// (CopyObject onto itself with REPLACE).
	UpdateMeta(ctx context.Context, bucket, key string, meta ObjectMeta) (ObjectInfo, error)
	ListObjects(ctx context.Context, bucket string, opts ListOptions) (ListResult, error)

	CreateUpload(ctx context.Context, bucket, key string, meta ObjectMeta) (Upload, error)
	GetUpload(ctx context.Context, bucket, key, uploadID string) (Upload, error)
	// PutPart stores a part; Seal works as for PutObject, with m.ETag/m.Size
	// and m.Checksums describing the part.
	PutPart(ctx context.Context, bucket, key, uploadID string, number int, in PutInput) (Part, error)
	ListParts(ctx context.Context, bucket, key, uploadID string, marker, max int) (parts []Part, truncated bool, err error)
	// CompleteUpload assembles the named parts, in the order given, into the
	// object. meta is the final object metadata (ETag md5-of-md5s-N is
	// computed by the caller). Parts not named are discarded.
	CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []CompletePart, meta ObjectMeta) (ObjectInfo, error)
	AbortUpload(ctx context.Context, bucket, key, uploadID string) error
	ListUploads(ctx context.Context, bucket string, opts ListUploadsOptions) (ListUploadsResult, error)

	Close() error
}
