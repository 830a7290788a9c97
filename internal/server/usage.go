package server

import (
	"context"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/s3api"
	"github.com/facet-sds/facet/internal/storage"
)

// usage adds up a tenant's objects from the backend's listings: what
// clients wrote and what the backend holds after filters. It walks the
// listings, so it is for the control API, never the request path.
type usage struct {
	buckets s3api.Buckets
	backend storage.Backend
}

func (u usage) TenantUsage(ctx context.Context, tenant string) (admin.Usage, error) {
	var out admin.Usage
	bs, err := u.buckets.ListBuckets(ctx, tenant)
	if err != nil {
		return out, err
	}
	for _, b := range bs {
		// Every version a bucket keeps holds space, as S3 counts.
		if err := storage.EachStored(ctx, u.backend, b.Name, func(o storage.ObjectInfo) {
			out.Objects++
			out.LogicalBytes += o.Meta.Size
			out.StoredBytes += o.StoredSize
		}); err != nil {
			return out, err
		}
	}
	return out, nil
}
