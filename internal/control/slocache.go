package control

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/facet-sds/facet/internal/admit"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/flowctx"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/policy"
	"github.com/facet-sds/facet/internal/qos"
)

// SLOStore is what the SLO cache and API need of the metadata store.
type SLOStore interface {
	PutSLO(ctx context.Context, tenant string, spec []byte) (meta.SLO, error)
	GetSLO(ctx context.Context, tenant string) (meta.SLO, error)
	ListSLOs(ctx context.Context) ([]meta.SLO, error)
	DeleteSLO(ctx context.Context, tenant string) error
	PutClassSLO(ctx context.Context, tenant, class string, spec []byte) (meta.SLO, error)
	GetClassSLO(ctx context.Context, tenant, class string) (meta.SLO, error)
	DeleteClassSLO(ctx context.Context, tenant, class string) error
}

// MetaSLOs adapts *meta.Store (json.RawMessage specs) to SLOStore.
type MetaSLOs struct{ S *meta.Store }

func (m MetaSLOs) PutSLO(ctx context.Context, tenant string, spec []byte) (meta.SLO, error) {
	return m.S.PutSLO(ctx, tenant, spec)
}
func (m MetaSLOs) GetSLO(ctx context.Context, t string) (meta.SLO, error) { return m.S.GetSLO(ctx, t) }
func (m MetaSLOs) ListSLOs(ctx context.Context) ([]meta.SLO, error)       { return m.S.ListSLOs(ctx) }
func (m MetaSLOs) DeleteSLO(ctx context.Context, t string) error          { return m.S.DeleteSLO(ctx, t) }
func (m MetaSLOs) PutClassSLO(ctx context.Context, tenant, class string, spec []byte) (meta.SLO, error) {
	return m.S.PutClassSLO(ctx, tenant, class, spec)
}
func (m MetaSLOs) GetClassSLO(ctx context.Context, t, class string) (meta.SLO, error) {
	return m.S.GetClassSLO(ctx, t, class)
}
func (m MetaSLOs) DeleteClassSLO(ctx context.Context, t, class string) error {
	return m.S.DeleteClassSLO(ctx, t, class)
}

// SLOPolicies is what the SLO cache reads of the policy table (*Service).
type SLOPolicies interface {
	BandwidthSLO(tenant string) (filter.Params, bool)
	BandwidthSLOs() []policy.SLO
	// ContextBandwidth is the SET bandwidth of a policy naming a CONTEXT
	// (a class's SLO); ContextBandwidthSLOs all such records.
	ContextBandwidth(tenant, class string) (filter.Params, bool)
	ContextBandwidthSLOs() []policy.SLO
}

// SLOCache is the effective SLO of every tenant and request class, read
// from memory on the data path: the store's API records (reloaded every
// period; the last good copy is kept while the store is away) over the
// policy table's SET bandwidth records. The rule is one at both levels:
// an API record replaces the policies' SLO of its tenant (PUT
// /slos/{tenant}), or of its tenant's class (PUT /slos/{tenant}?class=),
// whole, not field by field; the two levels stay apart (a tenant's record
// does not touch its classes' SLOs, nor a class's its tenant's).
type SLOCache struct {
	store    SLOStore
	policies SLOPolicies
	log      *slog.Logger

	api    atomic.Pointer[sloRecords]
	warned atomic.Bool
}

// sloRecords are the API records: the tenants' and their classes'.
type sloRecords struct {
	tenants map[string]qos.SLO
	classes map[[2]string]qos.SLO // by tenant, class
}

// NewSLOCache returns a cache holding no API records yet: Refresh loads
// them.
func NewSLOCache(store SLOStore, policies SLOPolicies, logger *slog.Logger) *SLOCache {
	c := &SLOCache{store: store, policies: policies, log: logger}
	c.api.Store(&sloRecords{tenants: map[string]qos.SLO{}, classes: map[[2]string]qos.SLO{}})
	return c
}

// Refresh reloads the API records; on failure the last ones stay.
func (c *SLOCache) Refresh(ctx context.Context) {
	list, err := c.store.ListSLOs(ctx)
	if err != nil {
		if ctx.Err() == nil && c.warned.CompareAndSwap(false, true) {
			c.log.Warn("SLO records unavailable; keeping the last ones", "err", err)
		}
		return
	}
	c.warned.Store(false)
	r := &sloRecords{tenants: make(map[string]qos.SLO, len(list)), classes: map[[2]string]qos.SLO{}}
	for _, s := range list {
		slo, err := qos.DecodeSLO(s.Spec)
		if err != nil {
			c.log.Warn("stored SLO ignored", "tenant", s.Tenant, "class", s.Class, "err", err)
			continue
		}
		if s.Class != "" {
			r.classes[[2]string{s.Tenant, s.Class}] = slo
			continue
		}
		r.tenants[s.Tenant] = slo
	}
	c.api.Store(r)
}

// SLO implements qos.SLOSource.
func (c *SLOCache) SLO(tenant string) (qos.SLO, bool) {
	if s, ok := c.api.Load().tenants[tenant]; ok {
		return s, true
	}
	if c.policies == nil {
		return qos.SLO{}, false
	}
	p, ok := c.policies.BandwidthSLO(tenant)
	if !ok {
		return qos.SLO{}, false
	}
	s, err := qos.SLOFromParams(p)
	return s, err == nil
}

// ClassSLO implements qos.ClassSLOSource: the SLO of tenant's class, an
// API record's or else the one a policy naming a CONTEXT sets.
func (c *SLOCache) ClassSLO(tenant, class string) (qos.SLO, bool) {
	if s, ok := c.api.Load().classes[[2]string{tenant, class}]; ok {
		return s, true
	}
	if c.policies == nil {
		return qos.SLO{}, false
	}
	p, ok := c.policies.ContextBandwidth(tenant, class)
	if !ok {
		return qos.SLO{}, false
	}
	s, err := qos.SLOFromParams(p)
	return s, err == nil
}

// HasClass reports whether an SLO governs tenant's class, without
// parsing it (on every request that names a class).
func (c *SLOCache) HasClass(tenant, class string) bool {
	if _, ok := c.api.Load().classes[[2]string{tenant, class}]; ok {
		return true
	}
	if c.policies == nil {
		return false
	}
	_, ok := c.policies.ContextBandwidth(tenant, class)
	return ok
}

// ClassLimits is the class stage's view (flowctx.LimitSource): the limit
// and reservation of the class's SLO, bytes/s.
func (c *SLOCache) ClassLimits(tenant, class string) (float64, float64, bool) {
	s, ok := c.ClassSLO(tenant, class)
	if !ok {
		return 0, 0, false
	}
	return s.Limit, s.Reservation, true
}

var _ qos.ClassSLOSource = (*SLOCache)(nil)

// Admission is the S3 front end's view of a gateway's limiter
// (admit.QoS): requests are admitted in their tenant's flows, or their
// request class's when an SLO governs it.
type Admission struct {
	Limiter *qos.Limiter
	SLOs    *SLOCache
}

// Admit admits the request in its operation's flow, or in its context
// class's flow when an SLO (an API class record or a CONTEXT policy)
// governs that class: the class's bytes are then one flow fleet-wide,
// which the bandwidth controller splits across gateways like a tenant's.
func (a Admission) Admit(ctx context.Context, tenant, method string) (admit.Shaper, error) {
	c := qos.ClassOf(method)
	// On every request: whether an SLO names the class, not its parsed
	// SLO (the limiter reads that when the flow is made).
	if r := flowctx.From(ctx); r != nil && r.Class != "" && a.SLOs.HasClass(tenant, r.Class) {
		c = qos.ContextClass(r.Class)
	}
	return a.Limiter.Admit(ctx, tenant, c)
}

var (
	_ admit.QoS    = Admission{}
	_ admit.Shaper = (*qos.Stream)(nil)
)
