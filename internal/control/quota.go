package control

import (
	"strconv"

	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/policy"
)

// QuotaLimits returns the limits of the SET quota record in force for
// tenant (tenant > group > ALL TENANTS; 0: none), read from memory on
// every write. Where a quota is also stored, the smaller limit applies
// (internal/meta's Charge).
func (s *Service) QuotaLimits(tenant string) meta.Counters {
	slo, ok := s.state.Load().table.SLO(policy.SLOQuota, tenant)
	if !ok {
		return meta.Counters{}
	}
	var c meta.Counters
	for name, dst := range map[string]*int64{"bytes": &c.Bytes, "objects": &c.Objects, "buckets": &c.Buckets, "uploads": &c.Uploads} {
		if raw, set := slo.Params[name]; set {
			// The checker wrote these values as canonical integers.
			if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
				*dst = n
			}
		}
	}
	return c
}
