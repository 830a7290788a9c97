package meta

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/s3err"
)

func TestTenantLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)

		for _, n := range []string{"zeta", "acme", "b0b", "a.b-c_d"} {
			if _, err := s.CreateTenant(ctx, n); err != nil {
				t.Fatalf("CreateTenant(%q): %v", n, err)
			}
		}
		if _, err := s.CreateTenant(ctx, "acme"); !errors.Is(err, ErrTenantExists) {
			t.Fatalf("duplicate: got %v, want ErrTenantExists", err)
		}
		got, err := s.ListTenants(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tn := range got {
			names = append(names, tn.Name)
			if tn.Created.IsZero() {
				t.Errorf("tenant %s has no creation time", tn.Name)
			}
		}
		if want := []string{"a.b-c_d", "acme", "b0b", "zeta"}; !slices.Equal(names, want) {
			t.Fatalf("ListTenants = %v, want %v", names, want)
		}
		tn, err := s.GetTenant(ctx, "acme")
		if err != nil || tn.Name != "acme" {
			t.Fatalf("GetTenant = %+v, %v", tn, err)
		}
		if _, err := s.GetTenant(ctx, "nope"); !errors.Is(err, ErrTenantNotFound) {
			t.Fatalf("GetTenant(nope): %v", err)
		}
		if err := s.DeleteTenant(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteTenant(ctx, "acme"); !errors.Is(err, ErrTenantNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		if _, err := s.CreateTenant(ctx, "acme"); err != nil {
			t.Fatalf("re-create after delete: %v", err)
		}
	})
}

func TestTenantNames(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		s := st.store(t)
		for name, ok := range map[string]bool{
			"abc": true, "a-b": true, "0ab": true, "a.b_c-d": true, "ab": true, "t1": true, "": false, "-a": false,
			"Abc": false, "-ab": false, "_ab": false, ".ab": false, "a b": false, "ab/c": false,
			"ab\x00c": false, "abé": false, string(make([]byte, 64)): false,
			"a23456789012345678901234567890123456789012345678901234567890123":  true,  // 63
			"a234567890123456789012345678901234567890123456789012345678901234": false, // 64
		} {
			if ValidTenantName(name) != ok {
				t.Errorf("ValidTenantName(%q) = %v, want %v", name, !ok, ok)
			}
			_, err := s.CreateTenant(t.Context(), name)
			if ok && err != nil {
				t.Errorf("CreateTenant(%q): %v", name, err)
			}
			if !ok && !errors.Is(err, ErrInvalidTenantName) {
				t.Errorf("CreateTenant(%q): got %v, want ErrInvalidTenantName", name, err)
			}
		}
	})
}

var (
	accessKeyRE = regexp.MustCompile(`^FK[A-Z0-9]{18}$`)
	secretRE    = regexp.MustCompile(`^[A-Za-z0-9]{40}$`)
)

func TestKeysCreateLookupRevoke(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)

		_, k1, err := s.CreateTenantWithKey(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if !accessKeyRE.MatchString(k1.AccessKey) || !secretRE.MatchString(k1.SecretKey) {
			t.Fatalf("key shape: %q / %d chars", k1.AccessKey, len(k1.SecretKey))
		}
		k2, err := s.CreateKey(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if k1.AccessKey == k2.AccessKey || k1.SecretKey == k2.SecretKey {
			t.Fatal("two keys share an id or a secret")
		}
		if _, err := s.CreateKey(ctx, "nope"); !errors.Is(err, ErrTenantNotFound) {
			t.Fatalf("CreateKey(unknown tenant): %v", err)
		}

		for _, k := range []NewKey{k1, k2} {
			tenant, secret, err := s.LookupAccessKey(ctx, k.AccessKey)
			if err != nil || tenant != "acme" || secret != k.SecretKey {
				t.Fatalf("LookupAccessKey(%s) = %q, secret ok=%v, %v", k.AccessKey, tenant, secret == k.SecretKey, err)
			}
		}
		if _, _, err := s.LookupAccessKey(ctx, "FKNOTAKEY0000000000X"); !errors.Is(err, s3err.ErrUnknownAccessKey) {
			t.Fatalf("unknown key: %v", err)
		}

		keys, err := s.ListKeys(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{keys[0].AccessKey, keys[1].AccessKey}
		want := []string{k1.AccessKey, k2.AccessKey}
		slices.Sort(want)
		if len(keys) != 2 || !slices.Equal(ids, want) {
			t.Fatalf("ListKeys = %+v, want ids %v", keys, want)
		}

		// Another tenant can neither see nor revoke acme's key.
		if _, err := s.CreateTenant(ctx, "other"); err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeKey(ctx, "other", k1.AccessKey); !errors.Is(err, ErrKeyNotFound) {
			t.Fatalf("cross-tenant revoke: %v", err)
		}
		if other, _ := s.ListKeys(ctx, "other"); len(other) != 0 {
			t.Fatalf("other tenant lists %v", other)
		}

		// k1 is cached by the lookups above; revoking must still take effect.
		if err := s.RevokeKey(ctx, "acme", k1.AccessKey); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.LookupAccessKey(ctx, k1.AccessKey); !errors.Is(err, s3err.ErrUnknownAccessKey) {
			t.Fatalf("revoked key: %v", err)
		}
		if err := s.RevokeKey(ctx, "acme", k1.AccessKey); !errors.Is(err, ErrKeyNotFound) {
			t.Fatalf("second revoke: %v", err)
		}
		if _, _, err := s.LookupAccessKey(ctx, k2.AccessKey); err != nil {
			t.Fatalf("surviving key: %v", err)
		}

		// Deleting the tenant revokes its remaining keys.
		if err := s.DeleteTenant(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.LookupAccessKey(ctx, k2.AccessKey); !errors.Is(err, s3err.ErrUnknownAccessKey) {
			t.Fatalf("key of deleted tenant: %v", err)
		}
	})
}

// A lookup racing with a revoke must never leave the revoked secret cached.
func TestRevokeRacesLookup(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		if _, err := s.CreateTenant(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		for range 30 {
			k, err := s.CreateKey(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
							_, _, _ = s.LookupAccessKey(ctx, k.AccessKey)
						}
					}
				})
			}
			if err := s.RevokeKey(ctx, "acme", k.AccessKey); err != nil {
				t.Fatal(err)
			}
			for range 20 {
				if _, _, err := s.LookupAccessKey(ctx, k.AccessKey); !errors.Is(err, s3err.ErrUnknownAccessKey) {
					t.Fatalf("revoked key still resolves: %v", err)
				}
			}
			close(stop)
			wg.Wait()
			if _, _, err := s.LookupAccessKey(ctx, k.AccessKey); !errors.Is(err, s3err.ErrUnknownAccessKey) {
				t.Fatalf("revoked key resolves after lookups settled: %v", err)
			}
		}
	})
}

// populate fills st with n tenants with one key each, closes the store and
// returns the keys.
func populate(t *testing.T, st storage, n int) []NewKey {
	t.Helper()
	s, err := st.open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var keys []NewKey
	for i := range n {
		_, k, err := s.CreateTenantWithKey(t.Context(), fmt.Sprintf("tenant-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestSecretsNotInPlainTextAndSurviveReopen(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		keys := populate(t, st, 5)

		raw := st.dump(t)
		for _, k := range keys {
			if !bytes.Contains(raw, []byte(k.AccessKey)) {
				t.Fatalf("access key id %s not in the store: the grep below would prove nothing", k.AccessKey)
			}
			for _, form := range []string{k.SecretKey, base64.StdEncoding.EncodeToString([]byte(k.SecretKey))} {
				if bytes.Contains(raw, []byte(form)) {
					t.Fatalf("secret of %s is readable in the store", k.AccessKey)
				}
			}
		}
		if bytes.Contains(raw, st.mk) || bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString(st.mk))) {
			t.Fatal("master key stored in the store")
		}

		s2 := st.store(t)
		for _, k := range keys {
			if _, secret, err := s2.LookupAccessKey(ctx, k.AccessKey); err != nil || secret != k.SecretKey {
				t.Fatalf("after reopen, %s: match=%v err=%v", k.AccessKey, secret == k.SecretKey, err)
			}
		}
	})
}

func TestWrongMasterKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		k := populate(t, st, 1)[0]

		wrong := st
		wrong.mk = testKey(t)
		if _, err := wrong.open(ctx); !errors.Is(err, ErrWrongMasterKey) {
			t.Fatalf("open with another key: %v, want ErrWrongMasterKey", err)
		}
		short := st
		short.mk = st.mk[:16]
		if _, err := short.open(ctx); err == nil {
			t.Fatal("open accepted a 16-byte master key")
		}

		// Below the start-up check: the stored secret itself does not open
		// with another key, nor under another access key id.
		s2 := st.store(t)
		var rec keyRecord
		err := s2.kv.view(ctx, func(tx kvTx) error {
			_, err := getRecord(tx, tblKeys, k.AccessKey, &rec)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		other, err := newSealer(testKey(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.open(rec.Sealed, k.AccessKey); !errors.Is(err, ErrWrongMasterKey) {
			t.Fatalf("open with wrong key: %v", err)
		}
		if _, err := s2.sealer.open(rec.Sealed, "FKSOMEOTHERKEY000000"); err == nil {
			t.Fatal("sealed secret opened under another access key id")
		}
		if pt, err := s2.sealer.open(rec.Sealed, k.AccessKey); err != nil || string(pt) != k.SecretKey {
			t.Fatalf("open with right key: %v", err)
		}
	})
}

func TestBucketOwnership(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		for _, n := range []string{"acme", "other"} {
			if _, err := s.CreateTenant(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		for _, b := range []string{"zz", "aa", "mm"} {
			if err := s.ClaimBucket(ctx, "acme", b); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.ClaimBucket(ctx, "acme", "aa"); !errors.Is(err, s3err.ErrBucketOwnedByYou) {
			t.Fatalf("reclaim: %v", err)
		}
		if err := s.ClaimBucket(ctx, "other", "aa"); !errors.Is(err, s3err.ErrBucketOwnedByOther) {
			t.Fatalf("claim other's: %v", err)
		}
		if err := s.ClaimBucket(ctx, "ghost", "gg"); !errors.Is(err, ErrTenantNotFound) {
			t.Fatalf("claim by unknown tenant: %v", err)
		}
		if err := s.ClaimBucket(ctx, "acme", "a\x00b"); !errors.Is(err, ErrInvalidBucketName) {
			t.Fatalf("claim NUL name: %v", err)
		}

		owner, created, err := s.BucketOwner(ctx, "mm")
		if err != nil || owner != "acme" || created.IsZero() {
			t.Fatalf("BucketOwner = %q, %v, %v", owner, created, err)
		}
		if _, _, err := s.BucketOwner(ctx, "nope"); !errors.Is(err, s3err.ErrNoSuchBucket) {
			t.Fatalf("BucketOwner(nope): %v", err)
		}

		list, err := s.ListBuckets(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, b := range list {
			names = append(names, b.Name)
		}
		if !slices.Equal(names, []string{"aa", "mm", "zz"}) {
			t.Fatalf("ListBuckets = %v", names)
		}
		if list, _ := s.ListBuckets(ctx, "other"); len(list) != 0 {
			t.Fatalf("other tenant lists %v", list)
		}

		if err := s.DeleteTenant(ctx, "acme"); !errors.Is(err, ErrTenantNotEmpty) {
			t.Fatalf("delete tenant with buckets: %v", err)
		}
		if err := s.ReleaseBucket(ctx, "other", "aa"); !errors.Is(err, s3err.ErrBucketOwnedByOther) {
			t.Fatalf("release other's: %v", err)
		}
		if err := s.ReleaseBucket(ctx, "acme", "nope"); !errors.Is(err, s3err.ErrNoSuchBucket) {
			t.Fatalf("release missing: %v", err)
		}
		for _, b := range []string{"aa", "mm", "zz"} {
			if err := s.ReleaseBucket(ctx, "acme", b); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.BucketOwner(ctx, "aa"); !errors.Is(err, s3err.ErrNoSuchBucket) {
			t.Fatalf("released bucket still owned: %v", err)
		}
		if err := s.ClaimBucket(ctx, "other", "aa"); err != nil {
			t.Fatalf("claim released bucket: %v", err)
		}
		if err := s.DeleteTenant(ctx, "acme"); err != nil {
			t.Fatalf("delete emptied tenant: %v", err)
		}
	})
}

func TestBucketClaimRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		tenants := []string{"t-a", "t-b", "t-c", "t-d"}
		for _, n := range tenants {
			if _, err := s.CreateTenant(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		const n = 16
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = s.ClaimBucket(ctx, tenants[i%len(tenants)], "contested")
			})
		}
		close(start)
		wg.Wait()

		owner, _, err := s.BucketOwner(ctx, "contested")
		if err != nil {
			t.Fatal(err)
		}
		wins := 0
		for i, err := range errs {
			tenant := tenants[i%len(tenants)]
			switch {
			case err == nil:
				wins++
				if tenant != owner {
					t.Errorf("claim %d by %s succeeded but owner is %s", i, tenant, owner)
				}
			case tenant == owner && !errors.Is(err, s3err.ErrBucketOwnedByYou):
				t.Errorf("claim %d by owner: %v", i, err)
			case tenant != owner && !errors.Is(err, s3err.ErrBucketOwnedByOther):
				t.Errorf("claim %d by %s: %v", i, tenant, err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d claims won, want exactly 1", wins)
		}
		if list, _ := s.ListBuckets(ctx, owner); len(list) != 1 {
			t.Fatalf("owner lists %d buckets", len(list))
		}
	})
}

func TestRecordVersionRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		err := s.kv.update(ctx, func(tx kvTx) error {
			return tx.put(tblTenants, "future", []byte(`{"v":2,"name":"future","created":"2030-01-01T00:00:00Z"}`))
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetTenant(ctx, "future"); err == nil {
			t.Fatal("record of version 2 accepted")
		}
		if _, err := s.ListTenants(ctx); err == nil {
			t.Fatal("ListTenants accepted a version 2 record")
		}
	})
}

func TestOpenLockedFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	mk := testKey(t)
	s0, err := Open(t.Context(), path, mk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s0.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if s, err := Open(ctx, path, mk, nil); err == nil {
		_ = s.Close()
		t.Fatal("second Open of a locked meta.db succeeded")
	}
}

func TestLoadOrCreateMasterKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "master.key")

	keys := make([][]byte, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = LoadOrCreateMasterKey(path) })
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if len(keys[i]) != MasterKeySize || !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("concurrent creators disagree on the key (%d)", i)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	again, err := LoadOrCreateMasterKey(path)
	if err != nil || !bytes.Equal(again, keys[0]) {
		t.Fatalf("reload: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("leftover files: %v", entries)
	}

	bad := filepath.Join(dir, "short.key")
	if err := os.WriteFile(bad, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateMasterKey(bad); err == nil {
		t.Fatal("accepted a 5-byte key file")
	}
}

func TestDecodeMasterKey(t *testing.T) {
	k := testKey(t)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		got, err := DecodeMasterKey(" " + enc.EncodeToString(k) + "\n")
		if err != nil || !bytes.Equal(got, k) {
			t.Fatalf("decode: %v", err)
		}
	}
	if _, err := DecodeMasterKey(base64.StdEncoding.EncodeToString(k[:16])); err == nil {
		t.Fatal("accepted 16 bytes")
	}
	secretish := "not base64 !!"
	_, err := DecodeMasterKey(secretish)
	if err == nil || bytes.Contains([]byte(err.Error()), []byte(secretish)) {
		t.Fatalf("bad input: %v", err)
	}
}
