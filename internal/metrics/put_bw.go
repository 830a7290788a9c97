package metrics

import (
	"github.com/facet-sds/facet/internal/obs"
)

// PutBW is put_bw: payload bytes received from clients by object writes,
// per second (before filters: what the client sent).
func PutBW() Module {
	return newByteRate("put_bw", func(o *obs.Observation) int64 {
		if isPut(o.Op) {
			return o.BytesIn
		}
		return 0
	})
}
