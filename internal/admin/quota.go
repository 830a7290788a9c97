package admin

import (
	"context"
	"net/http"
	"slices"

	"github.com/facet-sds/facet/internal/meta"
)

// QuotaService stores quotas and reports usage (the metadata store, with
// the policy table's limits and the backend's recount).
type QuotaService interface {
	// Quota returns a scope's stored limits, the limits policies set on
	// it, and its usage.
	Quota(ctx context.Context, scope meta.Scope) (stored, policy, usage meta.Counters, err error)
	SetQuota(ctx context.Context, scope meta.Scope, limits meta.Counters) error
	// Recount sets the tenant's and its buckets' usage to what the
	// backend holds.
	Recount(ctx context.Context, tenant string, buckets []string) (meta.Counters, error)
}

// Limits are a quota's limits in the API; 0 or absent means none. Physical
// bytes are counted, not limited.
type Limits struct {
	Bytes   int64 `json:"bytes,omitempty"`
	Objects int64 `json:"objects,omitempty"`
	Buckets int64 `json:"buckets,omitempty"`
	Uploads int64 `json:"uploads,omitempty"`
}

// Counts are a scope's usage.
type Counts struct {
	Bytes         int64 `json:"bytes"`
	PhysicalBytes int64 `json:"physical_bytes"`
	Objects       int64 `json:"objects"`
	Buckets       int64 `json:"buckets,omitempty"`
	Uploads       int64 `json:"uploads"`
}

// ScopeQuota is one scope's quota and usage. Effective is what requests
// meet: the smaller of Stored and Policy where both limit a field.
type ScopeQuota struct {
	Bucket    string `json:"bucket,omitempty"`
	Stored    Limits `json:"stored"`
	Policy    Limits `json:"policy"`
	Effective Limits `json:"effective"`
	Usage     Counts `json:"usage"`
}

// TenantQuota is the body of GET /tenants/{name}/quota: the tenant's
// scope and each of its buckets'.
type TenantQuota struct {
	Tenant string `json:"tenant"`
	ScopeQuota
	Buckets []ScopeQuota `json:"buckets"`
}

// SetQuotaRequest is the body of PUT /tenants/{name}/quota: the fields
// present replace the stored ones (0 removes a limit), the others are
// kept. Bucket names one of the tenant's buckets; empty is the tenant.
type SetQuotaRequest struct {
	Bucket  string `json:"bucket,omitempty"`
	Bytes   *int64 `json:"bytes,omitempty"`
	Objects *int64 `json:"objects,omitempty"`
	Buckets *int64 `json:"buckets,omitempty"`
	Uploads *int64 `json:"uploads,omitempty"`
}

var errNoQuotas = apiErr(http.StatusNotImplemented, "NotImplemented", "this server does not keep quotas")

func limitsOut(c meta.Counters) Limits {
	return Limits{Bytes: c.Bytes, Objects: c.Objects, Buckets: c.Buckets, Uploads: c.Uploads}
}

func effective(stored, policy int64) int64 {
	if policy > 0 && (stored == 0 || policy < stored) {
		return policy
	}
	return stored
}

func (h *handler) scopeQuota(ctx context.Context, scope meta.Scope) (ScopeQuota, error) {
	st, pol, use, err := h.quotas.Quota(ctx, scope)
	if err != nil {
		return ScopeQuota{}, err
	}
	return ScopeQuota{
		Bucket: scope.Bucket, Stored: limitsOut(st), Policy: limitsOut(pol),
		Effective: Limits{Bytes: effective(st.Bytes, pol.Bytes), Objects: effective(st.Objects, pol.Objects), Buckets: effective(st.Buckets, pol.Buckets), Uploads: effective(st.Uploads, pol.Uploads)},
		Usage:     Counts{Bytes: use.Bytes, PhysicalBytes: use.Physical, Objects: use.Objects, Buckets: use.Buckets, Uploads: use.Uploads},
	}, nil
}

// tenantBuckets checks the tenant and returns its buckets' names.
func (h *handler) tenantBuckets(ctx context.Context, tenant string) ([]string, error) {
	if _, err := h.store.GetTenant(ctx, tenant); err != nil {
		return nil, err
	}
	bs, err := h.store.ListBuckets(ctx, tenant)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name
	}
	return names, nil
}

func (h *handler) getQuota(w http.ResponseWriter, r *http.Request) error {
	return h.quotaReport(w, r, nil)
}

func (h *handler) recountQuota(w http.ResponseWriter, r *http.Request) error {
	return h.quotaReport(w, r, func(ctx context.Context, tenant string, buckets []string) error {
		_, err := h.quotas.Recount(ctx, tenant, buckets)
		return err
	})
}

// quotaReport answers with the tenant's quota and usage and its buckets';
// first, when set, runs with the tenant's buckets before it reads them.
func (h *handler) quotaReport(w http.ResponseWriter, r *http.Request, first func(ctx context.Context, tenant string, buckets []string) error) error {
	if h.quotas == nil {
		return errNoQuotas
	}
	name := r.PathValue("name")
	buckets, err := h.tenantBuckets(r.Context(), name)
	if err != nil {
		return err
	}
	if first != nil {
		if err := first(r.Context(), name, buckets); err != nil {
			return err
		}
	}
	out := TenantQuota{Tenant: name, Buckets: []ScopeQuota{}}
	if out.ScopeQuota, err = h.scopeQuota(r.Context(), meta.Scope{Tenant: name}); err != nil {
		return err
	}
	for _, b := range buckets {
		sq, err := h.scopeQuota(r.Context(), meta.Scope{Tenant: name, Bucket: b})
		if err != nil {
			return err
		}
		out.Buckets = append(out.Buckets, sq)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// quotaScope checks that bucket (if any) is the tenant's.
func (h *handler) quotaScope(ctx context.Context, tenant, bucket string) (meta.Scope, error) {
	buckets, err := h.tenantBuckets(ctx, tenant)
	if err != nil {
		return meta.Scope{}, err
	}
	if bucket != "" && !slices.Contains(buckets, bucket) {
		return meta.Scope{}, apiErr(http.StatusNotFound, "NotFound", "tenant "+tenant+" owns no bucket "+bucket)
	}
	return meta.Scope{Tenant: tenant, Bucket: bucket}, nil
}

func (h *handler) putQuota(w http.ResponseWriter, r *http.Request) error {
	if h.quotas == nil {
		return errNoQuotas
	}
	var req SetQuotaRequest
	if err := decodeBody(r, w, &req); err != nil {
		return err
	}
	scope, err := h.quotaScope(r.Context(), r.PathValue("name"), req.Bucket)
	if err != nil {
		return err
	}
	if req.Buckets != nil && scope.Bucket != "" {
		return apiErr(http.StatusBadRequest, "InvalidRequest", "a buckets quota applies to a tenant, not to a bucket")
	}
	cur, _, _, err := h.quotas.Quota(r.Context(), scope)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		in  *int64
		out *int64
	}{{req.Bytes, &cur.Bytes}, {req.Objects, &cur.Objects}, {req.Buckets, &cur.Buckets}, {req.Uploads, &cur.Uploads}} {
		if f.in == nil {
			continue
		}
		if *f.in < 0 {
			return apiErr(http.StatusBadRequest, "InvalidRequest", "a quota limit is a count of at least 0 (0: no limit)")
		}
		*f.out = *f.in
	}
	if err := h.quotas.SetQuota(r.Context(), scope, cur); err != nil {
		return err
	}
	sq, err := h.scopeQuota(r.Context(), scope)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sq)
	return nil
}

func (h *handler) deleteQuota(w http.ResponseWriter, r *http.Request) error {
	if h.quotas == nil {
		return errNoQuotas
	}
	scope, err := h.quotaScope(r.Context(), r.PathValue("name"), r.URL.Query().Get("bucket"))
	if err != nil {
		return err
	}
	if err := h.quotas.SetQuota(r.Context(), scope, meta.Counters{}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
