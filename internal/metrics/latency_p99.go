package metrics

import (
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/policy"
)

// LatencyP99 is latency_p99: the 99th percentile of request durations over
// the period, in seconds, from a log-linear histogram (within 1/16). Nodes
// merge by max: quantiles do not add, and the largest node's p99 bounds
// the cluster's from above.
func LatencyP99() Module { return latencyP99{} }

type latencyP99 struct{}

func (latencyP99) Info() Info {
	return described("latency_p99", MergeMax, policy.KindDuration)
}

func (latencyP99) NewCell() Cell { return &Quantile{Q: 0.99, Scale: 1e-9} }

func (latencyP99) Finish(o *obs.Observation, cs Cells) {
	for i := range cs.n {
		cs.c[i].(*Quantile).Observe(int64(o.Duration))
	}
}
