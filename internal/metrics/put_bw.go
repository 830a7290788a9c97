package metrics

import (
	"github.com/facet-sds/facet/internal/obs"
)

// PutBW is put_bw: payload bytes received from clients by object writes,
// per second (before filters: what the client sent).
func PutBW() Module {
	return byteRate{name: "put_bw", doc: "bytes written (write payloads, before filters) per second", bytes: func(o *obs.Observation) int64 {
		if isPut(o.Op) {
			return o.BytesIn
		}
		return 0
	}}
}
