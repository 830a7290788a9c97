package meta

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Tenants' data keys are derived from the server's master key and a key id;
// the store keeps only the ids, never key material. New objects are sealed
// under the tenant's current id; older ids stay in the history so that
// objects written under them remain readable after a rotation.

// DataKeyID is one data-key id of a tenant.
type DataKeyID struct {
	ID      string
	Created time.Time
}

// DataKeys is a tenant's data-key ids.
type DataKeys struct {
	Tenant string
	// Current is the id new objects are sealed under ("" for a tenant that
	// has none yet; CurrentDataKey creates it).
	Current string
	// History holds every id, oldest first, Current last.
	History []DataKeyID
}

type dataKeysRecord struct {
	V       int            `json:"v"`
	Tenant  string         `json:"tenant"`
	History []dataKeyEntry `json:"history"`
}

type dataKeyEntry struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

func (r *dataKeysRecord) version() int { return r.V }

func (r *dataKeysRecord) dataKeys() DataKeys {
	dk := DataKeys{Tenant: r.Tenant, History: make([]DataKeyID, 0, len(r.History))}
	for _, e := range r.History {
		dk.History = append(dk.History, DataKeyID(e))
	}
	if n := len(dk.History); n > 0 {
		dk.Current = dk.History[n-1].ID
	}
	return dk
}

// newDataKeyID returns "k-" and 16 base32 characters (80 random bits):
// random rather than counted, so a tenant deleted and created again never
// derives an old generation's keys.
func newDataKeyID() string { return "k-" + strings.ToLower(rand.Text()[:16]) }

// addDataKeyTx appends a fresh id to tenant's history, makes it current and
// bumps the change version. The caller has checked the tenant exists.
func (s *Store) addDataKeyTx(tx kvTx, tenant string) (DataKeys, error) {
	var rec dataKeysRecord
	ok, err := getRecord(tx, tblDataKeys, tenant, &rec)
	if err != nil {
		return DataKeys{}, err
	}
	if !ok {
		rec = dataKeysRecord{V: recordVersion, Tenant: tenant, History: []dataKeyEntry{}}
	}
	id := newDataKeyID()
	for slices.ContainsFunc(rec.History, func(e dataKeyEntry) bool { return e.ID == id }) {
		id = newDataKeyID() // an 80-bit collision: never reuse an id
	}
	rec.History = append(rec.History, dataKeyEntry{ID: id, Created: s.timestamp()})
	if err := putRecord(tx, tblDataKeys, tenant, &rec); err != nil {
		return DataKeys{}, err
	}
	if _, err := bumpVersion(tx); err != nil {
		return DataKeys{}, err
	}
	return rec.dataKeys(), nil
}

// RotateDataKey gives tenant a new current data-key id; objects sealed
// under the previous ids stay readable.
func (s *Store) RotateDataKey(ctx context.Context, tenant string) (DataKeys, error) {
	var dk DataKeys
	err := s.kv.update(ctx, func(tx kvTx) error {
		if _, err := requireTenant(tx, tenant); err != nil {
			return err
		}
		var err error
		dk, err = s.addDataKeyTx(tx, tenant)
		return err
	})
	if err != nil {
		return DataKeys{}, fmt.Errorf("meta: rotate data key: %w", err)
	}
	s.log.Info("data key rotated", "tenant", tenant, "key_id", dk.Current)
	return dk, nil
}

// DataKeys returns tenant's data-key ids (none for a tenant created before
// the store knew data keys, until CurrentDataKey or RotateDataKey).
func (s *Store) DataKeys(ctx context.Context, tenant string) (DataKeys, error) {
	var dk DataKeys
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		dk, err = tenantDataKeys(tx, tenant)
		return err
	})
	if err != nil {
		return DataKeys{}, fmt.Errorf("meta: data keys: %w", err)
	}
	return dk, nil
}

// tenantDataKeys reads an existing tenant's data-key ids.
func tenantDataKeys(tx kvTx, tenant string) (DataKeys, error) {
	if _, err := requireTenant(tx, tenant); err != nil {
		return DataKeys{}, err
	}
	var rec dataKeysRecord
	ok, err := getRecord(tx, tblDataKeys, tenant, &rec)
	if err != nil || !ok {
		return DataKeys{Tenant: tenant, History: []DataKeyID{}}, err
	}
	return rec.dataKeys(), nil
}

// CurrentDataKey returns the id new objects of tenant are sealed under,
// creating the tenant's first id if it has none.
func (s *Store) CurrentDataKey(ctx context.Context, tenant string) (string, error) {
	dk, err := s.DataKeys(ctx, tenant)
	if err != nil {
		return "", err
	}
	if dk.Current != "" {
		return dk.Current, nil
	}
	err = s.kv.update(ctx, func(tx kvTx) error {
		var err error
		if dk, err = tenantDataKeys(tx, tenant); err != nil || dk.Current != "" {
			return err // or created concurrently: use that one
		}
		dk, err = s.addDataKeyTx(tx, tenant)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("meta: current data key: %w", err)
	}
	return dk.Current, nil
}

// ListDataKeys lists every tenant's data-key ids in tenant order.
func (s *Store) ListDataKeys(ctx context.Context) ([]DataKeys, error) {
	var out []DataKeys
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		out, err = listDataKeys(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("meta: list data keys: %w", err)
	}
	return out, nil
}

func listDataKeys(tx kvTx) ([]DataKeys, error) {
	out := []DataKeys{}
	err := scanRecords(tx, tblDataKeys, "", func(rec *dataKeysRecord) error {
		out = append(out, rec.dataKeys())
		return nil
	})
	return out, err
}
