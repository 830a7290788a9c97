package dataplane

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/storage"
)

// Object versions. A request that names a version (Target.VersionID, a
// copy's CopySource.VersionID) pins its object's reads to that version:
// the pin travels in the request's context, and the Plane's backend
// (versionRouter) answers every GetObject and HeadObject of the pinned
// object from that version. So each GET variant, range, select, copy and
// decoder reads a named version exactly as it reads the latest one, by
// the version's own recorded plan.

type pinKey struct{}

type pin struct{ bucket, key, id string }

// pinVersion pins reads of bucket/key under ctx to version id ("" pins
// nothing).
func pinVersion(ctx context.Context, bucket, key, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, pinKey{}, pin{bucket, key, id})
}

// versionRouter is the Plane's backend: reads of a pinned object go to
// the version named.
type versionRouter struct {
	storage.Backend
	// versions is nil for a backend that keeps no versions: there, a
	// pin can only name the null version, which is the object.
	versions storage.Versions
}

func newVersionRouter(b storage.Backend) storage.Backend {
	if b == nil {
		return nil
	}
	v, _ := b.(storage.Versions)
	return versionRouter{Backend: b, versions: v}
}

// pinned returns the version ctx pins bucket/key to.
func (r versionRouter) pinned(ctx context.Context, bucket, key string) (string, bool) {
	p, ok := ctx.Value(pinKey{}).(pin)
	if !ok || p.bucket != bucket || p.key != key {
		return "", false
	}
	if r.versions == nil {
		// Only the null version exists; the front end refused others.
		return "", false
	}
	return p.id, true
}

func (r versionRouter) GetObject(ctx context.Context, bucket, key string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	if id, ok := r.pinned(ctx, bucket, key); ok {
		return r.versions.GetObjectVersion(ctx, bucket, key, id, rng)
	}
	return r.Backend.GetObject(ctx, bucket, key, rng)
}

func (r versionRouter) HeadObject(ctx context.Context, bucket, key string) (storage.ObjectInfo, error) {
	if id, ok := r.pinned(ctx, bucket, key); ok {
		return r.versions.HeadObjectVersion(ctx, bucket, key, id)
	}
	return r.Backend.HeadObject(ctx, bucket, key)
}

// Versions returns the backend's version API, nil when it keeps none.
func (p *Plane) Versions() storage.Versions {
	if r, ok := p.backend.(versionRouter); ok {
		return r.versions
	}
	return nil
}

// versioned reports whether bucket keeps versions (Enabled or Suspended):
// such a bucket needs no recycle bin, a delete keeps what it deletes.
func (p *Plane) versioned(ctx context.Context, bucket string) (bool, error) {
	v := p.Versions()
	if v == nil {
		return false, nil
	}
	state, err := v.BucketVersioning(ctx, bucket)
	return state != storage.VersioningOff, err
}

// deleteVersioned deletes in a bucket that keeps versions, or any named
// version: no recycle bin, the version store keeps what S3 keeps.
func (p *Plane) deleteVersioned(ctx context.Context, t Target) (storage.DeleteResult, error) {
	res, err := p.Versions().DeleteVersion(ctx, t.Bucket, t.Key, t.VersionID)
	return res, S3Error(err, t.Bucket, t.Key)
}

// versionErr maps the version API's errors (S3Error calls it).
func versionErr(err error, bucket, key string) (error, bool) {
	var dm *storage.DeleteMarkerError
	switch {
	case errors.As(err, &dm) && dm.Named:
		return &s3err.Error{Code: s3err.MethodNotAllowed, Bucket: bucket, Key: key, VersionID: dm.VersionID,
			DeleteMarker: true, LastModified: dm.LastModified, Err: err}, true
	case errors.As(err, &dm):
		return &s3err.Error{Code: s3err.NoSuchKey, Bucket: bucket, Key: key, VersionID: dm.VersionID,
			DeleteMarker: true, LastModified: dm.LastModified, Err: err}, true
	case errors.Is(err, storage.ErrNoSuchVersion):
		return &s3err.Error{Code: s3err.NoSuchVersion, Bucket: bucket, Key: key, Err: err}, true
	case errors.Is(err, storage.ErrInvalidVersion):
		return &s3err.Error{Code: s3err.InvalidArgument, Message: "Invalid version id specified", Bucket: bucket, Key: key,
			ArgumentName: "versionId", Err: err}, true
	}
	return nil, false
}

// binFor reports whether a DELETE goes through the recycle bin
// and for how long it keeps.
func (p *Plane) binFor(t Target) (time.Duration, bool) {
	if p.trash == nil || p.reqFilters == nil {
		return 0, false
	}
	for _, st := range p.reqFilters.ForRequest(t.filterRequest(filter.MethodDelete, -1, storage.ObjectMeta{})).Steps {
		if k, ok := st.Filter.(keeper); ok {
			return k.KeepFor(), true
		}
	}
	return 0, false
}
