package quota

import (
	"context"
	"errors"

	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/storage"
)

// The operations that change what a tenant stores. Each reserves before
// it touches the backend and settles after it.

var _ storage.Backend = (*Backend)(nil)

// CreateBucket counts a tenant's bucket against its buckets quota. The
// front end claimed the bucket's name first, so its owner is known.
func (b *Backend) CreateBucket(ctx context.Context, bucket string) error {
	tenant, err := b.owner(ctx, bucket)
	if err != nil || tenant == "" {
		if err != nil {
			return err
		}
		return b.Backend.CreateBucket(ctx, bucket)
	}
	d := meta.Counters{Buckets: 1}
	if err := b.reserve(ctx, tenant, bucket, "", d); err != nil {
		return err
	}
	err = b.Backend.CreateBucket(ctx, bucket)
	if err != nil && !errors.Is(err, storage.ErrBucketExists) {
		b.settle(ctx, tenant, bucket, neg(d))
	}
	return err
}

// DeleteBucket gives the bucket back, with what it still counted (its open
// uploads, which the backend aborts with it), and forgets its counters.
func (b *Backend) DeleteBucket(ctx context.Context, bucket string) error {
	tenant, err := b.owner(ctx, bucket)
	if err != nil || tenant == "" {
		if err != nil {
			return err
		}
		return b.Backend.DeleteBucket(ctx, bucket)
	}
	scope := meta.Scope{Tenant: tenant, Bucket: bucket}
	_, used, err := b.cfg.Ledger.Quota(ctx, scope)
	if err != nil {
		return err
	}
	if err := b.Backend.DeleteBucket(ctx, bucket); err != nil {
		return err
	}
	used.Buckets = 1
	b.settle(ctx, tenant, "", neg(used))
	if err := b.cfg.Ledger.DropCounters(context.WithoutCancel(ctx), scope); err != nil {
		b.cfg.Log.Warn("quota: counters of a deleted bucket not dropped", "bucket", bucket, "err", err)
	}
	return nil
}

// previous returns what the object at key holds now (zero when absent):
// a write replaces it.
func (b *Backend) previous(ctx context.Context, bucket, key string) (meta.Counters, error) {
	info, err := b.Backend.HeadObject(ctx, bucket, key)
	switch {
	case err == nil:
	case errors.Is(err, storage.ErrObjectNotFound):
		return meta.Counters{}, nil
	case errors.Is(err, storage.ErrUnavailable), errors.Is(err, storage.ErrBucketNotFound), ctx.Err() != nil:
		return meta.Counters{}, err
	default:
		// A key the backend cannot hold (too long for a remote store's
		// prefix, say) holds nothing: the write itself refuses it, with
		// its own error.
		b.cfg.Log.Debug("quota: reading the object a write replaces", "bucket", bucket, "key", key, "err", err)
		return meta.Counters{}, nil
	}
	return meta.Counters{Bytes: info.Meta.Size, Physical: info.StoredSize, Objects: 1}, nil
}

// PutObject reserves the declared length (less the object it replaces)
// and an object before reading the body.
func (b *Backend) PutObject(ctx context.Context, bucket, key string, in storage.PutInput) (storage.ObjectInfo, error) {
	tenant, err := b.owner(ctx, bucket)
	if err != nil || tenant == "" {
		if err != nil {
			return storage.ObjectInfo{}, err
		}
		return b.Backend.PutObject(ctx, bucket, key, in)
	}
	old, err := b.replaced(ctx, bucket, key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	// Physical bytes are reserved as if stored as sent, so that a write
	// no filter transforms settles nothing: one charge, not two.
	d := meta.Counters{Bytes: in.Declared - old.Bytes, Physical: in.Declared - old.Physical, Objects: 1 - old.Objects}
	if err := b.reserve(ctx, tenant, bucket, key, d); err != nil {
		return storage.ObjectInfo{}, err
	}
	info, err := b.Backend.PutObject(ctx, bucket, key, in)
	if err != nil {
		b.settle(ctx, tenant, bucket, neg(d))
		return info, err
	}
	b.settle(ctx, tenant, bucket, meta.Counters{Bytes: info.Meta.Size - in.Declared, Physical: info.StoredSize - in.Declared})
	return info, nil
}

// DeleteObject gives the object's bytes back once it is gone.
func (b *Backend) DeleteObject(ctx context.Context, bucket, key string) error {
	tenant, err := b.owner(ctx, bucket)
	if err != nil || tenant == "" {
		if err != nil {
			return err
		}
		return b.Backend.DeleteObject(ctx, bucket, key)
	}
	old, err := b.replaced(ctx, bucket, key)
	if err != nil {
		return err
	}
	if err := b.Backend.DeleteObject(ctx, bucket, key); err != nil {
		return err
	}
	b.settle(ctx, tenant, bucket, neg(old))
	return nil
}

// CreateUpload counts an open upload against the uploads quota (or the
// default cap).
func (b *Backend) CreateUpload(ctx context.Context, bucket, key string, m storage.ObjectMeta) (storage.Upload, error) {
	tenant, err := b.owner(ctx, bucket)
	if err != nil || tenant == "" {
		if err != nil {
			return storage.Upload{}, err
		}
		return b.Backend.CreateUpload(ctx, bucket, key, m)
	}
	d := meta.Counters{Uploads: 1}
	if err := b.reserve(ctx, tenant, bucket, key, d); err != nil {
		return storage.Upload{}, err
	}
	up, err := b.Backend.CreateUpload(ctx, bucket, key, m)
	if err != nil {
		b.settle(ctx, tenant, bucket, neg(d))
	}
	return up, err
}

// PutPart reserves the part's declared length, less the part of the same
// number it replaces: open uploads' parts count as stored bytes.
func (b *Backend) PutPart(ctx context.Context, bucket, key, uploadID string, number int, in storage.PutInput) (storage.Part, error) {
	tenant, err := b.owner(ctx, bucket)
	if err != nil || tenant == "" {
		if err != nil {
			return storage.Part{}, err
		}
		return b.Backend.PutPart(ctx, bucket, key, uploadID, number, in)
	}
	var old storage.Part
	parts, _, err := b.Backend.ListParts(ctx, bucket, key, uploadID, number-1, 1)
	if err != nil {
		return storage.Part{}, err
	}
	if len(parts) == 1 && parts[0].Number == number {
		old = parts[0]
	}
	d := meta.Counters{Bytes: in.Declared - old.Size, Physical: in.Declared - old.StoredSize}
	if err := b.reserve(ctx, tenant, bucket, key, d); err != nil {
		return storage.Part{}, err
	}
	part, err := b.Backend.PutPart(ctx, bucket, key, uploadID, number, in)
	if err != nil {
		b.settle(ctx, tenant, bucket, neg(d))
		return part, err
	}
	b.settle(ctx, tenant, bucket, meta.Counters{Bytes: part.Size - in.Declared, Physical: part.StoredSize - in.Declared})
	return part, nil
}

// partsOf adds up an upload's stored parts.
func (b *Backend) partsOf(ctx context.Context, bucket, key, uploadID string) (meta.Counters, error) {
	var sum meta.Counters
	marker := 0
	for {
		parts, truncated, err := b.Backend.ListParts(ctx, bucket, key, uploadID, marker, 1000)
		if err != nil {
			return sum, err
		}
		for _, p := range parts {
			sum.Bytes += p.Size
			sum.Physical += p.StoredSize
			marker = p.Number
		}
		if !truncated || len(parts) == 0 {
			return sum, nil
		}
	}
}

// CompleteUpload reserves the object it makes (its bytes were reserved by
// its parts) and, once made, closes the upload: the parts it did not name
// are discarded, the object it replaces is gone.
func (b *Backend) CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []storage.CompletePart, m storage.ObjectMeta) (storage.ObjectInfo, error) {
	tenant, err := b.owner(ctx, bucket)
	if err != nil || tenant == "" {
		if err != nil {
			return storage.ObjectInfo{}, err
		}
		return b.Backend.CompleteUpload(ctx, bucket, key, uploadID, parts, m)
	}
	held, err := b.partsOf(ctx, bucket, key, uploadID)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	old, err := b.replaced(ctx, bucket, key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	d := meta.Counters{Objects: 1 - old.Objects}
	if err := b.reserve(ctx, tenant, bucket, key, d); err != nil {
		return storage.ObjectInfo{}, err
	}
	info, err := b.Backend.CompleteUpload(ctx, bucket, key, uploadID, parts, m)
	if err != nil {
		b.settle(ctx, tenant, bucket, neg(d))
		return info, err
	}
	b.settle(ctx, tenant, bucket, meta.Counters{
		Bytes:    info.Meta.Size - held.Bytes - old.Bytes,
		Physical: info.StoredSize - held.Physical - old.Physical,
		Uploads:  -1,
	})
	return info, nil
}

// AbortUpload gives back the upload and its parts' bytes.
func (b *Backend) AbortUpload(ctx context.Context, bucket, key, uploadID string) error {
	tenant, err := b.owner(ctx, bucket)
	if err != nil || tenant == "" {
		if err != nil {
			return err
		}
		return b.Backend.AbortUpload(ctx, bucket, key, uploadID)
	}
	held, err := b.partsOf(ctx, bucket, key, uploadID)
	if err != nil {
		return err
	}
	if err := b.Backend.AbortUpload(ctx, bucket, key, uploadID); err != nil {
		return err
	}
	held.Uploads = 1
	b.settle(ctx, tenant, bucket, neg(held))
	return nil
}

func neg(c meta.Counters) meta.Counters {
	return meta.Counters{Bytes: -c.Bytes, Physical: -c.Physical, Objects: -c.Objects, Buckets: -c.Buckets, Uploads: -c.Uploads}
}
