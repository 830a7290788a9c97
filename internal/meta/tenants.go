package meta

import (
	"context"
	"fmt"
)

// ValidTenantName reports whether name is a legal tenant name: 1 to 63
// characters (policies name tenants tersely, as in "FOR TENANT t1"), a lower-case letter or digit first, then lower-case letters,
// digits, '-', '_' or '.'.
func ValidTenantName(name string) bool { return validName(name) }

func checkTenantName(name string) error {
	if !ValidTenantName(name) {
		return fmt.Errorf("%w %q: want 1-63 characters [a-z0-9][a-z0-9-_.]*", ErrInvalidTenantName, name)
	}
	return nil
}

// CreateTenant creates a tenant with no keys.
func (s *Store) CreateTenant(ctx context.Context, name string) (Tenant, error) {
	var t Tenant
	err := s.kv.update(ctx, func(tx kvTx) error {
		var err error
		t, err = s.createTenantTx(tx, name)
		return err
	})
	if err != nil {
		return Tenant{}, fmt.Errorf("meta: create tenant: %w", err)
	}
	s.log.Info("tenant created", "tenant", name)
	return t, nil
}

// CreateTenantWithKey creates a tenant and its first access key in one
// transaction, so a tenant never exists half-provisioned.
func (s *Store) CreateTenantWithKey(ctx context.Context, name string) (Tenant, NewKey, error) {
	var (
		t Tenant
		k NewKey
	)
	err := s.kv.update(ctx, func(tx kvTx) error {
		var err error
		if t, err = s.createTenantTx(tx, name); err != nil {
			return err
		}
		k, err = s.createKeyTx(tx, name)
		return err
	})
	if err != nil {
		return Tenant{}, NewKey{}, fmt.Errorf("meta: create tenant: %w", err)
	}
	s.log.Info("tenant created", "tenant", name, "access_key", k.AccessKey)
	return t, k, nil
}

func (s *Store) createTenantTx(tx kvTx, name string) (Tenant, error) {
	if err := checkTenantName(name); err != nil {
		return Tenant{}, err
	}
	raw, err := tx.get(tblTenants, name)
	if err != nil {
		return Tenant{}, err
	}
	if raw != nil {
		return Tenant{}, fmt.Errorf("%w: %q", ErrTenantExists, name)
	}
	rec := tenantRecord{V: recordVersion, Name: name, Created: s.timestamp()}
	if err := putRecord(tx, tblTenants, name, &rec); err != nil {
		return Tenant{}, err
	}
	// Every tenant has a data key from the start, so the data plane finds
	// its id in the snapshot without a write on a request.
	if _, err := s.addDataKeyTx(tx, name); err != nil {
		return Tenant{}, err
	}
	return rec.tenant(), nil
}

// requireTenant fails with ErrTenantNotFound unless the tenant exists.
func requireTenant(tx kvTx, name string) (Tenant, error) {
	var rec tenantRecord
	ok, err := getRecord(tx, tblTenants, name, &rec)
	if err != nil {
		return Tenant{}, err
	}
	if !ok {
		return Tenant{}, fmt.Errorf("%w: %q", ErrTenantNotFound, name)
	}
	return rec.tenant(), nil
}

// GetTenant returns one tenant or ErrTenantNotFound.
func (s *Store) GetTenant(ctx context.Context, name string) (Tenant, error) {
	var t Tenant
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		t, err = requireTenant(tx, name)
		return err
	})
	if err != nil {
		return Tenant{}, fmt.Errorf("meta: get tenant: %w", err)
	}
	return t, nil
}

// ListTenants lists all tenants in name order.
func (s *Store) ListTenants(ctx context.Context) ([]Tenant, error) {
	var out []Tenant
	err := s.kv.view(ctx, func(tx kvTx) error {
		out = []Tenant{}
		return tx.scan(tblTenants, "", func(key string, val []byte) error {
			var rec tenantRecord
			if err := decodeRecord(val, &rec); err != nil {
				return fmt.Errorf("%s/%q: %w", tblTenants, key, err)
			}
			out = append(out, rec.tenant())
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("meta: list tenants: %w", err)
	}
	return out, nil
}

// DeleteTenant deletes a tenant, revokes all its access keys and forgets
// its data-key ids. It refuses
// with ErrTenantNotEmpty while the tenant owns buckets: their objects would
// otherwise be orphaned with nobody able to reach them.
func (s *Store) DeleteTenant(ctx context.Context, name string) error {
	var revoked []string
	err := s.kv.update(ctx, func(tx kvTx) error {
		if _, err := requireTenant(tx, name); err != nil {
			return err
		}
		nb := 0
		if err := tx.scan(tblTenantBuckets, indexPrefix(name), func(string, []byte) error {
			nb++
			return nil
		}); err != nil {
			return err
		}
		if nb > 0 {
			return fmt.Errorf("%w: %q owns %d bucket(s)", ErrTenantNotEmpty, name, nb)
		}
		// Collect first: deleting under a live cursor is not allowed.
		var err error
		if revoked, err = tenantKeyIDs(tx, name); err != nil {
			return err
		}
		for _, ak := range revoked {
			if err := deleteKeyTx(tx, name, ak); err != nil {
				return err
			}
		}
		// With no buckets left, no object is sealed under the tenant's data
		// keys: a tenant created again under this name starts afresh.
		raw, err := tx.get(tblDataKeys, name)
		if err != nil {
			return err
		}
		if raw != nil {
			if err := tx.del(tblDataKeys, name); err != nil {
				return err
			}
			if _, err := bumpVersion(tx); err != nil {
				return err
			}
		}
		// Its NBD key goes too: a tenant created again under this name
		// must not inherit it.
		if err := tx.del(tblNBDKeys, name); err != nil {
			return err
		}
		return tx.del(tblTenants, name)
	})
	s.forget(revoked...)
	if err != nil {
		return fmt.Errorf("meta: delete tenant: %w", err)
	}
	s.log.Info("tenant deleted", "tenant", name, "keys_revoked", len(revoked))
	// Its quota and usage go too, like its NBD key.
	return s.DropCounters(ctx, Scope{Tenant: name})
}

// SetTenantPlainNBD sets whether the tenant's volumes may be opened by NBD
// clients that skipped TLS (Tenant.AllowPlainNBD).
func (s *Store) SetTenantPlainNBD(ctx context.Context, name string, allow bool) (Tenant, error) {
	var t Tenant
	err := s.kv.update(ctx, func(tx kvTx) error {
		var rec tenantRecord
		ok, err := getRecord(tx, tblTenants, name, &rec)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %q", ErrTenantNotFound, name)
		}
		rec.AllowPlainNBD = allow
		t = rec.tenant()
		return putRecord(tx, tblTenants, name, &rec)
	})
	if err != nil {
		return Tenant{}, fmt.Errorf("meta: set tenant: %w", err)
	}
	s.log.Info("tenant plain NBD set", "tenant", name, "allow_plain_nbd", allow)
	return t, nil
}
