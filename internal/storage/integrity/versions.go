package integrity

import (
	"context"
	"io"

	"github.com/facet-sds/facet/internal/storage"
)

// Versioned is a Backend over one that keeps object versions
// (storage.Versions): a read of a named version is verified as GetObject
// verifies the latest, against that version's own recorded checksums.
// Every other version call is the wrapped backend's.
type Versioned struct {
	*Backend
	storage.Versions
}

var _ storage.Versions = Versioned{}

// WithVersions returns b, or b with the version API where the backend
// it wraps keeps versions: a wrapper must not hide that ability, nor
// let version reads past the checks.
func WithVersions(b *Backend) storage.Backend {
	v, ok := b.Backend.(storage.Versions)
	if !ok {
		return b
	}
	return Versioned{Backend: b, Versions: v}
}

// GetObjectVersion streams one version's bytes, each block checked.
func (v Versioned) GetObjectVersion(ctx context.Context, bucket, key, versionID string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	pinned := &Backend{Backend: versionReader{Backend: v.Backend.Backend, v: v.Versions, id: versionID}, opts: v.opts}
	return pinned.GetObject(ctx, bucket, key, rng)
}

// versionReader reads one version where GetObject reads the latest.
type versionReader struct {
	storage.Backend
	v  storage.Versions
	id string
}

func (r versionReader) GetObject(ctx context.Context, bucket, key string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	return r.v.GetObjectVersion(ctx, bucket, key, r.id, rng)
}
