package metrics

import (
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/policy"
)

// CacheHitRatio is cache_hit_ratio: the fraction of GETs under a caching
// policy that the gateway's object cache served, merged over nodes as
// hits/lookups of the cluster. GETs without a caching policy do not count;
// a target none of whose GETs was cacheable reports no observation.
func CacheHitRatio() Module { return cacheHitRatio{} }

type cacheHitRatio struct{}

func (cacheHitRatio) Info() Info {
	return described("cache_hit_ratio", MergeMean, policy.KindRatio)
}

func (cacheHitRatio) NewCell() Cell { return new(Ratio) }

func (cacheHitRatio) Finish(o *obs.Observation, cs Cells) {
	if o.Cache == "" {
		return
	}
	var n int64
	if o.Cache == obs.CacheHit {
		n = 1
	}
	for i := range cs.n {
		cs.c[i].(*Ratio).Add(n, 1)
	}
}
