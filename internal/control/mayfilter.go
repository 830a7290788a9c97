package control

import (
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/policy"
)

// MayFilter reports whether any filter could be in force for a request of
// req.Method on req's target, whatever the object's size, type and
// metadata (which req may not know yet). False lets the data plane
// serve a GET from one backend read, opened before it has the object's
// metadata.
func (s *Service) MayFilter(req *filter.Request) bool {
	return s.state.Load().table.MayResolve(policy.Query{Tenant: req.Tenant, Bucket: req.Bucket, Key: req.Key, Method: req.Method})
}

// MayFilterOther is MayFilter leaving out the filters named in except:
// with except "caching" false, a GET's only possible filter is the cache,
// which the data plane can decide once it has read the object.
func (s *Service) MayFilterOther(req *filter.Request, except ...string) bool {
	return s.state.Load().table.MayResolveOther(policy.Query{Tenant: req.Tenant, Bucket: req.Bucket, Key: req.Key, Method: req.Method}, except...)
}
