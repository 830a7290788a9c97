package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/facet-sds/facet/internal/filter/trash"
)

// The recycle bin: objects deleted under a recycle_bin policy, kept per
// tenant in a hidden area (internal/filter/trash).

// TrashService lists, restores and purges a tenant's deleted objects.
// Errors wrapping ErrTrashNotFound answer 404, ErrTrashConflict 409.
type TrashService interface {
	List(ctx context.Context, tenant string) ([]TrashItem, error)
	Restore(ctx context.Context, tenant, id string, overwrite bool) (TrashItem, error)
	Purge(ctx context.Context, tenant, id string) error
}

// Errors a TrashService wraps.
var (
	ErrTrashNotFound = errors.New("no such item in the recycle bin")
	ErrTrashConflict = errors.New("cannot restore")
)

// TrashItem is one deleted object in a recycle bin (its JSON form is the
// wire type).
type TrashItem = trash.Item

// TrashList is the body of GET /trash/{tenant}, oldest deletion first.
type TrashList struct {
	Items []TrashItem `json:"items"`
}

var errNoTrash = apiErr(http.StatusNotImplemented, "NotImplemented", "this server has no recycle bin")

func (h *handler) trashTenant(ctx context.Context, r *http.Request) (string, error) {
	name := r.PathValue("name")
	if _, err := h.store.GetTenant(ctx, name); err != nil {
		return "", storeError(err, resource{tenant: name})
	}
	return name, nil
}

func trashErr(err error) error {
	switch {
	case errors.Is(err, ErrTrashNotFound):
		return apiErr(http.StatusNotFound, "NoSuchTrashItem", detail(err, ErrTrashNotFound))
	case errors.Is(err, ErrTrashConflict):
		return apiErr(http.StatusConflict, "TrashConflict", detail(err, ErrTrashConflict))
	}
	return err
}

func (h *handler) listTrash(w http.ResponseWriter, r *http.Request) error {
	if h.trash == nil {
		return errNoTrash
	}
	tenant, err := h.trashTenant(r.Context(), r)
	if err != nil {
		return err
	}
	items, err := h.trash.List(r.Context(), tenant)
	if err != nil {
		return trashErr(err)
	}
	if items == nil {
		items = []TrashItem{}
	}
	writeJSON(w, http.StatusOK, TrashList{Items: items})
	return nil
}

func (h *handler) restoreTrash(w http.ResponseWriter, r *http.Request) error {
	if h.trash == nil {
		return errNoTrash
	}
	tenant, err := h.trashTenant(r.Context(), r)
	if err != nil {
		return err
	}
	overwrite := false
	if v := r.URL.Query().Get("overwrite"); v != "" {
		if overwrite, err = strconv.ParseBool(v); err != nil {
			return apiErr(http.StatusBadRequest, "InvalidInput", fmt.Sprintf("overwrite=%q: want true or false", v))
		}
	}
	it, err := h.trash.Restore(r.Context(), tenant, r.PathValue("id"), overwrite)
	if err != nil {
		return trashErr(err)
	}
	writeJSON(w, http.StatusOK, it)
	return nil
}

func (h *handler) purgeTrash(w http.ResponseWriter, r *http.Request) error {
	if h.trash == nil {
		return errNoTrash
	}
	tenant, err := h.trashTenant(r.Context(), r)
	if err != nil {
		return err
	}
	if err := h.trash.Purge(r.Context(), tenant, r.PathValue("id")); err != nil {
		return trashErr(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
