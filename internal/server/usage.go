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
	versions, _ := u.backend.(storage.Versions)
	for _, b := range bs {
		if versions != nil {
			// Every version a bucket keeps holds space, as S3 counts.
			if err := addVersions(ctx, versions, b.Name, &out); err != nil {
				return out, err
			}
			continue
		}
		marker := ""
		for {
			page, err := u.backend.ListObjects(ctx, b.Name, storage.ListOptions{Marker: marker, MaxKeys: 1000})
			if err != nil {
				return out, err
			}
			for _, o := range page.Objects {
				out.Objects++
				out.LogicalBytes += o.Meta.Size
				out.StoredBytes += o.StoredSize
			}
			if !page.IsTruncated {
				break
			}
			marker = page.NextMarker
		}
	}
	return out, nil
}

// addVersions adds up every version of a bucket (delete markers hold
// nothing).
func addVersions(ctx context.Context, v storage.Versions, bucket string, out *admin.Usage) error {
	opts := storage.ListVersionsOptions{MaxKeys: 1000}
	for {
		page, err := v.ListObjectVersions(ctx, bucket, opts)
		if err != nil {
			return err
		}
		for _, o := range page.Versions {
			if o.DeleteMarker {
				continue
			}
			out.Objects++
			out.LogicalBytes += o.Meta.Size
			out.StoredBytes += o.StoredSize
		}
		if !page.IsTruncated {
			return nil
		}
		opts.KeyMarker, opts.VersionIDMarker = page.NextKeyMarker, page.NextVersionIDMarker
	}
}
