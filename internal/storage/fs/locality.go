package fs

import (
	"context"
	"fmt"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/sysdev"
)

// Locate tells where bucket/key's bytes are: its data file, the mount and
// the block device holding it.
func (s *Store) Locate(ctx context.Context, bucket, key string) (storage.Location, error) {
	if err := ctx.Err(); err != nil {
		return storage.Location{}, err
	}
	rec, _, err := s.lookupVersion(bucket, key, "")
	if err != nil {
		return storage.Location{}, err
	}
	if !validID(rec.File) {
		return storage.Location{}, fmt.Errorf("fs: index holds a malformed file id %q", rec.File)
	}
	path := s.dataPath(rec.File)
	p, err := s.dev.ForPath(path)
	if err != nil {
		return storage.Location{}, fmt.Errorf("fs: locate %q/%q: %w", bucket, key, err)
	}
	return storage.Location{Kind: "fs", StoredSize: rec.Stored, FS: &p}, nil
}

// Devices describes the block device under the data directory; the node
// report (/v1/nodes) shows it.
func (s *Store) Devices() ([]sysdev.Placement, error) {
	p, err := s.dev.ForPath(s.dataDir)
	if err != nil {
		return nil, err
	}
	return []sysdev.Placement{p}, nil
}
