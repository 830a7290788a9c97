package server

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/facet-sds/facet/internal/backup"
	"github.com/facet-sds/facet/internal/buildinfo"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
)

// backupSource makes GET /v1/backup's archives: the metadata store and,
// when the backend is the embedded one, its object index.
type backupSource struct {
	meta    *meta.Store
	backend storage.Backend
}

func (b backupSource) WriteBackup(ctx context.Context, w io.Writer) error {
	var idx backup.IndexSnapshotter
	if s, ok := ability[backup.IndexSnapshotter](b.backend); ok {
		idx = s
	}
	_, err := backup.Write(ctx, w, b.meta, idx, buildinfo.Get().Version)
	return err
}

// RestoreBackup puts an archive back into the stores of a stopped node:
// the metadata store named by metaURL (as for --meta) and, when the
// archive holds one, the object index under dataDir/objects. Stores that
// hold anything are refused unless force is set.
func RestoreBackup(ctx context.Context, r io.Reader, dataDir, metaURL string, force bool, logger *slog.Logger) (backup.Manifest, error) {
	return backup.Restore(r, backup.Targets{
		Meta: func(r io.Reader) (int, error) { return meta.Restore(ctx, metaURL, dataDir, r, force, logger) },
		Index: func(r io.Reader) error {
			return fs.RestoreIndex(filepath.Join(dataDir, "objects"), r, force)
		},
	})
}
