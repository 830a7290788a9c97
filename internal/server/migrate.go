package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/facet-sds/facet/internal/diskformat"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/storage/fs"
)

// Migrate reports the format of a data directory's stores (the metadata
// store named by metaURL, as for `facet serve --meta`, and the embedded
// object index under dataDir/objects) and, unless dryRun, brings each to
// the format this binary writes by opening it as `facet serve` would. A
// store written by a newer release is reported and refused; nothing is
// changed then. The stores must not be open in a running Facet.
func Migrate(ctx context.Context, dataDir, metaURL string, dryRun bool, logger *slog.Logger) ([]diskformat.Report, error) {
	metaRep, err := meta.InspectFormat(ctx, metaURL, dataDir, logger)
	if err != nil {
		return nil, err
	}
	objDir := filepath.Join(dataDir, "objects")
	fsRep, err := fs.InspectFormat(objDir)
	if err != nil {
		return nil, err
	}
	reps := []diskformat.Report{metaRep, fsRep}
	var refused []error
	for _, r := range reps {
		if r.Error != "" {
			refused = append(refused, errors.New(r.Error))
		}
	}
	if len(refused) > 0 {
		return reps, errors.Join(refused...)
	}
	if dryRun {
		return reps, nil
	}
	if len(metaRep.Steps) > 0 {
		key, err := existingMasterKey(dataDir)
		if err != nil {
			return reps, err
		}
		store, err := meta.OpenURL(ctx, metaURL, dataDir, key, logger)
		if err != nil {
			return reps, err
		}
		if err := store.Close(); err != nil {
			return reps, err
		}
	}
	if len(fsRep.Steps) > 0 {
		store, err := fs.Open(ctx, objDir, fs.Options{Logger: logger})
		if err != nil {
			return reps, err
		}
		if err := store.Close(); err != nil {
			return reps, err
		}
	}
	return reps, nil
}

// existingMasterKey is masterKey without creating one: a store that
// exists was sealed with a key that must exist too.
func existingMasterKey(dataDir string) ([]byte, error) {
	if os.Getenv("FACET_MASTER_KEY") == "" {
		if _, err := os.Stat(filepath.Join(dataDir, "master.key")); err != nil {
			return nil, fmt.Errorf("the metadata store needs its master key: set FACET_MASTER_KEY or keep %s: %w", filepath.Join(dataDir, "master.key"), err)
		}
	}
	return masterKey(dataDir)
}
