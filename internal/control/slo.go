package control

import (
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/policy"
)

// BandwidthSLO returns the parameters of the SET bandwidth record in force
// for tenant in the current table (tenant > group > ALL, dynamic policies
// included when active); false when none is. The QoS limiter and the
// bandwidth controller read it from memory on every period.
func (s *Service) BandwidthSLO(tenant string) (filter.Params, bool) {
	slo, ok := s.state.Load().table.SLO(policy.SLOBandwidth, tenant)
	if !ok {
		return nil, false
	}
	return slo.Params, true
}

// BandwidthSLOs returns the SET/DELETE bandwidth records in force, in
// declaration order (Target "" for ALL TENANTS).
func (s *Service) BandwidthSLOs() []policy.SLO {
	var out []policy.SLO
	for _, slo := range s.state.Load().table.SLOs() {
		// A CONTEXT record is a class's, not the tenant's SLO (see
		// ContextBandwidth).
		if slo.Kind == policy.SLOBandwidth && slo.Context == "" {
			out = append(out, slo)
		}
	}
	return out
}

// ContextBandwidthSLOs returns the SET/DELETE bandwidth records that name
// a request class (CONTEXT), in declaration order: the classes' SLOs, which
// the bandwidth controller allocates like tenants' (ContextBandwidth).
func (s *Service) ContextBandwidthSLOs() []policy.SLO {
	var out []policy.SLO
	for _, slo := range s.state.Load().table.SLOs() {
		if slo.Kind == policy.SLOBandwidth && slo.Context != "" {
			out = append(out, slo)
		}
	}
	return out
}
