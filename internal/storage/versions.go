package storage

import (
	"context"
	"errors"
	"io"
	"time"
)

// Versioning is a bucket's versioning state as S3 names it. A bucket that
// was never versioned has the empty state: each key holds one version,
// the null one, which a write replaces. Once a bucket was versioned it
// never goes back to the empty state, only between Enabled and Suspended.
type Versioning string

// The versioning states.
const (
	VersioningOff       Versioning = ""
	VersioningEnabled   Versioning = "Enabled"
	VersioningSuspended Versioning = "Suspended"
)

// NullVersion is the id S3 gives the version written while a bucket was
// unversioned or suspended.
const NullVersion = "null"

// Errors of the version API.
var (
	// ErrNoSuchVersion: a well-formed version id the key does not have.
	ErrNoSuchVersion = errors.New("no such version")
	// ErrInvalidVersion: a version id this backend never makes.
	ErrInvalidVersion = errors.New("invalid version id")
	// ErrDeleteMarkerNamed: a read named a delete marker by its id.
	ErrDeleteMarkerNamed = errors.New("the version is a delete marker")
)

// DeleteMarkerError is the failure of a read that found a delete marker:
// the key's latest version (errors.Is ErrObjectNotFound) or the version
// the read named (errors.Is ErrDeleteMarkerNamed). S3 answers both with
// x-amz-delete-marker and the marker's version id.
type DeleteMarkerError struct {
	VersionID    string
	LastModified time.Time
	// Named is set when the read named the marker's version id.
	Named bool
}

func (e *DeleteMarkerError) Error() string {
	if e.Named {
		return "version " + e.VersionID + " is a delete marker"
	}
	return "the latest version is a delete marker"
}

// Is makes a marker found as the latest version an absent object.
func (e *DeleteMarkerError) Is(target error) bool {
	if e.Named {
		return target == ErrDeleteMarkerNamed
	}
	return target == ErrObjectNotFound
}

// DeleteResult says what a DELETE did: the version it removed or the
// delete marker it wrote (DeleteMarker set, VersionID the marker's).
// Both are empty when a never-versioned bucket's object was deleted.
type DeleteResult struct {
	VersionID    string
	DeleteMarker bool
}

// ListVersionsOptions parameterise ListObjectVersions. KeyMarker alone
// starts after every version of that key; with VersionIDMarker, after that
// version of it.
type ListVersionsOptions struct {
	Prefix, Delimiter          string
	KeyMarker, VersionIDMarker string
	MaxKeys                    int
}

// ListVersionsResult is one page of versions in key order, each key's
// newest first. Delete markers are entries with Info.DeleteMarker set.
type ListVersionsResult struct {
	Versions       []ObjectInfo
	CommonPrefixes []string
	IsTruncated    bool
	// NextKeyMarker and NextVersionIDMarker continue the listing; the
	// version marker is empty when the page ended on a common prefix.
	NextKeyMarker, NextVersionIDMarker string
}

// Versions is what a backend that keeps object versions adds to Backend.
// In a bucket whose versioning is Enabled, PutObject, CompleteUpload and
// UpdateMeta add a version and DeleteObject writes a delete marker; while
// Suspended they write the null version, replacing the previous null one.
// GetObject and HeadObject read the latest version, failing with a
// *DeleteMarkerError when it is a delete marker.
type Versions interface {
	// SetVersioning sets a bucket's state: Enabled or Suspended.
	SetVersioning(ctx context.Context, bucket string, v Versioning) error
	BucketVersioning(ctx context.Context, bucket string) (Versioning, error)
	// GetObjectVersion and HeadObjectVersion read one version by its id
	// (NullVersion for the null one).
	GetObjectVersion(ctx context.Context, bucket, key, versionID string, rng *Range) (io.ReadCloser, ObjectInfo, error)
	HeadObjectVersion(ctx context.Context, bucket, key, versionID string) (ObjectInfo, error)
	// DeleteVersion deletes for good the version named, a delete marker
	// too; "" deletes as DeleteObject does (a marker where versioned). A
	// version that does not exist is no error.
	DeleteVersion(ctx context.Context, bucket, key, versionID string) (DeleteResult, error)
	ListObjectVersions(ctx context.Context, bucket string, opts ListVersionsOptions) (ListVersionsResult, error)
}

// EachStored calls fn for every object version b holds in bucket: every
// version where b keeps versions (delete markers hold nothing and are
// left out), else every object. Usage and quota recounts add up what is
// stored with it, a page of the listing in memory at a time.
func EachStored(ctx context.Context, b Backend, bucket string, fn func(ObjectInfo)) error {
	if v, ok := b.(Versions); ok {
		opts := ListVersionsOptions{MaxKeys: 1000}
		for {
			page, err := v.ListObjectVersions(ctx, bucket, opts)
			if err != nil {
				return err
			}
			for _, o := range page.Versions {
				if !o.DeleteMarker {
					fn(o)
				}
			}
			if !page.IsTruncated {
				return nil
			}
			opts.KeyMarker, opts.VersionIDMarker = page.NextKeyMarker, page.NextVersionIDMarker
		}
	}
	opts := ListOptions{MaxKeys: 1000}
	for {
		page, err := b.ListObjects(ctx, bucket, opts)
		if err != nil {
			return err
		}
		for _, o := range page.Objects {
			fn(o)
		}
		if !page.IsTruncated {
			return nil
		}
		opts.Marker = page.NextMarker
	}
}
