// Package keys owns tenants' data keys: it derives them from the server's
// master key and says which key id new objects of a tenant are sealed
// with. Keys are never stored; key ids are, in object records, so that a
// tenant rotated to a new id still reads objects written under an old one.
package keys

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// DefaultKeyID is a tenant's key id until it is rotated.
const DefaultKeyID = "k1"

// MasterKeySize is the master key's length in bytes.
const MasterKeySize = 32

// DefaultCacheSize bounds the derived keys a Provider keeps.
const DefaultCacheSize = 4096

// maxKeyIDLen bounds key ids: they are written into every object's record.
const maxKeyIDLen = 64

// CurrentKeyIDs tells which key id a tenant's new objects use. It is the
// control plane's answer, typically from an in-memory table; "" means the
// tenant was never rotated.
type CurrentKeyIDs interface {
	CurrentKeyID(ctx context.Context, tenant string) (string, error)
}

// Provider derives per-tenant data keys with HKDF-SHA256 from a master
// key. It satisfies filter.KeyProvider and is safe for concurrent use.
type Provider struct {
	master  []byte
	current CurrentKeyIDs

	mu    sync.Mutex
	cache map[cacheKey][]byte
	max   int
}

type cacheKey struct{ tenant, keyID string }

// New returns a provider deriving from master (MasterKeySize bytes; it is
// copied). current may be nil: every tenant then uses DefaultKeyID.
// cacheSize bounds the derived keys kept; 0 means DefaultCacheSize.
func New(master []byte, current CurrentKeyIDs, cacheSize int) (*Provider, error) {
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("keys: master key is %d bytes, want %d", len(master), MasterKeySize)
	}
	if cacheSize < 0 {
		return nil, fmt.Errorf("keys: cache size %d is negative", cacheSize)
	}
	if cacheSize == 0 {
		cacheSize = DefaultCacheSize
	}
	return &Provider{
		master:  append([]byte(nil), master...),
		current: current,
		cache:   make(map[cacheKey][]byte),
		max:     cacheSize,
	}, nil
}

// CurrentKey returns the id and key a tenant's new objects are sealed with.
func (p *Provider) CurrentKey(ctx context.Context, tenant string) (string, []byte, error) {
	id := DefaultKeyID
	if p.current != nil {
		cur, err := p.current.CurrentKeyID(ctx, tenant)
		if err != nil {
			return "", nil, fmt.Errorf("keys: current key id of tenant %q: %w", tenant, err)
		}
		if cur != "" {
			id = cur
		}
	}
	key, err := p.Key(ctx, tenant, id)
	if err != nil {
		return "", nil, err
	}
	return id, key, nil
}

// Key returns the tenant's data key with the given id. Any well-formed id
// derives a key; a wrong one fails later, when the key it gives does not
// open what was sealed.
func (p *Provider) Key(_ context.Context, tenant, keyID string) ([]byte, error) {
	if err := ValidTenant(tenant); err != nil {
		return nil, err
	}
	if err := ValidKeyID(keyID); err != nil {
		return nil, err
	}
	ck := cacheKey{tenant, keyID}
	p.mu.Lock()
	key, ok := p.cache[ck]
	p.mu.Unlock()
	if ok {
		return append([]byte(nil), key...), nil
	}
	key, err := derive(p.master, tenant, keyID)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if len(p.cache) >= p.max {
		// Evict an arbitrary entry: deriving again costs a microsecond,
		// so recency is not worth tracking.
		for k := range p.cache {
			delete(p.cache, k)
			break
		}
	}
	p.cache[ck] = key
	p.mu.Unlock()
	return append([]byte(nil), key...), nil
}

// derive is the one definition of a data key. Changing it makes every
// encrypted object unreadable: the test pins its output. The NUL bytes
// separate fields that cannot contain NUL, so distinct (tenant, id) pairs
// never share an info string.
func derive(master []byte, tenant, keyID string) ([]byte, error) {
	key, err := hkdf.Key(sha256.New, master, nil, "facet data key\x00"+tenant+"\x00"+keyID, 32)
	if err != nil {
		return nil, fmt.Errorf("keys: derive: %w", err)
	}
	return key, nil
}

// ValidTenant checks that a tenant name can enter a derivation.
func ValidTenant(tenant string) error {
	if tenant == "" {
		return errors.New("keys: empty tenant name")
	}
	if strings.IndexByte(tenant, 0) >= 0 {
		return errors.New("keys: tenant name contains a NUL byte")
	}
	return nil
}

// ValidKeyID checks a key id: 1 to 64 letters, digits, '.', '_' or '-'.
// facet ctl checks a rotation's new id with it before storing it.
func ValidKeyID(id string) error {
	if id == "" || len(id) > maxKeyIDLen {
		return fmt.Errorf("keys: key id must be 1 to %d characters, got %d", maxKeyIDLen, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("keys: key id %q: character %q not allowed (letters, digits, '.', '_', '-')", id, c)
		}
	}
	return nil
}
