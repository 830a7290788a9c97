package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/sysdev"
)

// The data locality service (seeds/000 §8.2): where an object's bytes are,
// so that a compute scheduler can run work next to them.

// Locator is implemented by backends that can tell where an object's bytes
// are; it is optional (the fs and s3 backends implement it).
type Locator interface {
	Locate(ctx context.Context, bucket, key string) (storage.Location, error)
}

// bucketOwners tells who owns a bucket; *meta.Store implements it. It is
// optional so that Store stays what the rest of the API needs.
type bucketOwners interface {
	BucketOwner(ctx context.Context, bucket string) (string, time.Time, error)
}

// Locality is the body of GET /locality/{bucket}/{key}. Kind says which of
// FS, Remote (and, for block volumes, Volume) is set.
type Locality struct {
	Bucket     string                  `json:"bucket"`
	Key        string                  `json:"key"`
	Tenant     string                  `json:"tenant"`
	Node       string                  `json:"node"`
	Kind       string                  `json:"kind"`
	StoredSize int64                   `json:"stored_size"`
	FS         *sysdev.Placement       `json:"fs,omitempty"`
	Remote     *storage.RemoteLocation `json:"remote,omitempty"`
}

func (h *handler) locality(w http.ResponseWriter, r *http.Request) error {
	bucket, key := r.PathValue("bucket"), r.PathValue("key")
	// Keys with "//" or dot segments cannot travel in a path (it is
	// cleaned, and the request redirected): they come as ?key= instead.
	if q := r.URL.Query().Get("key"); q != "" && key == "" {
		key = q
	}
	if h.locator == nil {
		return apiErr(http.StatusNotImplemented, "NotImplemented", "this server's storage backend cannot tell where objects are")
	}
	if key == "" {
		return apiErr(http.StatusBadRequest, "InvalidInput", "no object key: GET /locality/{bucket}/{key} or /locality/{bucket}/?key=KEY")
	}
	out := Locality{Bucket: bucket, Key: key, Node: h.node}
	if owners, ok := h.store.(bucketOwners); ok {
		owner, _, err := owners.BucketOwner(r.Context(), bucket)
		switch {
		case errors.Is(err, s3err.ErrNoSuchBucket):
			return noSuchBucket(bucket)
		case err != nil:
			return err
		}
		out.Tenant = owner
	}
	if t := r.URL.Query().Get("tenant"); t != "" && t != out.Tenant {
		// Another tenant's bucket is not this tenant's business.
		return apiErr(http.StatusNotFound, "NoSuchBucket", fmt.Sprintf("tenant %q has no bucket %q", t, bucket))
	}
	loc, err := h.locator.Locate(r.Context(), bucket, key)
	switch {
	case errors.Is(err, storage.ErrBucketNotFound):
		return noSuchBucket(bucket)
	case errors.Is(err, storage.ErrObjectNotFound):
		return apiErr(http.StatusNotFound, "NoSuchKey", fmt.Sprintf("bucket %q has no object %q", bucket, key))
	case errors.Is(err, storage.ErrUnavailable):
		return apiErr(http.StatusServiceUnavailable, "BackendUnavailable", "the storage backend does not answer; retry later")
	case err != nil:
		return err
	}
	out.Kind, out.StoredSize, out.FS, out.Remote = loc.Kind, loc.StoredSize, loc.FS, loc.Remote
	writeJSON(w, http.StatusOK, out)
	return nil
}

func noSuchBucket(bucket string) *apiError {
	return apiErr(http.StatusNotFound, "NoSuchBucket", fmt.Sprintf("bucket %q does not exist", bucket))
}
