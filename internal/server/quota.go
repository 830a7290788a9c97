package server

import (
	"context"

	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/quota"
)

// quotaAdmin serves the control API's quota routes: limits and usage from
// the metadata store, the policies' limits from the policy table, the
// recount from the backend.
type quotaAdmin struct {
	store   *meta.Store
	backend *quota.Backend
	policy  quota.PolicyLimits
}

func (q quotaAdmin) Quota(ctx context.Context, scope meta.Scope) (stored, policy, usage meta.Counters, err error) {
	stored, usage, err = q.store.Quota(ctx, scope)
	if q.policy != nil {
		pt, pb := q.policy(scope.Tenant, scope.Bucket)
		policy = pt
		if scope.Bucket != "" {
			policy = pb
		}
	}
	return stored, policy, usage, err
}

func (q quotaAdmin) SetQuota(ctx context.Context, scope meta.Scope, limits meta.Counters) error {
	return q.store.SetQuota(ctx, scope, limits)
}

func (q quotaAdmin) Recount(ctx context.Context, tenant string, buckets []string) (meta.Counters, error) {
	return q.backend.Recount(ctx, tenant, buckets)
}

// policyQuotas reads the quotas policies set (SET quota, on tenants) from
// the policy table.
func policyQuotas(p *control.Service) quota.PolicyLimits {
	return func(tenant, _ string) (ofTenant, ofBucket meta.Counters) {
		return p.QuotaLimits(tenant), meta.Counters{}
	}
}
