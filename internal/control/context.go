package control

import (
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/policy"
)

// ContextBandwidth returns the parameters of the SET bandwidth record in
// force for tenant's request class (policies with CONTEXT class); false
// when none is. The per-class enforcer (internal/flowctx) reads it.
func (s *Service) ContextBandwidth(tenant, class string) (filter.Params, bool) {
	slo, ok := s.state.Load().table.ContextSLO(policy.SLOBandwidth, tenant, class)
	if !ok {
		return nil, false
	}
	return slo.Params, true
}
