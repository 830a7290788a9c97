package meta

import (
	"bytes"
	"errors"
	"testing"
)

// TestDumpRestore: a dump of a store restored into an empty store of
// either backend gives back the same records, which open with the same
// master key (sealed secrets included); a store that holds records is
// refused unless forced.
func TestDumpRestore(t *testing.T) {
	eachBackend(t, func(t *testing.T, src storage) {
		ctx := t.Context()
		s := src.store(t)
		_, key, err := s.CreateTenantWithKey(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		var dump bytes.Buffer
		n, err := s.Dump(ctx, &dump)
		if err != nil || n == 0 {
			t.Fatalf("dump: %d, %v", n, err)
		}
		for _, dst := range backends {
			t.Run("into_"+dst.name, func(t *testing.T) {
				st := dst.setup(t)
				st.mk = src.mk // the key the dump's secrets are sealed under
				got, err := Restore(ctx, st.url, st.dataDir, bytes.NewReader(dump.Bytes()), false, nil)
				if err != nil || got != n {
					t.Fatalf("restore: %d of %d, %v", got, n, err)
				}
				r := st.store(t)
				tenant, secret, err := r.LookupAccessKey(ctx, key.AccessKey)
				if err != nil || tenant != "acme" || secret != key.SecretKey {
					t.Fatalf("restored key: %q, %v", tenant, err)
				}
				var again bytes.Buffer
				if _, err := r.Dump(ctx, &again); err != nil || !bytes.Equal(again.Bytes(), dump.Bytes()) {
					t.Fatalf("the restored store dumps differently (%v)", err)
				}
				if _, err := r.CreateTenant(ctx, "later"); err != nil {
					t.Fatal(err)
				}
				_ = r.Close() // a restore needs the store closed (bbolt's lock)
				if _, err := Restore(ctx, st.url, st.dataDir, bytes.NewReader(dump.Bytes()), false, nil); !errors.Is(err, ErrRestoreTargetNotEmpty) {
					t.Fatalf("restore into a store that holds records: %v", err)
				}
				if got, err := Restore(ctx, st.url, st.dataDir, bytes.NewReader(dump.Bytes()), true, nil); err != nil || got != n {
					t.Fatalf("forced restore: %d, %v", got, err)
				}
				r = st.store(t)
				if _, err := r.GetTenant(ctx, "later"); err == nil {
					t.Fatal("a forced restore kept a record the dump does not hold")
				}
			})
		}
	})
}
