package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// FilterEntry is a filter registered at run time (an uploaded WASM module's
// description, for instance). Native filters are compiled in and are not
// stored. The spec is opaque to the store.
type FilterEntry struct {
	Name    string
	Spec    json.RawMessage
	Created time.Time
	Updated time.Time
}

type filterRecord struct {
	V       int             `json:"v"`
	Name    string          `json:"name"`
	Spec    json.RawMessage `json:"spec"`
	Created time.Time       `json:"created"`
	Updated time.Time       `json:"updated"`
}

func (r *filterRecord) version() int { return r.V }

func (r *filterRecord) entry() FilterEntry {
	return FilterEntry{Name: r.Name, Spec: slices.Clone(r.Spec), Created: r.Created, Updated: r.Updated}
}

// ValidFilterName reports whether name is a legal filter name: 1 to 63
// characters, a lower-case letter first, then lower-case letters, digits,
// '-' or '_' (a name the policy language can spell as an identifier).
func ValidFilterName(name string) bool {
	if len(name) < 1 || len(name) > 63 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// PutFilter registers a filter or replaces its spec.
func (s *Store) PutFilter(ctx context.Context, name string, spec json.RawMessage) (FilterEntry, error) {
	if !ValidFilterName(name) {
		return FilterEntry{}, fmt.Errorf("meta: put filter: %w %q: want 1-63 characters [a-z][a-z0-9-_]*", ErrInvalidFilterName, name)
	}
	if err := checkBlob("filter spec", spec); err != nil {
		return FilterEntry{}, fmt.Errorf("meta: put filter: %w", err)
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

// GetFilter returns one registered filter, or ErrFilterNotFound.
func (s *Store) GetFilter(ctx context.Context, name string) (FilterEntry, error) {
	var rec filterRecord
	var ok bool
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		ok, err = getRecord(tx, tblFilters, name, &rec)
		return err
	})
	if err != nil {
		return FilterEntry{}, fmt.Errorf("meta: get filter: %w", err)
	}
	if !ok {
		return FilterEntry{}, fmt.Errorf("meta: get filter: %w: %q", ErrFilterNotFound, name)
	}
	return rec.entry(), nil
}

// ListFilters lists the registered filters in name order.
func (s *Store) ListFilters(ctx context.Context) ([]FilterEntry, error) {
	var out []FilterEntry
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		out, err = listFilters(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("meta: list filters: %w", err)
	}
	return out, nil
}

func listFilters(tx kvTx) ([]FilterEntry, error) {
	out := []FilterEntry{}
	err := scanRecords(tx, tblFilters, "", func(rec *filterRecord) error {
		out = append(out, rec.entry())
		return nil
	})
	return out, err
}

// DeleteFilter unregisters a filter, or fails with ErrFilterNotFound.
func (s *Store) DeleteFilter(ctx context.Context, name string) error {
	err := s.kv.update(ctx, func(tx kvTx) error { return deleteRecord(tx, tblFilters, name, ErrFilterNotFound) })
	if err != nil {
		return fmt.Errorf("meta: delete filter: %w", err)
	}
	s.log.Info("filter unregistered", "filter", name)
	return nil
}
