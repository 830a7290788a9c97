package meta

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"

	"github.com/facet-sds/facet/internal/s3err"
)

// Access key ids look like AWS ones: 20 upper-case alphanumerics, here "FK"
// and 18 base32 characters (90 random bits). Secrets are 40 alphanumerics
// (238 random bits): AWS's length, but without '+', '/' or a leading '-', so
// they survive shells, URLs, config files and flag parsers unquoted.
const (
	accessKeyPrefix = "FK"
	accessKeyLen    = 20
	secretLen       = 40
	secretAlphabet  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

func newAccessKeyID() string {
	return accessKeyPrefix + rand.Text()[:accessKeyLen-len(accessKeyPrefix)]
}

func newSecret() (string, error) {
	// Rejection sampling keeps every character uniform: bytes at or above
	// the largest multiple of the alphabet size are drawn again.
	const limit = 256 - 256%len(secretAlphabet)
	out := make([]byte, 0, secretLen)
	buf := make([]byte, 64)
	for len(out) < secretLen {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("generate secret: %w", err)
		}
		for _, b := range buf {
			if int(b) < limit && len(out) < secretLen {
				out = append(out, secretAlphabet[int(b)%len(secretAlphabet)])
			}
		}
	}
	return string(out), nil
}

// CreateKey creates a new access key for an existing tenant. The returned
// secret is never retrievable again.
func (s *Store) CreateKey(ctx context.Context, tenant string) (NewKey, error) {
	var k NewKey
	err := s.kv.update(ctx, func(tx kvTx) error {
		if _, err := requireTenant(tx, tenant); err != nil {
			return err
		}
		var err error
		k, err = s.createKeyTx(tx, tenant)
		return err
	})
	if err != nil {
		return NewKey{}, fmt.Errorf("meta: create key: %w", err)
	}
	s.log.Info("access key created", "tenant", tenant, "access_key", k.AccessKey)
	return k, nil
}

func (s *Store) createKeyTx(tx kvTx, tenant string) (NewKey, error) {
	secret, err := newSecret()
	if err != nil {
		return NewKey{}, err
	}
	var id string
	for {
		id = newAccessKeyID()
		raw, err := tx.get(tblKeys, id)
		if err != nil {
			return NewKey{}, err
		}
		if raw == nil {
			break
		}
		// A 90-bit collision: astronomically rare, but never overwrite.
	}
	sealed, err := s.sealer.seal([]byte(secret), id)
	if err != nil {
		return NewKey{}, err
	}
	rec := keyRecord{V: recordVersion, AccessKey: id, Tenant: tenant, Sealed: sealed, Created: s.timestamp()}
	if err := putRecord(tx, tblKeys, id, &rec); err != nil {
		return NewKey{}, err
	}
	if err := tx.put(tblTenantKeys, indexKey(tenant, id), nil); err != nil {
		return NewKey{}, err
	}
	return NewKey{KeyInfo: KeyInfo{AccessKey: id, Tenant: tenant, Created: rec.Created}, SecretKey: secret}, nil
}

// ListKeys lists a tenant's access keys (never their secrets) in id order.
func (s *Store) ListKeys(ctx context.Context, tenant string) ([]KeyInfo, error) {
	var out []KeyInfo
	err := s.kv.view(ctx, func(tx kvTx) error {
		out = []KeyInfo{}
		if _, err := requireTenant(tx, tenant); err != nil {
			return err
		}
		ids, err := tenantKeyIDs(tx, tenant)
		if err != nil {
			return err
		}
		for _, id := range ids {
			var rec keyRecord
			ok, err := getRecord(tx, tblKeys, id, &rec)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("index %s lists missing key %s", tblTenantKeys, id)
			}
			out = append(out, KeyInfo{AccessKey: rec.AccessKey, Tenant: rec.Tenant, Created: rec.Created})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("meta: list keys: %w", err)
	}
	return out, nil
}

func tenantKeyIDs(tx kvTx, tenant string) ([]string, error) {
	var ids []string
	p := indexPrefix(tenant)
	err := tx.scan(tblTenantKeys, p, func(key string, _ []byte) error {
		ids = append(ids, strings.TrimPrefix(key, p))
		return nil
	})
	return ids, err
}

// RevokeKey deletes a tenant's access key. A key of another tenant is
// reported as ErrKeyNotFound, so tenants cannot probe each other's keys.
func (s *Store) RevokeKey(ctx context.Context, tenant, accessKey string) error {
	err := s.kv.update(ctx, func(tx kvTx) error {
		if _, err := requireTenant(tx, tenant); err != nil {
			return err
		}
		var rec keyRecord
		ok, err := getRecord(tx, tblKeys, accessKey, &rec)
		if err != nil {
			return err
		}
		if !ok || rec.Tenant != tenant {
			return fmt.Errorf("%w: %q of tenant %q", ErrKeyNotFound, accessKey, tenant)
		}
		return deleteKeyTx(tx, tenant, accessKey)
	})
	s.forget(accessKey)
	if err != nil {
		return fmt.Errorf("meta: revoke key: %w", err)
	}
	s.log.Info("access key revoked", "tenant", tenant, "access_key", accessKey)
	return nil
}

func deleteKeyTx(tx kvTx, tenant, accessKey string) error {
	if err := tx.del(tblKeys, accessKey); err != nil {
		return err
	}
	return tx.del(tblTenantKeys, indexKey(tenant, accessKey))
}

// forget drops access keys from the secret cache and bumps the revocation
// generation. It runs after the revoking transaction, whether or not it
// committed: dropping a valid entry only costs one reload.
func (s *Store) forget(accessKeys ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ak := range accessKeys {
		delete(s.cache, ak)
	}
	s.gen++
}

// ForgetAccessKeys drops access keys from the secret cache, so that the
// next lookup reads the store: a cache in front of a shared store calls it
// when another node revoked a key.
func (s *Store) ForgetAccessKeys(accessKeys ...string) { s.forget(accessKeys...) }

// LookupAccessKey resolves an access key to its tenant and plaintext secret
// for SigV4 verification. Unknown and revoked keys fail with an error
// wrapping s3err.ErrUnknownAccessKey.
func (s *Store) LookupAccessKey(ctx context.Context, accessKey string) (tenant, secret string, err error) {
	s.mu.RLock()
	c, ok := s.cache[accessKey]
	gen := s.gen
	s.mu.RUnlock()
	if ok {
		return c.tenant, c.secret, nil
	}

	var rec keyRecord
	var found bool
	err = s.kv.view(ctx, func(tx kvTx) error {
		var err error
		found, err = getRecord(tx, tblKeys, accessKey, &rec)
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("meta: lookup access key: %w", err)
	}
	if !found {
		return "", "", fmt.Errorf("meta: access key %q: %w", accessKey, s3err.ErrUnknownAccessKey)
	}
	pt, err := s.sealer.open(rec.Sealed, accessKey)
	if err != nil {
		return "", "", fmt.Errorf("meta: access key %q: decrypt secret: %w", accessKey, err)
	}
	c = cachedKey{tenant: rec.Tenant, secret: string(pt)}

	s.mu.Lock()
	if s.gen == gen {
		s.cache[accessKey] = c
	}
	s.mu.Unlock()
	return c.tenant, c.secret, nil
}
