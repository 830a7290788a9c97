package meta

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// The kv contract, checked on every backend below the record logic.

type kvEntry struct{ key, val string }

func scanAll(t *testing.T, tx kvTx, table, prefix string) []kvEntry {
	t.Helper()
	var out []kvEntry
	if err := tx.scan(table, prefix, func(k string, v []byte) error {
		out = append(out, kvEntry{k, string(v)})
		return nil
	}); err != nil {
		t.Fatalf("scan %q: %v", prefix, err)
	}
	return out
}

func TestKVContract(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		db := st.store(t).kv

		// Keys chosen to catch ordering and prefix-bound mistakes: NUL
		// separators, 0xff bytes, a key equal to a prefix.
		keys := []string{"a", "a\x00", "a\x00b", "a\x00c", "a\x01", "ab", "a\xff", "a\xff\xff", "b", "\xff"} // byte order
		err := db.update(ctx, func(tx kvTx) error {
			for _, k := range slices.Backward(keys) {
				if err := tx.put(tblTenantBuckets, k, []byte("v"+k)); err != nil {
					return err
				}
			}
			return tx.put(tblTenantKeys, "other-table", nil)
		})
		if err != nil {
			t.Fatal(err)
		}

		err = db.view(ctx, func(tx kvTx) error {
			for prefix, want := range map[string][]string{
				"":       keys,
				"a":      keys[:8],
				"a\x00":  {"a\x00", "a\x00b", "a\x00c"},
				"a\xff":  {"a\xff", "a\xff\xff"},
				"\xff":   {"\xff"},
				"b":      {"b"},
				"c":      nil,
				"a\x00b": {"a\x00b"},
			} {
				var got []string
				for _, e := range scanAll(t, tx, tblTenantBuckets, prefix) {
					if e.val != "v"+e.key {
						t.Errorf("key %q has value %q", e.key, e.val)
					}
					got = append(got, e.key)
				}
				if !slices.Equal(got, want) {
					t.Errorf("scan %q = %q, want %q", prefix, got, want)
				}
			}
			v, err := tx.get(tblTenantKeys, "other-table")
			if err != nil || v == nil || len(v) != 0 {
				t.Errorf("empty value: %q, %v (want present and empty)", v, err)
			}
			if v, err := tx.get(tblTenantKeys, "absent"); err != nil || v != nil {
				t.Errorf("absent key: %q, %v", v, err)
			}
			if _, err := tx.get("no-such-table", "x"); err == nil {
				t.Error("get on an unknown table succeeded")
			}
			if err := tx.put(tblTenants, "x", nil); err == nil {
				t.Error("put in a read-only transaction succeeded")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}

		// A transaction sees its own writes, in get and in scan.
		err = db.update(ctx, func(tx kvTx) error {
			if err := tx.del(tblTenantBuckets, "a\x00b"); err != nil {
				return err
			}
			if err := tx.put(tblTenantBuckets, "a\x00bb", []byte("new")); err != nil {
				return err
			}
			if err := tx.put(tblTenantBuckets, "a\x00c", []byte("changed")); err != nil {
				return err
			}
			got := scanAll(t, tx, tblTenantBuckets, "a\x00")
			want := []kvEntry{{"a\x00", "va\x00"}, {"a\x00bb", "new"}, {"a\x00c", "changed"}}
			if !slices.Equal(got, want) {
				t.Errorf("scan inside the transaction = %q, want %q", got, want)
			}
			if v, err := tx.get(tblTenantBuckets, "a\x00b"); err != nil || v != nil {
				t.Errorf("deleted key inside the transaction: %q, %v", v, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}

		// A failing transaction leaves nothing behind.
		boom := errors.New("boom")
		err = db.update(ctx, func(tx kvTx) error {
			if err := tx.put(tblTenantBuckets, "zz", []byte("x")); err != nil {
				return err
			}
			if err := tx.del(tblTenantBuckets, "a"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("update returned %v, want the function's error", err)
		}
		err = db.view(ctx, func(tx kvTx) error {
			got := scanAll(t, tx, tblTenantBuckets, "")
			want := []string{"a", "a\x00", "a\x00bb", "a\x00c", "a\x01", "ab", "a\xff", "a\xff\xff", "b", "\xff"}
			var keys []string
			for _, e := range got {
				keys = append(keys, e.key)
			}
			if !slices.Equal(keys, want) {
				t.Errorf("after a failed transaction: %q, want %q", keys, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}

		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if err := db.view(canceled, func(kvTx) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Fatalf("view with a canceled context: %v", err)
		}
	})
}

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"a": "b", "a\x00": "a\x01", "a\xff": "b", "\xff\xff": "", "ab\xff\xff": "ac"} {
		got, ok := prefixEnd(in)
		if ok != (want != "") || got != want {
			t.Errorf("prefixEnd(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
