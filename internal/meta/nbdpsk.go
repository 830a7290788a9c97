package meta

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"
)

// ErrNoNBDKey: the tenant has no NBD pre-shared key.
var ErrNoNBDKey = errors.New("no NBD pre-shared key")

// nbdKeyLen is the bytes of an NBD PSK: 256 bits, what GnuTLS's psktool
// generates by default.
const nbdKeyLen = 32

// NBDKey is a tenant's NBD TLS pre-shared key. Its identity is the
// tenant's name (GnuTLS's PSK "username"); Key is set only when the key
// is created, the one time it is shown.
type NBDKey struct {
	Tenant  string    `json:"tenant"`
	Key     []byte    `json:"-"`
	Created time.Time `json:"created"`
}

type nbdKeyRecord struct {
	V       int       `json:"v"`
	Tenant  string    `json:"tenant"`
	Sealed  []byte    `json:"sealed"`
	Created time.Time `json:"created"`
}

func (r *nbdKeyRecord) version() int { return r.V }

// nbdKeyAD binds a sealed key to its tenant: a sealed value copied onto
// another tenant's record does not open.
func nbdKeyAD(tenant string) string { return "nbd-psk\x00" + tenant }

// CreateNBDKey gives an existing tenant a new NBD pre-shared key,
// replacing the one it had: connections already open keep running, new
// ones need the new key. The key is returned once and stored sealed under
// the master key.
func (s *Store) CreateNBDKey(ctx context.Context, tenant string) (NBDKey, error) {
	key := make([]byte, nbdKeyLen)
	rand.Read(key)
	var rec nbdKeyRecord
	err := s.kv.update(ctx, func(tx kvTx) error {
		if _, err := requireTenant(tx, tenant); err != nil {
			return err
		}
		sealed, err := s.sealer.seal(key, nbdKeyAD(tenant))
		if err != nil {
			return err
		}
		rec = nbdKeyRecord{V: recordVersion, Tenant: tenant, Sealed: sealed, Created: s.timestamp()}
		return putRecord(tx, tblNBDKeys, tenant, &rec)
	})
	if err != nil {
		return NBDKey{}, fmt.Errorf("meta: create NBD key: %w", err)
	}
	s.log.Info("NBD pre-shared key created", "tenant", tenant)
	return NBDKey{Tenant: tenant, Key: key, Created: rec.Created}, nil
}

// LookupNBDKey returns a tenant's NBD pre-shared key, or ErrNoNBDKey.
func (s *Store) LookupNBDKey(ctx context.Context, tenant string) ([]byte, error) {
	var rec nbdKeyRecord
	var ok bool
	err := s.kv.view(ctx, func(tx kvTx) error {
		var err error
		ok, err = getRecord(tx, tblNBDKeys, tenant, &rec)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("meta: NBD key: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("meta: tenant %q: %w", tenant, ErrNoNBDKey)
	}
	key, err := s.sealer.open(rec.Sealed, nbdKeyAD(tenant))
	if err != nil {
		return nil, fmt.Errorf("meta: NBD key of %q: decrypt: %w", tenant, err)
	}
	return key, nil
}

// DeleteNBDKey revokes a tenant's NBD pre-shared key.
func (s *Store) DeleteNBDKey(ctx context.Context, tenant string) error {
	err := s.kv.update(ctx, func(tx kvTx) error {
		raw, err := tx.get(tblNBDKeys, tenant)
		if err != nil {
			return err
		}
		if raw == nil {
			return fmt.Errorf("tenant %q: %w", tenant, ErrNoNBDKey)
		}
		return tx.del(tblNBDKeys, tenant)
	})
	if err != nil {
		return fmt.Errorf("meta: delete NBD key: %w", err)
	}
	s.log.Info("NBD pre-shared key revoked", "tenant", tenant)
	return nil
}
