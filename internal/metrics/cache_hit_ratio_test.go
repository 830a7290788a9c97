package metrics

import (
	"testing"

	"github.com/facet-sds/facet/internal/obs"
)

func TestCacheHitRatio(t *testing.T) {
	c := newTestCollector(CacheHitRatio())
	for _, outcome := range []obs.CacheOutcome{obs.CacheHit, obs.CacheMiss, obs.CacheHit, obs.CacheHit, ""} {
		o := req("GetObject", "t1", "b1", "k")
		o.Status, o.Cache = 200, outcome
		serve(t, c, o, nil)
	}
	o := req("GetObject", "t1", "b2", "k")
	o.Status = 200 // no caching policy on b2: not a lookup
	serve(t, c, o, nil)
	s := flush(c, at(1))["cache_hit_ratio"]
	wantValues(t, s, map[string]float64{"tenant:t1": 0.75, "bucket:t1/b1": 0.75})
	if s.Weights["tenant:t1"] != 4 {
		t.Fatalf("weights %v", s.Weights)
	}
	if _, ok := s.Values["bucket:t1/b2"]; ok {
		t.Fatalf("b2 saw no cache lookup but reports %v", s.Values["bucket:t1/b2"])
	}
}
