package s3api

import (
	"context"
	"time"

	"github.com/facet-sds/facet/internal/ownership"
)

// What the S3 front end needs from the metadata store. The interfaces are
// owned here, by their consumer; internal/meta implements them. Their
// errors are s3err's sentinels and their records ownership's types, leaves
// both sides import.

// Credentials resolves an access key id to its tenant and secret, or fails
// with s3err.ErrUnknownAccessKey.
type Credentials interface {
	LookupAccessKey(ctx context.Context, accessKey string) (tenant, secret string, err error)
}

// Buckets records which tenant owns which bucket. Bucket names are global,
// as in S3.
type Buckets interface {
	// ClaimBucket records tenant as the owner of bucket, or fails with
	// s3err.ErrBucketOwnedByYou / s3err.ErrBucketOwnedByOther.
	ClaimBucket(ctx context.Context, tenant, bucket string) error
	// ReleaseBucket forgets the ownership record.
	ReleaseBucket(ctx context.Context, tenant, bucket string) error
	// BucketOwner returns the owning tenant or s3err.ErrNoSuchBucket.
	BucketOwner(ctx context.Context, bucket string) (tenant string, created time.Time, err error)
	// ListBuckets lists a tenant's buckets in name order.
	ListBuckets(ctx context.Context, tenant string) ([]ownership.Bucket, error)
}
