package metrics

import (
	"github.com/facet-sds/facet/internal/obs"
)

// GetBW is get_bw: bytes sent to clients by object reads, per second.
func GetBW() Module {
	return newByteRate("get_bw", func(o *obs.Observation) int64 {
		if isGet(o.Op) {
			return o.BytesOut
		}
		return 0
	})
}
