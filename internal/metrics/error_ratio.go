package metrics

import (
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/policy"
)

// ErrorRatio is error_ratio: the fraction of requests the server failed
// (5xx), merged over nodes as failed/all of the cluster.
func ErrorRatio() Module { return errorRatio{} }

type errorRatio struct{}

func (errorRatio) Info() Info {
	return described("error_ratio", MergeMean, policy.KindRatio)
}

func (errorRatio) NewCell() Cell { return new(Ratio) }

func (errorRatio) Finish(o *obs.Observation, cs Cells) {
	var n int64
	if failed(o) {
		n = 1
	}
	for i := range cs.n {
		cs.c[i].(*Ratio).Add(n, 1)
	}
}
