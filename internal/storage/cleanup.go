package storage

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// MultipartCleanup is Facet's own background work on tenants' behalf: it
// aborts multipart uploads left unfinished for longer than Expiry. Each
// abort runs in the owning tenant's background flow (one operation and
// the bytes of the parts it frees), so policies cap it like Crystal
// capped replication: SET bandwidth WITH background=5MB/s.
type MultipartCleanup struct {
	Backend    Backend
	Owners     Owners
	Background Background
	Expiry     time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Owners lists tenants and their buckets (the metadata store).
type Owners interface {
	Tenants(ctx context.Context) ([]string, error)
	Buckets(ctx context.Context, tenant string) ([]string, error)
}

// Background admits Facet's own work in a tenant's background flow (the
// QoS limiter's background class).
type Background interface {
	// AdmitBackground waits until the flow admits one operation; it is
	// never refused for the rate alone.
	AdmitBackground(ctx context.Context, tenant string) (BackgroundWork, error)
}

// BackgroundWork is one admitted operation: its bytes are paced by
// WaitBytes, and Done ends it.
type BackgroundWork interface {
	WaitBytes(ctx context.Context, n int64) error
	Done()
}

// Run sweeps every period until ctx ends.
func (c *MultipartCleanup) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := c.Sweep(ctx); err != nil && ctx.Err() == nil {
			c.Log.Warn("multipart cleanup", "aborted", n, "err", err)
		} else if n > 0 {
			c.Log.Info("multipart cleanup", "aborted", n)
		}
	}
}

// Sweep aborts every expired upload once; it returns how many it aborted.
func (c *MultipartCleanup) Sweep(ctx context.Context) (int, error) {
	now := c.Now
	if now == nil {
		now = time.Now
	}
	cutoff := now().Add(-c.Expiry)
	tenants, err := c.Owners.Tenants(ctx)
	if err != nil {
		return 0, err
	}
	aborted := 0
	var errs []error
	for _, t := range tenants {
		buckets, err := c.Owners.Buckets(ctx, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, b := range buckets {
			n, err := c.sweepBucket(ctx, t, b, cutoff)
			aborted += n
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	return aborted, errors.Join(errs...)
}

func (c *MultipartCleanup) sweepBucket(ctx context.Context, tenant, bucket string, cutoff time.Time) (int, error) {
	aborted := 0
	opts := ListUploadsOptions{MaxUploads: 1000}
	for {
		page, err := c.Backend.ListUploads(ctx, bucket, opts)
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
func (c *MultipartCleanup) abort(ctx context.Context, tenant string, u Upload) error {
	st, err := c.Background.AdmitBackground(ctx, tenant)
	if err != nil {
		return err
	}
	defer st.Done()
	var size int64
	marker := 0
	for {
		parts, truncated, err := c.Backend.ListParts(ctx, u.Bucket, u.Key, u.UploadID, marker, 1000)
		if err != nil {
			if errors.Is(err, ErrUploadNotFound) {
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
	if err := c.Backend.AbortUpload(ctx, u.Bucket, u.Key, u.UploadID); err != nil && !errors.Is(err, ErrUploadNotFound) {
		return err
	}
	return nil
}
