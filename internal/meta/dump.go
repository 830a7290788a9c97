package meta

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/diskformat"
)

// dumpRecord is one line of a dump: a table, a key and the raw value, as
// the store keeps it (secrets stay sealed under the master key, which a
// dump never holds).
type dumpRecord struct {
	Table string `json:"t"`
	Key   string `json:"k"`
	Value []byte `json:"v"`
}

// Dump writes every record of every table to w, one JSON object per line,
// from one read transaction: a consistent snapshot of a running store
// (bbolt: a read transaction; Redis: the optimistic transaction is
// retried until no table changed while it was read). It returns the
// number of records written.
func (s *Store) Dump(ctx context.Context, w io.Writer) (int, error) {
	var (
		buf bytes.Buffer
		n   int
	)
	err := s.kv.view(ctx, func(tx kvTx) error {
		// A Redis transaction may run more than once: start over.
		buf.Reset()
		n = 0
		enc := json.NewEncoder(&buf)
		for _, table := range allTables {
			if err := tx.scan(table, "", func(k string, v []byte) error {
				n++
				return enc.Encode(dumpRecord{Table: table, Key: k, Value: v})
			}); err != nil {
				return fmt.Errorf("dump %s: %w", table, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("meta: %w", err)
	}
	if _, err := buf.WriteTo(w); err != nil {
		return 0, fmt.Errorf("meta: dump: %w", err)
	}
	return n, nil
}

// ErrRestoreTargetNotEmpty refuses a restore into a store that holds
// records, unless forced.
var ErrRestoreTargetNotEmpty = errors.New("the target metadata store is not empty")

// restoreBatch bounds the records of one write transaction (Redis sends a
// transaction's writes in one MULTI).
const restoreBatch = 512

// Restore loads a Dump into the metadata store named by storeURL (as for
// OpenURL), which must be empty unless force is set; force first deletes
// every record the store holds. The records are written as they were
// dumped, sealed secrets included, so the store opens only with the
// master key it was dumped under. It returns the number of records
// restored. No Facet may have the store open.
func Restore(ctx context.Context, storeURL, dataDir string, r io.Reader, force bool, logger *slog.Logger) (int, error) {
	db, err := openKV(ctx, storeURL, dataDir, logger)
	if err != nil {
		return 0, err
	}
	defer db.close()
	var present int
	if err := db.view(ctx, func(tx kvTx) error {
		present = 0
		for _, table := range allTables {
			if err := tx.scan(table, "", func(string, []byte) error { present++; return nil }); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("meta: restore: %w", err)
	}
	if present > 0 {
		if !force {
			return 0, fmt.Errorf("meta: restore: %w (%d records); give --force to replace them", ErrRestoreTargetNotEmpty, present)
		}
		for _, table := range allTables {
			for {
				var keys []string
				if err := db.view(ctx, func(tx kvTx) error {
					keys = keys[:0]
					return tx.scan(table, "", func(k string, _ []byte) error {
						if len(keys) < restoreBatch {
							keys = append(keys, k)
						}
						return nil
					})
				}); err != nil {
					return 0, fmt.Errorf("meta: restore: clearing %s: %w", table, err)
				}
				if len(keys) == 0 {
					break
				}
				if err := db.update(ctx, func(tx kvTx) error {
					for _, k := range keys {
						if err := tx.del(table, k); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					return 0, fmt.Errorf("meta: restore: clearing %s: %w", table, err)
				}
			}
		}
	}
	known := map[string]bool{}
	for _, t := range allTables {
		known[t] = true
	}
	dec := json.NewDecoder(bufio.NewReader(r))
	var (
		batch []dumpRecord
		total int
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := db.update(ctx, func(tx kvTx) error {
			for _, rec := range batch {
				if err := tx.put(rec.Table, rec.Key, rec.Value); err != nil {
					return err
				}
			}
			return nil
		})
		total += len(batch)
		batch = batch[:0]
		return err
	}
	for line := 1; ; line++ {
		var rec dumpRecord
		if err := dec.Decode(&rec); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return total, fmt.Errorf("meta: restore: record %d: %w", line, err)
		}
		if !known[rec.Table] {
			return total, fmt.Errorf("meta: restore: record %d: unknown table %q (a dump from a newer release?)", line, rec.Table)
		}
		if rec.Table == tblSystem && rec.Key == formatKey {
			// The system table comes first: nothing is written yet.
			if _, err := diskformat.Plan("the dumped metadata store", atoiOr(rec.Value, -1), FormatVersion, formatSteps()); err != nil {
				return total, fmt.Errorf("meta: restore: %w", err)
			}
		}
		batch = append(batch, rec)
		if len(batch) == restoreBatch {
			if err := flush(); err != nil {
				return total, fmt.Errorf("meta: restore: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return total, fmt.Errorf("meta: restore: %w", err)
	}
	return total, nil
}

// openKV opens the raw tables of the store named by storeURL, without the
// master-key and format checks of OpenURL (Restore writes them back as
// they were).
func openKV(ctx context.Context, storeURL, dataDir string, logger *slog.Logger) (kv, error) {
	path, scheme, err := boltPath(storeURL, dataDir)
	switch {
	case err != nil:
		return nil, err
	case path != "":
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("meta: %w", err)
		}
		db, err := openBolt(path, 2*time.Second)
		if err != nil {
			return nil, fmt.Errorf("meta: %w", err)
		}
		return db, nil
	case scheme == "redis" || scheme == "rediss":
		db, _, err := openRedis(ctx, storeURL, logger)
		return db, err
	}
	return nil, fmt.Errorf("meta: unsupported metadata store URL scheme %q: want bolt:// or redis://", scheme)
}

// boltPath returns the file of an embedded store URL ("" or bolt://PATH,
// relative to dataDir unless absolute), or "" and the URL's scheme for
// another kind of store.
func boltPath(storeURL, dataDir string) (path, scheme string, err error) {
	scheme, rest, _ := strings.Cut(storeURL, "://")
	switch {
	case storeURL == "":
		return filepath.Join(dataDir, DefaultBoltFile), "bolt", nil
	case scheme == "bolt":
		if rest == "" {
			return "", scheme, fmt.Errorf("meta: %q: want bolt://PATH", storeURL)
		}
		if !filepath.IsAbs(rest) {
			rest = filepath.Join(dataDir, rest)
		}
		return rest, scheme, nil
	}
	return "", scheme, nil
}

// atoiOr parses a decimal number, or returns def.
func atoiOr(b []byte, def int) int {
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return def
	}
	return n
}
