package metrics

import (
	"github.com/facet-sds/facet/internal/obs"
)

// BW is bw: bytes received and sent by every request, per second.
func BW() Module {
	return newByteRate("bw", func(o *obs.Observation) int64 {
		return o.BytesIn + o.BytesOut
	})
}
