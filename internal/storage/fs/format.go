package fs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/facet-sds/facet/internal/diskformat"
)

// FormatVersion is the layout of the data directory this binary reads and
// writes: the index's buckets and records and the data files' naming.
// Raise it with a step in formatSteps whenever a release changes what an
// older binary would misread.
const FormatVersion = 2

var (
	// formatBucket holds formatKey, the index's format as a decimal
	// number; it sits beside rootBucket so that no listing walks over it.
	formatBucket = []byte("format")
	formatKey    = []byte("version")
)

// formatSteps migrates an index from each older format to the next.
func formatSteps() []diskformat.Step[*bolt.Tx] {
	return []diskformat.Step[*bolt.Tx]{
		{From: diskformat.Unversioned, What: "record the format version (the directory was written before formats were recorded; no record or file changes)",
			Apply: func(*bolt.Tx) error { return nil }},
		// Format 2 keeps object versions: a "ver" sub-bucket per bucket
		// once it is versioned, version fields in object records and the
		// bucket's state in its info record. A format-1 binary would take
		// kept versions' data files for orphans and delete them at start,
		// so it must refuse the index; existing records need no change.
		{From: 1, What: "allow object versions (ver/ sub-buckets, version fields in records); no record or file changes",
			Apply: func(*bolt.Tx) error { return nil }},
	}
}

// readFormat returns the index's recorded format; fresh reports an index
// that holds no bucket yet, which is created at the current format.
func readFormat(tx *bolt.Tx) (stored int, fresh bool, err error) {
	if b := tx.Bucket(formatBucket); b != nil {
		if raw := b.Get(formatKey); raw != nil {
			n, err := strconv.Atoi(string(raw))
			if err != nil {
				return 0, false, fmt.Errorf("fs: index format version %q is malformed", raw)
			}
			return n, false, nil
		}
	}
	fresh = true
	if root := tx.Bucket(rootBucket); root != nil {
		if k, _ := root.Cursor().First(); k != nil {
			fresh = false
		}
	}
	return diskformat.Unversioned, fresh, nil
}

// checkFormat records the current format in a fresh index, refuses a
// newer one and migrates an older one, all in tx; it returns the steps it
// ran, for the log.
func checkFormat(tx *bolt.Tx, what string) ([]diskformat.Step[*bolt.Tx], error) {
	stored, fresh, err := readFormat(tx)
	if err != nil {
		return nil, err
	}
	var plan []diskformat.Step[*bolt.Tx]
	if !fresh {
		if plan, err = diskformat.Plan(what, stored, FormatVersion, formatSteps()); err != nil {
			return nil, err
		}
		if len(plan) == 0 {
			return nil, nil
		}
		for _, step := range plan {
			if err := step.Apply(tx); err != nil {
				return nil, fmt.Errorf("%s: migrating format %d -> %d: %w", what, step.From, step.From+1, err)
			}
		}
	}
	b, err := tx.CreateBucketIfNotExists(formatBucket)
	if err != nil {
		return nil, err
	}
	return plan, b.Put(formatKey, []byte(strconv.Itoa(FormatVersion)))
}

// InspectFormat reports the format of the store in dir and what Open
// would migrate, changing nothing (the index is opened read-only, which
// fails while a running Facet holds it).
func InspectFormat(dir string) (diskformat.Report, error) {
	path := filepath.Join(dir, "index.db")
	rep := diskformat.Report{Store: "object index " + path, Current: FormatVersion}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return rep, nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return rep, fmt.Errorf("%s is in use: stop the Facet that holds it first", rep.Store)
		}
		return rep, fmt.Errorf("%s: %w", rep.Store, err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		stored, fresh, err := readFormat(tx)
		if err != nil {
			return err
		}
		rep = diskformat.Inspect(rep.Store, stored, FormatVersion, fresh, formatSteps())
		return nil
	})
	return rep, err
}

// checkStored refuses an index of a format newer than this binary's.
func checkStored(what string, stored int) error {
	_, err := diskformat.Plan(what, stored, FormatVersion, formatSteps())
	return err
}
