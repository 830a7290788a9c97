package metrics

import (
	"github.com/facet-sds/facet/internal/obs"
)

// GetBW is get_bw: bytes sent to clients by object reads, per second.
func GetBW() Module {
	return byteRate{name: "get_bw", doc: "bytes read (GetObject responses) per second", bytes: func(o *obs.Observation) int64 {
		if isGet(o.Op) {
			return o.BytesOut
		}
		return 0
	}}
}
