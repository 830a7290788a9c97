package dataplane

import (
	"context"
	"time"

	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

type keeper interface {
	KeepFor() time.Duration
}

// Delete deletes an object, or the version t names. In a bucket that
// keeps versions it writes a delete marker and the version store keeps
// what was deleted; elsewhere the recycle bin, when one is in force for
// the object, keeps the version it deletes. A missing object or version
// is no error.
func (p *Plane) Delete(ctx context.Context, t Target) (storage.DeleteResult, error) {
	res, err := p.deleteKept(ctx, t)
	p.changed(t.Bucket, t.Key)
	return res, err
}

func (p *Plane) deleteKept(ctx context.Context, t Target) (storage.DeleteResult, error) {
	bucket, key := t.Bucket, t.Key
	if p.Versions() != nil {
		versioned, err := p.versioned(ctx, bucket)
		if err != nil {
			return storage.DeleteResult{}, S3Error(err, bucket, key)
		}
		if versioned || t.VersionID != "" {
			return p.deleteVersioned(ctx, t)
		}
	}
	if keepFor, ok := p.binFor(t); ok {
		err := p.trash.Delete(ctx, t.Tenant, bucket, key, keepFor)
		if err != nil && p.trash.Busy(err) {
			// Retryable: the SDKs retry SlowDown by themselves.
			return storage.DeleteResult{}, &s3err.Error{Code: s3err.SlowDown, Bucket: bucket, Key: key, Message: "The object kept changing while the recycle bin copied it; it was not deleted. Retry.", Err: err}
		}
		return storage.DeleteResult{}, S3Error(err, bucket, key)
	}
	return storage.DeleteResult{}, S3Error(p.backend.DeleteObject(ctx, bucket, key), bucket, key)
}
