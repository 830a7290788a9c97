package keys_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/keys"
)

var _ filter.KeyProvider = (*keys.Provider)(nil)

func master(b byte) []byte { return bytes.Repeat([]byte{b}, keys.MasterKeySize) }

// currentIDs is a rotation table as the control plane would supply it.
type currentIDs struct {
	mu  sync.Mutex
	ids map[string]string
	err error
}

func (c *currentIDs) CurrentKeyID(_ context.Context, tenant string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[tenant], c.err
}

func (c *currentIDs) set(tenant, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids[tenant] = id
}

// The derivation is pinned: an object sealed today must open after any
// upgrade. The vector was computed independently (HKDF-SHA256 by hand in
// Python: PRK = HMAC(0^32, master), OKM = HMAC(PRK, info || 0x01)).
func TestDerivationIsPinned(t *testing.T) {
	m := make([]byte, 32)
	for i := range m {
		m[i] = byte(i)
	}
	p, err := keys.New(m, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	key, err := p.Key(context.Background(), "acme", "k1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hex.EncodeToString(key), "aaf15e9532c4e638b63a9c50213b5ab041aea707ae5c0712188e6fe57a2c5dfa"; got != want {
		t.Fatalf("derived key changed:\n got %s\nwant %s", got, want)
	}
}

func TestKeysDifferByTenantIDAndMaster(t *testing.T) {
	ctx := context.Background()
	p1, _ := keys.New(master(1), nil, 0)
	p2, _ := keys.New(master(2), nil, 0)
	seen := map[string]string{}
	for _, c := range []struct {
		p            *keys.Provider
		name, tenant string
		id           string
	}{
		{p1, "m1", "acme", "k1"}, {p1, "m1", "acme", "k2"}, {p1, "m1", "beta", "k1"},
		{p2, "m2", "acme", "k1"},
		// Field boundaries must not collide: ("ab","c") vs ("a","bc").
		{p1, "m1", "acmek", "1"}, {p1, "m1", "acme", "k1x"},
	} {
		k, err := c.p.Key(ctx, c.tenant, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if len(k) != 32 {
			t.Fatalf("key of %d bytes", len(k))
		}
		label := c.name + "/" + c.tenant + "/" + c.id
		if prev, dup := seen[string(k)]; dup {
			t.Fatalf("%s and %s derive the same key", prev, label)
		}
		seen[string(k)] = label
		again, _ := c.p.Key(ctx, c.tenant, c.id)
		if !bytes.Equal(again, k) {
			t.Fatalf("%s: derivation not deterministic", label)
		}
	}
}

func TestCurrentKeyDefaultsAndRotation(t *testing.T) {
	ctx := context.Background()
	ids := &currentIDs{ids: map[string]string{}}
	p, err := keys.New(master(7), ids, 0)
	if err != nil {
		t.Fatal(err)
	}
	noTable, _ := keys.New(master(7), nil, 0)

	for _, prov := range []*keys.Provider{p, noTable} {
		id, k1, err := prov.CurrentKey(ctx, "acme")
		if err != nil || id != keys.DefaultKeyID {
			t.Fatalf("CurrentKey before rotation = %q, %v; want %q", id, err, keys.DefaultKeyID)
		}
		direct, _ := prov.Key(ctx, "acme", keys.DefaultKeyID)
		if !bytes.Equal(direct, k1) {
			t.Fatal("CurrentKey and Key disagree for k1")
		}
	}
	_, old, _ := p.CurrentKey(ctx, "acme")

	ids.set("acme", "k2")
	id, k2, err := p.CurrentKey(ctx, "acme")
	if err != nil || id != "k2" {
		t.Fatalf("after rotation CurrentKey = %q, %v", id, err)
	}
	if bytes.Equal(k2, old) {
		t.Fatal("rotation kept the same key")
	}
	// Objects sealed under k1 stay readable.
	stillOld, err := p.Key(ctx, "acme", "k1")
	if err != nil || !bytes.Equal(stillOld, old) {
		t.Fatalf("old key after rotation: %v", err)
	}
	// Other tenants are unaffected.
	if id, _, _ := p.CurrentKey(ctx, "beta"); id != keys.DefaultKeyID {
		t.Fatalf("beta rotated with acme: %q", id)
	}

	ids.err = errors.New("table unavailable")
	if _, _, err := p.CurrentKey(ctx, "acme"); err == nil || !strings.Contains(err.Error(), "table unavailable") {
		t.Fatalf("error of the id table not returned: %v", err)
	}
}

func TestReturnedKeysAreCopies(t *testing.T) {
	ctx := context.Background()
	p, _ := keys.New(master(3), nil, 0)
	k, _ := p.Key(ctx, "acme", "k1")
	want := append([]byte(nil), k...)
	clear(k)
	again, _ := p.Key(ctx, "acme", "k1")
	if !bytes.Equal(again, want) {
		t.Fatal("a caller clearing its key corrupted the cache")
	}
}

func TestCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	p, _ := keys.New(master(4), nil, 8)
	ref, _ := keys.New(master(4), nil, 0)
	for i := range 100 {
		tenant := "t" + strings.Repeat("x", i)
		k, err := p.Key(ctx, tenant, "k1")
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ref.Key(ctx, tenant, "k1")
		if !bytes.Equal(k, want) {
			t.Fatalf("tenant %d: evictions changed a key", i)
		}
	}
	if n := keys.CacheLen(p); n > 8 {
		t.Fatalf("cache holds %d entries, bound is 8", n)
	}
}

func TestValidation(t *testing.T) {
	ctx := context.Background()
	if _, err := keys.New(make([]byte, 16), nil, 0); err == nil || !strings.Contains(err.Error(), "16 bytes, want 32") {
		t.Fatalf("short master key: %v", err)
	}
	if _, err := keys.New(master(1), nil, -1); err == nil {
		t.Fatal("negative cache size accepted")
	}
	p, _ := keys.New(master(1), nil, 0)
	for _, c := range []struct{ tenant, id, want string }{
		{"", "k1", "empty tenant"},
		{"a\x00b", "k1", "NUL"},
		{"acme", "", "1 to 64 characters"},
		{"acme", strings.Repeat("k", 65), "1 to 64 characters"},
		{"acme", "k 1", `character ' ' not allowed`},
		{"acme", "k\x001", `not allowed`},
	} {
		_, err := p.Key(ctx, c.tenant, c.id)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Key(%q, %q) = %v, want error containing %q", c.tenant, c.id, err, c.want)
		}
	}
	ids := &currentIDs{ids: map[string]string{"acme": "bad id"}}
	p2, _ := keys.New(master(1), ids, 0)
	if _, _, err := p2.CurrentKey(ctx, "acme"); err == nil {
		t.Fatal("malformed current key id accepted")
	}
	for _, ok := range []string{"k1", "2026-01.rot_2", strings.Repeat("k", 64)} {
		if err := keys.ValidKeyID(ok); err != nil {
			t.Errorf("ValidKeyID(%q) = %v", ok, err)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	p, _ := keys.New(master(5), nil, 4)
	ref, _ := keys.New(master(5), nil, 0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				tenant := "t" + string(rune('a'+(g+i)%10))
				k, err := p.Key(ctx, tenant, "k1")
				want, _ := ref.Key(ctx, tenant, "k1")
				if err != nil || !bytes.Equal(k, want) {
					t.Errorf("concurrent Key(%s): %v", tenant, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
