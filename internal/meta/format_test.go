package meta

import (
	"errors"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/diskformat"
)

// TestFormatVersion: a new store records the current format; one written
// before formats were recorded is migrated when opened (InspectFormat
// says so first, changing nothing); one claiming a newer format is refused
// with what to do, on both backends.
func TestFormatVersion(t *testing.T) {
	eachBackend(t, func(t *testing.T, st storage) {
		ctx := t.Context()
		if rep, err := InspectFormat(ctx, st.url, st.dataDir, nil); err != nil || rep.Exists {
			t.Fatalf("before creation: %+v, %v", rep, err)
		}
		s := st.store(t)
		setFormat := func(v string) {
			t.Helper()
			if err := s.kv.update(ctx, func(tx kvTx) error {
				if v == "" {
					return tx.del(tblSystem, formatKey)
				}
				return tx.put(tblSystem, formatKey, []byte(v))
			}); err != nil {
				t.Fatal(err)
			}
		}
		format := func() string {
			t.Helper()
			var raw []byte
			if err := s.kv.view(ctx, func(tx kvTx) error {
				v, err := tx.get(tblSystem, formatKey)
				raw = append([]byte(nil), v...)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return string(raw)
		}
		if got := format(); got != "1" {
			t.Fatalf("new store records format %q, want 1", got)
		}
		if _, err := s.CreateTenant(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		// As written by a release before formats were recorded.
		setFormat("")
		_ = s.Close()

		rep, err := InspectFormat(ctx, st.url, st.dataDir, nil)
		if err != nil || !rep.Exists || rep.Stored != diskformat.Unversioned || rep.Current != FormatVersion || len(rep.Steps) != 1 || !strings.Contains(rep.Steps[0], "format 0 -> 1") {
			t.Fatalf("inspect an unversioned store: %+v, %v", rep, err)
		}
		s = st.store(t)
		if got := format(); got != "1" {
			t.Fatalf("after migration the store records format %q, want 1", got)
		}
		if _, err := s.GetTenant(ctx, "acme"); err != nil {
			t.Fatalf("the migrated store lost its tenant: %v", err)
		}

		setFormat("7")
		_ = s.Close()
		rep, err = InspectFormat(ctx, st.url, st.dataDir, nil)
		if err != nil || rep.Stored != 7 || !strings.Contains(rep.Error, "has format 7") {
			t.Fatalf("inspect a newer store: %+v, %v", rep, err)
		}
		if _, err := st.open(ctx); !errors.Is(err, diskformat.ErrTooNew) || !strings.Contains(err.Error(), "reads formats up to 1") {
			t.Fatalf("open a newer store: %v", err)
		}
	})
}
