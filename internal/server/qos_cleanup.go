package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/qos"
	"github.com/facet-sds/facet/internal/s3api"
	"github.com/facet-sds/facet/internal/storage"
)

// multipartCleanup is Facet's own background work on tenants' behalf: it
// aborts multipart uploads left unfinished for longer than expiry. Each
// abort runs in the owning tenant's background flow (one operation and
// the bytes of the parts it frees), so policies cap it like Crystal
// capped replication: SET bandwidth WITH background=5MB/s.
type multipartCleanup struct {
	backend storage.Backend
	owners  bucketLister
	limiter *qos.Limiter
	expiry  time.Duration
	now     func() time.Time
	log     *slog.Logger
}

// bucketLister lists tenants and their buckets (*meta.Store).
type bucketLister interface {
	ListTenants(ctx context.Context) ([]meta.Tenant, error)
	ListBuckets(ctx context.Context, tenant string) ([]s3api.BucketEntry, error)
}

// run sweeps every period until ctx ends.
func (c *multipartCleanup) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := c.sweep(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("multipart cleanup", "aborted", n, "err", err)
		} else if n > 0 {
			c.log.Info("multipart cleanup", "aborted", n)
		}
	}
}

// sweep aborts every expired upload once; it returns how many it aborted.
func (c *multipartCleanup) sweep(ctx context.Context) (int, error) {
	cutoff := c.now().Add(-c.expiry)
	tenants, err := c.owners.ListTenants(ctx)
	if err != nil {
		return 0, err
	}
	aborted := 0
	var errs []error
	for _, t := range tenants {
		buckets, err := c.owners.ListBuckets(ctx, t.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, b := range buckets {
			n, err := c.sweepBucket(ctx, t.Name, b.Name, cutoff)
			aborted += n
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return aborted, errors.Join(errs...)
}

func (c *multipartCleanup) sweepBucket(ctx context.Context, tenant, bucket string, cutoff time.Time) (int, error) {
	aborted := 0
	opts := storage.ListUploadsOptions{MaxUploads: 1000}
	for {
		page, err := c.backend.ListUploads(ctx, bucket, opts)
		if err != nil {
			return aborted, err
		}
		for _, u := range page.Uploads {
			if !u.Initiated.Before(cutoff) {
				continue
			}
			if err := c.abort(ctx, tenant, u); err != nil {
				return aborted, err
			}
			aborted++
		}
		if !page.IsTruncated {
			return aborted, nil
		}
		opts.KeyMarker, opts.UploadIDMarker = page.NextKeyMarker, page.NextUploadIDMarker
	}
}

// abort removes one upload as background work: admitted by the tenant's
// background ops bucket (waiting, never refused), paced by its byte
// bucket for the parts' size.
func (c *multipartCleanup) abort(ctx context.Context, tenant string, u storage.Upload) error {
	var st *qos.Stream
	for {
		var err error
		st, err = c.limiter.Admit(ctx, tenant, qos.ClassBackground)
		var sd *qos.SlowDownError
		if errors.As(err, &sd) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(sd.After):
			}
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	defer st.Done()
	var size int64
	marker := 0
	for {
		parts, truncated, err := c.backend.ListParts(ctx, u.Bucket, u.Key, u.UploadID, marker, 1000)
		if err != nil {
			if errors.Is(err, storage.ErrUploadNotFound) {
				return nil // another gateway was first
			}
			return err
		}
		for _, p := range parts {
			size += p.Size
			marker = p.Number
		}
		if !truncated || len(parts) == 0 {
			break
		}
	}
	if err := st.WaitBytes(ctx, size); err != nil {
		return err
	}
	if err := c.backend.AbortUpload(ctx, u.Bucket, u.Key, u.UploadID); err != nil && !errors.Is(err, storage.ErrUploadNotFound) {
		return err
	}
	return nil
}
