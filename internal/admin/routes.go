package admin

import (
	"net/http"
	"time"

	"github.com/facet-sds/facet/internal/meta"
)

// Wire types. They are the API's contract (and the OpenAPI document's
// schemas): change them only compatibly.

// CreateTenantRequest is the body of POST /tenants.
type CreateTenantRequest struct {
	Name string `json:"name"`
}

// Credentials is a freshly created access key with its secret, shown once.
type Credentials struct {
	Tenant    string `json:"tenant"`
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
}

// Tenant describes a tenant.
type Tenant struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	// AllowPlainNBD: NBD clients that skipped TLS may open the tenant's
	// volumes (loopback only, on a server started with
	// --nbd-allow-plain-loopback).
	AllowPlainNBD bool `json:"allow_plain_nbd"`
}

// TenantSettings is the body of PATCH /tenants/{name}: the settings to
// change; absent fields stay as they are.
type TenantSettings struct {
	AllowPlainNBD *bool `json:"allow_plain_nbd,omitempty"`
}

// Key describes an access key, never with its secret.
type Key struct {
	AccessKey string    `json:"access_key"`
	Tenant    string    `json:"tenant"`
	Created   time.Time `json:"created"`
}

// Bucket describes a tenant's bucket.
type Bucket struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// TenantList is the body of GET /tenants.
type TenantList struct {
	Tenants []Tenant `json:"tenants"`
}

// KeyList is the body of GET /tenants/{name}/keys.
type KeyList struct {
	Keys []Key `json:"keys"`
}

// BucketList is the body of GET /tenants/{name}/buckets.
type BucketList struct {
	Buckets []Bucket `json:"buckets"`
}

// Error is the body of every error response. Code is stable and meant for
// programs; Error is for people. A policy text that does not validate
// (code InvalidPolicy) also carries its diagnostics.
type Error struct {
	Error    string       `json:"error"`
	Code     string       `json:"code"`
	Errors   []Diagnostic `json:"errors,omitempty"`
	Warnings []Diagnostic `json:"warnings,omitempty"`
}

func tenantOut(t meta.Tenant) Tenant {
	return Tenant{Name: t.Name, Created: t.Created, AllowPlainNBD: t.AllowPlainNBD}
}

func credentialsOut(k meta.NewKey) Credentials {
	return Credentials{Tenant: k.Tenant, AccessKey: k.AccessKey, SecretKey: k.SecretKey}
}

func (h *handler) openAPI(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDoc) // a broken connection has no one left to tell
	return nil
}

func (h *handler) createTenant(w http.ResponseWriter, r *http.Request) error {
	var req CreateTenantRequest
	if err := decodeBody(r, w, &req); err != nil {
		return err
	}
	noteTenant(r, req.Name)
	_, k, err := h.store.CreateTenantWithKey(r.Context(), req.Name)
	if err != nil {
		// The tenant name comes from the body, not the path.
		ae := storeError(err, resource{tenant: req.Name})
		if ae.status < 500 {
			return ae
		}
		return err
	}
	writeJSON(w, http.StatusCreated, credentialsOut(k))
	return nil
}

func (h *handler) listTenants(w http.ResponseWriter, r *http.Request) error {
	ts, err := h.store.ListTenants(r.Context())
	if err != nil {
		return err
	}
	out := TenantList{Tenants: make([]Tenant, 0, len(ts))}
	for _, t := range ts {
		out.Tenants = append(out.Tenants, tenantOut(t))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) getTenant(w http.ResponseWriter, r *http.Request) error {
	t, err := h.store.GetTenant(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tenantOut(t))
	return nil
}

func (h *handler) setTenant(w http.ResponseWriter, r *http.Request) error {
	var req TenantSettings
	if err := decodeBody(r, w, &req); err != nil {
		return err
	}
	name := r.PathValue("name")
	if req.AllowPlainNBD == nil {
		// Nothing to change is a client's mistake, not a silent success.
		return apiErr(http.StatusBadRequest, "InvalidArgument", "no setting given: want allow_plain_nbd")
	}
	t, err := h.store.SetTenantPlainNBD(r.Context(), name, *req.AllowPlainNBD)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tenantOut(t))
	return nil
}

func (h *handler) deleteTenant(w http.ResponseWriter, r *http.Request) error {
	if err := h.store.DeleteTenant(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handler) createKey(w http.ResponseWriter, r *http.Request) error {
	k, err := h.store.CreateKey(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, credentialsOut(k))
	return nil
}

func (h *handler) listKeys(w http.ResponseWriter, r *http.Request) error {
	ks, err := h.store.ListKeys(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	out := KeyList{Keys: make([]Key, 0, len(ks))}
	for _, k := range ks {
		out.Keys = append(out.Keys, Key{AccessKey: k.AccessKey, Tenant: k.Tenant, Created: k.Created})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *handler) revokeKey(w http.ResponseWriter, r *http.Request) error {
	if err := h.store.RevokeKey(r.Context(), r.PathValue("name"), r.PathValue("access_key")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *handler) listBuckets(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	// ListBuckets has no notion of an unknown tenant (it has no buckets);
	// the API does.
	if _, err := h.store.GetTenant(r.Context(), name); err != nil {
		return err
	}
	bs, err := h.store.ListBuckets(r.Context(), name)
	if err != nil {
		return err
	}
	out := BucketList{Buckets: make([]Bucket, 0, len(bs))}
	for _, b := range bs {
		out.Buckets = append(out.Buckets, Bucket{Name: b.Name, Created: b.Created})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
