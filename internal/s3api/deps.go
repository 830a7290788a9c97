package s3api

import (
	"context"
	"errors"
	"time"
)

// What the S3 front end needs from the metadata store. The interfaces are
// owned here, by their consumer; internal/meta implements them.

// ErrUnknownAccessKey is returned by Credentials.LookupAccessKey for a key
// that does not exist or was revoked.
var ErrUnknownAccessKey = errors.New("unknown access key")

// Credentials resolves an access key id to its tenant and secret.
type Credentials interface {
	LookupAccessKey(ctx context.Context, accessKey string) (tenant, secret string, err error)
}

// Bucket ownership errors returned by Buckets.
var (
	ErrBucketOwnedByOther = errors.New("bucket owned by another tenant")
	ErrBucketOwnedByYou   = errors.New("bucket already owned by you")
	ErrNoSuchBucket       = errors.New("no such bucket")
)

// BucketEntry is one bucket of a tenant.
type BucketEntry struct {
	Name    string
	Created time.Time
}

// Buckets records which tenant owns which bucket. Bucket names are global,
// as in S3.
type Buckets interface {
	// ClaimBucket records tenant as the owner of bucket, or fails with
	// ErrBucketOwnedByYou / ErrBucketOwnedByOther.
	ClaimBucket(ctx context.Context, tenant, bucket string) error
	// ReleaseBucket forgets the ownership record.
	ReleaseBucket(ctx context.Context, tenant, bucket string) error
	// BucketOwner returns the owning tenant or ErrNoSuchBucket.
	BucketOwner(ctx context.Context, bucket string) (tenant string, created time.Time, err error)
	// ListBuckets lists a tenant's buckets in name order.
	ListBuckets(ctx context.Context, tenant string) ([]BucketEntry, error)
}
