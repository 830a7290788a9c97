package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Run-time registered filters carry code (a WebAssembly module per
// version) and read-only dependency files. Both are stored as blobs next
// to the filter records, so every node of a fleet loads them from the one
// metadata store; the store does not interpret them. A spec and the blobs
// it references are written in one transaction, so a node that sees the
// spec always finds its code.

var (
	// ErrBlobNotFound is returned for an absent filter blob.
	ErrBlobNotFound = errors.New("no such filter blob")
	// ErrDependencyNotFound is returned for an absent dependency.
	ErrDependencyNotFound = errors.New("no such dependency")
	// ErrInvalidDependencyName rejects a dependency name.
	ErrInvalidDependencyName = errors.New("invalid dependency name")
)

// maxFilterBlob bounds one blob: a module or a dependency file.
const maxFilterBlob = 64 << 20

// PutFilterCode registers a filter or replaces its spec, storing blobs
// (key -> bytes) and deleting drop in the same transaction.
func (s *Store) PutFilterCode(ctx context.Context, name string, spec json.RawMessage, blobs map[string][]byte, drop []string) (FilterEntry, error) {
	if !ValidFilterName(name) {
		return FilterEntry{}, fmt.Errorf("meta: put filter: %w %q: want 1-63 characters [a-z][a-z0-9-_]*", ErrInvalidFilterName, name)
	}
	if err := checkBlob("filter spec", spec); err != nil {
		return FilterEntry{}, fmt.Errorf("meta: put filter: %w", err)
	}
	for k, b := range blobs {
		if k == "" || len(b) > maxFilterBlob {
			return FilterEntry{}, fmt.Errorf("meta: put filter: blob %q: empty key or over %d bytes", k, maxFilterBlob)
		}
	}
	var out FilterEntry
	err := s.kv.update(ctx, func(tx kvTx) error {
		var rec filterRecord
		ok, err := getRecord(tx, tblFilters, name, &rec)
		if err != nil {
			return err
		}
		now := s.timestamp()
		if !ok {
			rec = filterRecord{V: recordVersion, Name: name, Created: now}
		}
		rec.Spec, rec.Updated = spec, now
		for _, k := range drop {
			if err := tx.del(tblFilterBlobs, k); err != nil {
				return err
			}
		}
		for k, b := range blobs {
			if err := tx.put(tblFilterBlobs, k, b); err != nil {
				return err
			}
		}
		if err := putRecord(tx, tblFilters, name, &rec); err != nil {
			return err
		}
		out = rec.entry()
		_, err = bumpVersion(tx)
		return err
	})
	if err != nil {
		return FilterEntry{}, fmt.Errorf("meta: put filter: %w", err)
	}
	s.log.Info("filter registered", "filter", name)
	return out, nil
}

// DeleteFilterCode unregisters a filter and deletes the blobs in drop, or
// fails with ErrFilterNotFound.
func (s *Store) DeleteFilterCode(ctx context.Context, name string, drop []string) error {
	err := s.kv.update(ctx, func(tx kvTx) error {
		for _, k := range drop {
			if err := tx.del(tblFilterBlobs, k); err != nil {
				return err
			}
		}
		return deleteRecord(tx, tblFilters, name, ErrFilterNotFound)
	})
	if err != nil {
		return fmt.Errorf("meta: delete filter: %w", err)
	}
	s.log.Info("filter unregistered", "filter", name)
	return nil
}

// GetFilterBlob returns a stored blob, or ErrBlobNotFound.
func (s *Store) GetFilterBlob(ctx context.Context, key string) ([]byte, error) {
	var out []byte
	err := s.kv.view(ctx, func(tx kvTx) error {
		b, err := tx.get(tblFilterBlobs, key)
		if err != nil {
			return err
		}
		if b == nil {
			return fmt.Errorf("%w: %q", ErrBlobNotFound, key)
		}
		out = append([]byte(nil), b...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("meta: get filter blob: %w", err)
	}
	return out, nil
}

// Dependency is a read-only file filters may declare (a dictionary, a
// model), stored once and mounted into the filters that name it.
type Dependency struct {
	Name string
	// Owner is the tenant whose filters alone may use it; empty for an
	// administrator's, usable by every filter.
	Owner string
	// SHA256 is the hex digest of the data, Blob the key holding it.
	SHA256  string
	Blob    string
	Size    int64
	Doc     string
	Created time.Time
	Updated time.Time
}

type dependencyRecord struct {
	V       int       `json:"v"`
	Name    string    `json:"name"`
	Owner   string    `json:"owner,omitempty"`
	SHA256  string    `json:"sha256"`
	Blob    string    `json:"blob"`
	Size    int64     `json:"size"`
	Doc     string    `json:"doc,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

func (r *dependencyRecord) version() int { return r.V }

func (r *dependencyRecord) dep() Dependency {
	return Dependency{Name: r.Name, Owner: r.Owner, SHA256: r.SHA256, Blob: r.Blob, Size: r.Size, Doc: r.Doc, Created: r.Created, Updated: r.Updated}
}

// DependencyChange is what changes with a dependency, in the same
// transaction: filter versions pin the dependency contents they were
// created with, so a new content is a new version of the filters that
// declare it (Specs), and a content's blob is deleted only once no kept
// filter version pins it (Drop names those the caller found unpinned).
type DependencyChange struct {
	// Specs replaces the specs of these filters, which must exist.
	Specs map[string]json.RawMessage
	// Drop lists blobs to delete.
	Drop []string
}

// PutDependency creates or replaces a dependency and its data (stored
// under d.Blob), and applies ch, in one transaction. The previous data
// blob is kept unless ch.Drop names it.
func (s *Store) PutDependency(ctx context.Context, d Dependency, data []byte, ch DependencyChange) (Dependency, error) {
	if !ValidFilterName(d.Name) {
		return Dependency{}, fmt.Errorf("meta: put dependency: %w %q: want 1-63 characters [a-z][a-z0-9-_]*", ErrInvalidDependencyName, d.Name)
	}
	if d.Blob == "" || len(data) > maxFilterBlob {
		return Dependency{}, fmt.Errorf("meta: put dependency: no blob key, or data over %d bytes", maxFilterBlob)
	}
	for name, spec := range ch.Specs {
		if err := checkBlob("filter spec", spec); err != nil {
			return Dependency{}, fmt.Errorf("meta: put dependency: filter %s: %w", name, err)
		}
	}
	var out Dependency
	err := s.kv.update(ctx, func(tx kvTx) error {
		var rec dependencyRecord
		ok, err := getRecord(tx, tblFilterDeps, d.Name, &rec)
		if err != nil {
			return err
		}
		now := s.timestamp()
		created := now
		if ok {
			created = rec.Created
		}
		rec = dependencyRecord{V: recordVersion, Name: d.Name, Owner: d.Owner, SHA256: d.SHA256, Blob: d.Blob,
			Size: int64(len(data)), Doc: d.Doc, Created: created, Updated: now}
		for _, k := range ch.Drop {
			if k == d.Blob {
				continue
			}
			if err := tx.del(tblFilterBlobs, k); err != nil {
				return err
			}
		}
		if err := tx.put(tblFilterBlobs, d.Blob, data); err != nil {
			return err
		}
		if err := putRecord(tx, tblFilterDeps, d.Name, &rec); err != nil {
			return err
		}
		for name, spec := range ch.Specs {
			var fr filterRecord
			ok, err := getRecord(tx, tblFilters, name, &fr)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%w: %q", ErrFilterNotFound, name)
			}
			fr.Spec, fr.Updated = spec, now
			if err := putRecord(tx, tblFilters, name, &fr); err != nil {
				return err
			}
		}
		out = rec.dep()
		_, err = bumpVersion(tx)
		return err
	})
	if err != nil {
		return Dependency{}, fmt.Errorf("meta: put dependency: %w", err)
	}
	s.log.Info("filter dependency stored", "dependency", d.Name, "filters_updated", len(ch.Specs))
	return out, nil
}

// GetDependency returns one dependency, or ErrDependencyNotFound.
func (s *Store) GetDependency(ctx context.Context, name string) (Dependency, error) {
	var rec dependencyRecord
	var ok bool
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		ok, err = getRecord(tx, tblFilterDeps, name, &rec)
		return err
	})
	if err != nil {
		return Dependency{}, fmt.Errorf("meta: get dependency: %w", err)
	}
	if !ok {
		return Dependency{}, fmt.Errorf("meta: get dependency: %w: %q", ErrDependencyNotFound, name)
	}
	return rec.dep(), nil
}

// ListDependencies lists dependencies in name order.
func (s *Store) ListDependencies(ctx context.Context) ([]Dependency, error) {
	out := []Dependency{}
	err := s.kv.view(ctx, func(tx kvTx) error {
		out = out[:0]
		return scanRecords(tx, tblFilterDeps, "", func(rec *dependencyRecord) error {
			out = append(out, rec.dep())
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("meta: list dependencies: %w", err)
	}
	return out, nil
}

// DeleteDependency deletes a dependency and the blobs in drop (its data,
// unless a kept filter version pins it), or fails with
// ErrDependencyNotFound.
func (s *Store) DeleteDependency(ctx context.Context, name string, drop []string) error {
	err := s.kv.update(ctx, func(tx kvTx) error {
		var rec dependencyRecord
		ok, err := getRecord(tx, tblFilterDeps, name, &rec)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %q", ErrDependencyNotFound, name)
		}
		for _, k := range drop {
			if err := tx.del(tblFilterBlobs, k); err != nil {
				return err
			}
		}
		return deleteRecord(tx, tblFilterDeps, name, ErrDependencyNotFound)
	})
	if err != nil {
		return fmt.Errorf("meta: delete dependency: %w", err)
	}
	s.log.Info("filter dependency deleted", "dependency", name)
	return nil
}
