package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/storage/fs"
	"github.com/facet-sds/facet/internal/storage/integrity"
)

// Fsck checks that the embedded store under dataDir/objects and its data
// files agree (fs.Check), reading every data file through its recorded
// checksums. repair removes what is safe to remove. No Facet may hold the
// directory; a running one is checked with facet ctl fsck.
func Fsck(ctx context.Context, dataDir string, repair bool) (fs.CheckReport, error) {
	return fs.Check(ctx, filepath.Join(dataDir, "objects"), fs.CheckOptions{Repair: repair, Verify: verifyDataFile})
}

// verifyDataFile checks a data file against the checksums its record
// carries.
func verifyDataFile(_ context.Context, f *os.File, size int64, system map[string]string) error {
	err := integrity.Check(bufio.NewReaderSize(f, integrity.BlockSize), size, system, filepath.Base(f.Name()))
	if errors.Is(err, integrity.ErrNoSums) {
		return fmt.Errorf("%s: %w", filepath.Base(f.Name()), fs.ErrUnverifiable)
	}
	return err
}

// fsckSource is GET /v1/fsck's: the running embedded store checked in
// place (nothing repaired; writes in flight left alone).
type fsckSource struct{ backend storage.Backend }

// onlineChecker is the embedded store, behind whatever wraps it.
type onlineChecker interface {
	Check(ctx context.Context, opts fs.CheckOptions) (fs.CheckReport, error)
}

func (f fsckSource) Fsck(ctx context.Context, verify bool) (any, error) {
	c, ok := ability[onlineChecker](f.backend)
	if !ok {
		return nil, fmt.Errorf("this server keeps its objects in a remote store, whose consistency is that store's: %w", admin.ErrNoIndex)
	}
	opts := fs.CheckOptions{}
	if verify {
		opts.Verify = verifyDataFile
	}
	return c.Check(ctx, opts)
}

// ability finds an optional ability T of a backend, looking through the
// decorators that wrap it (they Unwrap).
func ability[T any](b storage.Backend) (T, bool) {
	for {
		if t, ok := b.(T); ok {
			return t, true
		}
		u, ok := b.(interface{ Unwrap() storage.Backend })
		if !ok {
			var zero T
			return zero, false
		}
		b = u.Unwrap()
	}
}

// storageProbe is the backend's write probe, nil for a backend that has
// none (a remote store).
func storageProbe(b storage.Backend) admin.StorageProbe {
	if p, ok := ability[admin.StorageProbe](b); ok {
		return p
	}
	return nil
}
