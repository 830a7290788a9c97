package quota

import (
	"context"
	"errors"
	"io"

	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/storage"
)

// Versions. In a bucket that keeps versions every version counts (bytes
// and an object each), as S3 bills them: a write while versioning is
// Enabled replaces nothing and a delete writes a marker that frees
// nothing; while Suspended both replace the null version; deleting a
// version by its id frees it.

// Unwrap returns the backend the quotas wrap, for its optional abilities.
func (b *Backend) Unwrap() storage.Backend { return b.Backend }

// WithVersions returns b, with the version API of the backend it wraps
// (accounted too) when it keeps versions.
func (b *Backend) WithVersions() storage.Backend {
	if v, ok := b.Backend.(storage.Versions); ok {
		return &versioned{Backend: b, v: v}
	}
	return b
}

// replaced returns what a write (or a delete) of key replaces: the object
// where the bucket keeps no versions, its null version while versioning
// is Suspended, nothing while it is Enabled.
func (b *Backend) replaced(ctx context.Context, bucket, key string) (meta.Counters, error) {
	v, ok := b.Backend.(storage.Versions)
	if !ok {
		return b.previous(ctx, bucket, key)
	}
	state, err := v.BucketVersioning(ctx, bucket)
	if err != nil {
		return meta.Counters{}, err
	}
	switch state {
	case storage.VersioningEnabled:
		return meta.Counters{}, nil
	case storage.VersioningSuspended:
		return b.version(ctx, v, bucket, key, storage.NullVersion)
	}
	return b.previous(ctx, bucket, key)
}

// version returns what one version holds (nothing for a delete marker or
// a version that is not there).
func (b *Backend) version(ctx context.Context, v storage.Versions, bucket, key, id string) (meta.Counters, error) {
	info, err := v.HeadObjectVersion(ctx, bucket, key, id)
	var dm *storage.DeleteMarkerError
	switch {
	case err == nil:
		return meta.Counters{Bytes: info.Meta.Size, Physical: info.StoredSize, Objects: 1}, nil
	case errors.As(err, &dm), errors.Is(err, storage.ErrObjectNotFound), errors.Is(err, storage.ErrNoSuchVersion), errors.Is(err, storage.ErrInvalidVersion):
		return meta.Counters{}, nil
	}
	return meta.Counters{}, err
}

// versioned is a Backend whose wrapped backend keeps versions.
type versioned struct {
	*Backend
	v storage.Versions
}

var _ storage.Versions = (*versioned)(nil)

func (s *versioned) SetVersioning(ctx context.Context, bucket string, v storage.Versioning) error {
	return s.v.SetVersioning(ctx, bucket, v)
}

func (s *versioned) BucketVersioning(ctx context.Context, bucket string) (storage.Versioning, error) {
	return s.v.BucketVersioning(ctx, bucket)
}

func (s *versioned) GetObjectVersion(ctx context.Context, bucket, key, versionID string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	return s.v.GetObjectVersion(ctx, bucket, key, versionID, rng)
}

func (s *versioned) HeadObjectVersion(ctx context.Context, bucket, key, versionID string) (storage.ObjectInfo, error) {
	return s.v.HeadObjectVersion(ctx, bucket, key, versionID)
}

func (s *versioned) ListObjectVersions(ctx context.Context, bucket string, opts storage.ListVersionsOptions) (storage.ListVersionsResult, error) {
	return s.v.ListObjectVersions(ctx, bucket, opts)
}

// DeleteVersion frees the version it deletes for good; without an id it
// deletes as DeleteObject does.
func (s *versioned) DeleteVersion(ctx context.Context, bucket, key, versionID string) (storage.DeleteResult, error) {
	tenant, err := s.owner(ctx, bucket)
	if err != nil || tenant == "" {
		if err != nil {
			return storage.DeleteResult{}, err
		}
		return s.v.DeleteVersion(ctx, bucket, key, versionID)
	}
	var old meta.Counters
	if versionID == "" {
		old, err = s.replaced(ctx, bucket, key)
	} else {
		old, err = s.version(ctx, s.v, bucket, key, versionID)
	}
	if err != nil {
		return storage.DeleteResult{}, err
	}
	res, err := s.v.DeleteVersion(ctx, bucket, key, versionID)
	if err != nil {
		return res, err
	}
	s.settle(ctx, tenant, bucket, neg(old))
	return res, nil
}

// UpdateMeta replaces an object's metadata; in a bucket that keeps
// versions that makes a version (a copy of the latest's bytes), which
// counts like any other.
func (b *Backend) UpdateMeta(ctx context.Context, bucket, key string, m storage.ObjectMeta) (storage.ObjectInfo, error) {
	tenant, err := b.owner(ctx, bucket)
	v, versions := b.Backend.(storage.Versions)
	if err != nil || tenant == "" || !versions {
		if err != nil {
			return storage.ObjectInfo{}, err
		}
		return b.Backend.UpdateMeta(ctx, bucket, key, m)
	}
	state, err := v.BucketVersioning(ctx, bucket)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	cur, err := b.Backend.HeadObject(ctx, bucket, key)
	if state == storage.VersioningOff || err != nil {
		// Without versions the bytes stay where they are; without an
		// object the backend answers for itself.
		return b.Backend.UpdateMeta(ctx, bucket, key, m)
	}
	old, err := b.replaced(ctx, bucket, key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	d := meta.Counters{Bytes: cur.Meta.Size - old.Bytes, Physical: cur.StoredSize - old.Physical, Objects: 1 - old.Objects}
	if err := b.reserve(ctx, tenant, bucket, key, d); err != nil {
		return storage.ObjectInfo{}, err
	}
	info, err := b.Backend.UpdateMeta(ctx, bucket, key, m)
	if err != nil {
		b.settle(ctx, tenant, bucket, neg(d))
	}
	return info, err
}
