package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/facet-sds/facet/internal/diskformat"
)

// FormatVersion is the layout of the metadata store this binary reads and
// writes (tables, record shapes, key encodings). Raise it with a step in
// formatSteps whenever a release changes what an older binary would
// misread.
const FormatVersion = 1

// formatKey holds the store's format in tblSystem, as a decimal number.
const formatKey = "format_version"

// formatSteps migrates a store from each older format to the next.
func formatSteps() []diskformat.Step[kvTx] {
	return []diskformat.Step[kvTx]{
		{From: diskformat.Unversioned, What: "record the format version (the store was written before formats were recorded; no record changes)",
			Apply: func(kvTx) error { return nil }},
	}
}

// readFormat returns the store's recorded format; fresh reports a store
// that holds nothing yet (no master-key check either), which is created at
// the current format rather than migrated.
func readFormat(tx kvTx) (stored int, fresh bool, err error) {
	raw, err := tx.get(tblSystem, formatKey)
	if err != nil {
		return 0, false, err
	}
	if raw == nil {
		check, err := tx.get(tblSystem, checkKey)
		if err != nil {
			return 0, false, err
		}
		return diskformat.Unversioned, check == nil, nil
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil {
		return 0, false, fmt.Errorf("meta: %s/%s: malformed format version %q", tblSystem, formatKey, raw)
	}
	return n, false, nil
}

// checkFormat records the current format in a fresh store, refuses a
// newer one and migrates an older one, each step in one transaction with
// the version it reaches. It runs before anything else reads the store.
func (s *Store) checkFormat(ctx context.Context, what string) error {
	var done []diskformat.Step[kvTx]
	err := s.kv.update(ctx, func(tx kvTx) error {
		done = nil // update may run this more than once
		stored, fresh, err := readFormat(tx)
		if err != nil {
			return err
		}
		if fresh {
			return tx.put(tblSystem, formatKey, []byte(strconv.Itoa(FormatVersion)))
		}
		plan, err := diskformat.Plan(what, stored, FormatVersion, formatSteps())
		if err != nil || len(plan) == 0 {
			return err
		}
		for _, step := range plan {
			if err := step.Apply(tx); err != nil {
				return fmt.Errorf("%s: migrating format %d -> %d: %w", what, step.From, step.From+1, err)
			}
		}
		done = plan
		return tx.put(tblSystem, formatKey, []byte(strconv.Itoa(FormatVersion)))
	})
	if err != nil {
		return err
	}
	for _, line := range diskformat.Describe(done) {
		s.log.Info("metadata store migrated", "store", what, "step", line)
	}
	return nil
}

// InspectFormat reports the format of the metadata store named by
// storeURL (as for OpenURL) and what opening it would migrate, changing
// nothing: a bbolt file is opened read-only (which fails while a running
// Facet holds it), Redis is only read.
func InspectFormat(ctx context.Context, storeURL, dataDir string, logger *slog.Logger) (diskformat.Report, error) {
	var (
		db  kv
		rep = diskformat.Report{Current: FormatVersion}
	)
	path, scheme, err := boltPath(storeURL, dataDir)
	switch {
	case err != nil:
		return rep, err
	case path != "":
		rep.Store = "metadata store " + path
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return rep, nil
		}
		bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
		if err != nil {
			if errors.Is(err, bolt.ErrTimeout) {
				return rep, fmt.Errorf("%s is in use: stop the Facet that holds it first", rep.Store)
			}
			return rep, fmt.Errorf("%s: %w", rep.Store, err)
		}
		db = &boltKV{db: bdb}
	case scheme == "redis" || scheme == "rediss":
		rdb, shown, err := openRedis(ctx, storeURL, logger)
		if err != nil {
			return rep, err
		}
		rep.Store = "metadata store " + shown
		db = rdb
	default:
		return rep, fmt.Errorf("meta: unsupported metadata store URL scheme %q: want bolt:// or redis://", scheme)
	}
	defer db.close()
	err = db.view(ctx, func(tx kvTx) error {
		if _, err := tx.get(tblSystem, formatKey); err != nil {
			// A bbolt file without the system table holds nothing.
			return nil
		}
		stored, fresh, err := readFormat(tx)
		if err != nil {
			return err
		}
		rep = diskformat.Inspect(rep.Store, stored, FormatVersion, fresh, formatSteps())
		return nil
	})
	return rep, err
}
