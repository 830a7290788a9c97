package dataplane

import (
	"context"
	"time"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

type keeper interface {
	KeepFor() time.Duration
}

// Delete deletes an object: through the recycle bin when one is in force
// for it, which keeps the version it deletes. A missing object is no
// error.
func (p *Plane) Delete(ctx context.Context, t Target) error {
	err := p.deleteKept(ctx, t)
	p.changed(t.Bucket, t.Key)
	return err
}

func (p *Plane) deleteKept(ctx context.Context, t Target) error {
	bucket, key := t.Bucket, t.Key
	if p.trash != nil && p.reqFilters != nil {
		for _, st := range p.reqFilters.ForRequest(t.filterRequest(filter.MethodDelete, -1, storage.ObjectMeta{})).Steps {
			if k, ok := st.Filter.(keeper); ok {
				err := p.trash.Delete(ctx, t.Tenant, bucket, key, k.KeepFor())
				if err != nil && p.trash.Busy(err) {
					// Retryable: the SDKs retry SlowDown by themselves.
					return &s3err.Error{Code: s3err.SlowDown, Bucket: bucket, Key: key, Message: "The object kept changing while the recycle bin copied it; it was not deleted. Retry.", Err: err}
				}
				return S3Error(err, bucket, key)
			}
		}
	}
	return S3Error(p.backend.DeleteObject(ctx, bucket, key), bucket, key)
}
