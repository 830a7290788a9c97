package metrics

import (
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/policy"
)

// Errors is errors: requests the server failed (status 5xx, throttling
// included) per second. Client mistakes (4xx) are not the storage's
// failures and do not count, nor does 501 NotImplemented (a client asking
// for an S3 operation Facet lacks: s3cmd info and mc stat do on every
// run); obs.ClassOf sorts them, as for /metrics and the log.
func Errors() Module { return errorRate{} }

type errorRate struct{}

func (errorRate) Info() Info {
	return described("errors", MergeSum, policy.KindOpsRate)
}

func (errorRate) NewCell() Cell { return new(Counter) }

func (errorRate) Finish(o *obs.Observation, cs Cells) {
	if failed(o) {
		for i := range cs.n {
			cs.c[i].(*Counter).Add(1)
		}
	}
}

func failed(o *obs.Observation) bool { return obs.ClassOf(o.Status, o.ErrCode) == obs.ClassServer }
