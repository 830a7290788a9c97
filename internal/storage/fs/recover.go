package fs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// recover removes what an interrupted write leaves behind: temp files
// (crash before the rename) and data files no index entry refers to (crash
// between the rename and the index commit, or after an overwrite's commit
// but before the old file was removed). It runs in Open, before any write
// can race with it. Files whose names are not ours are left alone.
func (s *Store) recover(ctx context.Context) error {
	live := make(map[string]struct{})
	err := s.db.View(func(tx *bolt.Tx) error {
		var bad []Finding
		_, _, err := walkIndex(tx, func(e indexEntry) error {
			live[e.file] = struct{}{}
			return nil
		}, func(f Finding) {
			if f.Kind == FindRecord {
				bad = append(bad, f)
			}
		})
		if err == nil && len(bad) > 0 {
			err = fmt.Errorf("bucket %q key %q: %s", bad[0].Bucket, bad[0].Key, bad[0].Detail)
		}
		return err
	})
	if err != nil {
		// Without a complete set of live files nothing may be removed.
		return fmt.Errorf("fs: scan index: %w", err)
	}

	var temps, orphans int
	seen := make(map[string]struct{}, len(live))
	for i := range shards {
		if err := ctx.Err(); err != nil {
			return err
		}
		dir := s.shardDir(i)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("fs: scan data dir: %w", err)
		}
		for _, e := range entries {
			name := e.Name()
			var remove bool
			switch {
			case strings.HasSuffix(name, tmpSuffix) && validID(strings.TrimSuffix(name, tmpSuffix)):
				remove = true
				temps++
			case validID(name):
				if _, ok := live[name]; ok {
					seen[name] = struct{}{}
					continue
				}
				remove = true
				orphans++
			default:
				s.log.Warn("fs: unknown file in data dir left alone", "path", filepath.Join(dir, name))
			}
			if remove {
				if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("fs: remove leftover: %w", err)
				}
			}
		}
	}
	if missing := len(live) - len(seen); missing > 0 {
		// Only possible after lost data (disk fault, files deleted by
		// hand, or a crash under NoSync); those objects fail on read.
		s.log.Error("fs: index entries whose data file is missing", "count", missing)
	}
	if temps+orphans > 0 {
		s.log.Info("fs: removed leftovers of interrupted writes", "temp_files", temps, "unreferenced_files", orphans)
	}
	return nil
}
