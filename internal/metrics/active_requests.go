package metrics

import (
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/policy"
)

// ActiveRequests is active_requests: requests in flight when the period
// ends (summed over nodes).
func ActiveRequests() Module { return activeRequests{} }

type activeRequests struct{}

func (activeRequests) Info() Info {
	return described("active_requests", MergeSum, policy.KindCount)
}

func (activeRequests) NewCell() Cell { return new(Gauge) }

func (activeRequests) Start(_ *obs.Observation, cs Cells) {
	for i := range cs.n {
		cs.c[i].(*Gauge).Add(1)
	}
}

func (activeRequests) Finish(_ *obs.Observation, cs Cells) {
	for i := range cs.n {
		cs.c[i].(*Gauge).Add(-1)
	}
}
