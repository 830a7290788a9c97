package quota

import (
	"context"
	"errors"
	"fmt"

	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/storage"
)

// Recount sets a tenant's usage, and each of its buckets', to what the
// backend holds: objects, their logical and stored bytes, open uploads and
// their parts. It walks the listings, so it is an administrator's repair
// (`facet ctl quota recount`), run when the counters drifted (a crash
// between a write and its settlement, concurrent writes of one key); a
// write that runs meanwhile may be missed by the walk and is then off by
// its own size until the next recount.
func (b *Backend) Recount(ctx context.Context, tenant string, buckets []string) (meta.Counters, error) {
	total := meta.Counters{Buckets: int64(len(buckets))}
	for _, bucket := range buckets {
		c, err := b.countBucket(ctx, bucket)
		if err != nil {
			return total, fmt.Errorf("quota: recount %s: %w", bucket, err)
		}
		if err := b.cfg.Ledger.SetUsage(ctx, meta.Scope{Tenant: tenant, Bucket: bucket}, c); err != nil {
			return total, err
		}
		total.Bytes += c.Bytes
		total.Physical += c.Physical
		total.Objects += c.Objects
		total.Uploads += c.Uploads
	}
	if err := b.cfg.Ledger.SetUsage(ctx, meta.Scope{Tenant: tenant}, total); err != nil {
		return total, err
	}
	return total, nil
}

func (b *Backend) countBucket(ctx context.Context, bucket string) (meta.Counters, error) {
	var c meta.Counters
	if err := b.countObjects(ctx, bucket, &c); err != nil {
		return c, err
	}
	return c, b.countUploads(ctx, bucket, &c)
}

// countObjects adds up the bucket's objects, every version of them where
// the backend keeps versions (delete markers hold nothing).
func (b *Backend) countObjects(ctx context.Context, bucket string, c *meta.Counters) error {
	return storage.EachStored(ctx, b.Backend, bucket, func(o storage.ObjectInfo) {
		c.Objects++
		c.Bytes += o.Meta.Size
		c.Physical += o.StoredSize
	})
}

// countUploads adds up the bucket's open uploads and their parts.
func (b *Backend) countUploads(ctx context.Context, bucket string, c *meta.Counters) error {
	opts := storage.ListUploadsOptions{MaxUploads: 1000}
	for {
		page, err := b.Backend.ListUploads(ctx, bucket, opts)
		if err != nil {
			return err
		}
		for _, u := range page.Uploads {
			held, err := b.partsOf(ctx, bucket, u.Key, u.UploadID)
			if errors.Is(err, storage.ErrUploadNotFound) {
				continue // completed or aborted meanwhile
			}
			if err != nil {
				return err
			}
			c.Uploads++
			c.Bytes += held.Bytes
			c.Physical += held.Physical
		}
		if !page.IsTruncated {
			return nil
		}
		opts.KeyMarker, opts.UploadIDMarker = page.NextKeyMarker, page.NextUploadIDMarker
	}
}
