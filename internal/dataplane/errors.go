package dataplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/integrity"
)

// The entry points answer *s3err.Error values, the shared vocabulary of
// request errors, naming the bucket and key they concern (a copy's source
// is not its destination); front ends render them.

// S3Error maps a backend or filter error to its S3 error.
func S3Error(err error, bucket, key string) error {
	var e *s3err.Error
	var ff filter.Failure
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return e
	}
	if e, ok := versionErr(err, bucket, key); ok {
		return e
	}
	switch {
	case errors.Is(err, filter.ErrBusy):
		// The node's filter budget, not the filter nor the client: the
		// SDKs retry SlowDown by themselves.
		msg := err.Error()
		if errors.As(err, &ff) {
			msg = ff.Error()
		}
		return &s3err.Error{Code: s3err.SlowDown, Bucket: bucket, Key: key, Message: "Please reduce your request rate: " + msg, Err: err}
	case errors.As(err, &ff):
		return &s3err.Error{Code: s3err.FilterFailed, Bucket: bucket, Key: key, Message: ff.Error(), Err: err}
	case errors.Is(err, ErrFilterUnavailable):
		// Still an internal error, which clients retry: a node that has
		// not loaded a new filter yet will. The message names the filter.
		return &s3err.Error{Code: s3err.InternalError, Bucket: bucket, Key: key, Message: err.Error(), Err: err}
	case errors.Is(err, integrity.ErrCorrupt):
		return &s3err.Error{Code: s3err.InternalError, Bucket: bucket, Key: key,
			Message: "The stored object failed its integrity check and cannot be returned.", Err: err}
	case errors.Is(err, storage.ErrBucketNotFound):
		return &s3err.Error{Code: s3err.NoSuchBucket, Bucket: bucket, Err: err}
	case errors.Is(err, storage.ErrBucketNotEmpty):
		return &s3err.Error{Code: s3err.BucketNotEmpty, Bucket: bucket, Err: err}
	case errors.Is(err, storage.ErrObjectNotFound):
		return &s3err.Error{Code: s3err.NoSuchKey, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrUploadNotFound):
		return &s3err.Error{Code: s3err.NoSuchUpload, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrInvalidPart):
		return &s3err.Error{Code: s3err.InvalidPart, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrInvalidPartOrder):
		return &s3err.Error{Code: s3err.InvalidPartOrder, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrInvalidRange):
		return &s3err.Error{Code: s3err.InvalidRange, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrKeyTooLong):
		return &s3err.Error{Code: s3err.KeyTooLongError, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrInvalidKey):
		return &s3err.Error{Code: s3err.InvalidArgument, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		return &s3err.Error{Code: s3err.InsufficientStorage, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, storage.ErrUnavailable):
		return &s3err.Error{Code: s3err.SlowDown, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &s3err.Error{Code: s3err.IncompleteBody, Bucket: bucket, Key: key, Err: err}
	case errors.Is(err, context.Canceled):
		return &s3err.Error{Code: s3err.IncompleteBody, Bucket: bucket, Key: key, Err: err}
	}
	return &s3err.Error{Code: s3err.InternalError, Bucket: bucket, Key: key, Err: err}
}

// decodeErr maps a failure to read an object back.
func decodeErr(err error, bucket, key string) error {
	if errors.Is(err, filter.ErrIntegrity) {
		return &s3err.Error{Code: s3err.InternalError, Bucket: bucket, Key: key,
			Message: "The stored object failed its integrity check and cannot be returned.", Err: err}
	}
	return S3Error(fmt.Errorf("read back: %w", err), bucket, key)
}
