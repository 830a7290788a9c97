package meta

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/ownership"
	"github.com/facet-sds/facet/internal/s3err"
)

// checkBucketName guards the store's own invariants (index keys split on
// NUL). S3 naming rules are the front end's business.
func checkBucketName(bucket string) error {
	if bucket == "" || len(bucket) > 255 || strings.IndexByte(bucket, 0) >= 0 {
		return fmt.Errorf("%w %q", ErrInvalidBucketName, bucket)
	}
	return nil
}

// ClaimBucket records tenant as the owner of bucket. Bucket names are
// global; the claim is one transaction, so of many concurrent claims exactly
// one wins and the others get s3err.ErrBucketOwnedByYou or
// s3err.ErrBucketOwnedByOther. An unknown tenant gets ErrTenantNotFound.
func (s *Store) ClaimBucket(ctx context.Context, tenant, bucket string) error {
	if err := checkBucketName(bucket); err != nil {
		return fmt.Errorf("meta: claim bucket: %w", err)
	}
	err := s.kv.update(ctx, func(tx kvTx) error {
		// Checked in the same transaction as DeleteTenant's emptiness check,
		// so a bucket can never be claimed by a tenant being deleted.
		if _, err := requireTenant(tx, tenant); err != nil {
			return err
		}
		var rec bucketRecord
		ok, err := getRecord(tx, tblBuckets, bucket, &rec)
		if err != nil {
			return err
		}
		if ok {
			if rec.Tenant == tenant {
				return s3err.ErrBucketOwnedByYou
			}
			return s3err.ErrBucketOwnedByOther
		}
		rec = bucketRecord{V: recordVersion, Bucket: bucket, Tenant: tenant, Created: s.timestamp()}
		if err := putRecord(tx, tblBuckets, bucket, &rec); err != nil {
			return err
		}
		return tx.put(tblTenantBuckets, indexKey(tenant, bucket), nil)
	})
	if err != nil {
		return fmt.Errorf("meta: claim bucket %q: %w", bucket, err)
	}
	return nil
}

// ReleaseBucket forgets tenant's ownership of bucket. It fails with
// s3err.ErrNoSuchBucket when nobody owns it and s3err.ErrBucketOwnedByOther
// when another tenant does; a tenant can only release its own buckets.
func (s *Store) ReleaseBucket(ctx context.Context, tenant, bucket string) error {
	err := s.kv.update(ctx, func(tx kvTx) error {
		var rec bucketRecord
		ok, err := getRecord(tx, tblBuckets, bucket, &rec)
		if err != nil {
			return err
		}
		if !ok {
			return s3err.ErrNoSuchBucket
		}
		if rec.Tenant != tenant {
			return s3err.ErrBucketOwnedByOther
		}
		if err := tx.del(tblBuckets, bucket); err != nil {
			return err
		}
		return tx.del(tblTenantBuckets, indexKey(tenant, bucket))
	})
	if err != nil {
		return fmt.Errorf("meta: release bucket %q: %w", bucket, err)
	}
	return nil
}

// BucketOwner returns the tenant owning bucket and when it was claimed, or
// s3err.ErrNoSuchBucket.
func (s *Store) BucketOwner(ctx context.Context, bucket string) (string, time.Time, error) {
	var rec bucketRecord
	var ok bool
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		ok, err = getRecord(tx, tblBuckets, bucket, &rec)
		return err
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("meta: bucket owner %q: %w", bucket, err)
	}
	if !ok {
		return "", time.Time{}, fmt.Errorf("meta: bucket %q: %w", bucket, s3err.ErrNoSuchBucket)
	}
	return rec.Tenant, rec.Created, nil
}

// ListBuckets lists tenant's buckets in name order. An unknown tenant has
// none.
func (s *Store) ListBuckets(ctx context.Context, tenant string) ([]ownership.Bucket, error) {
	var out []ownership.Bucket
	err := s.kv.view(ctx, func(tx kvTx) error {
		out = []ownership.Bucket{}
		p := indexPrefix(tenant)
		return tx.scan(tblTenantBuckets, p, func(key string, _ []byte) error {
			name := strings.TrimPrefix(key, p)
			var rec bucketRecord
			ok, err := getRecord(tx, tblBuckets, name, &rec)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("index %s lists missing bucket %q", tblTenantBuckets, name)
			}
			out = append(out, ownership.Bucket{Name: rec.Bucket, Created: rec.Created})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("meta: list buckets: %w", err)
	}
	return out, nil
}
