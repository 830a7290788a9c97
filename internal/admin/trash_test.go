package admin

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// fakeTrash is a recycle bin in memory (the real one, over a backend, is
// tested in internal/filter/trash and end to end).
type fakeTrash struct{ items map[string][]TrashItem }

func (f *fakeTrash) List(_ context.Context, tenant string) ([]TrashItem, error) {
	return f.items[tenant], nil
}

func (f *fakeTrash) Restore(_ context.Context, tenant, id string, overwrite bool) (TrashItem, error) {
	for _, it := range f.items[tenant] {
		if it.ID == id {
			if !overwrite && it.Key == "taken" {
				return TrashItem{}, fmt.Errorf("%w: an object exists at %s/%s", ErrTrashConflict, it.Bucket, it.Key)
			}
			return it, nil
		}
	}
	return TrashItem{}, fmt.Errorf("%w: %s", ErrTrashNotFound, id)
}

func (f *fakeTrash) Purge(ctx context.Context, tenant, id string) error {
	_, err := f.Restore(ctx, tenant, id, true)
	return err
}

func TestTrashRoutes(t *testing.T) {
	f := newFixture(t)
	if r := f.do(t, http.MethodGet, "/v1/trash/acme", ""); r.status != http.StatusNotImplemented {
		t.Fatalf("without a bin: %d %s", r.status, r.body)
	}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	bin := &fakeTrash{items: map[string][]TrashItem{"acme": {
		{ID: "1-2-0000000a", Tenant: "acme", Bucket: "b", Key: "k", Size: 3, ETag: "e", DeletedAt: now, ExpiresAt: now.Add(time.Hour)},
		{ID: "1-3-0000000b", Tenant: "acme", Bucket: "b", Key: "taken", Size: 3, ETag: "e", DeletedAt: now, ExpiresAt: now.Add(time.Hour)},
	}}}
	f.h = New(Config{Store: f.store, Token: token, Trash: bin})
	if _, _, err := f.store.CreateTenantWithKey(t.Context(), "acme"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.store.CreateTenantWithKey(t.Context(), "other"); err != nil {
		t.Fatal(err)
	}
	r := f.do(t, http.MethodGet, "/v1/trash/acme", "")
	var l TrashList
	decodeStrict(t, r.body, &l)
	if r.status != 200 || len(l.Items) != 2 || l.Items[0].Key != "k" {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	r = f.do(t, http.MethodGet, "/v1/trash/other", "")
	if decodeStrict(t, r.body, &l); r.status != 200 || l.Items == nil || len(l.Items) != 0 {
		t.Fatalf("empty list must be [] : %s", r.body)
	}
	wantError(t, f.do(t, http.MethodGet, "/v1/trash/nobody", ""), http.StatusNotFound, "NoSuchTenant")
	if r := f.do(t, http.MethodPost, "/v1/trash/acme/1-2-0000000a/restore", ""); r.status != 200 {
		t.Fatalf("restore: %d %s", r.status, r.body)
	}
	wantError(t, f.do(t, http.MethodPost, "/v1/trash/acme/1-3-0000000b/restore", ""), http.StatusConflict, "TrashConflict")
	if r := f.do(t, http.MethodPost, "/v1/trash/acme/1-3-0000000b/restore?overwrite=true", ""); r.status != 200 {
		t.Fatalf("restore with overwrite: %d %s", r.status, r.body)
	}
	wantError(t, f.do(t, http.MethodPost, "/v1/trash/acme/1-3-0000000b/restore?overwrite=maybe", ""), http.StatusBadRequest, "InvalidInput")
	wantError(t, f.do(t, http.MethodPost, "/v1/trash/acme/9-9-00000000/restore", ""), http.StatusNotFound, "NoSuchTrashItem")
	if r := f.do(t, http.MethodDelete, "/v1/trash/acme/1-2-0000000a", ""); r.status != http.StatusNoContent {
		t.Fatalf("purge: %d %s", r.status, r.body)
	}
	wantError(t, f.do(t, http.MethodDelete, "/v1/trash/acme/nope", ""), http.StatusNotFound, "NoSuchTrashItem")
	if r := f.do(t, http.MethodGet, "/v1/trash/acme", "", "Authorization", "Bearer wrong"); r.status != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", r.status)
	}
}
