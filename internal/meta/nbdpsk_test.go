package meta

import (
	"bytes"
	"errors"
	"testing"
)

func TestNBDKeys(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		s := st.store(t)
		for _, n := range []string{"acme", "bob"} {
			if _, err := s.CreateTenant(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.LookupNBDKey(ctx, "acme"); !errors.Is(err, ErrNoNBDKey) {
			t.Fatalf("lookup before create: %v", err)
		}
		if _, err := s.CreateNBDKey(ctx, "nobody"); !errors.Is(err, ErrTenantNotFound) {
			t.Fatalf("create for a missing tenant: %v", err)
		}
		k1, err := s.CreateNBDKey(ctx, "acme")
		if err != nil || len(k1.Key) != nbdKeyLen || k1.Tenant != "acme" || k1.Created.IsZero() {
			t.Fatalf("create: %+v %v", k1, err)
		}
		got, err := s.LookupNBDKey(ctx, "acme")
		if err != nil || !bytes.Equal(got, k1.Key) {
			t.Fatalf("lookup: %x %v", got, err)
		}
		// At rest the key is sealed: the record does not hold it.
		var raw []byte
		if err := s.kv.view(ctx, func(tx kvTx) error {
			var err error
			raw, err = tx.get(tblNBDKeys, "acme")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if len(raw) == 0 || bytes.Contains(raw, k1.Key) {
			t.Fatal("the stored record holds the key in clear")
		}
		// A sealed key copied onto another tenant's record does not open.
		if err := s.kv.update(ctx, func(tx kvTx) error {
			return tx.put(tblNBDKeys, "bob", bytes.ReplaceAll(raw, []byte(`"acme"`), []byte(`"bob"`)))
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LookupNBDKey(ctx, "bob"); err == nil || errors.Is(err, ErrNoNBDKey) {
			t.Fatalf("acme's sealed key opened as bob's: %v", err)
		}
		// Creating again replaces the key.
		k2, err := s.CreateNBDKey(ctx, "acme")
		if err != nil || bytes.Equal(k2.Key, k1.Key) {
			t.Fatalf("replace: %v", err)
		}
		if got, _ := s.LookupNBDKey(ctx, "acme"); !bytes.Equal(got, k2.Key) {
			t.Fatal("the old key is still in force")
		}
		if err := s.DeleteNBDKey(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LookupNBDKey(ctx, "acme"); !errors.Is(err, ErrNoNBDKey) {
			t.Fatalf("lookup after delete: %v", err)
		}
		if err := s.DeleteNBDKey(ctx, "acme"); !errors.Is(err, ErrNoNBDKey) {
			t.Fatalf("second delete: %v", err)
		}
		// A tenant deleted and created again does not inherit its key.
		if _, err := s.CreateNBDKey(ctx, "bob"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteTenant(ctx, "bob"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateTenant(ctx, "bob"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LookupNBDKey(ctx, "bob"); !errors.Is(err, ErrNoNBDKey) {
			t.Fatalf("recreated tenant: %v", err)
		}
	})
}
